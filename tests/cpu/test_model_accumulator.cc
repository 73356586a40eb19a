// The aligned-accumulation rule (model/accumulator.h) on the microbenchmark's crafted dot products,
// the engine under it, the accurate-mode scheme, and the head-dim-64 padding claim.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "model/accumulator.h"
#include "model/codecs.h"
#include "model/evaluate.h"
#include "model/metrics.h"
#include "model/reference.h"
#include "model/scheme.h"

namespace fm = fp8attn::model;

namespace {

// 2^8 at position 0 and `small` at position `at` of a 32-product dot (b = 1).
float big_plus(const fm::AlignedRule& r, float small, int at = 1, float c = 0.0f) {
  std::vector<float> a(32, 0.0f), b(32, 1.0f);
  a[0] = 256.0f;
  a[at] = small;
  return fm::aligned_dot(r, c, a.data(), b.data(), 32);
}

fm::Tensor gaussian(int s, int h, int d, uint32_t seed, float sd = 1.0f) {
  fm::Tensor t(1, s, h, d);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, sd);
  for (float& x : t.data) x = fm::round_bf16(n(rng));
  return t;
}

fm::Tensor pad128(const fm::Tensor& x) {
  fm::Tensor p(x.b, x.s, x.h, 128);
  for (int s = 0; s < x.s; ++s)
    for (int h = 0; h < x.h; ++h)
      for (int c = 0; c < x.d; ++c) p(0, s, h, c) = x(0, s, h, c);
  return p;
}

}  // namespace

TEST(AlignedRule, FractionBitsBelowTheLargestTerm) {
  const fm::AlignedRule r;  // 13 bits, group 32, C aligned, toward zero
  EXPECT_EQ(big_plus(r, std::ldexp(1.0f, 8 - 13)), 256.0f + std::ldexp(1.0f, 8 - 13));
  EXPECT_EQ(big_plus(r, std::ldexp(1.0f, 8 - 14)), 256.0f);
  EXPECT_EQ(big_plus(r, std::ldexp(1.0f, 8 - 14), 31), 256.0f);
}

TEST(AlignedRule, Rounding) {
  const float unit = std::ldexp(1.0f, 8 - 13);
  fm::AlignedRule r;
  r.rounding = fm::AccRounding::kTowardZero;
  EXPECT_EQ(big_plus(r, 0.75f * unit), 256.0f);
  EXPECT_EQ(big_plus(r, -0.25f * unit), 256.0f);
  r.rounding = fm::AccRounding::kDown;
  EXPECT_EQ(big_plus(r, 0.75f * unit), 256.0f);
  EXPECT_EQ(big_plus(r, -0.25f * unit), 256.0f - unit);
  r.rounding = fm::AccRounding::kNearest;
  EXPECT_EQ(big_plus(r, 0.75f * unit), 256.0f + unit);
  EXPECT_EQ(big_plus(r, -0.25f * unit), 256.0f);
}

TEST(AlignedRule, GroupsAndTheRunningSum) {
  const float tiny = std::ldexp(1.0f, 8 - 20);
  fm::AlignedRule r;
  r.group = 4;
  // In the big product's group the small one is cut; in the next group it is aligned with C
  // (= 2^8 by then) when C joins the alignment, and kept when C is added in FP32.
  EXPECT_EQ(big_plus(r, tiny, 1), 256.0f);
  EXPECT_EQ(big_plus(r, tiny, 5), 256.0f);
  r.c_aligned = false;
  EXPECT_EQ(big_plus(r, tiny, 5), 256.0f + tiny);
  // Cancellation: 2^8 - 2^8 + small loses the small term when all three share a group.
  r = fm::AlignedRule{};
  std::vector<float> a(32, 0.0f), b(32, 1.0f);
  a[0] = 256.0f;
  a[1] = -256.0f;
  a[2] = tiny;
  EXPECT_EQ(fm::aligned_dot(r, 0.0f, a.data(), b.data(), 32), 0.0f);
  // A wide rule is exact FP32 summation of exact products.
  r.fraction_bits = 40;
  EXPECT_EQ(fm::aligned_dot(r, 0.0f, a.data(), b.data(), 32), tiny);
}

TEST(AlignedRule, WideRuleMatchesFP32Gemm) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.f, 4.f);
  const int rows = 5, cols = 7, k = 96;
  std::vector<float> a(rows * k), b(k * cols), acc(rows * cols, 0.0f);
  for (float& x : a) x = fm::round_e4m3(n(rng));
  for (float& x : b) x = fm::round_e4m3(n(rng));
  fm::AlignedRule r;
  r.fraction_bits = 40;
  fm::aligned_gemm_acc(r, rows, cols, k, a.data(), k, b.data(), cols, acc.data(), cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      double ref = 0;
      for (int kk = 0; kk < k; ++kk) ref += static_cast<double>(a[i * k + kk]) * b[kk * cols + j];
      EXPECT_NEAR(acc[i * cols + j], ref, 1e-5 * (1 + std::fabs(ref)));
    }
}

