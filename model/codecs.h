// Bit-exact number formats: float <-> E4M3 (fn), E5M2, BF16, FP16, INT8.
//
// Every rounding is round-to-nearest-even (RNE) on the exact float value, as the GPU's cvt.rn.*
// instructions do. E4M3 is the `fn` variant (no infinities; S.1111.111 is NaN; max 448) and
// always saturates to +-448 like cvt.rn.satfinite.e4m3x2.f32 (+-inf -> +-448, NaN -> NaN).
// E5M2 has infinities; it saturates to +-57344 by default (satfinite), or overflows to inf.
// BF16 and FP16 overflow to inf (cvt.rn.bf16.f32, __float2half_rn). INT8 is symmetric:
// rint(x) clamped to [-127, 127].
#ifndef FP8ATTN_MODEL_CODECS_H_
#define FP8ATTN_MODEL_CODECS_H_

#include <bit>
#include <cstdint>

namespace fp8attn::model {

inline constexpr float kE4M3Max = 448.0f;
inline constexpr float kE5M2Max = 57344.0f;
inline constexpr float kFP16Max = 65504.0f;
inline constexpr int kINT8Max = 127;

enum class Format { E4M3, E5M2, BF16, FP16, INT8, FP32 };
const char* format_name(Format f);

uint8_t float_to_e4m3(float x);
float e4m3_to_float(uint8_t code);
uint8_t float_to_e5m2(float x, bool saturate = true);
float e5m2_to_float(uint8_t code);
uint16_t float_to_bf16(float x);
float bf16_to_float(uint16_t code);
uint16_t float_to_fp16(float x);
float fp16_to_float(uint16_t code);
int8_t float_to_int8(float x);
inline float int8_to_float(int8_t code) { return static_cast<float>(code); }

// x rounded to the format and back (the value the format holds). FP32 returns x.
float round_to(Format f, float x);
inline float round_e4m3(float x) { return e4m3_to_float(float_to_e4m3(x)); }
inline float round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

// Branchless inline forms of round_e4m3 and round_bf16 for the emulation's inner loops (the
// compiler vectorizes them). Bit-identical to the functions above (tests/cpu/test_codecs.cc).
inline float round_e4m3_inline(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t au = u & 0x7FFFFFFFu;
  const float a = std::bit_cast<float>(au);
  // Normal E4M3 (a >= 2^-6): RNE to 3 mantissa bits on the bit pattern (a carry moves into the
  // exponent). Subnormal: multiples of 2^-9, by the float addition's own RNE at 2^14.
  const uint32_t rn = (au + 0x7FFFFu + ((au >> 20) & 1u)) & 0xFFF00000u;
  float r = a < 0.015625f ? (a + 16384.0f) - 16384.0f : std::bit_cast<float>(rn);
  r = r > 448.0f ? 448.0f : r;  // satfinite (inf included); NaN stays NaN
  return std::bit_cast<float>(std::bit_cast<uint32_t>(r) | (u & 0x80000000u));
}
inline float round_bf16_inline(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? std::bit_cast<float>(u | 0x00400000u)
                                          : std::bit_cast<float>(r);
}

// Largest finite value of the format (FP32: FLT_MAX); the quantization scales use it.
float format_max(Format f);

// Bulk conversions (n elements; OpenMP-parallel for large n).
void floats_to_e4m3(const float* x, uint8_t* codes, int64_t n);
void e4m3_to_floats(const uint8_t* codes, float* x, int64_t n);
void floats_to_bf16(const float* x, uint16_t* codes, int64_t n);
void bf16_to_floats(const uint16_t* codes, float* x, int64_t n);
void round_inplace(Format f, float* x, int64_t n);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_CODECS_H_
