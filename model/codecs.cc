#include "model/codecs.h"

#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>

namespace fp8attn::model {
namespace {

// A binary format with kMan explicit mantissa bits and exponent bias kBias; kMinExp = 1 - kBias
// is the exponent of the smallest normal number. Rounds |x| (finite, non-negative) with RNE to
// the format's grid without any upper limit; the caller handles overflow.
template <int kMan, int kBias>
float round_grid(float a) {
  constexpr int kMinExp = 1 - kBias;
  const uint32_t u = std::bit_cast<uint32_t>(a);
  const int e = static_cast<int>(u >> 23) - 127;  // float subnormals: e = -127, far below kMinExp
  if (e >= kMinExp) {
    // Normal in the target: RNE on the float's bit pattern; a carry moves into the exponent.
    constexpr int shift = 23 - kMan;
    const uint32_t lsb = (u >> shift) & 1u;
    const uint32_t r = (u + ((1u << (shift - 1)) - 1u) + lsb) & ~((1u << shift) - 1u);
    return std::bit_cast<float>(r);
  }
  // Subnormal in the target: multiples of 2^(kMinExp - kMan). Scaling by a power of two is exact;
  // rint rounds to nearest even in the default rounding mode.
  const float q = std::ldexp(a, kMan - kMinExp);
  return std::ldexp(std::rint(q), kMinExp - kMan);
}

// Code bits (without sign) of a value already on the grid.
template <int kMan, int kBias>
uint32_t encode_grid(float a) {
  constexpr int kMinExp = 1 - kBias;
  if (a == 0.0f) return 0;
  const uint32_t u = std::bit_cast<uint32_t>(a);
  const int e = static_cast<int>(u >> 23) - 127;
  if (e >= kMinExp) {
    const uint32_t man = (u >> (23 - kMan)) & ((1u << kMan) - 1u);
    return (static_cast<uint32_t>(e + kBias) << kMan) | man;
  }
  return static_cast<uint32_t>(std::ldexp(a, kMan - kMinExp));
}

template <int kExp, int kMan, int kBias>
float decode(uint32_t code) {
  const uint32_t sign = code >> (kExp + kMan);
  const uint32_t e = (code >> kMan) & ((1u << kExp) - 1u);
  const uint32_t m = code & ((1u << kMan) - 1u);
  float v;
  if (e == 0) {
    v = std::ldexp(static_cast<float>(m), 1 - kBias - kMan);
  } else {
    v = std::ldexp(static_cast<float>((1u << kMan) | m), static_cast<int>(e) - kBias - kMan);
  }
  return sign ? -v : v;
}

std::array<float, 256> make_e4m3_table() {
  std::array<float, 256> t{};
  for (uint32_t c = 0; c < 256; ++c) {
    t[c] = ((c & 0x7Fu) == 0x7Fu) ? std::numeric_limits<float>::quiet_NaN() : decode<4, 3, 7>(c);
  }
  return t;
}

std::array<float, 256> make_e5m2_table() {
  std::array<float, 256> t{};
  for (uint32_t c = 0; c < 256; ++c) {
    const uint32_t e = (c >> 2) & 0x1Fu;
    const uint32_t m = c & 3u;
    if (e == 31) {
      t[c] = m ? std::numeric_limits<float>::quiet_NaN()
               : ((c & 0x80u) ? -std::numeric_limits<float>::infinity()
                              : std::numeric_limits<float>::infinity());
    } else {
      t[c] = decode<5, 2, 15>(c);
    }
  }
  return t;
}

const std::array<float, 256> kE4M3Table = make_e4m3_table();
const std::array<float, 256> kE5M2Table = make_e5m2_table();

}  // namespace

const char* format_name(Format f) {
  switch (f) {
    case Format::E4M3: return "e4m3";
    case Format::E5M2: return "e5m2";
    case Format::BF16: return "bf16";
    case Format::FP16: return "fp16";
    case Format::INT8: return "int8";
    case Format::FP32: return "fp32";
  }
  return "?";
}

uint8_t float_to_e4m3(float x) {
  const uint32_t sign = (std::bit_cast<uint32_t>(x) >> 24) & 0x80u;
  if (std::isnan(x)) return static_cast<uint8_t>(sign | 0x7Fu);
  float a = std::fabs(x);
  if (a >= kE4M3Max) return static_cast<uint8_t>(sign | 0x7Eu);  // satfinite (inf included)
  a = round_grid<3, 7>(a);
  if (a > kE4M3Max) a = kE4M3Max;  // cannot happen below 448, kept for clarity
  return static_cast<uint8_t>(sign | encode_grid<3, 7>(a));
}

float e4m3_to_float(uint8_t code) { return kE4M3Table[code]; }

uint8_t float_to_e5m2(float x, bool saturate) {
  const uint32_t sign = (std::bit_cast<uint32_t>(x) >> 24) & 0x80u;
  if (std::isnan(x)) return static_cast<uint8_t>(sign | 0x7Fu);
  float a = std::fabs(x);
  if (std::isinf(a)) return static_cast<uint8_t>(sign | (saturate ? 0x7Bu : 0x7Cu));
  a = round_grid<2, 15>(a);
  if (a > kE5M2Max) return static_cast<uint8_t>(sign | (saturate ? 0x7Bu : 0x7Cu));
  return static_cast<uint8_t>(sign | encode_grid<2, 15>(a));
}

float e5m2_to_float(uint8_t code) { return kE5M2Table[code]; }

uint16_t float_to_bf16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  const uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7FFFu + lsb) >> 16);  // overflow carries into inf
}

