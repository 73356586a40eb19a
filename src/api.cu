// The C ABI of fp8attn_attention_fwd: validate every argument, describe the tensors to TMA,
// launch. Validation runs before any device work, so bad input never reaches the kernel.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <mutex>
#include <string>

#include "attn/capture_mode.h"
#include "attn/config.h"
#include "attn/extent.h"
#include "attn/kernel.cuh"
#include "attn/tile_counters.h"
#include "fp8attn/fp8attn.h"

namespace {

thread_local std::string g_last_error;

fp8attn_status fail(fp8attn_status s, const std::string& msg) {
  g_last_error = "fp8attn: " + msg;
  return s;
}

std::string str(int64_t v) { return std::to_string(v); }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Where the tensors lie: O's rows of one head are head_dim contiguous BF16 that no other element
// of O shares, and neither output (O, LSE) meets the other or any input. Two launches writing
// the same bytes, or a kernel writing what it reads, would give results that depend on timing.
fp8attn_status check_layout(const fp8attn_fwd_params* p) {
  using fp8attn::attn::Extent;
  using fp8attn::attn::extent_of;
  const fp8attn_status bad = FP8ATTN_ERROR_INVALID_ARGUMENT;
  const int64_t B = p->batch, SQ = p->seqlen_q, SK = p->seqlen_k, H = p->heads, HKV = p->heads_kv;
  if (p->o_stride_h < 128)
    return fail(bad, "o_stride_h = " + str(p->o_stride_h) + ": must be >= head_dim (128)");
  if (!fp8attn::attn::strides_disjoint({{B, p->o_stride_b}, {SQ, p->o_stride_s}, {H, p->o_stride_h}, {128, 1}}))
    return fail(bad, "o strides (o_stride_b " + str(p->o_stride_b) + ", o_stride_s " + str(p->o_stride_s) +
                         ", o_stride_h " + str(p->o_stride_h) + ") make elements of o overlap");
  const Extent o = extent_of(p->o, {{B, p->o_stride_b}, {SQ, p->o_stride_s}, {H, p->o_stride_h}, {128, 1}}, 2);
  const Extent lse = extent_of(p->lse, {{B * H * SQ, 1}}, 4);
  if (o.meets(lse)) return fail(bad, "o and lse overlap");
  const int64_t kblk = (SK + FP8ATTN_K_SCALE_BLOCK - 1) / FP8ATTN_K_SCALE_BLOCK;
  const struct {
    const char* name;
    Extent e;
  } inputs[] = {
      {"q", extent_of(p->q, {{B, p->q_stride_b}, {SQ, p->q_stride_s}, {H, p->q_stride_h}, {128, 1}}, 1)},
      {"k", extent_of(p->k, {{B, p->k_stride_b}, {SK, p->k_stride_s}, {HKV, p->k_stride_h}, {128, 1}}, 1)},
      {"vt", extent_of(p->vt, {{B, p->vt_stride_b}, {HKV, p->vt_stride_h}, {128, p->vt_stride_d},
                               {p->vt_seqlen_pad, 1}}, 1)},
      {"q_descale", extent_of(p->q_descale, {{B, p->qd_stride_b}, {H, p->qd_stride_h}, {SQ, p->qd_stride_s}}, 4)},
      {"k_descale", extent_of(p->k_descale, {{B, p->kd_stride_b}, {HKV, p->kd_stride_h}, {kblk, p->kd_stride_blk}}, 4)},
      {"v_descale", extent_of(p->v_descale, {{B, p->vd_stride_b}, {HKV, p->vd_stride_h}, {128, p->vd_stride_d}}, 4)},
      {"lse_bias", extent_of(p->lse_bias, {{B * H * SQ, 1}}, 4)},
      {"o_bias", extent_of(p->o_bias, {{B, p->ob_stride_b}, {HKV, p->ob_stride_h}, {128, 1}}, 4)},
  };
  for (const auto& in : inputs) {
    if (o.meets(in.e)) return fail(bad, std::string("o overlaps the input ") + in.name);
    if (lse.meets(in.e)) return fail(bad, std::string("lse overlaps the input ") + in.name);
  }
  return FP8ATTN_SUCCESS;
}

// Everything about the arguments that can be checked without the device.
fp8attn_status check_params(const fp8attn_fwd_params* p) {
  using S = fp8attn_status;
  const S bad = FP8ATTN_ERROR_INVALID_ARGUMENT;
  if (!p) return fail(bad, "params is NULL");
  if (p->head_dim != 128) return fail(bad, "head_dim must be 128, got " + str(p->head_dim));
  if (p->batch < 0 || p->seqlen_q < 0 || p->seqlen_k < 0)
    return fail(bad, "negative batch/seqlen: batch=" + str(p->batch) + " seqlen_q=" +
                         str(p->seqlen_q) + " seqlen_k=" + str(p->seqlen_k));
  if (p->heads <= 0 || p->heads_kv <= 0)
    return fail(bad, "heads and heads_kv must be positive, got " + str(p->heads) + ", " +
                         str(p->heads_kv));
  if (p->heads % p->heads_kv != 0)
    return fail(bad, "heads (" + str(p->heads) + ") must be a multiple of heads_kv (" +
                         str(p->heads_kv) + ")");
  if (p->batch == 0 || p->seqlen_q == 0) return FP8ATTN_SUCCESS;  // empty output: nothing to do
  if (p->seqlen_q > (1 << 30) || p->seqlen_k > (1 << 30))
    return fail(bad, "seqlen_q and seqlen_k must be <= 2^30");
  if (p->seqlen_k == 0)
    return fail(bad, "seqlen_k is 0: attention over no keys is undefined (seqlen_q=" +
                         str(p->seqlen_q) + ")");
  if (!p->q || !p->k || !p->vt || !p->o) return fail(bad, "q, k, vt and o must not be NULL");
  if (!aligned16(p->q) || !aligned16(p->k) || !aligned16(p->vt) || !aligned16(p->o))
    return fail(bad, "q, k, vt and o must be 16-byte aligned");
  if (!(std::isfinite(p->softmax_scale) && p->softmax_scale > 0.f))
    return fail(bad, "softmax_scale must be finite and > 0");
  if (p->causal != 0 && p->causal != 1) return fail(bad, "causal must be 0 or 1");
  if (p->p_precision != FP8ATTN_P_E4M3 && p->p_precision != FP8ATTN_P_E4M3_HILO &&
      p->p_precision != FP8ATTN_P_FP16)
    return fail(bad, "unknown p_precision " + str(p->p_precision));
  // TMA: every stride but the innermost a positive multiple of 16 bytes (E4M3: 16 elements).
  const struct {
    const char* name;
    int64_t v;
  } fp8_strides[] = {{"q_stride_b", p->q_stride_b},   {"q_stride_s", p->q_stride_s},
                     {"q_stride_h", p->q_stride_h},   {"k_stride_b", p->k_stride_b},
                     {"k_stride_s", p->k_stride_s},   {"k_stride_h", p->k_stride_h},
                     {"vt_stride_b", p->vt_stride_b}, {"vt_stride_h", p->vt_stride_h},
                     {"vt_stride_d", p->vt_stride_d}};
  for (const auto& s : fp8_strides)
    if (s.v <= 0 || s.v % 16 != 0 || s.v >= (int64_t{1} << 40))
      return fail(bad, std::string(s.name) + " = " + str(s.v) +
                           ": must be a positive multiple of 16 elements (TMA)");
  if (p->q_stride_h < 128 || p->k_stride_h < 128)
    return fail(bad, "q_stride_h and k_stride_h must be >= head_dim (128)");
  const int64_t pad_min = (int64_t{p->seqlen_k} + FP8ATTN_VT_PAD - 1) / FP8ATTN_VT_PAD * FP8ATTN_VT_PAD;
  if (p->vt_seqlen_pad < pad_min || p->vt_seqlen_pad % FP8ATTN_VT_PAD != 0)
    return fail(bad, "vt_seqlen_pad = " + str(p->vt_seqlen_pad) + ": must be a multiple of " +
                         str(FP8ATTN_VT_PAD) + " and >= " + str(pad_min));
  if (p->vt_stride_d < p->vt_seqlen_pad)
    return fail(bad, "vt_stride_d must be >= vt_seqlen_pad");
  if (p->vt_stride_h < 128 * p->vt_stride_d)
    return fail(bad, "vt_stride_h must be >= head_dim * vt_stride_d");
  const struct {
    const char* name;
    int64_t v;
  } o_strides[] = {{"o_stride_b", p->o_stride_b}, {"o_stride_s", p->o_stride_s},
                   {"o_stride_h", p->o_stride_h}};
  for (const auto& s : o_strides)
    if (s.v <= 0 || s.v % 8 != 0)
      return fail(bad, std::string(s.name) + " = " + str(s.v) +
                           ": must be a positive multiple of 8 elements (16 bytes of BF16)");
  const struct {
    const char* name;
    int64_t v;
  } scale_strides[] = {{"qd_stride_b", p->qd_stride_b},     {"qd_stride_h", p->qd_stride_h},
                       {"qd_stride_s", p->qd_stride_s},     {"kd_stride_b", p->kd_stride_b},
                       {"kd_stride_h", p->kd_stride_h},     {"kd_stride_blk", p->kd_stride_blk},
                       {"vd_stride_b", p->vd_stride_b},     {"vd_stride_h", p->vd_stride_h},
                       {"vd_stride_d", p->vd_stride_d},     {"ob_stride_b", p->ob_stride_b},
                       {"ob_stride_h", p->ob_stride_h}};
  for (const auto& s : scale_strides)
    if (s.v < 0) return fail(bad, std::string(s.name) + " must be >= 0 (0 broadcasts)");
  const void* fptrs[] = {p->q_descale, p->k_descale, p->v_descale, p->lse, p->lse_bias, p->o_bias};
  for (const void* f : fptrs)
    if (f && (reinterpret_cast<uintptr_t>(f) & 3))
      return fail(bad, "float arrays (descales, lse, lse_bias, o_bias) must be 4-byte aligned");
  return check_layout(p);
}

// What a launch needs to know of the current device, read once per device with
// cudaDeviceGetAttribute (cheap) and cached: launches must not pay for cudaGetDeviceProperties.
struct DeviceInfo {
  int num_sms = 0;
  int l2_bytes = 0;
  int major = 0, minor = 0;
  std::string name;
  cudaError_t error = cudaSuccess;
};

fp8attn_status check_device(DeviceInfo* out) {
  constexpr int kMaxDevices = 64;
  static std::once_flag once[kMaxDevices];
  static DeviceInfo info[kMaxDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return fail(FP8ATTN_ERROR_UNSUPPORTED_DEVICE, "no CUDA device");
  }
  if (dev < 0 || dev >= kMaxDevices) return fail(FP8ATTN_ERROR_CUDA, "device index >= 64");
  std::call_once(once[dev], [dev] {
    DeviceInfo& d = info[dev];
    cudaError_t e = cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d.num_sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d.l2_bytes, cudaDevAttrL2CacheSize, dev);
    cudaDeviceProp prop;
    if (e == cudaSuccess && !(d.major == 9 && d.minor == 0) &&
        cudaGetDeviceProperties(&prop, dev) == cudaSuccess)  // only for the error message
      d.name = prop.name;
    d.error = e;
  });
  const DeviceInfo& d = info[dev];
  if (d.error != cudaSuccess)
    return fail(FP8ATTN_ERROR_CUDA, std::string("cudaDeviceGetAttribute: ") + cudaGetErrorString(d.error));
  if (d.major != 9 || d.minor != 0)
    return fail(FP8ATTN_ERROR_UNSUPPORTED_DEVICE,
                std::string("needs an sm_90 (Hopper) device; device ") + std::to_string(dev) +
                    " is " + d.name + " (sm_" + std::to_string(d.major) + std::to_string(d.minor) + ")");
  *out = d;
  return FP8ATTN_SUCCESS;
}

