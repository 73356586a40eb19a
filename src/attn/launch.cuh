// The host half of the attention kernel: KernelParams from the validated public parameters (TMA
// descriptors, tile scheduler sizing, epilogue flags), the shared-memory opt-in, the launch.
// Included by the one-configuration files in attn/instantiations/ (and by the lab's probe build).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "attn/capture_mode.h"
#include "attn/config.h"
#include "attn/kernel.cuh"
#include "attn/launch.h"
#include "attn/pipeline.cuh"
#include "attn/scheduler.cuh"
#include "attn/select.h"
#include "attn/status.h"
#include "attn/tile_counters.h"
#include "attn/tma_desc.h"
#include "fp8attn/fp8attn.h"

namespace fp8attn::attn {

template <class Cfg>
fp8attn_status launch(const fp8attn_fwd_params& p, const DeviceInfo& dev_info, const LaunchOptions& opts,
                      cudaStream_t stream) {
  KernelParams kp{};
  {
    const cuuint64_t dq[4] = {128, cuuint64_t(p.heads), cuuint64_t(p.seqlen_q), cuuint64_t(p.batch)};
    const cuuint64_t sq[3] = {cuuint64_t(p.q_stride_h), cuuint64_t(p.q_stride_s), cuuint64_t(p.q_stride_b)};
    const cuuint32_t bq[4] = {128, 1, Cfg::kBlockM, 1};
    const cuuint64_t dk[4] = {128, cuuint64_t(p.heads_kv), cuuint64_t(p.seqlen_k), cuuint64_t(p.batch)};
    const cuuint64_t sk[3] = {cuuint64_t(p.k_stride_h), cuuint64_t(p.k_stride_s), cuuint64_t(p.k_stride_b)};
    const cuuint32_t bk[4] = {128, 1, Cfg::kBlockN, 1};
    // V^T in bytes (the descriptors are byte-typed): E4M3 atoms of 64 keys x 1 byte, 64-byte
    // swizzle; FP16 halves of 64 keys x 2 bytes, 128-byte swizzle (the FP16 wgmma's B layout).
    constexpr cuuint64_t vb = Cfg::kVtF16 ? 2 : 1;
    const cuuint64_t dv[4] = {vb * cuuint64_t(p.vt_seqlen_pad), 128, cuuint64_t(p.heads_kv), cuuint64_t(p.batch)};
    const cuuint64_t sv[3] = {vb * cuuint64_t(p.vt_stride_d), vb * cuuint64_t(p.vt_stride_h),
                              vb * cuuint64_t(p.vt_stride_b)};
    const cuuint32_t bv[4] = {Cfg::kVtF16 ? 2 * Cfg::kV16HalfKeys : Cfg::kVAtomKeys, 128, 1, 1};
    const CUtensorMapSwizzle swv = Cfg::kVtF16 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
    if (!make_tma_4d(&kp.tma_q, p.q, dq, sq, bq, CU_TENSOR_MAP_SWIZZLE_128B) ||
        !make_tma_4d(&kp.tma_k, p.k, dk, sk, bk, CU_TENSOR_MAP_SWIZZLE_128B) ||
        !make_tma_4d(&kp.tma_vt, p.vt, dv, sv, bv, swv))
      return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                  "cuTensorMapEncodeTiled rejected a tensor (strides/extents out of TMA range)");
    // Config::kTmaStoreO: O (BF16) as bytes; each consumer warpgroup stores its 64 rows as two
    // 128-byte column halves.
    // Validation guarantees a 16-byte aligned base and 16-byte multiples as strides; should the
    // driver still reject the description, O is written from registers.
    const cuuint64_t dout[4] = {2 * 128, cuuint64_t(p.heads), cuuint64_t(p.seqlen_q), cuuint64_t(p.batch)};
    const cuuint64_t sout[3] = {2 * cuuint64_t(p.o_stride_h), 2 * cuuint64_t(p.o_stride_s),
                                2 * cuuint64_t(p.o_stride_b)};
    const cuuint32_t bout[4] = {128, 1, 64, 1};
    kp.o_tma = Cfg::kTmaStoreO && make_tma_4d(&kp.tma_o, p.o, dout, sout, bout, CU_TENSOR_MAP_SWIZZLE_128B);
  }
  kp.batch = p.batch;
  kp.seqlen_q = p.seqlen_q;
  kp.seqlen_k = p.seqlen_k;
  kp.heads = p.heads;
  kp.heads_kv = p.heads_kv;
  kp.q_per_kv = p.heads / p.heads_kv;
  kp.num_m_blocks = (p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM;
  const int64_t tiles = int64_t{kp.num_m_blocks} * p.heads * p.batch;
  if (tiles >= (int64_t{1} << 31)) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "too many tiles");
  kp.num_tiles = static_cast<int>(tiles);
  kp.causal = p.causal;
  kp.section_heads = TileScheduler::section_heads(p.batch, p.heads, p.heads_kv, p.seqlen_k, p.causal,
                                                  opts.causal_sections, balanced_sections(p),
                                                  dev_info.l2_bytes);
  kp.softmax_scale_log2 = p.softmax_scale * 1.4426950408889634f;
  kp.o = static_cast<__nv_bfloat16*>(p.o);
  kp.o_stride_b = p.o_stride_b;
  kp.o_stride_s = p.o_stride_s;
  kp.o_stride_h = p.o_stride_h;
  kp.lse = p.lse;
  kp.q_descale = p.q_descale;
  kp.qd_stride_b = p.qd_stride_b;
  kp.qd_stride_h = p.qd_stride_h;
  kp.qd_stride_s = p.qd_stride_s;
  kp.k_descale = p.k_descale;
  kp.kd_stride_b = p.kd_stride_b;
  kp.kd_stride_h = p.kd_stride_h;
  kp.kd_stride_blk = p.kd_stride_blk;
  kp.v_descale = p.v_descale;
  kp.vd_stride_b = p.vd_stride_b;
  kp.vd_stride_h = p.vd_stride_h;
  kp.vd_stride_d = p.vd_stride_d;
  kp.lse_bias = p.lse_bias;
  kp.o_bias = p.o_bias;
  kp.ob_stride_b = p.ob_stride_b;
  kp.ob_stride_h = p.ob_stride_h;
  auto pairs_ok = [](const float* ptr, int64_t sb, int64_t sh, int64_t sd) {
    return !ptr || (sd == 1 && sb % 2 == 0 && sh % 2 == 0 && reinterpret_cast<uintptr_t>(ptr) % 8 == 0);
  };
  kp.vd_broadcast = p.v_descale && p.vd_stride_d == 0;
  kp.epilogue_vec2 = (kp.vd_broadcast || pairs_ok(p.v_descale, p.vd_stride_b, p.vd_stride_h, p.vd_stride_d)) &&
                     pairs_ok(p.o_bias, p.ob_stride_b, p.ob_stride_h, 1);

