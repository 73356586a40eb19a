// The rope entry's CPU mirror (model/prepass.cc with RopeHost) against references that do not use
// its rotation code: quarter-turn tables (cos, sin in {0, +-1}), whose rotation is exact on the
// BF16 codes (swaps and sign flips), so the mirror with the tables must give the same bytes as
// the plain mirror on the rotated codes, for every output and option set; the FP32 rotation
// within its derived rounding bound of an FP64 one; the quantized Q and K of real tables within
// E4M3's rounding of an FP64 rope + Hadamard; out-of-range positions refused. The GPU's bytes
// are compared with this mirror in tests/gpu/test_quant_rope.cu.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "model/codecs.h"
#include "model/prepass.h"
#include "tests/common/seed.h"

namespace fp8attn::model {
namespace {

constexpr int kD = 128, kHalf = 64;
using fp8attn::test::fresh_seed;

// BF16 codes of N(bias_c, 1), never +-0 (a quarter turn maps x to x + (+-0), which turns -0 into
// +0: the exactness argument needs nonzero values).
std::vector<uint16_t> random_codes(std::mt19937_64& rng, size_t n, float bias_std) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::vector<float> bias(kD);
  for (float& x : bias) x = bias_std * n01(rng);
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    do out[i] = float_to_bf16(bias[i % kD] + n01(rng));
    while ((out[i] & 0x7FFF) == 0);
  }
  return out;
}

struct Tables {
  std::vector<float> cos, sin;
  int max_positions;
  RopeHost at(int pos0) const { return {cos.data(), sin.data(), max_positions, pos0}; }
};

// Quarter turns: entry (p, i) is turn t = (7 p + 3 i + seed) % 4 of (cos, sin) = (1, 0),
// (0, 1), (-1, 0), (0, -1).
Tables quarter_tables(int max_positions, unsigned seed) {
  Tables t{std::vector<float>(size_t(max_positions) * kHalf),
           std::vector<float>(size_t(max_positions) * kHalf), max_positions};
  static const float kCos[4] = {1, 0, -1, 0}, kSin[4] = {0, 1, 0, -1};
  for (int p = 0; p < max_positions; ++p) {
    for (int i = 0; i < kHalf; ++i) {
      const int turn = static_cast<int>((7u * p + 3u * i + seed) % 4u);
      t.cos[size_t(p) * kHalf + i] = kCos[turn], t.sin[size_t(p) * kHalf + i] = kSin[turn];
    }
  }
  return t;
}

// Real tables: angle p * base^(-i / 64) (Llama's inv_freq), cos and sin in FP32.
Tables real_tables(int max_positions, double base) {
  Tables t{std::vector<float>(size_t(max_positions) * kHalf),
           std::vector<float>(size_t(max_positions) * kHalf), max_positions};
  for (int p = 0; p < max_positions; ++p) {
    for (int i = 0; i < kHalf; ++i) {
      const double a = p * std::pow(base, -double(i) / kHalf);
      t.cos[size_t(p) * kHalf + i] = static_cast<float>(std::cos(a));
      t.sin[size_t(p) * kHalf + i] = static_cast<float>(std::sin(a));
    }
  }
  return t;
}

// The quarter-turn rotation of a contiguous (b, s, h, 128) tensor on its BF16 codes (negation is
// the sign bit): row s uses table row pos0 + s.
std::vector<uint16_t> quarter_rotated(const std::vector<uint16_t>& x, int b, int s, int h,
                                      const Tables& t, int pos0) {
  std::vector<uint16_t> out(x.size());
  const auto neg = [](uint16_t c) { return static_cast<uint16_t>(c ^ 0x8000u); };
  for (int bi = 0; bi < b; ++bi) {
    for (int si = 0; si < s; ++si) {
      for (int hi = 0; hi < h; ++hi) {
        const size_t row = ((size_t(bi) * s + si) * h + hi) * kD;
        for (int i = 0; i < kHalf; ++i) {
          const float c = t.cos[size_t(pos0 + si) * kHalf + i];
          const float sn = t.sin[size_t(pos0 + si) * kHalf + i];
          const uint16_t a = x[row + i], bb = x[row + i + kHalf];
          uint16_t lo, hi2;
          if (c == 1) lo = a, hi2 = bb;                  // (1, 0)
          else if (sn == 1) lo = neg(bb), hi2 = a;       // (0, 1): (-b, a)
          else if (c == -1) lo = neg(a), hi2 = neg(bb);  // (-1, 0)
          else lo = bb, hi2 = neg(a);                    // (0, -1): (b, -a)
          out[row + i] = lo, out[row + i + kHalf] = hi2;
        }
      }
    }
  }
  return out;
}

