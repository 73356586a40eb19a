// The CPU pre-pass (model/prepass.cc) against independent FP64 references: the rotation is an
// exact scaled orthogonal map, every dequantized value is within E4M3's rounding of the smoothed
// (and rotated) input, the V^T layout follows fp8attn_vt_key_at, lse_bias equals
// softmax_scale * q . mean(K), and bad shapes are refused. The GPU's bytes are compared with
// this mirror in tests/gpu/test_quant.cu.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/codecs.h"
#include "model/prepass.h"
#include "tests/common/fixtures.h"
#include "tests/common/seed.h"
#include "model/reference.h"
#include "model/safetensors.h"

namespace fp8attn::model {
namespace {

constexpr int kD = 128;

using fp8attn::test::fresh_seed;

// BF16 codes of N(bias[c], 1) + rare N(0, 100) outliers (the FA3 outlier test with a channel
// bias, as real K has).
std::vector<uint16_t> random_bf16(std::mt19937_64& rng, int b, int s, int h, float bias_std) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::bernoulli_distribution outlier(0.001);
  std::vector<float> bias(kD);
  for (float& x : bias) x = bias_std * n01(rng);
  std::vector<uint16_t> out(static_cast<size_t>(b) * s * h * kD);
  for (size_t i = 0; i < out.size(); ++i) {
    float x = bias[i % kD] + n01(rng);
    if (outlier(rng)) x += 10.0f * n01(rng);
    out[i] = float_to_bf16(x);
  }
  return out;
}

// Sylvester Hadamard entry (+1 or -1).
double hadamard(int i, int j) { return (std::popcount(static_cast<unsigned>(i & j)) & 1) ? -1 : 1; }

// Bound on the FP32 error of hadamard_rotate_128 of a row with L1 norm l1: seven butterfly
// levels, each rounding by at most 2^-24 of a partial sum <= l1.
double rotation_error(const std::vector<double>& x) {
  double l1 = 0;
  for (double v : x) l1 += std::fabs(v);
  return 7 * std::ldexp(l1, -24);
}

// FP64 reference of hadamard_rotate_128: y_j = sum_i H_ij s_i x_i.
std::vector<double> rotate_ref(const std::vector<double>& x, uint64_t seed) {
  std::vector<double> y(kD, 0.0);
  for (int j = 0; j < kD; ++j) {
    for (int i = 0; i < kD; ++i) {
      const double s = fp8attn_hadamard_sign_negative(seed, i) ? -1.0 : 1.0;
      y[j] += hadamard(i, j) * s * x[i];
    }
  }
  return y;
}

// |E4M3 RNE(x) - x| <= 2^-4 |x| for normals, <= 2^-10 (half the subnormal step) below 2^-6;
// plus FP32 slack for the scaling and `fp32_error`, the FP32 error of `exact`'s transform.
void expect_e4m3_close(double deq, double exact, double descale, double fp32_error,
                       const char* what, int index) {
  const double tol = std::ldexp(std::fabs(exact) + fp32_error, -4) + fp32_error +
                     descale * std::ldexp(1.0, -10) + 1e-6 * std::fabs(exact) + 1e-30;
  ASSERT_TRUE(std::isfinite(deq)) << what << " [" << index << "] is not finite";
  ASSERT_LE(std::fabs(deq - exact), tol)
      << what << " [" << index << "] dequantized " << deq << " vs exact " << exact;
}

TEST(Prepass, HadamardIsTheScaledOrthogonalRotation) {
  const uint64_t seed = fresh_seed("hadamard");
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<double> x(kD);
    std::vector<float> xf(kD);
    for (int c = 0; c < kD; ++c) xf[c] = static_cast<float>(n01(rng)), x[c] = xf[c];
    hadamard_rotate_128(xf.data(), seed + trial);
    const std::vector<double> ref = rotate_ref(x, seed + trial);
    double norm_x = 0, norm_y = 0;
    for (int c = 0; c < kD; ++c) norm_x += x[c] * x[c];
    for (int c = 0; c < kD; ++c) {
      ASSERT_LE(std::fabs(xf[c] - ref[c]), rotation_error(x)) << "channel " << c;
      norm_y += ref[c] * ref[c];
    }
    EXPECT_NEAR(norm_y, 128.0 * norm_x, 1e-9 * norm_y);  // the reference itself is orthogonal
  }
}

