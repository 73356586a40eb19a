// The flash emulation engine: exact in FP32 configurations, within the theoretical bound for
// bf16-flash, and the kernel mirror against a literal transcription of src/attn/softmax.cuh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "model/codecs.h"
#include "model/evaluate.h"
#include "model/flash.h"
#include "model/kernel_mirror.h"
#include "model/reference.h"
#include "model/scheme.h"

namespace fm = fp8attn::model;

namespace {

fm::Tensor gaussian(int b, int s, int h, int d, uint32_t seed, float sd = 1.0f) {
  fm::Tensor t(b, s, h, d);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, sd);
  for (float& x : t.data) x = fm::round_bf16(n(rng));
  return t;
}

double max_abs(const std::vector<float>& x) {
  double m = 0;
  for (float v : x) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

struct Shape {
  int b, sq, sk, h, hk;
  bool causal;
};

}  // namespace

// With P and O in FP32 and no quantization, the blocked online softmax is exact attention up to
// FP32 rounding, for every block order, block size and accumulation structure.
class FlashFP32 : public ::testing::TestWithParam<std::tuple<Shape, int, bool, bool>> {};

TEST_P(FlashFP32, MatchesExact) {
  const auto [sh, block, last_to_first, two_level] = GetParam();
  const fm::Tensor q = gaussian(sh.b, sh.sq, sh.h, 64, 1, 1.5f);
  const fm::Tensor k = gaussian(sh.b, sh.sk, sh.hk, 64, 2, 1.5f);
  const fm::Tensor v = gaussian(sh.b, sh.sk, sh.hk, 64, 3);
  fm::FlashNumerics nm;
  nm.block_n = block;
  nm.last_to_first = last_to_first;
  nm.two_level = two_level;
  nm.p_format = fm::Format::FP32;
  nm.o_format = fm::Format::FP32;
  fm::FlashInputs in;
  in.q = &q;
  in.k = &k;
  in.v = &v;
  in.causal = sh.causal;
  const fm::FlashOutputs out = fm::flash_forward(in, nm);
  fm::AttnConfig cfg;
  cfg.causal = sh.causal;
  const fm::ExactF64 ref = fm::attention_exact_f64(q, k, v, cfg);
  // FP32: a few ulps of the largest terms; |O| <= max|v| ~ 5.
  for (size_t i = 0; i < ref.o.data.size(); ++i) {
    ASSERT_NEAR(out.o.data[i], ref.o.data[i], 2e-5) << i;
  }
  for (size_t i = 0; i < ref.lse.size(); ++i) {
    if (std::isinf(ref.lse[i])) {
      EXPECT_TRUE(std::isinf(out.lse[i]) && out.lse[i] < 0);
    } else {
      ASSERT_NEAR(out.lse[i], ref.lse[i], 2e-5 * std::max(1.0, std::fabs(ref.lse[i])));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashFP32,
    ::testing::Combine(::testing::Values(Shape{1, 300, 300, 2, 2, false}, Shape{2, 300, 300, 4, 2, true},
                                         Shape{1, 100, 333, 2, 1, true},  // sq < sk
                                         Shape{1, 333, 100, 2, 2, true},  // sq > sk: empty rows
                                         Shape{1, 1, 129, 1, 1, false}),
                       ::testing::Values(128, 64), ::testing::Bool(), ::testing::Bool()));

// bf16-flash: O = bf16(sum_j bf16(p_j) v_j / l) with l from the FP32 p. With u = 2^-8 (BF16 unit
// roundoff), |bf16(p) - p| <= u p gives |sum_j (bf16(p_j) - p_j) v_j / l| <= u max|v|, and the
// output rounding adds <= u |x|: |O_emulated - O| <= u (|O| + (1 + u) max|v|) + FP32 noise.
TEST(FlashBF16, WithinTheoreticalBound) {
  for (const char* kind : {"gaussian", "outlier"}) {
    for (bool causal : {false, true}) {
      const fm::Dataset d = fm::make_synthetic(kind, 1, 1000, 2, 1, 128, 5);
      const fm::Scheme s = fm::scheme_by_name("bf16-flash");
      const fm::SchemeRun run = fm::run_scheme(s, d.q, d.k, d.v, causal);
      fm::AttnConfig cfg;
      cfg.causal = causal;
      const fm::ExactF64 ref = fm::attention_exact_f64(d.q, d.k, d.v, cfg);
      const double u = std::ldexp(1.0, -8), vmax = max_abs(d.v.data);
      double worst = 0;
      for (size_t i = 0; i < ref.o.data.size(); ++i) {
        const double err = std::fabs(run.o.data[i] - ref.o.data[i]);
        const double bound = u * (std::fabs(ref.o.data[i]) + (1 + u) * vmax) + 1e-5 * vmax;
        ASSERT_LE(err, bound) << kind << " causal=" << causal << " i=" << i;
        worst = std::max(worst, err / bound);
      }
      // The bound is a worst case; rounding errors are random, so the typical error is far below.
      EXPECT_LT(worst, 0.5) << kind;
      // Every output is a BF16 value.
      for (float x : run.o.data) ASSERT_EQ(x, fm::round_bf16(x));
    }
  }
}

namespace {

// src/attn/softmax.cuh and src/attn/kernel.cuh, transcribed literally, with the choices the
// kernel's dispatch makes (block size, one- or two-level accumulation, which P l sums) taken from
// kernel_numerics(), which the kernel's engineer keeps in step with src/api.cu: one row at a time,
// blocks from the last, sequential FP32 dot products, l in the quad's four partial sums of the
// FP32 p, or (E4M3 P, kVariantTcRowSum) one sum of the rounded P per block, 32 keys per k-step
// into a fresh accumulator (or, in the trimmed kernel, the P V product's columns of ones, reset
// per block: the same sums), added to l after the next block's rescale (mainloop.cuh's
// add_block_sum(block_sum_r0, block_sum_r8, alpha_next)) and the last block's at the drain.
// One-level: O *= alpha, then P V added into O; two-level: O = fma(O, alpha, P V).
fm::KernelMirrorOutputs literal_kernel(const fm::KernelMirrorInputs& in) {
  const int B = in.batch, sq = in.seqlen_q, sk = in.seqlen_k, H = in.heads, HK = in.heads_kv;
  const fm::FlashNumerics nm = fm::kernel_numerics(in.p_precision, in.accumulator, in.k_descale_per_block);
  const bool hilo = nm.p_hilo;
  const bool fp16 = nm.p_format == fm::Format::FP16;  // FP8ATTN_P_FP16
  const int D = 128, group = H / HK, nkb = (sk + 127) / 128;
  const int BN = nm.block_n;
  // FP8ATTN_P_E4M3_EXACT's softmax (fp8attn.h), read from the header, not from kernel_numerics.
  const bool exact = in.p_precision == FP8ATTN_P_E4M3_EXACT;
  const float slack = exact ? 0.0f : FP8ATTN_RESCALE_SLACK_LOG2;
  const float offset = exact ? FP8ATTN_P_EXACT_OFFSET_LOG2 : FP8ATTN_P_OFFSET_LOG2;
  if (in.k_descale_per_block && BN != 128) throw std::logic_error("per-block K descales need 128-key blocks");
  const float ssl2 = (in.softmax_scale > 0 ? in.softmax_scale : 1.0f / std::sqrt(128.0f)) *
                     1.4426950408889634f;
  fm::KernelMirrorOutputs out;
  out.o_f32 = fm::Tensor(B, sq, H, D);
  out.lse.assign(static_cast<size_t>(B) * H * sq, 0.0f);
  auto q = [&](int b, int s, int h, int c) { return fm::e4m3_to_float(in.q[((static_cast<size_t>(b) * sq + s) * H + h) * D + c]); };
  auto k = [&](int b, int s, int h, int c) { return fm::e4m3_to_float(in.k[((static_cast<size_t>(b) * sk + s) * HK + h) * D + c]); };
  auto v = [&](int b, int s, int h, int c) { return fm::e4m3_to_float(in.v[((static_cast<size_t>(b) * sk + s) * HK + h) * D + c]); };
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < H; ++h) {
      const int kh = h / group;
      for (int i = 0; i < sq; ++i) {
        const int ke = fm::causal_key_end(i, sq, sk, in.causal);
        const float qs = ssl2 * in.q_descale[(static_cast<size_t>(b) * H + h) * sq + i];
        float m = -INFINITY, l[4] = {0, 0, 0, 0}, o[128] = {0};
        float l_tc = 0, blk_prev = 0;  // kVariantTcRowSum: the row's l, the previous block's sum
        for (int n = (ke + BN - 1) / BN - 1; n >= 0; --n) {
          const float scale =
              qs * in.k_descale[(static_cast<size_t>(b) * HK + kh) * nkb + (in.k_descale_per_block ? n : 0)];
          const int j0 = BN * n, j1 = std::min(j0 + BN, sk);
          std::vector<float> s(BN), p8(BN);
          float mx = -INFINITY;
          for (int j = j0; j < j1; ++j) {
            float acc = 0;
            for (int c = 0; c < D; ++c) acc += q(b, i, h, c) * k(b, j, kh, c);
            s[j - j0] = acc;
            if (j < ke) mx = std::fmax(mx, acc);
          }
          const float cand = std::fmax(m, mx * scale);
          const bool moves = cand > m + slack;  // softmax.cuh's step_max
          const float m_new = moves ? cand : m;
          const float m_use = m_new == -INFINITY ? 0.0f : m_new;
          const float alpha = moves ? fm::flash_exp2(m - m_use) : 1.0f;
          const float nb = offset - m_use;
          float bsum[4] = {0, 0, 0, 0};
          for (int j = j0; j < j1; ++j) {
            const float p = j < ke ? fm::flash_exp2(std::fma(s[j - j0], scale, nb)) : 0.0f;
            const float hi = fm::round_e4m3(p);
            p8[j - j0] = fp16 ? fm::round_to(fm::Format::FP16, p) : hilo ? hi + fm::round_e4m3(p - hi) : hi;
            bsum[((j - j0) % 8) / 2] += p;
          }
          if (nm.l_from_rounded_p) {
            // softmax.step_max: row_sum *= alpha; then add_block_sum(previous block's sums, alpha).
            float blk = 0;
            for (int k0 = j0; k0 < j1; k0 += 32) {
              float ks = 0;
              for (int j = k0; j < std::min(k0 + 32, j1); ++j) ks += p8[j - j0];
              blk += ks;
            }
            l_tc *= alpha;
            l_tc = std::fma(blk_prev, alpha, l_tc);
            blk_prev = blk;
          } else {
            for (int t = 0; t < 4; ++t) l[t] = std::fma(l[t], alpha, bsum[t]);
          }
          for (int c = 0; c < D; ++c) {
            if (nm.two_level) {
              float acc = 0;
              for (int j = j0; j < j1; ++j) acc += p8[j - j0] * v(b, j, kh, c);
              o[c] = std::fma(o[c], alpha, acc);
            } else {
              float acc = o[c] * alpha;
              for (int j = j0; j < j1; ++j) acc += p8[j - j0] * v(b, j, kh, c);
              o[c] = acc;
            }
          }
          m = m_new;
        }
        // finalize: the quad's shuffle sum (the tensor core's l is held by lane 0 alone).
        const float L = nm.l_from_rounded_p ? l_tc + blk_prev : (l[0] + l[1]) + (l[2] + l[3]);
        const float inv = L > 0 ? 1.0f / L : 0.0f;
        for (int c = 0; c < D; ++c) {
          const float vd = in.v_descale[(static_cast<size_t>(b) * HK + kh) * D + c];
          const float ob = in.o_bias ? in.o_bias[(static_cast<size_t>(b) * HK + kh) * D + c] : 0.0f;
          out.o_f32(b, i, h, c) = L > 0 ? std::fma(o[c] * vd, inv, ob) : 0.0f;
        }
        const size_t li = (static_cast<size_t>(b) * H + h) * sq + i;
        out.lse[li] = L > 0 ? (m + std::log2(L) - offset) * 0.69314718055994531f +
                                  (in.lse_bias ? in.lse_bias[li] : 0.0f)
                            : -INFINITY;
      }
    }
  }
  return out;
}

struct MirrorCase {
  int b, sq, sk, h, hk;
  bool causal;
  int p_precision;
  int code_range;  // |q|, |k|, |v| codes drawn from E4M3 values up to this magnitude
  bool k_per_block = true;  // false: one K descale per (b, h_kv) -> the kernel's 192-key blocks
};

struct MirrorData {
  std::vector<uint8_t> q, k, v;
  std::vector<float> qd, kd, vd, lse_bias, o_bias;
  fm::KernelMirrorInputs in;
};

MirrorData make_mirror_data(const MirrorCase& c, uint32_t seed) {
  MirrorData m;
  std::mt19937 rng(seed);
  // Codes whose magnitude is at most code_range (random sign and value among those codes); for
  // small ranges only the integer values, so that every sum of products is exact in FP32.
  std::vector<uint8_t> pool;
  for (int code = 0; code < 127; ++code) {
    const float x = fm::e4m3_to_float(static_cast<uint8_t>(code));
    if (x <= c.code_range && (c.code_range > 16 || x == std::floor(x))) pool.push_back(static_cast<uint8_t>(code));
  }
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  auto fill = [&](std::vector<uint8_t>& x, size_t n) {
    x.resize(n);
    for (auto& b : x) b = static_cast<uint8_t>(pool[pick(rng)] | ((rng() & 1) << 7));
  };
  fill(m.q, static_cast<size_t>(c.b) * c.sq * c.h * 128);
  fill(m.k, static_cast<size_t>(c.b) * c.sk * c.hk * 128);
  fill(m.v, static_cast<size_t>(c.b) * c.sk * c.hk * 128);
  std::uniform_real_distribution<float> u(0.5f, 2.0f);
  const float qs = 4.0f / c.code_range;  // scores of order a few units
  m.qd.resize(static_cast<size_t>(c.b) * c.h * c.sq);
  for (float& x : m.qd) x = qs * u(rng) / c.code_range;
  m.kd.resize(static_cast<size_t>(c.b) * c.hk * ((c.sk + 127) / 128));
  for (float& x : m.kd) x = u(rng);
  m.vd.resize(static_cast<size_t>(c.b) * c.hk * 128);
  for (float& x : m.vd) x = u(rng) / c.code_range;
  m.lse_bias.resize(m.qd.size());
  for (float& x : m.lse_bias) x = u(rng) - 1.0f;
  m.o_bias.resize(m.vd.size());
  for (float& x : m.o_bias) x = u(rng) - 1.0f;
  fm::KernelMirrorInputs& in = m.in;
  in.batch = c.b, in.seqlen_q = c.sq, in.seqlen_k = c.sk, in.heads = c.h, in.heads_kv = c.hk;
  in.q = m.q.data(), in.k = m.k.data(), in.v = m.v.data();
  in.q_descale = m.qd.data(), in.k_descale = m.kd.data(), in.v_descale = m.vd.data();
  in.lse_bias = m.lse_bias.data(), in.o_bias = m.o_bias.data();
  in.causal = c.causal;
  in.p_precision = c.p_precision;
  in.k_descale_per_block = c.k_per_block;
  return m;
}

}  // namespace