template <typename T>
void expect_same_bytes(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0 && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << a.size() << " differ, first at " << first;
}

fp8attn_quant_options options_named(int which) {
  // The library's defaults (fp8attn_quant_options_init, not linked here: the CPU tests have no
  // libfp8attn).
  fp8attn_quant_options o{};
  o.smooth_k = 1, o.smooth_v = 1, o.hadamard_qk = 1;
  o.q_scale = FP8ATTN_Q_SCALE_TOKEN, o.v_scale = FP8ATTN_V_SCALE_CHANNEL;
  o.k_scale = FP8ATTN_K_SCALE_HEAD, o.hadamard_seed = 0x5EED5EED5EED5EEDull;
  switch (which) {
    case 1: o.centre = FP8ATTN_CENTRE_SAMPLE; break;
    case 2: o.hadamard_qk = 0; break;
    case 3: o.k_scale = FP8ATTN_K_SCALE_BLOCK128, o.q_scale = FP8ATTN_Q_SCALE_BLOCK128; break;
    case 4: o.smooth_k = 0, o.smooth_v = 0, o.v_scale = FP8ATTN_V_SCALE_HEAD; break;
    default: break;
  }
  return o;
}

// Mirror with quarter-turn tables == plain mirror on the codes rotated exactly, every output.
TEST(PrepassRope, QuarterTurnsEqualThePlainMirrorOnRotatedCodes) {
  const uint64_t seed = fresh_seed("PrepassRope.QuarterTurns");
  std::mt19937_64 rng(seed);
  const int B = 2, SQ = 77, SK = 301, H = 4, HKV = 2, q_pos0 = SK - SQ + 5, k_pos0 = 5;
  const Tables t = quarter_tables(SK + 9, static_cast<unsigned>(seed % 4));
  const auto q = random_codes(rng, size_t(B) * SQ * H * kD, 0.5f);
  const auto k = random_codes(rng, size_t(B) * SK * HKV * kD, 4.0f);
  const auto v = random_codes(rng, size_t(B) * SK * HKV * kD, 2.0f);
  const auto qr = quarter_rotated(q, B, SQ, H, t, q_pos0);
  const auto kr = quarter_rotated(k, B, SK, HKV, t, k_pos0);
  ASSERT_NE(qr, q);  // the turns move something
  for (int which = 0; which < 5; ++which) {
    SCOPED_TRACE(which);
    const fp8attn_quant_options o = options_named(which);
    const RopeHost kt = t.at(k_pos0), qt = t.at(q_pos0);
    const KvCacheHost fused = prepass_kv(contiguous_view(k, B, SK, HKV, kD),
                                         contiguous_view(v, B, SK, HKV, kD), o, 0,
                                         FP8ATTN_VT_E4M3, {}, &kt);
    const KvCacheHost plain = prepass_kv(contiguous_view(kr, B, SK, HKV, kD),
                                         contiguous_view(v, B, SK, HKV, kD), o);
    const auto qs = static_cast<fp8attn_q_scale>(o.q_scale);
    const QQuantHost fq = prepass_q(contiguous_view(q, B, SQ, H, kD), fused, qs, 0.0883f, &qt);
    const QQuantHost pq = prepass_q(contiguous_view(qr, B, SQ, H, kD), plain, qs, 0.0883f);
    expect_same_bytes(fused.k, plain.k, "k");
    expect_same_bytes(fused.vt, plain.vt, "vt");
    expect_same_bytes(fused.k_descale, plain.k_descale, "k_descale");
    expect_same_bytes(fused.v_descale, plain.v_descale, "v_descale");
    expect_same_bytes(fused.k_mean, plain.k_mean, "k_mean");
    expect_same_bytes(fused.v_mean, plain.v_mean, "v_mean");
    expect_same_bytes(fused.resampled, plain.resampled, "resampled");
    expect_same_bytes(fq.q, pq.q, "q");
    expect_same_bytes(fq.q_descale, pq.q_descale, "q_descale");
    expect_same_bytes(fq.lse_bias, pq.lse_bias, "lse_bias");
    // And the tables matter: without them the K bytes differ.
    const KvCacheHost none = prepass_kv(contiguous_view(k, B, SK, HKV, kD),
                                        contiguous_view(v, B, SK, HKV, kD), o);
    EXPECT_NE(none.k, fused.k);
  }
}

