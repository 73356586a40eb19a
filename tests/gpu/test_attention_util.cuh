// Shared by tests/gpu/test_attention*.cu: random problems quantized with the model's codecs,
// V^T built with fp8attn_vt_key_at, an FP64 reference that also returns the terms of the error
// bound, a host mirror of the kernel's documented numerics (an implementation independent of the
// model's, with the dispatch choices model::kernel_numerics states). The device runner with
// poisoned outputs: attention_device_run.cuh.
#pragma once

#include <cuda_runtime.h>

#include "tests/common/sm90.cuh"
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <ostream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "attn/select.h"
#include "fp8attn/fp8attn.h"
#include "model/codecs.h"
#include "model/kernel_mirror.h"

namespace fp8attn::test {

constexpr int kD = 128;
constexpr double kLog2e = 1.4426950408889634;

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

// Runs f(i) for i in [0, n) on all hardware threads (the .cu files get no OpenMP flags).
inline void parallel_for(int64_t n, const std::function<void(int64_t)>& f) {
  const int threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 64u));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < n; i += threads) f(i);
    });
  for (auto& th : pool) th.join();
}

struct Shape {
  int b, sq, sk, h, h_kv;
  bool causal;
  int p_precision = FP8ATTN_P_E4M3;
  bool biases = false;   // nonzero lse_bias and o_bias
  bool diffuse = false;  // scores with std ~0.2 (near-uniform attention) instead of ~2 (peaked)
  // One K descale per (b, h_kv) (kd_stride_blk = 0), as the pre-pass's default k_scale writes
  // them: the kernel then runs its 192-key blocks (E4M3 P). Else one per 128-key block.
  bool k_head = false;
  // Q and K codes that are small integers (|x| <= 4): every score, 128 products of at most 16,
  // is exact in any summation order and in Hopper's ~13-bit accumulator, so the kernel and the
  // mirrors see the same scores and the same P, and differ only in how P V and l are summed.
  bool exact_scores = false;
  // FP16 P only: V^T passed in FP16 (FP8ATTN_VT_FP16, natural key order; the same E4M3 values,
  // exact in FP16), so the FP16 V^T kernel runs instead of the converter kernel (192-key blocks
  // with k_head).
  bool vt_fp16 = false;
  std::string name() const {
    char buf[170];
    std::snprintf(buf, sizeof buf, "b%d_sq%d_sk%d_h%d_hkv%d_%s%s%s%s%s%s%s", b, sq, sk, h, h_kv,
                  causal ? "causal" : "full",
                  p_precision == FP8ATTN_P_E4M3_HILO    ? "_hilo"
                  : p_precision == FP8ATTN_P_FP16       ? "_fp16"
                  : p_precision == FP8ATTN_P_E4M3_EXACT ? "_pexact"
                                                        : "",
                  biases ? "_bias" : "",
                  diffuse ? "_diffuse" : "", k_head ? "_khead" : "", exact_scores ? "_exact" : "",
                  vt_fp16 ? "_vt16" : "");
    return buf;
  }
  int k_blocks() const { return (sk + FP8ATTN_K_SCALE_BLOCK - 1) / FP8ATTN_K_SCALE_BLOCK; }
  int sk_pad() const { return (sk + FP8ATTN_VT_PAD - 1) / FP8ATTN_VT_PAD * FP8ATTN_VT_PAD; }
  // First key row i must not see (bottom-right causal), clamped to [0, sk].
  int key_end(int i) const {
    if (!causal) return sk;
    return static_cast<int>(std::clamp<int64_t>(int64_t{i} + sk - sq + 1, 0, sk));
  }
};

inline void PrintTo(const Shape& s, std::ostream* os) { *os << s.name(); }