class KernelMirror : public ::testing::TestWithParam<MirrorCase> {};

// Integer codes up to 4 make every score exact in any summation order, so the mirror and the
// literal kernel see identical exp2 arguments and identical P; only the P V sums may differ in
// their last FP32 bit (GEMM order). O agrees to 1e-6 relative, LSE to 1e-6, and nearly every BF16
// output is bit-identical (a difference needs an FP32 value within 1 ulp of a BF16 midpoint).
TEST_P(KernelMirror, MatchesLiteralKernelExactScores) {
  const MirrorCase c = GetParam();
  const MirrorData d = make_mirror_data(c, 11);
  const fm::KernelMirrorOutputs got = fm::kernel_mirror_forward(d.in);
  const fm::KernelMirrorOutputs want = literal_kernel(d.in);
  double omax = 0;
  for (float x : want.o_f32.data) omax = std::max(omax, static_cast<double>(std::fabs(x)));
  size_t bf16_diff = 0;
  for (size_t i = 0; i < want.o_f32.data.size(); ++i) {
    ASSERT_NEAR(got.o_f32.data[i], want.o_f32.data[i], 1e-6 * omax) << i;
    bf16_diff += got.o_bf16[i] != fm::float_to_bf16(want.o_f32.data[i]);
  }
  EXPECT_LE(bf16_diff, want.o_f32.data.size() / 1000 + 1);
  for (size_t i = 0; i < want.lse.size(); ++i) {
    if (std::isinf(want.lse[i])) {
      ASSERT_TRUE(std::isinf(got.lse[i]) && got.lse[i] < 0) << i;
    } else {
      ASSERT_NEAR(got.lse[i], want.lse[i], 1e-6 * std::max(1.0f, std::fabs(want.lse[i]))) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, KernelMirror,
    ::testing::Values(MirrorCase{1, 200, 200, 2, 2, false, FP8ATTN_P_E4M3, 4},
                      MirrorCase{2, 130, 300, 4, 2, true, FP8ATTN_P_E4M3, 4},
                      MirrorCase{1, 300, 130, 2, 1, true, FP8ATTN_P_E4M3, 4},  // empty rows
                      MirrorCase{1, 257, 257, 1, 1, true, FP8ATTN_P_E4M3_HILO, 4},
                      MirrorCase{1, 1, 1000, 2, 2, false, FP8ATTN_P_E4M3, 4},
                      MirrorCase{2, 130, 500, 4, 2, true, FP8ATTN_P_E4M3, 4, false},  // 192-key blocks
                      MirrorCase{1, 500, 500, 2, 1, false, FP8ATTN_P_E4M3, 4, false},
                      // FP16 P (one-level, 128-key blocks whatever the K descale, l from FP32 p)
                      MirrorCase{1, 200, 200, 2, 2, false, FP8ATTN_P_FP16, 4},
                      MirrorCase{2, 130, 300, 4, 2, true, FP8ATTN_P_FP16, 4},
                      MirrorCase{1, 300, 130, 2, 1, true, FP8ATTN_P_FP16, 4},  // empty rows
                      MirrorCase{1, 500, 500, 2, 1, false, FP8ATTN_P_FP16, 4, false},
                      // the exact softmax (offset 8, no slack, l from FP32 p; 192-key blocks)
                      MirrorCase{2, 130, 500, 4, 2, true, FP8ATTN_P_E4M3_EXACT, 4, false},
                      MirrorCase{1, 500, 500, 2, 1, false, FP8ATTN_P_E4M3_EXACT, 4, false},
                      MirrorCase{1, 300, 130, 2, 1, true, FP8ATTN_P_E4M3_EXACT, 4, false}));

// FP8ATTN_P_E4M3_EXACT's numerics: FA3 FP8's softmax (fp8attn.h) in the E4M3 kernel's blocks.
TEST(KernelMirror, ExactSoftmaxNumerics) {
  const fm::FlashNumerics nm = fm::kernel_numerics(FP8ATTN_P_E4M3_EXACT, fm::Accumulator::kHopperFP8, false);
  EXPECT_EQ(nm.block_n, 192);
  EXPECT_EQ(nm.p_format, fm::Format::E4M3);
  EXPECT_FALSE(nm.p_hilo);
  EXPECT_FALSE(nm.l_from_rounded_p);
  EXPECT_FALSE(nm.two_level);
  EXPECT_EQ(nm.p_offset_log2, FP8ATTN_P_EXACT_OFFSET_LOG2);
  EXPECT_EQ(nm.rescale_slack_log2, 0.0f);
  EXPECT_EQ(nm.acc_qk, fm::Accumulator::kHopperFP8);
}

// FP8ATTN_P_FP16's numerics as src/api.cu dispatches it: one configuration whatever the K descale
// granularity or the accumulator model asked for the QK^T (the FP16 P V accumulates in FP32).
TEST(KernelMirror, Fp16PNumerics) {
  for (const bool per_block : {false, true}) {
    const fm::FlashNumerics nm =
        fm::kernel_numerics(FP8ATTN_P_FP16, fm::Accumulator::kHopperFP8, per_block);
    EXPECT_EQ(nm.block_n, 128);
    EXPECT_EQ(nm.p_format, fm::Format::FP16);
    EXPECT_FALSE(nm.p_hilo);
    EXPECT_FALSE(nm.l_from_rounded_p);
    EXPECT_FALSE(nm.two_level);
    EXPECT_EQ(nm.acc_qk, fm::Accumulator::kHopperFP8);
    EXPECT_EQ(nm.acc_pv, fm::Accumulator::kFP32);
    EXPECT_EQ(nm.p_offset_log2, FP8ATTN_P_OFFSET_LOG2);
    EXPECT_EQ(nm.rescale_slack_log2, FP8ATTN_RESCALE_SLACK_LOG2);
  }
}

// Full-range codes: scores are rounded in the GEMM's order, so an exp2 argument may differ in its
// last bit and flip a P value across an E4M3 rounding midpoint (about 1 in 10^5 values). Bound the
// overall difference instead: relative RMS below 1e-4.
TEST(KernelMirror, CloseToLiteralKernelFullRange) {
  const MirrorData d = make_mirror_data({1, 256, 512, 2, 1, true, FP8ATTN_P_E4M3, 448}, 12);
  const fm::KernelMirrorOutputs got = fm::kernel_mirror_forward(d.in);
  const fm::KernelMirrorOutputs want = literal_kernel(d.in);
  double se = 0, sr = 0;
  for (size_t i = 0; i < want.o_f32.data.size(); ++i) {
    const double e = got.o_f32.data[i] - want.o_f32.data[i];
    se += e * e;
    sr += static_cast<double>(want.o_f32.data[i]) * want.o_f32.data[i];
  }
  EXPECT_LT(std::sqrt(se / sr), 1e-4);
  for (size_t i = 0; i < want.lse.size(); ++i) {
    if (!std::isinf(want.lse[i])) ASSERT_NEAR(got.lse[i], want.lse[i], 1e-4) << i;
  }
}

// The E4M3 kernel's l sums the rounded P (kernel_numerics: l_from_rounded_p), the hi+lo kernel's
// the FP32 p. On the same scores, the LSE from the rounded P differs from the one from the FP32 p
// by |ln(sum P8 / sum p)| <= log1p(2^-4) + c n 2^-10 / 256: a normal E4M3 value is within 2^-4 of
// p relative to the smaller of the two (so sum P8 / sum p of the normal keys lies in
// [1 / (1 + 2^-4), 1 + 2^-4]), a subnormal one within 2^-10 absolute, and l >= 256 (the row's
// largest p is exactly 2^8), with c = (1 + 2^-4) / (1 - (1 + 2^-4) n 2^-18) from the lower side.
// The deviation must be there (the switch works) and within the bound.
TEST(KernelMirror, LseFromRoundedPWithinBound) {
  const fm::FlashNumerics e4 = fm::kernel_numerics(FP8ATTN_P_E4M3, fm::Accumulator::kFP32, false);
  ASSERT_TRUE(e4.l_from_rounded_p);
  ASSERT_FALSE(fm::kernel_numerics(FP8ATTN_P_E4M3_HILO).l_from_rounded_p);
  ASSERT_TRUE(fm::kernel_numerics(FP8ATTN_P_E4M3, fm::Accumulator::kFP32, true).l_from_rounded_p);
  const int sq = 300, sk = 700;
  const fm::Tensor q = gaussian(1, sq, 2, 128, 21, 1.5f), k = gaussian(1, sk, 1, 128, 22, 1.5f);
  const fm::Tensor v = gaussian(1, sk, 1, 128, 23);
  fm::FlashInputs in;
  in.q = &q, in.k = &k, in.v = &v, in.causal = true;
  fm::FlashNumerics fp32_l = e4;
  fp32_l.l_from_rounded_p = false;
  const fm::FlashOutputs a = fm::flash_forward(in, e4), b = fm::flash_forward(in, fp32_l);
  const double u = 1.0 / 16;
  double worst = 0, worst_ratio = 0;
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < sq; ++i) {
      const size_t li = static_cast<size_t>(h) * sq + i;
      const int n = fm::causal_key_end(i, sq, sk, true);
      const double x = n * std::ldexp(1.0, -18);
      const double bound = std::log1p(u) + (1 + u) / (1 - (1 + u) * x) * x + 1e-6 * std::fabs(b.lse[li]);
      const double d = std::fabs(static_cast<double>(a.lse[li]) - b.lse[li]);
      ASSERT_LE(d, bound) << "row " << li << " with " << n << " keys";
      worst = std::max(worst, d);
      worst_ratio = std::max(worst_ratio, d / bound);
    }
  }
  std::printf("[ info ] |LSE(sum P8) - LSE(sum p)| max %.3e, %.2f of its bound\n", worst, worst_ratio);
  EXPECT_GT(worst, 1e-4);  // the rounded P do reach l
}