// 4-D E4M3 tensor map. dims/strides innermost first; strides in bytes for dims 1..3.
bool make_tma_4d(CUtensorMap* map, const void* base, const cuuint64_t dims[4],
                 const cuuint64_t strides[3], const cuuint32_t box[4], CUtensorMapSwizzle swizzle) {
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  // Through the runtime's driver entry point: the library links no libcuda, so it builds and
  // links on machines with no driver (CI), and the GPU machine's driver provides the function.
  using EncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static EncodeFn encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<EncodeFn>(fn);
  }();
  if (!encode) return false;
  const CUresult r = encode(
      map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, const_cast<void*>(base), dims, strides, box,
      elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

// Benchmarking knobs, read once from the environment (defaults are the library's choice):
//   FP8ATTN_ACCUMULATION=two-level|one-level: default two-level for P hi+lo (its precision is
//     otherwise lost to the wgmma's accumulation across all keys), one-level for E4M3 P (whose
//     rounding dominates; one-level allows 192-key blocks and runs ~12% faster)
//   FP8ATTN_BLOCK_N=128|224: key block of the one-level E4M3 kernel (default 192)
//   FP8ATTN_PERSISTENT=0|1: persistent CTAs with a dynamic tile counter (default 1)
//   FP8ATTN_VARIANT=fp32-rowsum|ablate-nosoftmax|ablate-noexp|ablate-nopv: softmax variant of the
//     one-level 192-key E4M3 kernel (config.h; default: l from the tensor core); fp32-rowsum: l as
//     the FP32 sum of unrounded p; the ablations give WRONG results (timing probes only)
//   FP8ATTN_SCHED=section|head: causal tile order (scheduler.cuh), default section
//   FP8ATTN_POLY_EXP_EVERY=4: every 4th group of 8 keys takes exp2 from a polynomial on the
//     FMA pipe instead of MUFU (default 0: none; measured no gain, kept for study)
struct KnobSettings {
  int two_level = -1;  // -1: follow the P precision
  int block_n = 192;
  bool persistent = true;
  int poly_exp_every = 0;
  bool causal_sections = true;
  int variant = 2;  // attn::Variant of the one-level 192-key E4M3 kernel (kVariantTcRowSum)
};
const KnobSettings& knob_settings() {
  static const KnobSettings k = [] {
    KnobSettings s;
    if (const char* e = std::getenv("FP8ATTN_ACCUMULATION")) s.two_level = std::string(e) != "one-level";
    if (const char* e = std::getenv("FP8ATTN_BLOCK_N")) {
      const int n = std::atoi(e);
      s.block_n = (n == 128 || n == 224) ? n : 192;
    }
    if (const char* e = std::getenv("FP8ATTN_PERSISTENT")) s.persistent = e[0] == '1';
    if (const char* e = std::getenv("FP8ATTN_POLY_EXP_EVERY")) s.poly_exp_every = std::atoi(e);
    if (const char* e = std::getenv("FP8ATTN_SCHED")) s.causal_sections = std::string(e) != "head";
    if (const char* e = std::getenv("FP8ATTN_VARIANT")) {
      const std::string v(e);
      s.variant = v == "fp32-rowsum"        ? fp8attn::attn::kVariantDefault
                  : v == "ablate-nosoftmax" ? fp8attn::attn::kAblateNoSoftmax
                  : v == "ablate-noexp"     ? fp8attn::attn::kAblateNoExp
                  : v == "ablate-nopv"      ? fp8attn::attn::kAblateNoPV
                  : v == "ablate-nomask"    ? fp8attn::attn::kAblateNoMask
                  : v == "ablate-noepilogue" ? fp8attn::attn::kAblateNoEpilogue
                                            : fp8attn::attn::kVariantTcRowSum;
    }
    return s;
  }();
  return k;
}

template <class Cfg>
fp8attn_status launch(const fp8attn_fwd_params& p, const DeviceInfo& dev_info, cudaStream_t stream) {
  using namespace fp8attn::attn;
  KernelParams kp{};
  {
    const cuuint64_t dq[4] = {128, cuuint64_t(p.heads), cuuint64_t(p.seqlen_q), cuuint64_t(p.batch)};
    const cuuint64_t sq[3] = {cuuint64_t(p.q_stride_h), cuuint64_t(p.q_stride_s), cuuint64_t(p.q_stride_b)};
    const cuuint32_t bq[4] = {128, 1, Cfg::kBlockM, 1};
    const cuuint64_t dk[4] = {128, cuuint64_t(p.heads_kv), cuuint64_t(p.seqlen_k), cuuint64_t(p.batch)};
    const cuuint64_t sk[3] = {cuuint64_t(p.k_stride_h), cuuint64_t(p.k_stride_s), cuuint64_t(p.k_stride_b)};
    const cuuint32_t bk[4] = {128, 1, Cfg::kBlockN, 1};
    const cuuint64_t dv[4] = {cuuint64_t(p.vt_seqlen_pad), 128, cuuint64_t(p.heads_kv), cuuint64_t(p.batch)};
    const cuuint64_t sv[3] = {cuuint64_t(p.vt_stride_d), cuuint64_t(p.vt_stride_h), cuuint64_t(p.vt_stride_b)};
    const cuuint32_t bv[4] = {Cfg::kVAtomKeys, 128, 1, 1};
    if (!make_tma_4d(&kp.tma_q, p.q, dq, sq, bq, CU_TENSOR_MAP_SWIZZLE_128B) ||
        !make_tma_4d(&kp.tma_k, p.k, dk, sk, bk, CU_TENSOR_MAP_SWIZZLE_128B) ||
        !make_tma_4d(&kp.tma_vt, p.vt, dv, sv, bv, CU_TENSOR_MAP_SWIZZLE_64B))
      return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                  "cuTensorMapEncodeTiled rejected a tensor (strides/extents out of TMA range)");
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
  // Causal tile order (scheduler.cuh): sections of (batch, head) pairs whose K and V (E4M3,
  // shared by q_per_kv query heads) take about half of L2.
  kp.section_heads = 0;
  if (p.causal && knob_settings().causal_sections) {
    const int64_t kv_bytes_per_pair =
        std::max<int64_t>(1, int64_t{p.seqlen_k} * 128 * 2 / (p.heads / p.heads_kv));
    kp.section_heads = static_cast<int>(
        std::clamp<int64_t>(int64_t{dev_info.l2_bytes} / 2 / kv_bytes_per_pair, 1, int64_t{p.batch} * p.heads));
  }
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
  // Default: one CTA per tile; the hardware block scheduler hands tiles out in order (heavy first
  // for causal). Persistent: one CTA per SM, tiles claimed from a counter of this stream (or of
  // this captured launch) that the kernel leaves at zero (attn/tile_counters.h).
  int grid = kp.num_tiles;
  kp.tile_counter = nullptr;
  const int num_sms = dev_info.num_sms;
  if (knob_settings().persistent && kp.num_tiles > num_sms) {
    TileCounter tc;
    if (const std::string e = acquire_tile_counter(stream, &tc); !e.empty())
      return fail(FP8ATTN_ERROR_CUDA, "tile counter: " + e);
    if (tc.needs_zero && cudaMemsetAsync(tc.counter, 0, sizeof(int), stream) != cudaSuccess)
      return fail(FP8ATTN_ERROR_CUDA, "cudaMemsetAsync of the tile counter failed");
    kp.tile_counter = tc.counter;
    grid = num_sms;
  }
  attention_fwd_kernel<Cfg><<<grid, Cfg::kThreads, kSmem, stream>>>(kp);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return fail(FP8ATTN_ERROR_CUDA, std::string("launch: ") + cudaGetErrorString(e));
  return FP8ATTN_SUCCESS;
}

}  // namespace

