// The CPU mirror's FP8ATTN_CENTRE_SAMPLE (model/prepass.cc) against FP64 references: the sampled
// keys are those quant.h names, the centre is the FP64 mean of the sampled rows, no value
// saturates (every group's scale covers its true amax: a group over its sample's bound is
// regrouped), and a group that does not exceed keeps the bound's scale. The GPU's bytes are
// compared with this mirror in tests/gpu/test_quant.cu.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "model/codecs.h"
#include "model/prepass.h"
#include "tests/common/seed.h"

namespace fp8attn::model {
namespace {

constexpr int kD = 128;
using fp8attn::test::fresh_seed;

TEST(PrepassOnePass, SampleKeysAreSpreadAndSkipTheSink) {
  for (const int s : {1, 31, 132, 133, 1000, 2048, 4096, 5000, 8192, 16384, 1 << 20}) {
    const std::vector<int> keys = sample_keys(s);
    ASSERT_EQ(static_cast<int>(keys.size()), fp8attn_sample_rows(s));
    // One key in FRACTION within [ROWS_MIN, ROWS_MAX]; every key of a sequence that short.
    const int want = std::min(std::max(s / FP8ATTN_QUANT_SAMPLE_FRACTION, FP8ATTN_QUANT_SAMPLE_ROWS_MIN),
                              FP8ATTN_QUANT_SAMPLE_ROWS_MAX);
    EXPECT_EQ(static_cast<int>(keys.size()), s <= want + FP8ATTN_QUANT_SAMPLE_SKIP ? s : want) << "s=" << s;
    std::set<int> distinct(keys.begin(), keys.end());
    EXPECT_EQ(distinct.size(), keys.size()) << "s=" << s;
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_EQ(keys[i], fp8attn_sample_key(s, static_cast<int>(i)));
      EXPECT_LT(keys[i], s);
      if (s > want + FP8ATTN_QUANT_SAMPLE_SKIP) {
        EXPECT_GE(keys[i], FP8ATTN_QUANT_SAMPLE_SKIP);
      }
    }
    if (s > 1000) EXPECT_GT(keys.back(), s - s / 64) << "the sample reaches the end";
  }
}

// K and V (b 1, s 3000, h 2) around an offset; one key outside the sample, 500x larger, in head
// 1: V channel 9 and all of K's channels.
struct OverBoundCase {
  int b = 1, s = 3000, h = 2;
  std::vector<uint16_t> k, v;
  std::vector<int> keys;
};
OverBoundCase over_bound_case(uint64_t seed) {
  OverBoundCase t;
  const int b = t.b, s = t.s, h = t.h;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01;
  std::vector<uint16_t> k(size_t(b) * s * h * kD), v(k.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = float_to_bf16(3.0f + n01(rng));
    v[i] = float_to_bf16(-1.0f + 0.5f * n01(rng));
  }
  const std::vector<int> keys = sample_keys(s);
  int outside = 1500;
  while (std::find(keys.begin(), keys.end(), outside) != keys.end()) ++outside;
  for (int c = 0; c < kD; ++c) k[(size_t(outside) * h + 1) * kD + c] = float_to_bf16(500.0f);
  v[(size_t(outside) * h + 1) * kD + 9] = float_to_bf16(500.0f);
  t.k = std::move(k), t.v = std::move(v), t.keys = keys;
  return t;
}

fp8attn_quant_options one_pass_options() {
  fp8attn_quant_options opt{};
  opt.smooth_k = 1, opt.smooth_v = 1, opt.hadamard_qk = 0;
  opt.q_scale = FP8ATTN_Q_SCALE_TOKEN, opt.v_scale = FP8ATTN_V_SCALE_CHANNEL;
  opt.k_scale = FP8ATTN_K_SCALE_HEAD, opt.centre = FP8ATTN_CENTRE_SAMPLE;
  return opt;
}

// V unrotated, unsmoothed K per head, per-channel V: the centre and codes against FP64.
TEST(PrepassOnePass, CentreIsTheSampleMeanAndNothingSaturates) {
  const OverBoundCase t = over_bound_case(fresh_seed("one-pass mirror"));
  const int s = t.s, h = t.h;
  const std::vector<int>& keys = t.keys;
  const fp8attn_quant_options opt = one_pass_options();
  const Bf16View kv = contiguous_view(t.k, t.b, s, h, kD), vv = contiguous_view(t.v, t.b, s, h, kD);
  const KvCacheHost cache = prepass_kv(kv, vv, opt);
  EXPECT_EQ(cache.resampled[0], 0) << "head 0 has no value over its bound";
  EXPECT_EQ(cache.resampled[1], 3) << "head 1: K and V channel 9 over their bounds";

  const int nblk = (s + 127) / 128;
  for (int hh = 0; hh < h; ++hh) {
    for (int c = 0; c < kD; ++c) {
      double km = 0.0, vm = 0.0;
      for (const int key : keys) km += bf16_to_float(kv.at(0, key, hh, c)), vm += bf16_to_float(vv.at(0, key, hh, c));
      km /= keys.size(), vm /= keys.size();
      EXPECT_NEAR(cache.k_mean[hh * kD + c], km, 1e-5 * (std::fabs(km) + 1.0));
      EXPECT_NEAR(cache.v_mean[hh * kD + c], vm, 1e-5 * (std::fabs(vm) + 1.0));
    }
    // Every value within E4M3's rounding of x - centre: none clipped to 448.
    const float kd = cache.k_descale[hh * nblk];
    for (int t = 0; t < s; ++t) {
      for (int c = 0; c < kD; ++c) {
        const double xk = double(bf16_to_float(kv.at(0, t, hh, c))) - cache.k_mean[hh * kD + c];
        const double dk = e4m3_to_float(cache.k[(size_t(t) * h + hh) * kD + c]) * double(kd);
        ASSERT_LE(std::fabs(dk - xk), std::ldexp(std::fabs(xk), -4) + kd * std::ldexp(1.0, -9) + 1e-6)
            << "k head " << hh << " key " << t << " channel " << c;
        const double xv = double(bf16_to_float(vv.at(0, t, hh, c))) - cache.v_mean[hh * kD + c];
        const int group = t / FP8ATTN_VT_KEY_GROUP * FP8ATTN_VT_KEY_GROUP;
        int p = 0;
        while (fp8attn_vt_key_at(p) != t % FP8ATTN_VT_KEY_GROUP) ++p;
        const float vd = cache.v_descale[hh * kD + c];
        const double dv =
            e4m3_to_float(cache.vt[(size_t(hh) * kD + c) * cache.vt_seqlen_pad + group + p]) * double(vd);
        ASSERT_LE(std::fabs(dv - xv), std::ldexp(std::fabs(xv), -4) + vd * std::ldexp(1.0, -9) + 1e-6)
            << "v head " << hh << " key " << t << " channel " << c;
      }
    }
  }
  // A channel within its bound keeps the bound's scale: headroom x the sample's amax.
  double amax = 0.0;
  for (const int key : keys) amax = std::max(amax, std::fabs(double(bf16_to_float(vv.at(0, key, 0, 3))) - cache.v_mean[3]));
  EXPECT_FLOAT_EQ(cache.v_descale[3], static_cast<float>(amax * FP8ATTN_QUANT_SAMPLE_HEADROOM / 448.0));
  // The regrouped channel's scale is its true amax's.
  EXPECT_NEAR(cache.v_descale[kD + 9], (500.0 - cache.v_mean[kD + 9]) / 448.0, 1e-3);
}

// FP16 V^T (FP8ATTN_VT_FP16) with the sample's centre: the same centre, scales, K codes and
// regroup flags as the E4M3 cache (only V^T's rounding differs), and V^T within FP16's rounding of
// (x - centre) * v_inv, natural key order, zeros past seqlen.
TEST(PrepassOnePass, Fp16VtTakesTheSameCentreAndScales) {
  const OverBoundCase t = over_bound_case(fresh_seed("one-pass FP16 V^T"));
  const int s = t.s, h = t.h;
  const fp8attn_quant_options opt = one_pass_options();
  const Bf16View kv = contiguous_view(t.k, t.b, s, h, kD), vv = contiguous_view(t.v, t.b, s, h, kD);
  const KvCacheHost e4 = prepass_kv(kv, vv, opt);
  const KvCacheHost f16 = prepass_kv(kv, vv, opt, 0, FP8ATTN_VT_FP16);
  ASSERT_EQ(f16.vt_dtype, FP8ATTN_VT_FP16);
  ASSERT_TRUE(f16.vt.empty());
  ASSERT_EQ(f16.vt16.size(), size_t(h) * kD * f16.vt_seqlen_pad);
  EXPECT_EQ(f16.resampled, e4.resampled);
  EXPECT_EQ(f16.resampled[1], 3) << "head 1: K and V channel 9 over their bounds";
  EXPECT_EQ(f16.k, e4.k);
  EXPECT_EQ(f16.k_descale, e4.k_descale);
  EXPECT_EQ(f16.v_descale, e4.v_descale);
  EXPECT_EQ(f16.k_mean, e4.k_mean);
  EXPECT_EQ(f16.v_mean, e4.v_mean);
  for (int hh = 0; hh < h; ++hh) {
    for (int c = 0; c < kD; ++c) {
      const float vd = f16.v_descale[hh * kD + c];
      const uint16_t* row = &f16.vt16[(size_t(hh) * kD + c) * f16.vt_seqlen_pad];
      for (int key = 0; key < f16.vt_seqlen_pad; ++key) {
        if (key >= s) {
          ASSERT_EQ(row[key], 0) << "pad key " << key;
          continue;
        }
        const double xv = double(bf16_to_float(vv.at(0, key, hh, c))) - f16.v_mean[hh * kD + c];
        const double y = fp16_to_float(row[key]);
        ASSERT_LE(std::fabs(y), 448.0) << "head " << hh << " key " << key << " channel " << c;
        // FP16's half ulp (2^-11 relative, 2^-25 subnormal) and the float subtraction's.
        const double tol = std::fabs(xv) * (std::ldexp(1.0, -11) + std::ldexp(1.0, -20)) +
                           vd * std::ldexp(1.0, -25) + 1e-6;
        ASSERT_LE(std::fabs(y * vd - xv), tol)
            << "v head " << hh << " key " << key << " channel " << c;
      }
    }
  }
}

}  // namespace
}  // namespace fp8attn::model