// What the kernel's dispatch (src/api.cu) runs for a shape, as model::kernel_numerics states it:
// keys per block, two- or one-level accumulation of O, and whether l sums the rounded P (the
// tensor core's row sum of the E4M3 kernel) or the FP32 p (hi+lo).
// P's rounding, for the bounds where l sums the FP32 p: u (a normal P within u of p, relative),
// ulp (one ulp of a normal P, relative: the size of a flipped rounding), and the absolute
// rounding error and ulp of P's subnormals. E4M3 (and hi+lo, bounded as E4M3): 2^-4, 2^-3, 2^-10,
// 2^-9; FP16 (FP8ATTN_P_FP16): 2^-11, 2^-10, 2^-25, 2^-24.
struct KernelChoice {
  int block_n = 128;
  bool two_level = false;
  bool l_rounded = false;
  float p_offset_log2 = FP8ATTN_P_OFFSET_LOG2, slack_log2 = FP8ATTN_RESCALE_SLACK_LOG2;
  double p_u = 1.0 / 16, p_ulp = 1.0 / 8, p_sub_abs = 1.0 / 1024, p_sub_ulp = 1.0 / 512;
  bool p_fp16 = false;  // P rounded to FP16 (the fields above FP16's), else E4M3
};
// The FP16 V^T kernel's three-warpgroup form, as the dispatch decides (src/attn/select.h).
inline bool three_warpgroups(const Shape& s) {
  return s.p_precision == FP8ATTN_P_FP16 && s.vt_fp16 && s.k_head &&
         fp8attn::attn::fp16_vt_three_warpgroups(s.causal, s.sq, s.sk, s.b, s.h);
}
inline KernelChoice kernel_choice(const Shape& s) {
  const model::FlashNumerics nm = model::kernel_numerics(s.p_precision, model::Accumulator::kFP32, !s.k_head,
                                                         s.vt_fp16, three_warpgroups(s));
  KernelChoice kc{nm.block_n, nm.two_level, nm.l_from_rounded_p, nm.p_offset_log2, nm.rescale_slack_log2};
  if (nm.p_format == model::Format::FP16)
    kc.p_u = std::ldexp(1.0, -11), kc.p_ulp = std::ldexp(1.0, -10), kc.p_sub_abs = std::ldexp(1.0, -25),
    kc.p_sub_ulp = std::ldexp(1.0, -24), kc.p_fp16 = true;
  return kc;
}

// The kernel's inputs on the host, and the values they stand for.
struct Problem {
  Shape s;
  std::vector<uint8_t> q8, k8, vt8;  // (b,sq,h,d), (b,sk,h_kv,d), (b,h_kv,d,sk_pad) permuted
  std::vector<uint8_t> v8;           // (b,sk,h_kv,d), for the host mirror
  // vt_fp16 only, optional: V's FP16 codes (b,sk,h_kv,d) when they carry more precision than
  // E4M3 (with_fp16_values); empty: the FP16 V^T holds v8's values (exact).
  std::vector<uint16_t> v16;
  std::vector<float> q_descale;      // (b,h,sq)    finest granularities the ABI takes, so every
  std::vector<float> k_descale;      // (b,h_kv,kblk) index of the descale arrays is exercised
  std::vector<float> v_descale;      // (b,h_kv,d)
  std::vector<float> lse_bias;       // (b,h,sq) or empty
  std::vector<float> o_bias;         // (b,h_kv,d) or empty
  float softmax_scale = 1.f / std::sqrt(float(kD));
  // Decoded copies (filled by finish()): E4M3 values as floats, and the values they stand for
  // (E4M3 x descale, exact in FP64 and rounded once to FP32 here, 6e-8 relative).
  std::vector<float> q_raw, k_raw, v_raw, q_deq, k_deq, v_deq;
  int64_t qi(int b, int t, int h, int c) const { return ((int64_t(b) * s.sq + t) * s.h + h) * kD + c; }
  int64_t ki(int b, int t, int h, int c) const { return ((int64_t(b) * s.sk + t) * s.h_kv + h) * kD + c; }
  void finish() {
    auto decode = [](const std::vector<uint8_t>& codes, std::vector<float>& raw) {
      raw.resize(codes.size());
      for (size_t i = 0; i < codes.size(); ++i) raw[i] = model::e4m3_to_float(codes[i]);
    };
    decode(q8, q_raw), decode(k8, k_raw), decode(v8, v_raw);
    if (!v16.empty())
      for (size_t i = 0; i < v16.size(); ++i) v_raw[i] = model::fp16_to_float(v16[i]);
    q_deq.resize(q_raw.size()), k_deq.resize(k_raw.size()), v_deq.resize(v_raw.size());
    for (int b = 0; b < s.b; ++b)
      for (int c = 0; c < kD; ++c) {
        for (int h = 0; h < s.h; ++h)
          for (int t = 0; t < s.sq; ++t)
            q_deq[qi(b, t, h, c)] = q_raw[qi(b, t, h, c)] * q_descale[(int64_t(b) * s.h + h) * s.sq + t];
        for (int h = 0; h < s.h_kv; ++h)
          for (int t = 0; t < s.sk; ++t) {
            k_deq[ki(b, t, h, c)] = k_raw[ki(b, t, h, c)] *
                k_descale[(int64_t(b) * s.h_kv + h) * s.k_blocks() + t / FP8ATTN_K_SCALE_BLOCK];
            v_deq[ki(b, t, h, c)] = v_raw[ki(b, t, h, c)] * v_descale[(int64_t(b) * s.h_kv + h) * kD + c];
          }
      }
  }
};