// Narrowing the adder can only add error: on the FA3 FP8 scheme, 6 fraction bits lose more
// than FP32 accumulation, and a 23-bit aligned rule sits near FP32.
TEST(AlignedRule, SchemeErrorGrowsAsTheAdderNarrows) {
  const fm::Tensor q = gaussian(256, 2, 128, 11), k = gaussian(256, 2, 128, 12),
                   v = gaussian(256, 2, 128, 13);
  fm::AttnConfig cfg;
  cfg.causal = true;
  const fm::ExactF64 ref = fm::attention_exact_f64(q, k, v, cfg);
  auto rmse = [&](const char* spec) {
    return fm::compare(fm::run_scheme(fm::scheme_by_name(spec), q, k, v, true).o, ref.o).rmse;
  };
  const double fp32 = rmse("fa3-fp8");
  const double wide = rmse("fa3-fp8:acc=aligned:acc_bits=23");
  const double narrow = rmse("fa3-fp8:acc=aligned:acc_bits=6");
  EXPECT_TRUE(std::isfinite(narrow));
  EXPECT_NEAR(wide / fp32, 1.0, 0.02);
  EXPECT_GT(narrow, 1.2 * fp32);
}

// The accurate mode (P in FP16) is far closer to exact than the default's E4M3 P on the same
// pre-pass.
TEST(Schemes, AccurateModeBeatsDefault) {
  const fm::Tensor q = gaussian(256, 2, 128, 21), k = gaussian(256, 2, 128, 22),
                   v = gaussian(256, 2, 128, 23);
  fm::AttnConfig cfg;
  const fm::ExactF64 ref = fm::attention_exact_f64(q, k, v, cfg);
  const fm::SchemeRun def = fm::run_scheme(fm::scheme_by_name("fp8attn-default"), q, k, v, false);
  const fm::SchemeRun acc = fm::run_scheme(fm::scheme_by_name("fp8attn-accurate"), q, k, v, false);
  const fm::TensorD kref = fm::kernel_only_reference(acc, false);
  EXPECT_LT(fm::compare(acc.o, kref).rmse, 0.5 * fm::compare(def.o, fm::kernel_only_reference(def, false)).rmse);
  EXPECT_TRUE(std::isfinite(fm::compare(acc.o, ref.o).rmse));
}

// Head dim 64 on the head-dim-128 kernel: Q, K, V zero-padded to 128 with the softmax scale kept
// at 1/8. The exact attention is unchanged (to FP64 rounding) in the first 64 channels and zero
// in the others; bf16-flash, padded or not, lands within BF16 rounding of it.
TEST(HeadDimPadding, PaddedEqualsUnpadded) {
  const fm::Tensor q = gaussian(300, 3, 64, 31, 2.0f), k = gaussian(300, 1, 64, 32, 2.0f),
                   v = gaussian(300, 1, 64, 33);
  const fm::Tensor qp = pad128(q), kp = pad128(k), vp = pad128(v);
  fm::AttnConfig cfg;
  cfg.causal = true;
  cfg.softmax_scale = 0.125;
  const fm::ExactF64 ref = fm::attention_exact_f64(q, k, v, cfg);
  const fm::ExactF64 refp = fm::attention_exact_f64(qp, kp, vp, cfg);
  const fm::SchemeRun bf = fm::run_scheme(fm::scheme_by_name("bf16-flash"), q, k, v, true, 0.125f);
  const fm::SchemeRun bfp = fm::run_scheme(fm::scheme_by_name("bf16-flash"), qp, kp, vp, true, 0.125f);
  double worst = 0, pad_nonzero = 0, bf_diff = 0, ref_rms = 0;
  for (int s = 0; s < 300; ++s)
    for (int h = 0; h < 3; ++h) {
      for (int c = 0; c < 64; ++c) {
        worst = std::max(worst, std::fabs(refp.o(0, s, h, c) - ref.o(0, s, h, c)));
        const double a = bfp.o(0, s, h, c), b = bf.o(0, s, h, c);
        bf_diff = std::max(bf_diff, std::fabs(a - b) / std::max({std::fabs(a), std::fabs(b), 1e-30}));
        ref_rms += ref.o(0, s, h, c) * ref.o(0, s, h, c);
      }
      for (int c = 64; c < 128; ++c) {
        pad_nonzero = std::max(pad_nonzero, std::fabs(refp.o(0, s, h, c)) + std::fabs(bfp.o(0, s, h, c)));
      }
    }
  ref_rms = std::sqrt(ref_rms / (300 * 3 * 64));
  EXPECT_LT(worst, 1e-12 * ref_rms * 64);
  EXPECT_EQ(pad_nonzero, 0.0);
  // Both are BF16 outputs of the same FP32 computation up to summation order: at most an ulp
  // of BF16 apart (2^-7 relative at worst).
  EXPECT_LE(bf_diff, std::ldexp(1.0, -7));
  for (float x : bfp.o.data) ASSERT_TRUE(std::isfinite(x));
}

TEST(Schemes, AlignedRuleKeys) {
  const fm::Scheme s =
      fm::scheme_by_name("fa3-fp8:acc_qk=aligned:acc_bits=12:acc_group=8:acc_round=down:acc_c_aligned=0");
  EXPECT_EQ(s.numerics.acc_qk, fm::Accumulator::kAligned);
  EXPECT_EQ(s.numerics.acc_pv, fm::Accumulator::kFP32);
  EXPECT_EQ(s.numerics.acc_rule.fraction_bits, 12);
  EXPECT_EQ(s.numerics.acc_rule.group, 8);
  EXPECT_EQ(s.numerics.acc_rule.rounding, fm::AccRounding::kDown);
  EXPECT_FALSE(s.numerics.acc_rule.c_aligned);
  EXPECT_NE(s.summary().find("acc_group=8"), std::string::npos);
  EXPECT_THROW(fm::scheme_by_name("fa3-fp8:acc_round=up"), std::invalid_argument);
  EXPECT_THROW(fm::scheme_by_name("fa3-fp8:acc=wide"), std::invalid_argument);
  EXPECT_EQ(fm::scheme_by_name("fp8attn-accurate").numerics.p_format, fm::Format::FP16);
}