extern "C" {

void fp8attn_fwd_params_init(fp8attn_fwd_params* p, int32_t batch, int32_t seqlen_q,
                             int32_t seqlen_k, int32_t heads, int32_t heads_kv, int32_t head_dim) {
  *p = fp8attn_fwd_params{};
  p->batch = batch;
  p->seqlen_q = seqlen_q;
  p->seqlen_k = seqlen_k;
  p->heads = heads;
  p->heads_kv = heads_kv;
  p->head_dim = head_dim;
  p->q_stride_h = head_dim;
  p->q_stride_s = int64_t{heads} * head_dim;
  p->q_stride_b = p->q_stride_s * seqlen_q;
  p->k_stride_h = head_dim;
  p->k_stride_s = int64_t{heads_kv} * head_dim;
  p->k_stride_b = p->k_stride_s * seqlen_k;
  p->vt_seqlen_pad = (seqlen_k + FP8ATTN_VT_PAD - 1) / FP8ATTN_VT_PAD * FP8ATTN_VT_PAD;
  p->vt_stride_d = p->vt_seqlen_pad;
  p->vt_stride_h = int64_t{head_dim} * p->vt_stride_d;
  p->vt_stride_b = int64_t{heads_kv} * p->vt_stride_h;
  p->o_stride_h = head_dim;
  p->o_stride_s = int64_t{heads} * head_dim;
  p->o_stride_b = p->o_stride_s * seqlen_q;
  p->softmax_scale = head_dim > 0 ? 1.f / std::sqrt(static_cast<float>(head_dim)) : 1.f;
  p->p_precision = FP8ATTN_P_E4M3;
}

fp8attn_status fp8attn_check_fwd_params(const fp8attn_fwd_params* params) {
  g_last_error.clear();
  return check_params(params);
}

fp8attn_status fp8attn_attention_fwd(const fp8attn_fwd_params* params, void* stream) {
  g_last_error.clear();
  fp8attn_status s = check_params(params);
  if (s != FP8ATTN_SUCCESS) return s;
  if (params->batch == 0 || params->seqlen_q == 0) return FP8ATTN_SUCCESS;
  DeviceInfo dev_info;
  s = check_device(&dev_info);
  if (s != FP8ATTN_SUCCESS) return s;
  using namespace fp8attn::attn;
  const auto st = static_cast<cudaStream_t>(stream);
  // Kernel choice. Two-level accumulation needs 128-key blocks (registers); so does a per-block
  // K descale (one scalar per block). Otherwise one-level with 192-key blocks.
  const KnobSettings& knobs = knob_settings();
  const bool per_block_k = params->k_descale && params->kd_stride_blk != 0;
  const bool block128 = per_block_k || knobs.block_n == 128;
  const int poly = knobs.poly_exp_every;
  if (params->p_precision == FP8ATTN_P_FP16) {
    // One configuration: one-level (the FP16 wgmma accumulates in FP32), 128-key blocks (S 64 +
    // O 64 + P 32 registers), l from the FP32 p. The accumulation/block/variant knobs do not apply.
    return launch<Config<PPrecision::kFP16, false, 128, 2>>(*params, dev_info, st);
  }
  if (params->p_precision == FP8ATTN_P_E4M3_HILO) {
    constexpr PPrecision P = PPrecision::kE4M3HiLo;
    if (knobs.two_level != 0) {
      if (poly == 4) return launch<Config<P, true, 128, 2, 4>>(*params, dev_info, st);
      return launch<Config<P, true, 128, 2>>(*params, dev_info, st);
    }
    if (block128) return launch<Config<P, false, 128, 3>>(*params, dev_info, st);
    if (poly == 4) return launch<Config<P, false, 192, 2, 4>>(*params, dev_info, st);
    return launch<Config<P, false, 192, 2>>(*params, dev_info, st);
  }
  constexpr PPrecision P = PPrecision::kE4M3;
  if (knobs.two_level == 1) {
    if (poly == 4) return launch<Config<P, true, 128, 2, 4>>(*params, dev_info, st);
    return launch<Config<P, true, 128, 2>>(*params, dev_info, st);
  }
  // E4M3 P, one-level: l from the tensor core (kVariantTcRowSum) unless FP8ATTN_VARIANT says
  // otherwise; the CPU mirror (model/kernel_mirror.cc) follows the same rule.
  if (block128) {
    if (knobs.variant == kVariantDefault) return launch<Config<P, false, 128, 3>>(*params, dev_info, st);
    return launch<Config<P, false, 128, 3, 0, kVariantTcRowSum>>(*params, dev_info, st);
  }
  if (knobs.block_n == 224) {
    if (knobs.variant == kVariantTcRowSum)
      return launch<Config<P, false, 224, 2, 0, kVariantTcRowSum>>(*params, dev_info, st);
    return launch<Config<P, false, 224, 2>>(*params, dev_info, st);
  }
  if (poly == 4) return launch<Config<P, false, 192, 2, 4>>(*params, dev_info, st);  // study knob
  switch (knobs.variant) {
    case kAblateNoSoftmax: return launch<Config<P, false, 192, 2, 0, kAblateNoSoftmax>>(*params, dev_info, st);
    case kAblateNoExp: return launch<Config<P, false, 192, 2, 0, kAblateNoExp>>(*params, dev_info, st);
    case kAblateNoPV: return launch<Config<P, false, 192, 2, 0, kAblateNoPV>>(*params, dev_info, st);
    case kAblateNoMask: return launch<Config<P, false, 192, 2, 0, kAblateNoMask>>(*params, dev_info, st);
    case kAblateNoEpilogue: return launch<Config<P, false, 192, 2, 0, kAblateNoEpilogue>>(*params, dev_info, st);
    case kVariantDefault: return launch<Config<P, false, 192, 2>>(*params, dev_info, st);
    default: return launch<Config<P, false, 192, 2, 0, kVariantTcRowSum>>(*params, dev_info, st);
  }
}

const char* fp8attn_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