// Gaussian data with a spread of magnitudes across tokens, channels and heads (so per-token,
// per-block and per-channel scales differ), quantized per (b,h,token) / (b,h_kv,128-key block)
// (k_head: (b,h_kv), the value repeated for every block) / (b,h_kv,channel) with amax/448 scales
// and the model's E4M3 codec.
// V^T in FP16 for FP8ATTN_VT_FP16 (natural key order, zero padding) at the given element strides:
// the FP16 codes of V's values (p.v16 when set, else V's E4M3 values, exact in FP16).
inline std::vector<uint16_t> fp16_vt_codes(const Problem& p, int64_t stride_b, int64_t stride_h, int64_t stride_d) {
  const Shape& s = p.s;
  std::vector<uint16_t> vt(size_t(stride_b) * s.b, 0);
  for (int b = 0; b < s.b; ++b)
    for (int h = 0; h < s.h_kv; ++h)
      for (int c = 0; c < kD; ++c)
        for (int key = 0; key < s.sk; ++key)
          vt[b * stride_b + h * stride_h + c * stride_d + key] =
              p.v16.empty() ? model::float_to_fp16(model::e4m3_to_float(p.v8[p.ki(b, key, h, c)]))
                            : p.v16[p.ki(b, key, h, c)];
  return vt;
}

