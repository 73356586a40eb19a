// Codecs against an independent formula: every code decoded by (-1)^s 2^(e-bias) (1 + m/2^M)
// in double, every rounding boundary (midpoints between neighbouring values, one float ulp either
// side of them, the saturation thresholds) encoded and checked against a nearest-value search
// with ties to the even code.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "model/codecs.h"

namespace fm = fp8attn::model;

namespace {

// Value of a code of a binary format with E exponent bits, M mantissa bits and bias, by formula.
double formula(uint32_t code, int E, int M, int bias) {
  const int s = (code >> (E + M)) & 1;
  const int e = (code >> M) & ((1 << E) - 1);
  const int m = code & ((1 << M) - 1);
  const double mag = e == 0 ? std::ldexp(static_cast<double>(m), 1 - bias - M)
                            : std::ldexp(1.0 + m / std::ldexp(1.0, M), e - bias);
  return s ? -mag : mag;
}

struct Grid {  // the finite non-negative values of a format, ascending, with their codes
  std::vector<double> value;
  std::vector<uint32_t> code;
};

Grid make_grid(int E, int M, int bias, uint32_t max_code) {
  Grid g;
  for (uint32_t c = 0; c <= max_code; ++c) {
    g.value.push_back(formula(c, E, M, bias));
    g.code.push_back(c);
  }
  for (size_t i = 1; i < g.value.size(); ++i) EXPECT_LT(g.value[i - 1], g.value[i]);
  return g;
}

// Nearest grid value to |x| with ties to the even code; |x| beyond the top value: the top code
// when `saturate`, else code max_code + 1 (the infinity or overflow pattern, checked by caller).
uint32_t nearest(const Grid& g, double a) {
  auto it = std::lower_bound(g.value.begin(), g.value.end(), a);
  if (it == g.value.end()) return g.code.back();
  const size_t hi = it - g.value.begin();
  if (*it == a || hi == 0) return g.code[hi];
  const size_t lo = hi - 1;
  const double dlo = a - g.value[lo], dhi = g.value[hi] - a;
  if (dlo < dhi) return g.code[lo];
  if (dhi < dlo) return g.code[hi];
  return (g.code[lo] & 1) == 0 ? g.code[lo] : g.code[hi];
}

// Points that probe every boundary: each value, each midpoint, and one float ulp either side.
std::vector<float> probes(const Grid& g, double beyond) {
  std::vector<float> p;
  auto add = [&](double x) {
    const float f = static_cast<float>(x);
    for (float y : {f, std::nextafter(f, 0.0f), std::nextafter(f, std::numeric_limits<float>::max())}) {
      p.push_back(y);
      p.push_back(-y);
    }
  };
  for (size_t i = 0; i < g.value.size(); ++i) {
    add(g.value[i]);
    if (i + 1 < g.value.size()) add(0.5 * (g.value[i] + g.value[i + 1]));
  }
  add(beyond);
  add(2.0 * beyond);
  add(1e-30);
  add(1e30);
  p.push_back(std::numeric_limits<float>::denorm_min());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> e(-30.f, 30.f);
  for (int i = 0; i < 20000; ++i) add(std::exp2(e(rng)));
  return p;
}

}  // namespace