// rope_rotate_128 within its rounding bound of the FP64 rotation: with u = 2^-24, x' = fl(fl(a c)
// - fl(b s)) via one FMA differs from a c - b s by at most u |b s| (1 + u) + u |a c - b s|.
TEST(PrepassRope, RotationWithinItsRoundingBound) {
  const uint64_t seed = fresh_seed("PrepassRope.Rotation");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::uniform_real_distribution<double> angle(-3.2, 3.2);
  const double u = std::ldexp(1.0, -24);
  for (int trial = 0; trial < 2000; ++trial) {
    float x[kD], c[kHalf], s[kHalf];
    for (float& e : x) e = bf16_to_float(float_to_bf16(n01(rng) * 8));
    for (int i = 0; i < kHalf; ++i) {
      const double a = angle(rng);
      c[i] = static_cast<float>(std::cos(a)), s[i] = static_cast<float>(std::sin(a));
    }
    float y[kD];
    std::memcpy(y, x, sizeof y);
    rope_rotate_128(y, c, s);
    for (int i = 0; i < kHalf; ++i) {
      const double a = x[i], b = x[i + kHalf];
      const double lo = a * c[i] - b * s[i], hi = b * c[i] + a * s[i];
      const double tol_lo = u * (std::fabs(b * s[i]) * (1 + u) + std::fabs(lo)) + 1e-44;
      const double tol_hi = u * (std::fabs(a * s[i]) * (1 + u) + std::fabs(hi)) + 1e-44;
      ASSERT_LE(std::fabs(y[i] - lo), tol_lo) << "channel " << i << " trial " << trial;
      ASSERT_LE(std::fabs(y[i + kHalf] - hi), tol_hi) << "channel " << i + kHalf;
    }
  }
}

// Sylvester Hadamard entry.
double hadamard(int i, int j) { return (std::popcount(static_cast<unsigned>(i & j)) & 1) ? -1 : 1; }