TEST(Prepass, GroupScaleGuardsZeroAndMapsAmaxTo448) {
  EXPECT_EQ(group_scale(0.0f).inv, 1.0f);
  EXPECT_EQ(group_scale(0.0f).descale, 1.0f);
  EXPECT_EQ(group_scale(0x1p-120f).inv, 1.0f);
  const uint64_t seed = fresh_seed("group_scale");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> exponent(-30.0f, 30.0f);
  for (int i = 0; i < 1000; ++i) {
    const float amax = std::exp2(exponent(rng));
    const GroupScale g = group_scale(amax);
    ASSERT_EQ(float_to_e4m3(amax * g.inv), 0x7E) << amax;  // the largest value lands on 448
    ASSERT_EQ(float_to_e4m3(-amax * g.inv), 0xFE) << amax;
    ASSERT_NEAR(g.descale * 448.0 / amax, 1.0, 1e-6) << amax;
  }
}

struct Case {
  int b, sq, sk, h, h_kv;
  bool smooth_k, smooth_v, hadamard;
  fp8attn_q_scale q_scale;
  fp8attn_v_scale v_scale;
  fp8attn_k_scale k_scale = FP8ATTN_K_SCALE_HEAD;
};

class PrepassCase : public ::testing::TestWithParam<Case> {};