TEST(Codecs, E4M3DecodesEveryCode) {
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = fm::e4m3_to_float(static_cast<uint8_t>(c));
    if ((c & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(v)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(v), formula(c, 4, 3, 7)) << c;
      EXPECT_EQ(fm::float_to_e4m3(v), c) << c;  // round trip (+0 and -0 keep their sign)
    }
  }
  EXPECT_EQ(fm::e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(fm::e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(fm::e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // smallest normal
}

TEST(Codecs, E4M3RoundsEveryBoundary) {
  const Grid g = make_grid(4, 3, 7, 0x7E);  // 0 .. 448
  for (float x : probes(g, 464.0)) {
    const uint32_t want = (std::signbit(x) ? 0x80u : 0u) | nearest(g, std::fabs(static_cast<double>(x)));
    ASSERT_EQ(fm::float_to_e4m3(x), want) << "x = " << x;
  }
  EXPECT_EQ(fm::float_to_e4m3(464.0f), 0x7E);   // tie between 448 (even) and 480: 448
  EXPECT_EQ(fm::float_to_e4m3(1e9f), 0x7E);     // satfinite
  EXPECT_EQ(fm::float_to_e4m3(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(fm::float_to_e4m3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(fm::float_to_e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7F, 0x7F);
  EXPECT_EQ(fm::float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);            // tie to 0 (even)
  EXPECT_EQ(fm::float_to_e4m3(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(fm::float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);            // tie 1 -> 2 (even)
}

TEST(Codecs, E5M2DecodesAndRounds) {
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = fm::e5m2_to_float(static_cast<uint8_t>(c));
    const int e = (c >> 2) & 31;
    if (e == 31) {
      EXPECT_TRUE((c & 3) ? std::isnan(v) : std::isinf(v)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(v), formula(c, 5, 2, 15)) << c;
      EXPECT_EQ(fm::float_to_e5m2(v), c) << c;
    }
  }
  const Grid g = make_grid(5, 2, 15, 0x7B);  // 0 .. 57344
  const double overflow = 61440.0;           // midpoint 57344 .. 65536
  for (float x : probes(g, overflow)) {
    const double a = std::fabs(static_cast<double>(x));
    const uint32_t sign = std::signbit(x) ? 0x80u : 0u;
    ASSERT_EQ(fm::float_to_e5m2(x, true), sign | nearest(g, a)) << "x = " << x;
    // Without saturation, everything that rounds above 57344 becomes inf (0x7C); the tie at
    // 61440 goes to the even code 0x7C (inf), as IEEE RNE does.
    const uint32_t want = a >= overflow ? 0x7Cu : nearest(g, a);
    ASSERT_EQ(fm::float_to_e5m2(x, false), sign | want) << "x = " << x;
  }
}

TEST(Codecs, FP16EveryCodeAndBoundary) {
  Grid g;
  for (uint32_t c = 0; c < 0x7C00; ++c) {
    const float v = fm::fp16_to_float(static_cast<uint16_t>(c));
    ASSERT_EQ(static_cast<double>(v), formula(c, 5, 10, 15)) << c;
    ASSERT_EQ(fm::fp16_to_float(static_cast<uint16_t>(c | 0x8000)), -v);
    ASSERT_EQ(fm::float_to_fp16(v), c);
    g.value.push_back(v);
    g.code.push_back(c);
  }
  const double overflow = 65520.0;  // midpoint 65504 .. 65536
  for (float x : probes(g, overflow)) {
    const double a = std::fabs(static_cast<double>(x));
    const uint32_t want = a >= overflow ? 0x7C00u : nearest(g, a);
    ASSERT_EQ(fm::float_to_fp16(x), (std::signbit(x) ? 0x8000u : 0u) | want) << "x = " << x;
  }
  EXPECT_TRUE(std::isnan(fm::fp16_to_float(fm::float_to_fp16(std::nanf("")))));
}

TEST(Codecs, BF16EveryCodeAndBoundary) {
  Grid g;
  for (uint32_t c = 0; c < 0x7F80; ++c) {
    const float v = fm::bf16_to_float(static_cast<uint16_t>(c));
    ASSERT_EQ(static_cast<double>(v), formula(c, 8, 7, 127)) << c;
    ASSERT_EQ(fm::float_to_bf16(v), c);
    g.value.push_back(v);
    g.code.push_back(c);
  }
  // Overflow threshold: midpoint between the largest bf16 and 2^128.
  const double overflow = 0.5 * (g.value.back() + std::ldexp(1.0, 128));
  for (float x : probes(g, 1e30)) {
    const double a = std::fabs(static_cast<double>(x));
    const uint32_t want = a >= overflow ? 0x7F80u : nearest(g, a);
    ASSERT_EQ(fm::float_to_bf16(x), (std::signbit(x) ? 0x8000u : 0u) | want) << "x = " << x;
  }
  EXPECT_EQ(fm::float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to inf
  EXPECT_TRUE(std::isnan(fm::bf16_to_float(fm::float_to_bf16(std::nanf("")))));
}

TEST(Codecs, INT8RoundsHalfToEvenAndSaturates) {
  for (int k = -130; k <= 130; ++k) {
    for (double f : {0.0, 0.5, 0.25, 0.75}) {
      const double x = k + f;
      double r = std::floor(x);
      const double frac = x - r;
      if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0)) r += 1;
      r = std::clamp(r, -127.0, 127.0);
      ASSERT_EQ(fm::float_to_int8(static_cast<float>(x)), static_cast<int>(r)) << x;
    }
  }
}

TEST(Codecs, BulkMatchesScalar) {
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.f, 100.f);
  std::vector<float> x(100000);
  for (float& v : x) v = n(rng);
  std::vector<uint8_t> c(x.size());
  fm::floats_to_e4m3(x.data(), c.data(), static_cast<int64_t>(x.size()));
  std::vector<float> back(x.size());
  fm::e4m3_to_floats(c.data(), back.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(c[i], fm::float_to_e4m3(x[i]));
    ASSERT_EQ(back[i], fm::round_e4m3(x[i]));
  }
}

TEST(Codecs, InlineFormsMatch) {
  const Grid g = make_grid(4, 3, 7, 0x7E);
  std::vector<float> xs = probes(g, 464.0);
  const Grid gb = make_grid(8, 7, 127, 0x7F7F);
  for (float x : probes(gb, 1e30)) xs.push_back(x);
  for (float x : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()}) {
    xs.push_back(x);
  }
  for (float x : xs) {
    ASSERT_EQ(std::bit_cast<uint32_t>(fm::round_e4m3_inline(x)), std::bit_cast<uint32_t>(fm::round_e4m3(x))) << x;
    ASSERT_EQ(std::bit_cast<uint32_t>(fm::round_bf16_inline(x)), std::bit_cast<uint32_t>(fm::round_bf16(x))) << x;
  }
  EXPECT_TRUE(std::isnan(fm::round_e4m3_inline(std::nanf(""))));
  EXPECT_TRUE(std::isnan(fm::round_bf16_inline(std::bit_cast<float>(0x7F800001u))));
}