inline Problem make_problem(const Shape& s, uint64_t seed) {
  const double score_std = s.diffuse ? 0.1 : 1.0;
  Problem p;
  p.s = s;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01(0.f, 1.f);
  std::uniform_real_distribution<float> u(0.5f, 2.f);
  auto gen = [&](int b, int t, int h, std::vector<float>& out) {
    std::vector<float> chan(kD);
    for (auto& c : chan) c = u(rng);
    out.assign(size_t(b) * t * h * kD, 0.f);
    for (size_t r = 0; r < out.size() / kD; ++r) {
      const float row_mag = u(rng);
      for (int c = 0; c < kD; ++c) out[r * kD + c] = n01(rng) * row_mag * chan[c];
    }
  };
  std::vector<float> q, k, v;
  gen(s.b, s.sq, s.h, q);
  gen(s.b, s.sk, s.h_kv, k);
  gen(s.b, s.sk, s.h_kv, v);
  // Scaling q scales the scores (std ~2 at score_std 1: a few keys dominate each row).
  for (auto& x : q) x *= static_cast<float>(score_std);
  auto quant = [](float x, float descale) { return model::float_to_e4m3(x / descale); };
  auto scale_of = [](float amax) { return amax > 0.f ? amax / model::kE4M3Max : 1.f; };
  p.q8.resize(q.size());
  p.q_descale.resize(size_t(s.b) * s.h * s.sq);
  for (int b = 0; b < s.b; ++b)
    for (int h = 0; h < s.h; ++h)
      for (int t = 0; t < s.sq; ++t) {
        const float* row = &q[p.qi(b, t, h, 0)];
        float amax = 0.f;
        for (int c = 0; c < kD; ++c) amax = std::max(amax, std::fabs(row[c]));
        const float ds = scale_of(amax);
        p.q_descale[(int64_t(b) * s.h + h) * s.sq + t] = ds;
        for (int c = 0; c < kD; ++c) p.q8[p.qi(b, t, h, c)] = quant(row[c], ds);
      }
  p.k8.resize(k.size());
  p.v8.resize(v.size());
  p.k_descale.resize(size_t(s.b) * s.h_kv * s.k_blocks());
  p.v_descale.resize(size_t(s.b) * s.h_kv * kD);
  for (int b = 0; b < s.b; ++b)
    for (int h = 0; h < s.h_kv; ++h) {
      for (int blk = 0; blk < s.k_blocks(); ++blk) {
        const int t0 = s.k_head ? 0 : blk * FP8ATTN_K_SCALE_BLOCK;
        const int t1 = s.k_head ? s.sk : std::min(s.sk, t0 + FP8ATTN_K_SCALE_BLOCK);
        float amax = 0.f;
        for (int t = t0; t < t1; ++t)
          for (int c = 0; c < kD; ++c) amax = std::max(amax, std::fabs(k[p.ki(b, t, h, c)]));
        const float ds = scale_of(amax);
        p.k_descale[(int64_t(b) * s.h_kv + h) * s.k_blocks() + blk] = ds;
        const int q0 = blk * FP8ATTN_K_SCALE_BLOCK, q1 = std::min(s.sk, q0 + FP8ATTN_K_SCALE_BLOCK);
        for (int t = q0; t < q1; ++t)
          for (int c = 0; c < kD; ++c) p.k8[p.ki(b, t, h, c)] = quant(k[p.ki(b, t, h, c)], ds);
      }
      for (int c = 0; c < kD; ++c) {
        float amax = 0.f;
        for (int t = 0; t < s.sk; ++t) amax = std::max(amax, std::fabs(v[p.ki(b, t, h, c)]));
        const float ds = scale_of(amax);
        p.v_descale[(int64_t(b) * s.h_kv + h) * kD + c] = ds;
        for (int t = 0; t < s.sk; ++t) p.v8[p.ki(b, t, h, c)] = quant(v[p.ki(b, t, h, c)], ds);
      }
    }
  // V^T: position pos of each group of 32 holds key fp8attn_vt_key_at(pos); padding is zero.
  const int pad = s.sk_pad();
  p.vt8.assign(size_t(s.b) * s.h_kv * kD * pad, 0);
  for (int b = 0; b < s.b; ++b)
    for (int h = 0; h < s.h_kv; ++h)
      for (int c = 0; c < kD; ++c)
        for (int pos = 0; pos < pad; ++pos) {
          const int key = pos / FP8ATTN_VT_KEY_GROUP * FP8ATTN_VT_KEY_GROUP +
                          fp8attn_vt_key_at(pos % FP8ATTN_VT_KEY_GROUP);
          if (key < s.sk)
            p.vt8[((int64_t(b) * s.h_kv + h) * kD + c) * pad + pos] = p.v8[p.ki(b, key, h, c)];
        }
  if (s.exact_scores) {
    // Integer codes in [-4, 4]; descales that make the scores' std ~1.5 (peaked rows).
    std::uniform_int_distribution<int> code(-4, 4);
    for (auto& c : p.q8) c = model::float_to_e4m3(float(code(rng)));
    for (auto& c : p.k8) c = model::float_to_e4m3(float(code(rng)));
    for (auto& d : p.q_descale) d = 0.5f * u(rng);
    for (int b = 0; b < s.b; ++b)
      for (int h = 0; h < s.h_kv; ++h) {
        const float head = 0.5f * u(rng);
        for (int blk = 0; blk < s.k_blocks(); ++blk)
          p.k_descale[(int64_t(b) * s.h_kv + h) * s.k_blocks() + blk] = s.k_head ? head : 0.5f * u(rng);
      }
  }
  if (s.biases) {
    p.lse_bias.resize(size_t(s.b) * s.h * s.sq);
    p.o_bias.resize(size_t(s.b) * s.h_kv * kD);
    for (auto& x : p.lse_bias) x = n01(rng) * 3.f;
    for (auto& x : p.o_bias) x = n01(rng);
  }
  p.finish();
  return p;
}