// Runs the mirror on contiguous BF16 q, k, v (shapes in t) and checks every output against
// FP64 references. `seed` also picks the Hadamard signs.
void check_prepass(const Case& t, const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                   const std::vector<uint16_t>& v, uint64_t seed) {
  fp8attn_quant_options opt{};
  opt.smooth_k = t.smooth_k, opt.smooth_v = t.smooth_v, opt.hadamard_qk = t.hadamard;
  opt.q_scale = t.q_scale, opt.v_scale = t.v_scale, opt.k_scale = t.k_scale;
  opt.hadamard_seed = seed;
  const int pad = (t.sk + 31) / 32 * 32 + 32;  // one spare group: must come out zero
  const Bf16View kv_k = contiguous_view(k, t.b, t.sk, t.h_kv, kD);
  const Bf16View kv_v = contiguous_view(v, t.b, t.sk, t.h_kv, kD);
  const KvCacheHost cache = prepass_kv(kv_k, kv_v, opt, pad);
  const float softmax_scale = 1.0f / std::sqrt(128.0f);
  const QQuantHost qq = prepass_q(contiguous_view(q, t.b, t.sq, t.h, kD), cache, t.q_scale,
                                  softmax_scale);
  const int nblk = (t.sk + 127) / 128;
  ASSERT_EQ(cache.vt_seqlen_pad, pad);

  for (int b = 0; b < t.b; ++b) {
    for (int h = 0; h < t.h_kv; ++h) {
      const size_t bh = static_cast<size_t>(b) * t.h_kv + h;
      // K's rows as the pre-pass smooths them: rotated first (FP64 rotation of the BF16 row,
      // divided by 128 later: the descale carries the 1/128), with the FP32 error bound of the
      // mirror's butterflies.
      std::vector<std::vector<double>> k_rows(t.sk);
      std::vector<double> k_err(t.sk, 0.0);
      for (int s = 0; s < t.sk; ++s) {
        std::vector<double> row(kD);
        for (int c = 0; c < kD; ++c) row[c] = bf16_to_float(kv_k.at(b, s, h, c));
        if (t.hadamard) k_err[s] = rotation_error(row), row = rotate_ref(row, seed);
        k_rows[s] = row;
      }
      // Means in FP64 against the mirror's FP32 sums (chunks, groups, total). FP32 summation error
      // bound (Higham): gamma_n * sum|x| with n = chunk + group + groups additions in a chain, plus
      // the division's rounding; rotated rows add their own FP32 error.
      std::vector<double> k_mean(kD, 0.0), v_mean(kD, 0.0), k_abs(kD, 0.0), v_abs(kD, 0.0);
      double k_err_mean = 0.0;
      for (int s = 0; s < t.sk; ++s) {
        k_err_mean += k_err[s] / t.sk;
        for (int c = 0; c < kD; ++c) {
          const double kx = k_rows[s][c];
          const double vx = bf16_to_float(kv_v.at(b, s, h, c));
          k_mean[c] += kx / t.sk, k_abs[c] += std::fabs(kx) / t.sk;
          v_mean[c] += vx / t.sk, v_abs[c] += std::fabs(vx) / t.sk;
        }
      }
      const int group_keys = FP8ATTN_QUANT_STATS_CHUNK * FP8ATTN_QUANT_STATS_GROUP;
      const int chain = FP8ATTN_QUANT_STATS_CHUNK + FP8ATTN_QUANT_STATS_GROUP +
                        (t.sk + group_keys - 1) / group_keys + 1;
      const double gamma = chain * std::ldexp(1.0, -24);
      for (int c = 0; c < kD; ++c) {
        const double km = t.smooth_k ? k_mean[c] : 0.0, vm = t.smooth_v ? v_mean[c] : 0.0;
        ASSERT_NEAR(cache.k_mean[bh * kD + c], km,
                    gamma * k_abs[c] + 1e-7 * std::fabs(km) + (t.smooth_k ? k_err_mean : 0.0));
        ASSERT_NEAR(cache.v_mean[bh * kD + c], vm, gamma * v_abs[c] + 1e-7 * std::fabs(vm));
      }
      // K: every row dequantizes to its (rotated) row minus the mirror's mean, within E4M3
      // rounding; the largest code of every scale group (a 128-key block, or the whole head) is
      // +-448, and a per-head scale is stored equal in every block.
      for (int s = 0; s < t.sk; ++s) {
        std::vector<double> row = k_rows[s];
        for (int c = 0; c < kD; ++c) row[c] -= cache.k_mean[bh * kD + c];
        double err = k_err[s];
        if (t.hadamard) {
          for (double& x : row) x /= 128.0;
          err /= 128.0;
        }
        const float descale = cache.k_descale[bh * nblk + s / 128];
        for (int c = 0; c < kD; ++c) {
          const uint8_t code = cache.k[((static_cast<size_t>(b) * t.sk + s) * t.h_kv + h) * kD + c];
          expect_e4m3_close(e4m3_to_float(code) * static_cast<double>(descale), row[c], descale,
                            err, "k", c);
        }
      }
      const bool k_head = t.k_scale == FP8ATTN_K_SCALE_HEAD;
      bool head_has_max = false;
      for (int blk = 0; blk < nblk; ++blk) {
        if (k_head) ASSERT_EQ(cache.k_descale[bh * nblk + blk], cache.k_descale[bh * nblk]);
        bool has_max = false;
        for (int s = blk * 128; s < std::min(t.sk, blk * 128 + 128); ++s) {
          for (int c = 0; c < kD; ++c) {
            has_max |= (cache.k[((static_cast<size_t>(b) * t.sk + s) * t.h_kv + h) * kD + c] &
                        0x7F) == 0x7E;
          }
        }
        if (!k_head) EXPECT_TRUE(has_max) << "k block " << blk << " does not reach 448";
        head_has_max |= has_max;
      }
      EXPECT_TRUE(head_has_max) << "k head " << bh << " does not reach 448";
      // V^T: position p of a 32-group holds key fp8attn_vt_key_at(p); zeros from sk on.
      for (int c = 0; c < kD; ++c) {
        const float descale = cache.v_descale[bh * kD + c];
        if (t.v_scale == FP8ATTN_V_SCALE_HEAD) ASSERT_EQ(descale, cache.v_descale[bh * kD]);
        for (int p = 0; p < pad; ++p) {
          const int key = p / 32 * 32 + fp8attn_vt_key_at(p % 32);
          const uint8_t code = cache.vt[(bh * kD + c) * pad + p];
          if (key >= t.sk) {
            ASSERT_EQ(code, 0) << "padding position " << p;
            continue;
          }
          const double exact =
              bf16_to_float(kv_v.at(b, key, h, c)) - static_cast<double>(cache.v_mean[bh * kD + c]);
          expect_e4m3_close(e4m3_to_float(code) * static_cast<double>(descale), exact, descale,
                            0.0, "vt", p);
        }
      }
    }
  }

  // decode_operands undoes V^T's layout: V (b, sk, h_kv, 128) codes times the channel descale
  // are the smoothed V; Q and K codes are the structs' own.
  const DecodedOperands ops = decode_operands(qq, cache);
  for (int b = 0; b < t.b; ++b) {
    for (int s = 0; s < t.sk; ++s) {
      for (int h = 0; h < t.h_kv; ++h) {
        const size_t bh = static_cast<size_t>(b) * t.h_kv + h;
        for (int c = 0; c < kD; ++c) {
          const float descale = cache.v_descale[bh * kD + c];
          const double exact = bf16_to_float(kv_v.at(b, s, h, c)) -
                               static_cast<double>(cache.v_mean[bh * kD + c]);
          expect_e4m3_close(ops.v(b, s, h, c) * static_cast<double>(descale), exact, descale, 0.0,
                            "decoded v", c);
          ASSERT_EQ(ops.k(b, s, h, c), e4m3_to_float(cache.k[ops.k.index(b, s, h, c)]));
        }
      }
    }
  }
  ASSERT_EQ(ops.q.data.size(), qq.q.size());
  for (size_t i = 0; i < qq.q.size(); ++i) ASSERT_EQ(ops.q.data[i], e4m3_to_float(qq.q[i]));

  // Q: dequantized rows and lse_bias = softmax_scale * q . k_mean (FP64), the product taken in
  // the basis K was smoothed in (rotated q, over 128, when rotated).
  const int group = t.h / t.h_kv;
  const Bf16View qv = contiguous_view(q, t.b, t.sq, t.h, kD);
  for (int b = 0; b < t.b; ++b) {
    for (int h = 0; h < t.h; ++h) {
      const size_t bh = static_cast<size_t>(b) * t.h + h;
      const size_t bhk = static_cast<size_t>(b) * t.h_kv + h / group;
      for (int s = 0; s < t.sq; ++s) {
        std::vector<double> row(kD);
        for (int c = 0; c < kD; ++c) row[c] = bf16_to_float(qv.at(b, s, h, c));
        const double err = t.hadamard ? rotation_error(row) : 0.0;
        if (t.hadamard) row = rotate_ref(row, seed);
        const double basis = t.hadamard ? 1.0 / 128.0 : 1.0;
        double dot = 0.0, dot_abs = 0.0, mean_abs = 0.0;
        for (int c = 0; c < kD; ++c) {
          dot += row[c] * cache.k_mean[bhk * kD + c];
          dot_abs += std::fabs(row[c] * cache.k_mean[bhk * kD + c]);
          mean_abs += std::fabs(cache.k_mean[bhk * kD + c]);
        }
        const double bias = t.smooth_k ? softmax_scale * dot * basis : 0.0;
        // FMA chains of 8, 4 additions, the scale: gamma_16 * scale * sum|q m|; plus the FP32
        // error of the rotated q.
        const double tol = softmax_scale * basis * (16 * std::ldexp(1.0, -24) * dot_abs +
                                                    err * mean_abs) + 1e-30;
        ASSERT_NEAR(qq.lse_bias[bh * t.sq + s], bias, tol) << s;
        const float descale = qq.q_descale[bh * t.sq + s];
        if (t.q_scale == FP8ATTN_Q_SCALE_BLOCK128) {
          ASSERT_EQ(descale, qq.q_descale[bh * t.sq + s / 128 * 128]);
        }
        for (int c = 0; c < kD; ++c) {
          const uint8_t code = qq.q[((static_cast<size_t>(b) * t.sq + s) * t.h + h) * kD + c];
          expect_e4m3_close(e4m3_to_float(code) * static_cast<double>(descale), row[c], descale,
                            err, "q", c);
        }
      }
    }
  }
}