  // The shared-memory opt-in is a property of the kernel in each device's context: set it once
  // per (instantiation, device), so that a process driving several GPUs launches on all of them.
  constexpr int kSmem = sizeof(SharedStorage<Cfg>) + 1024;
  static_assert(kSmem <= 227 * 1024, "shared memory beyond the sm_90 opt-in maximum (227 KiB)");
  constexpr int kMaxDevices = 64;
  static std::once_flag once[kMaxDevices];
  static cudaError_t attr_err[kMaxDevices] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices)
    return fail(FP8ATTN_ERROR_CUDA, "cudaGetDevice failed or device index >= 64");
  std::call_once(once[dev], [dev] {
    RelaxedCaptureMode relaxed;  // the first call may be inside a graph capture
    attr_err[dev] = cudaFuncSetAttribute(attention_fwd_kernel<Cfg>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  });
  if (attr_err[dev] != cudaSuccess)
    return fail(FP8ATTN_ERROR_CUDA,
                std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(attr_err[dev]));
  int grid = kp.num_tiles;
  kp.tile_counter = nullptr;
  if (TileScheduler::persistent_grid(kp.num_tiles, dev_info.num_sms, opts.persistent)) {
    // A counter of this stream (or of this captured launch) that the kernel leaves at zero
    // (attn/tile_counters.h): no memset per launch, and no two launches in flight share one.
    TileCounter tc;
    if (const std::string e = acquire_tile_counter(stream, &tc); !e.empty())
      return fail(FP8ATTN_ERROR_CUDA, "tile counter: " + e);
    if (tc.needs_zero && cudaMemsetAsync(tc.counter, 0, sizeof(int), stream) != cudaSuccess)
      return fail(FP8ATTN_ERROR_CUDA, "cudaMemsetAsync of the tile counter failed");
    kp.tile_counter = tc.counter;
    grid = dev_info.num_sms;
  }
  attention_fwd_kernel<Cfg><<<grid, Cfg::kThreads, kSmem, stream>>>(kp);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return fail(FP8ATTN_ERROR_CUDA, std::string("launch: ") + cudaGetErrorString(e));
  return FP8ATTN_SUCCESS;
}

}  // namespace fp8attn::attn