// Per output row: O and LSE, plus the terms of the error bound.
struct Result {
  std::vector<double> o;       // (b,sq,h,d)
  std::vector<double> lse;     // (b,h,sq)
  std::vector<double> abs_pv;  // (b,sq,h,d): sum_j P_j |v_jc| (P normalized)
  std::vector<double> abs_dev; // (b,sq,h,d): sum_j P_j |v_jc - O_c| (O without o_bias)
  std::vector<double> max_pv;  // (b,sq,h,d): max_j P_j |v_jc|
  std::vector<double> vmax;    // (b,sq,h,d): max_j |v_jc| over the visible keys
  std::vector<int> visible;    // (b,h,sq): number of visible keys
  std::vector<double> abs_score_max;  // (b,h,sq): max_j softmax_scale * sum_c |q_c k_jc|
  // (b,h,sq): with p_j = 2^8 exp(s_j - max s) (the kernel's p in the units of the row's final
  // max), sum over the keys with p_j < 2^-6 (E4M3 subnormals) of min(p_j, 2^-10), over sum_j p_j:
  // the most E4M3's subnormal rounding can move l, relative.
  std::vector<double> sub_rel;
  std::vector<double> p_second;  // (b,h,sq): the second largest P_j (normalized)
};

// Exact attention in FP64 on the values the kernel's inputs stand for (dequantized E4M3).
// V with FP16's full precision (FP16 V^T kernels): each value v8 * (1 + u), u uniform in
// [-1/16, 1/16], rounded to FP16 (|v| <= 448 * 17/16, inside FP16's range), so most are not E4M3
// values; the decoded copies (v_raw, v_deq) follow, so the references and mirrors see them.
inline Problem with_fp16_values(Problem p, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0xF16F16F16ull);
  std::uniform_real_distribution<float> jitter(-1.0f / 16, 1.0f / 16);
  p.v16.resize(p.v8.size());
  for (size_t i = 0; i < p.v8.size(); ++i)
    p.v16[i] = model::float_to_fp16(model::e4m3_to_float(p.v8[i]) * (1.0f + jitter(rng)));
  p.finish();
  return p;
}

inline Result reference_f64(const Problem& p) {
  const Shape& s = p.s;
  Result r;
  const size_t no = size_t(s.b) * s.sq * s.h * kD, nl = size_t(s.b) * s.h * s.sq;
  r.o.assign(no, 0.0);
  r.abs_pv.assign(no, 0.0);
  r.abs_dev.assign(no, 0.0);
  r.max_pv.assign(no, 0.0);
  r.vmax.assign(no, 0.0);
  r.lse.assign(nl, -std::numeric_limits<double>::infinity());
  r.visible.assign(nl, 0);
  r.abs_score_max.assign(nl, 0.0);
  r.sub_rel.assign(nl, 0.0);
  r.p_second.assign(nl, 0.0);
  const int group = s.h / s.h_kv;
  const double scale = p.softmax_scale;
  parallel_for(int64_t(s.b) * s.h * s.sq, [&](int64_t idx) {
    const int t = int(idx % s.sq), h = int(idx / s.sq % s.h), b = int(idx / s.sq / s.h);
    const int hk = h / group, end = s.key_end(t);
    r.visible[(int64_t(b) * s.h + h) * s.sq + t] = end;
    if (end == 0) return;
    std::vector<double> sc(end);
    const float* qrow = &p.q_deq[p.qi(b, t, h, 0)];
    double m = -std::numeric_limits<double>::infinity(), abs_qk_max = 0;
    for (int j = 0; j < end; ++j) {
      const float* krow = &p.k_deq[p.ki(b, j, hk, 0)];
      double acc = 0, abs_acc = 0;
      for (int c = 0; c < kD; ++c) {
        const double x = double(qrow[c]) * krow[c];
        acc += x;
        abs_acc += std::fabs(x);
      }
      sc[j] = acc * scale;
      abs_qk_max = std::max(abs_qk_max, abs_acc * scale);
      m = std::max(m, sc[j]);
    }
    r.abs_score_max[(int64_t(b) * s.h + h) * s.sq + t] = abs_qk_max;
    double l = 0, sub = 0, first = 0, second = 0;
    for (int j = 0; j < end; ++j) {
      l += (sc[j] = std::exp(sc[j] - m));
      const double p256 = std::ldexp(sc[j], 8);
      if (p256 < std::ldexp(1.0, -6)) sub += std::min(p256, std::ldexp(1.0, -10));
      if (sc[j] > first) second = first, first = sc[j];
      else second = std::max(second, sc[j]);
    }
    const int64_t li = (int64_t(b) * s.h + h) * s.sq + t;
    r.sub_rel[li] = sub / std::ldexp(l, 8);
    r.p_second[li] = second / l;
    const int64_t o0 = p.qi(b, t, h, 0);
    for (int j = 0; j < end; ++j) {
      const double pj = sc[j] / l;
      const float* vrow = &p.v_deq[p.ki(b, j, hk, 0)];
      for (int c = 0; c < kD; ++c) {
        const double vj = vrow[c];
        r.o[o0 + c] += pj * vj;
        r.abs_pv[o0 + c] += pj * std::fabs(vj);
        r.max_pv[o0 + c] = std::max(r.max_pv[o0 + c], pj * std::fabs(vj));
        r.vmax[o0 + c] = std::max(r.vmax[o0 + c], std::fabs(vj));
      }
    }
    for (int j = 0; j < end; ++j) {
      const double pj = sc[j] / l;
      const float* vrow = &p.v_deq[p.ki(b, j, hk, 0)];
      for (int c = 0; c < kD; ++c) r.abs_dev[o0 + c] += pj * std::fabs(vrow[c] - r.o[o0 + c]);
    }
    double lse = m + std::log(l);
    if (!p.lse_bias.empty()) lse += p.lse_bias[li];
    r.lse[li] = lse;
    if (!p.o_bias.empty())
      for (int c = 0; c < kD; ++c) r.o[o0 + c] += p.o_bias[(int64_t(b) * s.h_kv + hk) * kD + c];
  });
  return r;
}