TEST(KernelMirror, VtRoundTrip) {
  const int B = 2, HK = 3, S = 70, pad = 96;
  std::vector<uint8_t> v(static_cast<size_t>(B) * S * HK * 128);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 7 + 3);
  std::vector<uint8_t> vt(static_cast<size_t>(B) * HK * 128 * pad, 0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < HK; ++h)
      for (int c = 0; c < 128; ++c)
        for (int p = 0; p < pad; ++p) {
          const int key = p / 32 * 32 + fp8attn_vt_key_at(p % 32);
          if (key < S) vt[((static_cast<size_t>(b) * HK + h) * 128 + c) * pad + p] = v[((static_cast<size_t>(b) * S + key) * HK + h) * 128 + c];
        }
  EXPECT_EQ(fm::vt_to_v(vt.data(), B, HK, S, pad), v);
}

TEST(Accumulator, TruncateMantissa) {
  EXPECT_EQ(fm::truncate_mantissa(1.0f + std::ldexp(1.0f, -13), 13), 1.0f + std::ldexp(1.0f, -13));
  EXPECT_EQ(fm::truncate_mantissa(1.0f + std::ldexp(1.0f, -14), 13), 1.0f);
  EXPECT_EQ(fm::truncate_mantissa(-1.0f - std::ldexp(3.0f, -15), 13), -1.0f);  // toward zero
  EXPECT_EQ(fm::truncate_mantissa(0.1f, 23), 0.1f);
}

