// Numeric conversions of the softmax stage.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

namespace fp8attn::ptx {

// 2^x on the MUFU unit (flush-to-zero; ex2(-inf) = 0).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 2^x on the FMA pipe, for x <= 128: x = n + f with n = round(x), f in [-0.5, 0.5]; 2^f from a
// degree-3 minimax polynomial (max relative error 7.6e-5, far below E4M3's 2^-4 rounding of P);
// n goes straight into the exponent bits. x < -126 (and -inf) clamps to ~2^-126.
__device__ __forceinline__ float exp2_poly(float x) {
  x = fmaxf(x, -126.f);
  const float t = x + 12582912.f;  // 1.5 * 2^23: round(x) lands in the low mantissa bits
  const float f = x - (t - 12582912.f);
  float p = fmaf(f, 0.055174168f, 0.24261737f);
  p = fmaf(p, f, 0.69326109f);
  p = fmaf(p, f, 0.99992758f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// Four floats -> four E4M3 bytes (round to nearest even, saturate to +-448), x0 in the lowest byte.
__device__ __forceinline__ uint32_t pack_e4m3x4(float x0, float x1, float x2, float x3) {
  uint16_t lo, hi;
  // cvt puts its first source in the upper byte.
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(x1), "f"(x0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(x3), "f"(x2));
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// Two floats -> FP16x2 (round to nearest even; overflow to inf, subnormals kept), x0 in the low half.
__device__ __forceinline__ uint32_t pack_f16x2(float x0, float x1) {
  uint32_t h2;
  // cvt puts its first source in the upper half.
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h2) : "f"(x1), "f"(x0));
  return h2;
}

// Two E4M3 bytes (lowest byte first) -> FP16x2 (lowest byte in the low half), exact.
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint16_t v) {
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(v));
  return h2;
}

// Two E4M3 bytes (lowest byte first) -> two floats, exact.
__device__ __forceinline__ void unpack_e4m3x2(uint16_t v, float& x0, float& x1) {
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(v));
  __half2 h = *reinterpret_cast<__half2*>(&h2);
  x0 = __low2float(h);
  x1 = __high2float(h);
}

}  // namespace fp8attn::ptx