// What the kernel wrote, on the host.
struct Output {
  std::vector<uint16_t> o_bits;  // BF16 codes (b,sq,h,d)
  std::vector<float> lse;        // (b,h,sq)
  float o(int64_t i) const { return model::bf16_to_float(o_bits[i]); }
};

// The kernel's documented numerics (src/attn/softmax.cuh) in host FP32, with the dispatch's
// choices (kernel_choice): blocks of block_n keys last to first, the running max m moving only
// past the slack (FP8ATTN_RESCALE_SLACK_LOG2; 0 for E4M3_EXACT), p = exp2(S*scale - (m - offset))
// (FP8ATTN_P_OFFSET_LOG2; FP8ATTN_P_EXACT_OFFSET_LOG2 for E4M3_EXACT),
// P rounded to E4M3 (hi + lo for E4M3_HILO; FP16 for P_FP16), O one-level (O = O*alpha, then P V added) or
// two-level (P V into a fresh accumulator, then O = O*alpha + it), l = l*alpha + the block's sum
// of the rounded P (E4M3: what the kernel's tensor core sums) or of the FP32 p (hi+lo), O/l
// rounded to BF16. `pre_bf16` receives the FP32 value before the final rounding. Written apart
// from the model's mirror (model/kernel_mirror), so that each checks the other
// (Checks.HostMirrorMatchesModelMirror); the FP64 tests use it as their RMSE yardstick.
// `choice` replaces kernel_choice(p.s) (the checks' own tests: numerics the kernel does not run).
// `rows` (indices (b * h + head) * sq + t): only those rows are computed (the others stay 0).
inline Output mirror_kernel(const Problem& p, std::vector<float>* pre_bf16 = nullptr,
                            const KernelChoice* choice = nullptr,
                            const std::vector<int64_t>* rows = nullptr) {
  const Shape& s = p.s;
  const KernelChoice kc = choice ? *choice : kernel_choice(s);
  const int bn = kc.block_n;
  Output out;
  out.o_bits.assign(size_t(s.b) * s.sq * s.h * kD, 0);
  out.lse.assign(size_t(s.b) * s.h * s.sq, 0.f);
  if (pre_bf16) pre_bf16->assign(out.o_bits.size(), 0.f);
  const int group = s.h / s.h_kv;
  const float scale_log2 = p.softmax_scale * 1.4426950408889634f;
  parallel_for(rows ? int64_t(rows->size()) : int64_t(s.b) * s.h * s.sq, [&](int64_t k) {
    const int64_t idx = rows ? (*rows)[k] : k;
    const int t = int(idx % s.sq), h = int(idx / s.sq % s.h), b = int(idx / s.sq / s.h);
    const int hk = h / group, end = s.key_end(t);
    const float q_scale = scale_log2 * p.q_descale[(int64_t(b) * s.h + h) * s.sq + t];
    float m = -INFINITY, l = 0.f;
    std::vector<float> o(kD, 0.f), ob(kD), sc(bn);
    for (int blk = (end - 1) / bn; end > 0 && blk >= 0; --blk) {
      const int j0 = blk * bn, j1 = std::min(end, j0 + bn);
      // The K descale of the block (the kernel reads the first of each head's with k_head).
      const int kblk = s.k_head ? 0 : j0 / FP8ATTN_K_SCALE_BLOCK;
      const float scale = q_scale * p.k_descale[(int64_t(b) * s.h_kv + hk) * s.k_blocks() + kblk];
      float mx = -INFINITY;
      for (int j = j0; j < j1; ++j) {
        double acc = 0;  // E4M3 products are exact; the FP32 wgmma sum of 128 is ~exact
        const float *qr = &p.q_raw[p.qi(b, t, h, 0)], *kr = &p.k_raw[p.ki(b, j, hk, 0)];
        for (int c = 0; c < kD; ++c) acc += double(qr[c]) * kr[c];
        sc[j - j0] = static_cast<float>(acc);
        mx = std::max(mx, sc[j - j0]);
      }
      const float cand = std::max(m, mx * scale);
      const float m_new = cand > m + kc.slack_log2 ? cand : m;  // every block sees a key
      const float alpha = std::exp2(m - m_new);
      const float neg_bias = kc.p_offset_log2 - m_new;
      float sum = 0.f;
      if (kc.two_level) std::fill(ob.begin(), ob.end(), 0.f);
      else
        for (int c = 0; c < kD; ++c) o[c] *= alpha;
      float* acc_o = kc.two_level ? ob.data() : o.data();
      for (int j = j0; j < j1; ++j) {
        const float pj = std::exp2(std::fmaf(sc[j - j0], scale, neg_bias));
        float p8 = model::round_e4m3(pj);
        if (s.p_precision == FP8ATTN_P_E4M3_HILO) p8 += model::round_e4m3(pj - p8);
        if (s.p_precision == FP8ATTN_P_FP16) p8 = model::round_to(model::Format::FP16, pj);
        sum += kc.l_rounded ? p8 : pj;
        const float* vr = &p.v_raw[p.ki(b, j, hk, 0)];
        for (int c = 0; c < kD; ++c) acc_o[c] += p8 * vr[c];
      }
      l = l * alpha + sum;
      if (kc.two_level)
        for (int c = 0; c < kD; ++c) o[c] = o[c] * alpha + ob[c];
      m = m_new;
    }
    const int64_t o0 = p.qi(b, t, h, 0), li = (int64_t(b) * s.h + h) * s.sq + t;
    const float inv_l = l > 0.f ? 1.f / l : 0.f;
    for (int c = 0; c < kD; ++c) {
      float x = o[c] * p.v_descale[(int64_t(b) * s.h_kv + hk) * kD + c] * inv_l;
      if (!p.o_bias.empty()) x += p.o_bias[(int64_t(b) * s.h_kv + hk) * kD + c];
      if (l == 0.f) x = 0.f;
      if (pre_bf16) (*pre_bf16)[o0 + c] = x;
      out.o_bits[o0 + c] = model::float_to_bf16(x);
    }
    float lse = l > 0.f ? (m + std::log2(l) - kc.p_offset_log2) * 0.69314718055994531f : -INFINITY;
    if (l > 0.f && !p.lse_bias.empty()) lse += p.lse_bias[li];
    out.lse[li] = lse;
  });
  return out;
}

}  // namespace fp8attn::test
