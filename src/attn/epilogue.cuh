// The epilogue: O * v_descale / l (+ o_bias) -> BF16 and the LSE -> FP32, straight from the
// consumers' registers, and the per-channel operands it reads.
#pragma once
#include <cuda_bf16.h>

#include "attn/config.h"
#include "attn/gemm.cuh"
#include "attn/params.h"
#include "attn/scheduler.cuh"

namespace fp8attn::attn {

__device__ __forceinline__ float load_or_one(const float* ptr, int64_t off) {
  return ptr ? __ldg(ptr + off) : 1.f;
}

// Starts bringing a line into L1 and holds no register afterwards.
__device__ __forceinline__ void prefetch_l1(const float* ptr) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(ptr));
}

// Epilogue: BF16 O and FP32 LSE from registers.
// The per-channel factors of this thread's 32 output columns (V's descale and o_bias). Loaded
// before the tile's last P V product is issued, so their latency hides under it.
struct EpilogueOperands {
  float vd[32], ob[32];
  float lb[2];  // lse_bias of rows row0 and row0 + 8 (lanes q4 == 0, which store the LSE)
  __device__ __forceinline__ void load(const KernelParams& p, const Tile& tile, int row0) {
    const int kv_head = tile.head / p.q_per_kv;
    const int q4 = threadIdx.x % 4;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + 8 * r;
      lb[r] = p.lse_bias && q4 == 0 && row < p.seqlen_q
                  ? __ldg(p.lse_bias + (static_cast<int64_t>(tile.batch) * p.heads + tile.head) * p.seqlen_q + row)
                  : 0.f;
    }
    if (p.epilogue_vec2) {  // channels 8i + 2 q4 + {0, 1}: float2 number 4i + q4 of the head
      const float* vbase = p.v_descale ? p.v_descale + tile.batch * p.vd_stride_b + kv_head * p.vd_stride_h
                                       : nullptr;
      const float vb = vbase && p.vd_broadcast ? __ldg(vbase) : 1.f;
      const float2* vd2 = vbase && !p.vd_broadcast ? reinterpret_cast<const float2*>(vbase) + q4 : nullptr;
      const float2* ob2 = p.o_bias ? reinterpret_cast<const float2*>(
                                         p.o_bias + tile.batch * p.ob_stride_b + kv_head * p.ob_stride_h) + q4
                                   : nullptr;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const float2 v = vd2 ? __ldg(vd2 + 4 * i) : make_float2(vb, vb);
        const float2 b = ob2 ? __ldg(ob2 + 4 * i) : make_float2(0.f, 0.f);
        vd[2 * i] = v.x, vd[2 * i + 1] = v.y;
        ob[2 * i] = b.x, ob[2 * i + 1] = b.y;
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = 8 * i + 2 * q4 + e;
        vd[2 * i + e] = load_or_one(p.v_descale, tile.batch * p.vd_stride_b +
                                                     kv_head * p.vd_stride_h + c * p.vd_stride_d);
        ob[2 * i + e] = p.o_bias ? __ldg(p.o_bias + tile.batch * p.ob_stride_b +
                                         kv_head * p.ob_stride_h + c)
                                 : 0.f;
      }
    }
  }
  // The same addresses, into L1 only: for kernels that cannot hold the 64 registers while their
  // last P V runs (key_blocks_serial); load() then hits L1.
  __device__ __forceinline__ static void prefetch(const KernelParams& p, const Tile& tile) {
    const int kv_head = tile.head / p.q_per_kv;
    const int q4 = threadIdx.x % 4;
    if (p.v_descale) {
      const float* vd = p.v_descale + tile.batch * p.vd_stride_b + kv_head * p.vd_stride_h;
#pragma unroll
      for (int i = 0; i < 32; ++i) prefetch_l1(vd + (8 * (i / 2) + 2 * q4 + i % 2) * p.vd_stride_d);
    }
    if (p.o_bias) {
      const float* ob = p.o_bias + tile.batch * p.ob_stride_b + kv_head * p.ob_stride_h;
#pragma unroll
      for (int i = 0; i < 32; ++i) prefetch_l1(ob + 8 * (i / 2) + 2 * q4 + i % 2);
    }
  }
};

template <class Cfg>
__device__ __forceinline__ void epilogue(const KernelParams& p, const Tile& tile, int row0,
                                         const PVAccumulator<Cfg>& acc, Softmax<Cfg>& sm,
                                         const EpilogueOperands& eo) {
  const float (&o)[PVAccumulator<Cfg>::kRegs] = acc.o;
  const float (&vd)[32] = eo.vd;
  const float (&ob)[32] = eo.ob;
  float inv_l[2];
  sm.finalize(inv_l);
  const int q4 = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= p.seqlen_q) continue;
    // No visible key: O = 0, LSE = -inf. A NaN inv_l (a NaN reached the row) is not empty: the
    // row comes out NaN.
    const bool empty = inv_l[r] == 0.f;
    __nv_bfloat16* out = p.o + tile.batch * p.o_stride_b + row * p.o_stride_s +
                         tile.head * p.o_stride_h;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int c = 8 * i + 2 * q4;
      float x0 = o[4 * i + 2 * r] * vd[2 * i] * inv_l[r] + ob[2 * i];
      float x1 = o[4 * i + 2 * r + 1] * vd[2 * i + 1] * inv_l[r] + ob[2 * i + 1];
      if (empty) x0 = x1 = 0.f;
      *reinterpret_cast<__nv_bfloat162*>(out + c) = __floats2bfloat162_rn(x0, x1);
    }
    if (p.lse && q4 == 0) {
      const int64_t li = (static_cast<int64_t>(tile.batch) * p.heads + tile.head) * p.seqlen_q + row;
      float lse = sm.lse(r);
      if (!empty) lse += eo.lb[r];  // 0 without lse_bias
      p.lse[li] = lse;
    }
  }
}

}  // namespace fp8attn::attn