TEST_P(PrepassCase, DequantizesToTheTransformedInputAndRestoresTheBiases) {
  const Case t = GetParam();
  const uint64_t seed = fresh_seed("prepass case");
  std::mt19937_64 rng(seed);
  const std::vector<uint16_t> q = random_bf16(rng, t.b, t.sq, t.h, 0.5f);
  const std::vector<uint16_t> k = random_bf16(rng, t.b, t.sk, t.h_kv, 8.0f);
  const std::vector<uint16_t> v = random_bf16(rng, t.b, t.sk, t.h_kv, 2.0f);
  check_prepass(t, q, k, v, seed);
}

// The committed captured fixture (data/fixtures/*.safetensors: BF16 q, k, v (1, s, h, 128)),
// with and without the rotation.
TEST(Prepass, CapturedFixtureDequantizesToTheTransformedInput) {
  const std::vector<std::filesystem::path> files = fp8attn::test::captured_fixture_files();
  if (files.empty()) GTEST_SKIP() << "no captured fixture under data/fixtures";
  int used = 0;
  for (const auto& f : files) {
    const SafeTensors st = read_safetensors(f.string());
    if (!st.contains("q") || !st.contains("k") || !st.contains("v")) continue;
    const StTensor &q = st.at("q"), &k = st.at("k"), &v = st.at("v");
    if (q.dtype != DType::BF16 || k.dtype != DType::BF16 || v.dtype != DType::BF16 ||
        q.shape.size() != 4 || q.shape[3] != kD) {
      continue;
    }
    SCOPED_TRACE(f.string());
    const auto codes = [](const StTensor& t) {
      std::vector<uint16_t> c(t.numel());
      std::memcpy(c.data(), t.data.data(), t.data.size());
      return c;
    };
    const int sq = static_cast<int>(q.shape[1]);
    const int sk = static_cast<int>(k.shape[1]);
    // At most 512 tokens: the FP64 checks are O(s * 128^2) with the rotation.
    const int s_q = std::min(sq, 512), s_k = std::min(sk, 512);
    std::vector<uint16_t> qc = codes(q), kc = codes(k), vc = codes(v);
    qc.resize(static_cast<size_t>(s_q) * q.shape[2] * kD);
    kc.resize(static_cast<size_t>(s_k) * k.shape[2] * kD);
    vc.resize(static_cast<size_t>(s_k) * k.shape[2] * kD);
    for (bool rotate : {false, true}) {
      const Case t{1, s_q, s_k, static_cast<int>(q.shape[2]), static_cast<int>(k.shape[2]), true,
                   true, rotate, FP8ATTN_Q_SCALE_TOKEN, FP8ATTN_V_SCALE_CHANNEL,
                   rotate ? FP8ATTN_K_SCALE_HEAD : FP8ATTN_K_SCALE_BLOCK128};
      check_prepass(t, qc, kc, vc, 12345);
    }
    ++used;
  }
  std::printf("[ info ] %d captured file(s) from data/fixtures\n", used);
  EXPECT_GT(used, 0) << "fixture files found but none holds BF16 q, k, v (1, s, h, 128)";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PrepassCase,
    ::testing::Values(
        Case{1, 64, 128, 2, 2, true, true, false, FP8ATTN_Q_SCALE_TOKEN, FP8ATTN_V_SCALE_CHANNEL,
             FP8ATTN_K_SCALE_BLOCK128},
        Case{2, 77, 300, 4, 2, true, true, true, FP8ATTN_Q_SCALE_TOKEN, FP8ATTN_V_SCALE_CHANNEL,
             FP8ATTN_K_SCALE_BLOCK128},
        Case{1, 200, 129, 4, 1, false, false, true, FP8ATTN_Q_SCALE_BLOCK128,
             FP8ATTN_V_SCALE_HEAD, FP8ATTN_K_SCALE_BLOCK128},
        Case{2, 33, 31, 2, 2, true, false, false, FP8ATTN_Q_SCALE_BLOCK128,
             FP8ATTN_V_SCALE_CHANNEL, FP8ATTN_K_SCALE_BLOCK128},
        // Per-head K (the default), with and without the rotation and smoothing; 1100 keys span
        // three statistics groups.
        Case{2, 77, 1100, 4, 2, true, true, true, FP8ATTN_Q_SCALE_TOKEN, FP8ATTN_V_SCALE_CHANNEL,
             FP8ATTN_K_SCALE_HEAD},
        Case{1, 64, 300, 2, 2, true, true, false, FP8ATTN_Q_SCALE_TOKEN, FP8ATTN_V_SCALE_CHANNEL,
             FP8ATTN_K_SCALE_HEAD},
        Case{1, 50, 129, 4, 1, false, true, true, FP8ATTN_Q_SCALE_BLOCK128, FP8ATTN_V_SCALE_HEAD,
             FP8ATTN_K_SCALE_HEAD},
        Case{1, 31, 31, 2, 2, false, false, false, FP8ATTN_Q_SCALE_TOKEN,
             FP8ATTN_V_SCALE_CHANNEL, FP8ATTN_K_SCALE_HEAD}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const Case& c = info.param;
      return "b" + std::to_string(c.b) + "_sq" + std::to_string(c.sq) + "_sk" +
             std::to_string(c.sk) + "_h" + std::to_string(c.h) + "_" + std::to_string(c.h_kv) +
             (c.smooth_k ? "_smoothK" : "") + (c.smooth_v ? "_smoothV" : "") +
             (c.hadamard ? "_hadamard" : "") +
             (c.q_scale == FP8ATTN_Q_SCALE_BLOCK128 ? "_qblock" : "_qtoken") +
             (c.k_scale == FP8ATTN_K_SCALE_HEAD ? "_khead" : "_kblock") +
             (c.v_scale == FP8ATTN_V_SCALE_HEAD ? "_vhead" : "_vchannel");
    });