// Accumulating O across all blocks in a 13-bit accumulator loses precision as the context grows;
// two-level accumulation (each block into a fresh accumulator, then FP32) removes most of it.
// Measured against the same scheme with FP32 accumulation, so that only the accumulator differs.
TEST(Accumulator, TwoLevelHelpsAtLongContext) {
  const fm::Dataset d = fm::make_synthetic("gaussian", 1, 4096, 1, 1, 128, 3);
  auto run = [&](const std::string& spec) {
    return fm::run_scheme(fm::scheme_by_name(spec), d.q, d.k, d.v, false).o_acc;
  };
  const fm::Tensor fp32 = run("fa3-fp8:o=fp32");
  fm::TensorD base(fp32.b, fp32.s, fp32.h, fp32.d);
  for (size_t i = 0; i < fp32.data.size(); ++i) base.data[i] = fp32.data[i];
  const double single = fm::compare(run("fa3-fp8:o=fp32:acc_pv=hopper:two_level=0"), base).rel_rmse;
  const double two = fm::compare(run("fa3-fp8:o=fp32:acc_pv=hopper:two_level=1"), base).rel_rmse;
  const double wide = fm::compare(run("fa3-fp8:o=fp32:acc_pv=hopper:acc_bits=20"), base).rel_rmse;
  EXPECT_GT(single, 3 * two) << single << " " << two;
  EXPECT_GT(two, 10 * wide) << two << " " << wide;  // 13 bits cost more than 20
  EXPECT_LT(two, 1e-3);
}

