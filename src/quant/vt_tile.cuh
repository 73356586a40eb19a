// One tile of the fused pass for V: 128 keys x 128 channels of one
// (batch, kv head) -> V^T (b, h, 128, vt_pad) E4M3, keys permuted in each group of 32
// (fp8attn_vt_key_at), zeros from seqlen on. No shared memory: each lane pair loads the 4 keys
// that one 32-bit word of V^T holds (quant/lanes.h VtSlot), so two conversions of key pairs and
// one OR give the word, and the 16 pairs of a warp store 64 contiguous bytes per V^T row. A warp
// does 16 channels; a CTA of 128 threads (the rotated K/V pass) does the tile in two sweeps of
// 64 channels, all loads of both first.
// kFoldAmax (FP8ATTN_CENTRE_SAMPLE's first fused pass): max |x - mean| per channel folded into
// a.true_amax (non-null). kF16 (a.vt_f16): FP16 V^T. Both compile-time, so that the default
// pass (E4M3, exact mean) carries neither's code.
// FP16 V^T (a.vt_f16, for FP8ATTN_P_FP16): the same scaled values (|y| <= 448, far inside FP16's
// 65504; FP16's subnormals start 2^-14 below that, E4M3's 2^-6) rounded to FP16 (RNE) and stored
// in natural key order: the slot's keys are two adjacent pairs (VtSlot::key(u, 0) and (u, 2) are
// even), one 32-bit FP16x2 word each.
#pragma once

#include "ptx/griddep.cuh"
#include "quant/launch.h"
#include "quant/quant_common.cuh"
#include "quant/rows_tile.cuh"

namespace fp8attn::quant::vt {

inline constexpr int kTileKeys = 128;

// Two floats -> FP16x2 (RNE), `lo` in the low half.
__device__ __forceinline__ uint32_t f16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
inline constexpr int kSteps = kTileKeys / VtSlot::kKeysPerWarp;

template <int kThreads, bool kFoldAmax = false, bool kF16 = false>
__device__ __forceinline__ void quantize_vt_tile(const VtQuantArgs& a, rows::Tile t) {
  static_assert(kHeadDim % (kThreads / 32 * 16) == 0, "16 channels a warp, whole sweeps");
  constexpr int kSweeps = kHeadDim / (kThreads / 32 * 16);   // 1 (256 threads) or 2 (128)
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int u = lane / 2;                          // the lane pair's slot: 4 keys of 64
  // This lane's 8 channels in sweep w: c0 + w * kThreads / 2.
  const int c0 = 16 * warp + 8 * (lane % 2);
  const int S = a.v.seqlen;
  const int64_t bh = static_cast<int64_t>(t.b) * a.v.heads + t.head;
  const int key0 = t.tile * kTileKeys;
  const uint16_t* src = a.v.data + t.b * a.v.stride_b + t.head * a.v.stride_h + c0;

  // All loads first: sweeps x 2 steps x 4 keys x 16 bytes in flight per thread.
  uint4 raw[kSweeps][kSteps][4];
#pragma unroll
  for (int w = 0; w < kSweeps; ++w) {
#pragma unroll
    for (int st = 0; st < kSteps; ++st) {
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int key = key0 + st * VtSlot::kKeysPerWarp + VtSlot::key(u, m);
        const uint16_t* p = src + w * (kThreads / 2) + key * a.v.stride_s;
        raw[w][st][m] = key < S ? __ldg(reinterpret_cast<const uint4*>(p)) : make_uint4(0, 0, 0, 0);
      }
    }
  }
  // V was complete before the statistics pass read it: only the mean and scale wait for the
  // previous kernel (the statistics' finalize step).
  ptx::wait_for_previous_grid();
#pragma unroll
  for (int w = 0; w < kSweeps; ++w) {
    const int c = c0 + w * (kThreads / 2);
    float mean[8], inv[8];
    {
      const float* pi = a.v_inv + bh * kHeadDim + c;
      const float4 i0 = ld_f32x4_coherent(pi), i1 = ld_f32x4_coherent(pi + 4);
      inv[0] = i0.x, inv[1] = i0.y, inv[2] = i0.z, inv[3] = i0.w;
      inv[4] = i1.x, inv[5] = i1.y, inv[6] = i1.z, inv[7] = i1.w;
      if (a.v_mean != nullptr) {
        const float* pm = a.v_mean + bh * kHeadDim + c;
        const float4 m0 = ld_f32x4_coherent(pm), m1 = ld_f32x4_coherent(pm + 4);
        mean[0] = m0.x, mean[1] = m0.y, mean[2] = m0.z, mean[3] = m0.w;
        mean[4] = m1.x, mean[5] = m1.y, mean[6] = m1.z, mean[7] = m1.w;
      }
    }

    uint32_t true_amax[8] = {};  // FP8ATTN_CENTRE_SAMPLE: max |x - mean| of channel c + j
#pragma unroll
    for (int st = 0; st < kSteps; ++st) {
      const int base = key0 + st * VtSlot::kKeysPerWarp;
      const int pos = base + VtSlot::position(u);
      if (pos >= a.vt_pad) continue;  // vt_pad is a multiple of 32: a slot's word is all in or out
      uint32_t keep = 0;              // keys from seqlen on are zero codes
#pragma unroll
      for (int m = 0; m < 4; ++m) keep |= (base + VtSlot::key(u, m) < S ? 0xFFu : 0u) << (8 * m);
      // FP16: the same per key, 16 bits each, for the words of keys (m 0, 1) and (m 2, 3).
      const uint32_t keep16[2] = {(keep & 0xFFu ? 0xFFFFu : 0u) | (keep & 0xFF00u ? 0xFFFF0000u : 0u),
                                  (keep & 0xFF0000u ? 0xFFFFu : 0u) | (keep & 0xFF000000u ? 0xFFFF0000u : 0u)};
      float x[4][8];
#pragma unroll
      for (int m = 0; m < 4; ++m) bf16x8_to_float(raw[w][st][m], x[m]);
      const int64_t row0 = (bh * kHeadDim + c) * a.vt_pad;  // element offset of channel c's row
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        float y[4];
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const float f = a.v_mean != nullptr ? __fsub_rn(x[m][j], mean[j]) : x[m][j];
          if (kFoldAmax && (keep >> (8 * m)) & 1u) {
            true_amax[j] = max(true_amax[j], __float_as_uint(fabsf(f)));
          }
          y[m] = __fmul_rn(f, inv[j]);
        }
        const int64_t row = row0 + static_cast<int64_t>(j) * a.vt_pad;
        if constexpr (kF16) {
          uint32_t* dst = reinterpret_cast<uint32_t*>(reinterpret_cast<uint16_t*>(a.vt) + row + base);
          dst[VtSlot::key(u, 0) / 2] = f16x2(y[0], y[1]) & keep16[0];
          dst[VtSlot::key(u, 2) / 2] = f16x2(y[2], y[3]) & keep16[1];
        } else {
          const uint32_t word = (e4m3x2(y[0], y[1]) | (e4m3x2(y[2], y[3]) << 16)) & keep;
          *reinterpret_cast<uint32_t*>(a.vt + row + pos) = word;
        }
      }
    }
    if constexpr (kFoldAmax) {  // over the 16 lane pairs holding the same channels
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int off = 2; off < 32; off *= 2) {
          true_amax[j] = max(true_amax[j], __shfl_xor_sync(0xFFFFFFFFu, true_amax[j], off));
        }
        if (lane < 2) atomicMax(a.true_amax + bh * kHeadDim + c + j, true_amax[j]);
      }
    }
  }
}

}  // namespace fp8attn::quant::vt