// The corrections are exact in the math: attention on the kernel's operands (dequantized), plus
// lse_bias on the LSE and o_bias on O, is attention on the BF16 data up to E4M3 rounding. K and V
// carry large channel biases here, so a wrong sign or a missing correction is an error of order
// 1, far above the FP8 rounding (a few percent).
TEST(Prepass, SmoothingCorrectionsRestoreTheAttention) {
  const uint64_t seed = fresh_seed("corrections");
  std::mt19937_64 rng(seed);
  const int b = 1, sq = 64, sk = 200, h = 2, h_kv = 1;
  const std::vector<uint16_t> q = random_bf16(rng, b, sq, h, 0.5f);
  const std::vector<uint16_t> k = random_bf16(rng, b, sk, h_kv, 8.0f);
  const std::vector<uint16_t> v = random_bf16(rng, b, sk, h_kv, 3.0f);
  const auto as_tensor = [](const std::vector<uint16_t>& x, int bb, int s, int hh) {
    Tensor t(bb, s, hh, kD);
    for (size_t i = 0; i < x.size(); ++i) t.data[i] = bf16_to_float(x[i]);
    return t;
  };
  AttnConfig cfg;
  const float scale = 1.0f / std::sqrt(128.0f);
  cfg.softmax_scale = scale;
  const ExactF64 truth = attention_exact_f64(as_tensor(q, b, sq, h), as_tensor(k, b, sk, h_kv),
                                             as_tensor(v, b, sk, h_kv), cfg);
  for (bool rotate : {false, true}) {
    fp8attn_quant_options opt{};
    opt.smooth_k = opt.smooth_v = 1, opt.hadamard_qk = rotate, opt.hadamard_seed = seed;
    opt.k_scale = rotate ? FP8ATTN_K_SCALE_HEAD : FP8ATTN_K_SCALE_BLOCK128;
    const KvCacheHost kv = prepass_kv(contiguous_view(k, b, sk, h_kv, kD),
                                      contiguous_view(v, b, sk, h_kv, kD), opt);
    const QQuantHost qq = prepass_q(contiguous_view(q, b, sq, h, kD), kv, FP8ATTN_Q_SCALE_TOKEN,
                                    scale);
    DecodedOperands ops = decode_operands(qq, kv);
    for (int s = 0; s < sq; ++s) {
      for (int hh = 0; hh < h; ++hh) {
        for (int c = 0; c < kD; ++c) ops.q(0, s, hh, c) *= qq.q_descale[hh * sq + s];
      }
    }
    for (int s = 0; s < sk; ++s) {
      for (int c = 0; c < kD; ++c) {
        ops.k(0, s, 0, c) *= kv.k_descale[s / 128];
        ops.v(0, s, 0, c) *= kv.v_descale[c];
      }
    }
    const ExactF64 got = attention_exact_f64(ops.q, ops.k, ops.v, cfg);
    // |delta LSE| <= max_j |delta score_j| (the LSE is 1-Lipschitz in the max norm), where
    // delta score_j = scale * q~ . k~_j - (scale * q . k_j - lse_bias) is the FP8 rounding of
    // the smoothed scores (lse_bias is what smoothing took out of every score of the row, in
    // whichever basis K was smoothed).
    double lse_err = 0, lse_err_without = 0, o_err = 0, o_err_without = 0, o_norm = 0;
    for (int hh = 0; hh < h; ++hh) {
      for (int s = 0; s < sq; ++s) {
        const size_t i = static_cast<size_t>(hh) * sq + s;
        double score_err = 0;
        for (int j = 0; j < sk; ++j) {
          double deq = 0, exact = 0;
          for (int c = 0; c < kD; ++c) {
            deq += double(ops.q(0, s, hh, c)) * ops.k(0, j, 0, c);
            exact += double(bf16_to_float(q[(static_cast<size_t>(s) * h + hh) * kD + c])) *
                     double(bf16_to_float(k[static_cast<size_t>(j) * kD + c]));
          }
          score_err = std::max(score_err, std::fabs(scale * deq - (scale * exact - qq.lse_bias[i])));
        }
        const double e = std::fabs(got.lse[i] + qq.lse_bias[i] - truth.lse[i]);
        ASSERT_LE(e, score_err * (1 + 1e-9) + 1e-6) << "head " << hh << " token " << s;
        lse_err = std::max(lse_err, e);
        lse_err_without = std::max(lse_err_without, std::fabs(got.lse[i] - truth.lse[i]));
        for (int c = 0; c < kD; ++c) {
          const double o = got.o(0, s, hh, c), ref = truth.o(0, s, hh, c);
          o_err += std::pow(o + kv.v_mean[c] - ref, 2);
          o_err_without += std::pow(o - ref, 2);
          o_norm += ref * ref;
        }
      }
    }
    const double rel = std::sqrt(o_err / o_norm), rel_without = std::sqrt(o_err_without / o_norm);
    std::printf("[ info ] rotate=%d: LSE max err %.3g (without lse_bias %.3g), O rel RMSE %.3g "
                "(without o_bias %.3g)\n", rotate, lse_err, lse_err_without, rel, rel_without);
    EXPECT_GT(lse_err_without, 1.0);  // the test can tell a missing lse_bias
    // V' = V - mean is rounded to within 2^-4 of itself per element (E4M3), O is a convex
    // combination of its rows: 2^-4 bounds the V part; the score rounding moves the weights by
    // far less on this data (checked through the LSE above).
    EXPECT_LT(rel, 0.0625);
    EXPECT_GT(rel_without, 0.5);
  }
}

TEST(Prepass, RefusesBadShapes) {
  std::vector<uint16_t> x(2 * 40 * 4 * 64, 0);
  fp8attn_quant_options opt{};
  const Bf16View d64 = contiguous_view(x, 2, 40, 4, 64);
  EXPECT_THROW(prepass_kv(d64, d64, opt), std::invalid_argument);
  std::vector<uint16_t> y(2 * 40 * 3 * 128, 0), z(2 * 40 * 2 * 128, 0);
  const Bf16View kv = contiguous_view(z, 2, 40, 2, 128);
  const KvCacheHost cache = prepass_kv(kv, kv, opt);
  EXPECT_THROW(prepass_q(contiguous_view(y, 2, 40, 3, 128), cache, FP8ATTN_Q_SCALE_TOKEN, 1.0f),
               std::invalid_argument);  // 3 heads over 2 kv heads
  EXPECT_THROW(prepass_kv(kv, kv, opt, 40), std::invalid_argument);  // pad not a multiple of 32
  // All-zero input: scale 1, codes 0, no NaN.
  for (float d : cache.k_descale) EXPECT_EQ(d, 1.0f);
  for (uint8_t c : cache.k) EXPECT_EQ(c, 0);
}

}  // namespace
}  // namespace fp8attn::model
