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

// Four floats -> four E4M3 bytes (round to nearest even, saturate to +-448), x0 in the lowest byte.
__device__ __forceinline__ uint32_t pack_e4m3x4(float x0, float x1, float x2, float x3) {
  uint16_t lo, hi;
  // cvt puts its first source in the upper byte.
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(x1), "f"(x0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(x3), "f"(x2));
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
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