// rescale_per_warp: with slack 0 it is the exact running max, as per row (bit for bit); with a
// slack it moves whole warps (16 rows) to their exact maxima, so it differs from the per-row rule
// but stays a softmax of the same scores (LSE within the E4M3 P's bound of the exact one).
// exp_fa3 (FA3's exp2 argument) only moves roundings: O within a few E4M3 ties of ours.
TEST(FlashEngine, RescalePerWarpAndExpFa3) {
  const fm::Tensor q = gaussian(1, 200, 2, 128, 31, 2.0f), k = gaussian(1, 600, 1, 128, 32, 2.0f);
  const fm::Tensor v = gaussian(1, 600, 1, 128, 33);
  fm::FlashInputs in;
  in.q = &q, in.k = &k, in.v = &v, in.causal = true;
  fm::FlashNumerics nm;
  nm.p_offset_log2 = 8.0f, nm.rescale_slack_log2 = 0.0f, nm.two_level = false, nm.block_n = 64,
  nm.o_format = fm::Format::FP32;
  const fm::FlashOutputs row0 = fm::flash_forward(in, nm);
  nm.rescale_per_warp = true;
  const fm::FlashOutputs warp0 = fm::flash_forward(in, nm);
  EXPECT_EQ(row0.o_acc.data, warp0.o_acc.data);
  nm.rescale_slack_log2 = 0.8f;
  const fm::FlashOutputs warp8 = fm::flash_forward(in, nm);
  nm.rescale_per_warp = false;
  const fm::FlashOutputs row8 = fm::flash_forward(in, nm);
  EXPECT_NE(row8.o_acc.data, warp8.o_acc.data);
  double lse_dev = 0;
  for (size_t i = 0; i < row0.lse.size(); ++i) {
    ASSERT_TRUE(std::isfinite(warp8.lse[i]) && std::isfinite(row8.lse[i]));
    lse_dev = std::max({lse_dev, static_cast<double>(std::fabs(warp8.lse[i] - row0.lse[i])),
                        static_cast<double>(std::fabs(row8.lse[i] - row0.lse[i]))});
  }
  EXPECT_GT(lse_dev, 0.0);
  EXPECT_LT(lse_dev, std::log1p(1.0 / 16));
  nm.rescale_slack_log2 = 0.0f;
  nm.exp_fa3 = true;
  const fm::FlashOutputs fa3 = fm::flash_forward(in, nm);
  double dmax = 0, omax = 0;
  for (size_t i = 0; i < fa3.o_acc.data.size(); ++i) {
    ASSERT_TRUE(std::isfinite(fa3.o_acc.data[i]));
    dmax = std::max(dmax, static_cast<double>(std::fabs(fa3.o_acc.data[i] - row0.o_acc.data[i])));
    omax = std::max(omax, static_cast<double>(std::fabs(row0.o_acc.data[i])));
  }
  EXPECT_LT(dmax, omax / 64);
  nm.rescale_slack_log2 = 0.5f;
  EXPECT_THROW(fm::flash_forward(in, nm), std::invalid_argument);
}
