// The rotary embedding of the rope entry in registers (quant/launch.h RopeRows): a lane of
// RowLanes<L> holds run hi (channels c) and run hi + kChunks / 2 (channels c + 64), so the
// NeoX "rotate_half" pairs never leave the thread. Used by the statistics pass (kv_stats.cu), the
// sample (kv_one_pass.cu) and the row tiles (rows_tile.cuh) when their kRope flag is set;
// model/prepass.cc rope_rotate_128 repeats the operations.
#pragma once

#include "quant/lanes.h"
#include "quant/launch.h"
#include "quant/quant_common.cuh"

namespace fp8attn::quant {

inline constexpr int kRopeHalf = kHeadDim / 2;  // table entries per position

// x'_c = fma(x_c, cos, -(x_{c+64} sin)), x'_{c+64} = fma(x_{c+64}, cos, x_c sin): one product
// rounded, then one FMA, on both sides (model/prepass.cc). Row s uses table row pos0 + s (the
// caller checked pos0 + s < max_positions for every valid row; call it for valid rows only).
template <int L>
__device__ __forceinline__ void rope_runs(const RopeRows& r, int s, int lane,
                                          float (&x)[RowLanes<L>::kValues]) {
  constexpr int kHalf = RowLanes<L>::kChunks / 2;
  static_assert(RowLanes<L>::channel(kHalf, 0, 0) == kRopeHalf, "run hi + kHalf is channel + 64");
  const int64_t row = static_cast<int64_t>(r.pos0 + s) * kRopeHalf;
#pragma unroll
  for (int hi = 0; hi < kHalf; ++hi) {
    // 4 entries of each table at a time: 8 registers live, not 16 (the held K tile is at its
    // register limit).
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int64_t e = row + RowLanes<L>::channel(hi, lane, 4 * q);
      const float4 c = ld_f32x4_coherent(r.cos + e), sn = ld_f32x4_coherent(r.sin + e);
      const float cv[4] = {c.x, c.y, c.z, c.w}, sv[4] = {sn.x, sn.y, sn.z, sn.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int j = 4 * q + i;
        const float a = x[8 * hi + j], b = x[8 * (hi + kHalf) + j];
        x[8 * hi + j] = __fmaf_rn(a, cv[i], -__fmul_rn(b, sv[i]));
        x[8 * (hi + kHalf) + j] = __fmaf_rn(b, cv[i], __fmul_rn(a, sv[i]));
      }
    }
  }
}

// The Hadamard sign flips after the rope (on FP32 values: exact, as on the BF16 codes): mask
// word i as bf16x8_to_float_signed takes it (bit 15: value 2i, bit 31: value 2i + 1).
__device__ __forceinline__ void flip_signs8(float* x, const uint32_t* mask) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[2 * i] = __uint_as_float(__float_as_uint(x[2 * i]) ^ ((mask[i] << 16) & 0x80000000u));
    x[2 * i + 1] = __uint_as_float(__float_as_uint(x[2 * i + 1]) ^ (mask[i] & 0x80000000u));
  }
}

// One key's runs as the statistics pass and the sample read them: with kRope, decoded, rotated by
// table row s when the key exists (`valid`; the rope acts on the unsigned values), then given the
// Hadamard's sign flips (kRotate); without kRope, decode_runs with the flips in the decode.
template <int L, int kChunks, bool kRotate, bool kRope>
__device__ __forceinline__ void decode_key_runs(const uint4 (&raw)[kChunks], const SignTable<L>& signs,
                                                int lane, const RopeRows& rope, bool valid, int s,
                                                float (&v)[RowLanes<L>::kValues]) {
  if constexpr (kRope) {
    decode_runs<L, kChunks, false>(raw, signs, lane, v);
    if (valid) rope_runs<L>(rope, s, lane, v);
    if constexpr (kRotate) {
#pragma unroll
      for (int hi = 0; hi < kChunks; ++hi) {
        uint32_t mask[4];
        sign_masks_here<L>(signs, lane, hi, mask);
        flip_signs8(&v[8 * hi], mask);
      }
    }
  } else {
    decode_runs<L, kChunks, kRotate>(raw, signs, lane, v);
  }
}

}  // namespace fp8attn::quant