float bf16_to_float(uint16_t code) { return std::bit_cast<float>(static_cast<uint32_t>(code) << 16); }

uint16_t float_to_fp16(float x) {
  const uint32_t sign = (std::bit_cast<uint32_t>(x) >> 16) & 0x8000u;
  if (std::isnan(x)) return static_cast<uint16_t>(sign | 0x7E00u);
  float a = std::fabs(x);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | 0x7C00u);
  if (a >= 131072.0f) return static_cast<uint16_t>(sign | 0x7C00u);  // keeps round_grid in range
  a = round_grid<10, 15>(a);
  if (a > kFP16Max) return static_cast<uint16_t>(sign | 0x7C00u);
  return static_cast<uint16_t>(sign | encode_grid<10, 15>(a));
}

float fp16_to_float(uint16_t code) {
  const uint32_t e = (code >> 10) & 0x1Fu;
  if (e == 31) {
    if (code & 0x3FFu) return std::numeric_limits<float>::quiet_NaN();
    return (code & 0x8000u) ? -std::numeric_limits<float>::infinity()
                            : std::numeric_limits<float>::infinity();
  }
  return decode<5, 10, 15>(code);
}

int8_t float_to_int8(float x) {
  if (std::isnan(x)) return 0;
  const float r = std::rint(std::fmin(std::fmax(x, -127.0f), 127.0f));
  return static_cast<int8_t>(r);
}

float round_to(Format f, float x) {
  switch (f) {
    case Format::E4M3: return e4m3_to_float(float_to_e4m3(x));
    case Format::E5M2: return e5m2_to_float(float_to_e5m2(x));
    case Format::BF16: return bf16_to_float(float_to_bf16(x));
    case Format::FP16: return fp16_to_float(float_to_fp16(x));
    case Format::INT8: return static_cast<float>(float_to_int8(x));
    case Format::FP32: return x;
  }
  return x;
}

float format_max(Format f) {
  switch (f) {
    case Format::E4M3: return kE4M3Max;
    case Format::E5M2: return kE5M2Max;
    case Format::BF16: return std::bit_cast<float>(0x7F7F0000u);
    case Format::FP16: return kFP16Max;
    case Format::INT8: return static_cast<float>(kINT8Max);
    case Format::FP32: return FLT_MAX;
  }
  return FLT_MAX;
}

void floats_to_e4m3(const float* x, uint8_t* codes, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) codes[i] = float_to_e4m3(x[i]);
}

void e4m3_to_floats(const uint8_t* codes, float* x, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) x[i] = kE4M3Table[codes[i]];
}

void floats_to_bf16(const float* x, uint16_t* codes, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) codes[i] = float_to_bf16(x[i]);
}

void bf16_to_floats(const uint16_t* codes, float* x, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) x[i] = bf16_to_float(codes[i]);
}

void round_inplace(Format f, float* x, int64_t n) {
  if (f == Format::FP32) return;
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) x[i] = round_to(f, x[i]);
}

}  // namespace fp8attn::model
