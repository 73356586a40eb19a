// End to end: fp8attn::attention on BF16 tensors (pre-pass + kernel, reusable workspace).
//  1. It equals, bit for bit, the split path a KV-cache user runs: quantize K/V once, then for
//     each of two different Q: quantize Q, fill the params, call the kernel.
//  2. Kernel-only reference: exact FP64 attention on the inputs the kernel was given (the CPU
//     mirror's E4M3 codes times their descales), plus o_bias and lse_bias. The gap is the
//     kernel's own rounding of P (E4M3): NUMERICS.md measures ~2.5e-2 relative RMSE on Gaussian
//     data for FA3's FP8 kernel, so the bound is 2x that. The E4M3 kernel's l is the tensor
//     core's sum of the rounded P (model::kernel_numerics: l_from_rounded_p), so its LSE carries
//     ln(sum P8 / sum p) besides the scores' accumulation (per row, derived below). A wrong
//     scale, layout or bias gives errors of order 1.
//  3. End-to-end reference: exact FP64 attention on the BF16 data. K carries a channel bias of
//     std 6 here, which without a correct lse_bias would shift every LSE by ~2. The LSE must be
//     within the FP8 rounding of its row's scores (computed here) plus the kernel-only bound;
//     O's bound is loose (FP8 Q, K, V, P all round).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/attention.h"
#include "model/codecs.h"
#include "model/kernel_mirror.h"
#include "model/prepass.h"
#include "model/reference.h"
#include "tests/common/seed.h"
#include "tests/common/sm90.cuh"

namespace fm = fp8attn::model;

namespace {

constexpr int kD = 128;


struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    if (cudaMalloc(&p, n) == cudaSuccess) cudaMemset(p, 0xFF, n);  // poison: NaN everywhere
  }
  ~DeviceBuffer() { cudaFree(p); }
};

template <typename T>
std::vector<T> to_host(const void* d, size_t n) {
  std::vector<T> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

std::vector<uint16_t> random_bf16(std::mt19937_64& rng, size_t n, float bias_std) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::vector<float> bias(kD);
  for (float& x : bias) x = bias_std * n01(rng);
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = fm::float_to_bf16(bias[i % kD] + n01(rng));
  return out;
}

fp8attn_bf16_tensor dev_tensor(const void* p, int b, int s, int h) {
  return {p, b, s, h, kD, int64_t(s) * h * kD, int64_t(h) * kD, kD};
}

fm::Tensor bf16_tensor(const std::vector<uint16_t>& x, int b, int s, int h) {
  fm::Tensor t(b, s, h, kD);
  for (size_t i = 0; i < x.size(); ++i) t.data[i] = fm::bf16_to_float(x[i]);
  return t;
}

double rel_rmse(const std::vector<float>& o, const fm::TensorD& ref, const std::vector<float>* bias,
                int h, int h_kv) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    double r = ref.data[i];
    if (bias) {
      const size_t c = i % kD, head = (i / kD) % h, b = i / (size_t(kD) * h * ref.s);
      r += (*bias)[(b * h_kv + head / (h / h_kv)) * kD + c];
    }
    if (!std::isfinite(o[i])) return INFINITY;
    err += (o[i] - r) * (o[i] - r), norm += r * r;
  }
  return std::sqrt(err / norm);
}

struct Case {
  int b, sq, sk, h, h_kv;
  bool causal, hadamard;
  bool k_head;  // one K descale per head: the kernel's 192-key blocks; else per 128 keys
  int centre = FP8ATTN_CENTRE_MEAN;  // FP8ATTN_CENTRE_SAMPLE: the one-pass pre-pass (issue 17)
};

class QuantAttention : public ::testing::TestWithParam<Case> {};

// The larger of a and b, NaN if either is: std::max(a, NaN) is a, which would let a NaN error
// pass every bound below.
double max_keep_nan(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b); }

