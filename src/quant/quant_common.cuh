// Device pieces shared by the pre-pass kernels. Every FP32 operation here has a twin in
// model/prepass.cc: keep the two in the same order (docs/prepass.md).
#pragma once

#include <cfloat>
#include <cstdint>

namespace fp8attn::quant {

inline constexpr int kHeadDim = 128;
inline constexpr float kE4M3Max = 448.0f;
// H_128 is applied unnormalized (sqrt(128) x an orthogonal rotation) on both Q and K; the
// product's 128 is taken out of K's descale, exactly (a power of two).
inline constexpr float kHadamardDescale = 0.0078125f;

struct GroupScale {
  float inv, descale;
};

// Multiply by inv to quantize, by descale to dequantize. Below 2^-100 the reciprocal could
// overflow; such a group quantizes to zeros with scale 1 (so does amax = 0).
__device__ __forceinline__ GroupScale group_scale(float amax) {
  if (!(amax >= 0x1p-100f && amax <= FLT_MAX)) return {1.0f, 1.0f};
  return {__fdiv_rn(kE4M3Max, amax), __fdiv_rn(amax, kE4M3Max)};
}

// Two floats -> two E4M3 codes (RNE, saturating to +-448), `lo` in the low byte.
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

// 16 floats * inv -> 16 E4M3 codes in channel order (byte i of the result = value i).
__device__ __forceinline__ uint4 quantize16(const float (&x)[16], float inv) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    w[i] = e4m3x2(__fmul_rn(x[4 * i], inv), __fmul_rn(x[4 * i + 1], inv)) |
           (e4m3x2(__fmul_rn(x[4 * i + 2], inv), __fmul_rn(x[4 * i + 3], inv)) << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Eight BF16 codes packed in a uint4 -> floats (exact).
__device__ __forceinline__ void bf16x8_to_float(uint4 u, float* out) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(w[i] << 16);
    out[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

// 16 consecutive BF16 values (32 bytes, 16-byte aligned) -> floats.
__device__ __forceinline__ void load_bf16x16(const uint16_t* p, float (&out)[16]) {
  const uint4* v = reinterpret_cast<const uint4*>(p);
  const uint4 a = __ldg(v), b = __ldg(v + 1);
  bf16x8_to_float(a, out);
  bf16x8_to_float(b, out + 8);
}

// The random-sign Walsh-Hadamard transform of one 128-value row held by 8 consecutive lanes
// (lane l holds channels 16 l .. 16 l + 15). Butterflies with strides 1..8 are inside a thread,
// 16, 32, 64 across lanes (xor 1, 2, 4). At every butterfly (a, b) -> (a + b, a - b), a the lower
// channel: the same additions as model/prepass.cc's hadamard_rotate_128.
__device__ __forceinline__ void hadamard_row(float (&x)[16], int lane8, const uint32_t (&neg)[4]) {
  // This lane's 16 sign bits, picked with selects (a dynamic index would go to local memory).
  uint32_t word = neg[0];
  word = lane8 >= 2 ? neg[1] : word;
  word = lane8 >= 4 ? neg[2] : word;
  word = lane8 >= 6 ? neg[3] : word;
  const uint32_t bits = (lane8 & 1) ? word >> 16 : word & 0xFFFFu;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    if ((bits >> i) & 1u) x[i] = -x[i];
  }
#pragma unroll
  for (int h = 1; h < 16; h *= 2) {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      if (i & h) continue;
      const float a = x[i], b = x[i + h];
      x[i] = __fadd_rn(a, b);
      x[i + h] = __fsub_rn(a, b);
    }
  }
#pragma unroll
  for (int lane_bit = 1; lane_bit < 8; lane_bit *= 2) {
    const bool upper = (lane8 & lane_bit) != 0;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const float other = __shfl_xor_sync(0xFFFFFFFFu, x[i], lane_bit);
      x[i] = upper ? __fsub_rn(other, x[i]) : __fadd_rn(x[i], other);
    }
  }
}

}  // namespace fp8attn::quant