// Quantized Q (per token) and K (per head, not smoothed) of real tables, dequantized, within
// E4M3's rounding (2^-4 relative, half a subnormal step of the scale) plus the FP32 error of the
// rope (the bound above, summed over the Hadamard's 128 terms) and of the butterflies, of the
// FP64 rope then Hadamard of the same BF16 inputs.
TEST(PrepassRope, RealTablesWithinE4M3OfFp64) {
  const uint64_t seed = fresh_seed("PrepassRope.RealTables");
  std::mt19937_64 rng(seed);
  const int B = 1, SQ = 40, SK = 130, H = 2, HKV = 1, q_pos0 = 200, k_pos0 = 110;
  const Tables t = real_tables(512, 10000.0);
  const auto q = random_codes(rng, size_t(B) * SQ * H * kD, 0.5f);
  const auto k = random_codes(rng, size_t(B) * SK * HKV * kD, 3.0f);
  const auto v = random_codes(rng, size_t(B) * SK * HKV * kD, 1.0f);
  fp8attn_quant_options o = options_named(4);  // no smoothing: dequantized = rotated input
  const RopeHost kt = t.at(k_pos0), qt = t.at(q_pos0);
  const KvCacheHost kv = prepass_kv(contiguous_view(k, B, SK, HKV, kD),
                                    contiguous_view(v, B, SK, HKV, kD), o, 0, FP8ATTN_VT_E4M3,
                                    {}, &kt);
  const QQuantHost qq = prepass_q(contiguous_view(q, B, SQ, H, kD), kv, FP8ATTN_Q_SCALE_TOKEN,
                                  0.0883f, &qt);
  const double u = std::ldexp(1.0, -24);
  auto check = [&](const std::vector<uint16_t>& x, int S, int heads, int pos0,
                   const std::vector<uint8_t>& codes, auto descale_of, const char* what) {
    for (int s = 0; s < S; ++s) {
      for (int h = 0; h < heads; ++h) {
        const size_t row = (size_t(s) * heads + h) * kD;
        double r[kD], err_rope = 0, l1 = 0;
        for (int i = 0; i < kHalf; ++i) {
          const double a = bf16_to_float(x[row + i]), b = bf16_to_float(x[row + i + kHalf]);
          const double c = t.cos[size_t(pos0 + s) * kHalf + i], sn = t.sin[size_t(pos0 + s) * kHalf + i];
          r[i] = a * c - b * sn, r[i + kHalf] = b * c + a * sn;
          err_rope += u * (std::fabs(b * sn) + std::fabs(r[i]) + std::fabs(a * sn) +
                           std::fabs(r[i + kHalf])) * (1 + u);
        }
        for (double e : r) l1 += std::fabs(e);
        const double fp32_error = err_rope + 7 * std::ldexp(l1 + err_rope, -24);
        const double descale = descale_of(s, h);
        for (int j = 0; j < kD; ++j) {
          double exact = 0;
          for (int i = 0; i < kD; ++i) {
            const double sg = fp8attn_hadamard_sign_negative(o.hadamard_seed, i) ? -1.0 : 1.0;
            exact += hadamard(i, j) * sg * r[i];
          }
          const double deq = e4m3_to_float(codes[row + j]) * descale;
          const double tol = std::ldexp(std::fabs(exact) + fp32_error, -4) + fp32_error +
                             descale * std::ldexp(1.0, -10) + 1e-6 * std::fabs(exact);
          ASSERT_LE(std::fabs(deq - exact), tol) << what << " row " << s << " head " << h
                                                 << " channel " << j;
        }
      }
    }
  };
  check(q, SQ, H, q_pos0, qq.q, [&](int s, int h) { return double(qq.q_descale[size_t(h) * SQ + s]); },
        "q");
  // K's descale carries H_128's 1/128 (taken out on K): the rotated rows are codes * descale * 128.
  check(k, SK, HKV, k_pos0, kv.k, [&](int s, int h) {
    return double(kv.k_descale[size_t(h) * ((SK + 127) / 128) + s / 128]) * 128.0; }, "k");
}

TEST(PrepassRope, PositionsOutOfRangeAreRefused) {
  const Tables t = quarter_tables(64, 0);
  std::mt19937_64 rng(1);
  const auto k = random_codes(rng, size_t(1) * 60 * 1 * kD, 1.0f);
  const auto view = contiguous_view(k, 1, 60, 1, kD);
  fp8attn_quant_options o = options_named(0);
  RopeHost r = t.at(5);  // rows 5 .. 64: one past the table
  EXPECT_THROW(prepass_kv(view, view, o, 0, FP8ATTN_VT_E4M3, {}, &r), std::invalid_argument);
  r = t.at(-1);
  EXPECT_THROW(prepass_kv(view, view, o, 0, FP8ATTN_VT_E4M3, {}, &r), std::invalid_argument);
  r = t.at(4);  // rows 4 .. 63: fits
  EXPECT_NO_THROW(prepass_kv(view, view, o, 0, FP8ATTN_VT_E4M3, {}, &r));
}

}  // namespace
}  // namespace fp8attn::model