TEST_P(QuantAttention, EndToEndEqualsSplitPathAndMeetsReferences) {
  FP8ATTN_REQUIRE_SM90();
  const Case t = GetParam();
  const uint64_t seed = fp8attn::test::fresh_seed("end to end");
  std::mt19937_64 rng(seed);
  const size_t nq = size_t(t.b) * t.sq * t.h * kD, nkv = size_t(t.b) * t.sk * t.h_kv * kD;
  const std::vector<uint16_t> q1 = random_bf16(rng, nq, 0.5f), q2 = random_bf16(rng, nq, 0.5f);
  const std::vector<uint16_t> k = random_bf16(rng, nkv, 6.0f), v = random_bf16(rng, nkv, 1.0f);
  DeviceBuffer dq1(nq * 2), dq2(nq * 2), dk(nkv * 2), dv(nkv * 2);
  ASSERT_EQ(cudaMemcpy(dq1.p, q1.data(), nq * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dq2.p, q2.data(), nq * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dk.p, k.data(), nkv * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dv.p, v.data(), nkv * 2, cudaMemcpyHostToDevice), cudaSuccess);
  const auto tq1 = dev_tensor(dq1.p, t.b, t.sq, t.h), tq2 = dev_tensor(dq2.p, t.b, t.sq, t.h);
  const auto tk = dev_tensor(dk.p, t.b, t.sk, t.h_kv), tv = dev_tensor(dv.p, t.b, t.sk, t.h_kv);

  fp8attn::AttentionOptions opt;
  opt.causal = t.causal;
  opt.quant.hadamard_qk = t.hadamard;
  opt.quant.k_scale = t.k_head ? FP8ATTN_K_SCALE_HEAD : FP8ATTN_K_SCALE_BLOCK128;
  opt.quant.hadamard_seed = seed;
  opt.quant.centre = t.centre;
  const float scale = 1.0f / std::sqrt(128.0f);
  fp8attn::Workspace ws;
  const size_t no = nq, nl = size_t(t.b) * t.h * t.sq;

  // 1. End to end vs the split path with one KV cache and two queries.
  DeviceBuffer cache_buf(fp8attn_kv_cache_bytes(t.b, t.sk, t.h_kv, kD, 0));
  DeviceBuffer scratch(fp8attn_quantize_kv_workspace_bytes(t.b, t.sk, t.h_kv));
  DeviceBuffer q_buf(fp8attn_q_quant_bytes(t.b, t.sq, t.h, kD));
  fp8attn_kv_cache cache;
  ASSERT_EQ(fp8attn_kv_cache_init(&cache, cache_buf.p, cache_buf.bytes, t.b, t.sk, t.h_kv, kD, 0),
            FP8ATTN_SUCCESS);
  fp8attn::quantize_kv(tk, tv, opt.quant, cache, scratch.p, scratch.bytes);
  std::vector<float> e2e_o1;
  std::vector<float> e2e_lse1;
  for (const fp8attn_bf16_tensor* tq : {&tq1, &tq2}) {
    DeviceBuffer o_e2e(no * 2), lse_e2e(nl * 4), o_split(no * 2), lse_split(nl * 4);
    fp8attn::attention(*tq, tk, tv, o_e2e.p, static_cast<float*>(lse_e2e.p), opt, ws);
    fp8attn_q_quant qq;
    ASSERT_EQ(fp8attn_q_quant_init(&qq, q_buf.p, q_buf.bytes, t.b, t.sq, t.h, kD), FP8ATTN_SUCCESS);
    fp8attn::quantize_q(*tq, cache, FP8ATTN_Q_SCALE_TOKEN, scale, qq);
    fp8attn_fwd_params p;
    ASSERT_EQ(fp8attn_fwd_params_from_quant(&p, &qq, &cache, o_split.p,
                                            static_cast<float*>(lse_split.p)), FP8ATTN_SUCCESS);
    p.causal = t.causal;
    fp8attn::attention_fwd(p);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto a = to_host<uint16_t>(o_e2e.p, no), b = to_host<uint16_t>(o_split.p, no);
    const auto la = to_host<uint32_t>(lse_e2e.p, nl), lb = to_host<uint32_t>(lse_split.p, nl);
    EXPECT_EQ(a, b) << "O: end to end differs from the split path";
    EXPECT_EQ(la, lb) << "LSE: end to end differs from the split path";
    if (tq == &tq1) {
      for (uint16_t x : a) e2e_o1.push_back(fm::bf16_to_float(x));
      for (uint32_t x : la) {
        float f;
        std::memcpy(&f, &x, 4);
        e2e_lse1.push_back(f);
      }
    }
  }

  // 2. Kernel-only reference from the CPU mirror's codes (bit-identical to the GPU's).
  fp8attn_quant_options qo = opt.quant;
  const fm::KvCacheHost hk = fm::prepass_kv(fm::contiguous_view(k, t.b, t.sk, t.h_kv, kD),
                                            fm::contiguous_view(v, t.b, t.sk, t.h_kv, kD), qo);
  const fm::QQuantHost hq = fm::prepass_q(fm::contiguous_view(q1, t.b, t.sq, t.h, kD), hk,
                                          FP8ATTN_Q_SCALE_TOKEN, scale);
  const int nblk = (t.sk + 127) / 128;
  fm::DecodedOperands ops = fm::decode_operands(hq, hk);  // codes; descales applied below
  for (int b = 0; b < t.b; ++b) {
    for (int s = 0; s < t.sq; ++s) {
      for (int h = 0; h < t.h; ++h) {
        for (int c = 0; c < kD; ++c) {
          ops.q(b, s, h, c) *= hq.q_descale[(size_t(b) * t.h + h) * t.sq + s];
        }
      }
    }
    for (int s = 0; s < t.sk; ++s) {
      for (int h = 0; h < t.h_kv; ++h) {
        const size_t bh = size_t(b) * t.h_kv + h;
        for (int c = 0; c < kD; ++c) {
          ops.k(b, s, h, c) *= hk.k_descale[bh * nblk + s / 128];
          ops.v(b, s, h, c) *= hk.v_descale[bh * kD + c];
        }
      }
    }
  }
  fm::AttnConfig cfg;
  cfg.causal = t.causal;
  cfg.softmax_scale = scale;
  const fm::ExactF64 kref = fm::attention_exact_f64(ops.q, ops.k, ops.v, cfg);
  const double kernel_err = rel_rmse(e2e_o1, kref.o, &hk.v_mean, t.h, t.h_kv);
  // LSE against the same inputs: |dLSE| <= max_j |d score_j|. Hopper's FP8 wgmma keeps ~13
  // mantissa bits while it accumulates Q K^T, so a score can be off by 2^-12 of the row's largest
  // sum of |products| (times the softmax scale); plus 1e-5 for exp2.approx and the FP32 sums.
  // With l the sum of the rounded P (E4M3 kernel), with p_j = 2^8 exp(s_j - max s) (the max key's
  // is 256 exactly, so l >= 256), u = 2^-4 and x = sum over p_j < 2^-6 (E4M3's subnormals) of
  // min(p_j, 2^-10), over sum p (<= n 2^-18): |ln(sum P8 / sum p)| <= log1p(u) + c x,
  // c = (1 + u) / (1 - (1 + u) x) (a normal P8_j is within u of p_j relative to the smaller of
  // the two, so sum P8 / sum p over the normal keys lies in [1 / (1 + u), 1 + u]; a subnormal one
  // within min(p_j, 2^-10)); and the tensor core sums each block's P into a fresh accumulator,
  // each product aligned to at most the block sum's exponent with 13 fraction bits, each k-step's
  // result truncated as well: l within r = (block_n + block_n / 32) 2^-13 relative (the worst
  // case of tests/gpu/test_attention.cu's rowsum_acc), r / (1 - r) in the LSE.
  const fm::FlashNumerics knm = fm::kernel_numerics(FP8ATTN_P_E4M3, fm::Accumulator::kFP32, !t.k_head);
  const double r_tc =
      knm.l_from_rounded_p ? (knm.block_n + knm.block_n / 32) * std::ldexp(1.0, -13) : 0.0;
  std::vector<double> lse_l(nl, 0.0);  // per row: what l's rounding and accumulation add
  double kernel_lse_err = 0, worst_lse_ratio = 0;
  for (int b = 0; b < t.b; ++b) {
    for (int h = 0; h < t.h; ++h) {
      const int hk2 = h / (t.h / t.h_kv);
      for (int i = 0; i < t.sq; ++i) {
        const size_t li = (size_t(b) * t.h + h) * t.sq + i;
        const int kend = t.causal ? std::min(t.sk, i + t.sk - t.sq + 1) : t.sk;
        if (kend <= 0) continue;
        double abs_max = 0, s_max = -INFINITY;
        std::vector<double> sc(kend);
        for (int j = 0; j < kend; ++j) {
          double a = 0, d = 0;
          for (int c = 0; c < kD; ++c) {
            const double x = double(ops.q(b, i, h, c)) * ops.k(b, j, hk2, c);
            a += std::fabs(x), d += x;
          }
          abs_max = std::max(abs_max, a);
          s_max = std::max(s_max, sc[j] = scale * d);
        }
        if (knm.l_from_rounded_p) {
          double l = 0, sub = 0;
          for (int j = 0; j < kend; ++j) {
            const double p = std::ldexp(std::exp(sc[j] - s_max), 8);
            l += p;
            if (p < std::ldexp(1.0, -6)) sub += std::min(p, std::ldexp(1.0, -10));
          }
          const double x = sub / l, u = 1.0 / 16;
          lse_l[li] = std::log1p(u) + (1 + u) / (1 - (1 + u) * x) * x + r_tc / (1 - r_tc);
        }
        const double bound = 1e-5 + std::ldexp(1.0, -12) * scale * abs_max + lse_l[li];
        const double err = std::fabs(e2e_lse1[li] - (kref.lse[li] + hq.lse_bias[li]));
        kernel_lse_err = max_keep_nan(kernel_lse_err, err);
        worst_lse_ratio = max_keep_nan(worst_lse_ratio, err / bound);
      }
    }
  }
  std::printf("[ info ] kernel-only: O rel RMSE %.3e, LSE max abs %.3e (worst row at %.2f of its bound)\n",
              kernel_err, kernel_lse_err, worst_lse_ratio);
  EXPECT_LE(kernel_err, 5e-2);
  EXPECT_LE(worst_lse_ratio, 1.0);

  // 3. End-to-end reference on the BF16 data.
  const fm::ExactF64 ref = fm::attention_exact_f64(bf16_tensor(q1, t.b, t.sq, t.h),
                                                   bf16_tensor(k, t.b, t.sk, t.h_kv),
                                                   bf16_tensor(v, t.b, t.sk, t.h_kv), cfg);
  const double e2e_err = rel_rmse(e2e_o1, ref.o, nullptr, t.h, t.h_kv);
  // Per row, |LSE - LSE_true| <= max over visible keys of the FP8 rounding of the score,
  // |scale q~ . k~_j - (scale q . k_j - lse_bias)| (the LSE is 1-Lipschitz in the max norm;
  // lse_bias, what smoothing took out of every score of the row in whichever basis K was smoothed,
  // comes back exactly), plus the kernel-only LSE tolerance: 1e-3 for the scores' accumulation
  // and FP32, and l's rounding (lse_l, above).
  const int group = t.h / t.h_kv;
  double worst_excess = -INFINITY;
  for (int b = 0; b < t.b; ++b) {
    for (int h = 0; h < t.h; ++h) {
      const int hk2 = h / group;
      for (int i = 0; i < t.sq; ++i) {
        const size_t r = (size_t(b) * t.h + h) * t.sq + i;
        const int key_end = t.causal ? std::min(t.sk, i + 1 + t.sk - t.sq) : t.sk;
        double score_err = 0;
        for (int j = 0; j < key_end; ++j) {
          double deq = 0, exact = 0;
          for (int c = 0; c < kD; ++c) {
            deq += double(ops.q(b, i, h, c)) * ops.k(b, j, hk2, c);
            exact += double(fm::bf16_to_float(q1[ops.q.index(b, i, h, c)])) *
                     double(fm::bf16_to_float(k[ops.k.index(b, j, hk2, c)]));
          }
          score_err = max_keep_nan(score_err, std::fabs(scale * deq - (scale * exact - hq.lse_bias[r])));
        }
        worst_excess = max_keep_nan(worst_excess, std::fabs(e2e_lse1[r] - ref.lse[r]) - score_err - lse_l[r]);
      }
    }
  }
  std::printf("[ info ] end to end: O rel RMSE %.3e; LSE error minus its score-rounding and l "
              "bound: max %.3e\n", e2e_err, worst_excess);
  EXPECT_LE(e2e_err, 0.15);
  EXPECT_LE(worst_excess, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Shapes, QuantAttention,
                         ::testing::Values(Case{2, 300, 517, 4, 2, false, true, true},  // defaults
                                           Case{1, 256, 700, 4, 4, true, true, true},
                                           Case{2, 300, 517, 4, 2, false, false, false},
                                           Case{1, 256, 700, 4, 4, true, true, false},
                                           Case{1, 129, 129, 8, 1, true, false, true},
                                           // The one-pass pre-pass: the end-to-end call, the
                                           // split path and the mirror's codes agree with it too.
                                           Case{2, 300, 517, 4, 2, false, true, true,
                                                FP8ATTN_CENTRE_SAMPLE},
                                           Case{1, 256, 700, 4, 4, true, true, false,
                                                FP8ATTN_CENTRE_SAMPLE}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           return "b" + std::to_string(c.b) + "_sq" + std::to_string(c.sq) +
                                  "_sk" + std::to_string(c.sk) + "_h" + std::to_string(c.h) +
                                  "_" + std::to_string(c.h_kv) + (c.causal ? "_causal" : "") +
                                  (c.hadamard ? "_hadamard" : "") +
                                  (c.k_head ? "_khead" : "_kblock") +
                                  (c.centre == FP8ATTN_CENTRE_SAMPLE ? "_sample" : "");
                         });

TEST(QuantAttentionApi, RefusesBadShapes) {
  fp8attn_workspace* ws = fp8attn_workspace_create();
  ASSERT_NE(ws, nullptr);
  alignas(256) static unsigned char fake[256];
  fp8attn_attention_args a;
  fp8attn_attention_args_init(&a);
  a.q = {fake, 1, 64, 4, 64, 64 * 4 * 64, 4 * 64, 64};
  a.k = a.v = a.q;
  a.o = fake;
  EXPECT_EQ(fp8attn_attention(&a, ws, nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("head_dim"), std::string::npos)
      << fp8attn_quant_last_error();
  a.o = nullptr;
  EXPECT_EQ(fp8attn_attention(&a, ws, nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  fp8attn_workspace_destroy(ws);
}

}  // namespace
