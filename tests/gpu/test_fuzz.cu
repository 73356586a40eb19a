// Seeded shape fuzz of fp8attn_attention_fwd against the host mirror of the kernel's numerics
// (mirror_kernel, test_attention_util.cuh).
//
// Shape i of a run is drawn from (seed, i) alone: b 1-32, sq and sk 1-16384 (log-uniform, with
// 1, tile multiples and their neighbours favoured), sq != sk both ways, h_kv 1-8 with query
// heads per KV head 1-16, causal or not, every precision mode, K descales per head or per 128
// keys, biases or not, contiguous or strided (Q and O as (b, h, s, d) with padded rows, K with
// padded heads, V^T with a padded key dimension). The inputs are bounded (~2M elements per
// shape, b and heads shrunk to fit) so a run of 1000 takes about 2 minutes on the H200 with the
// mirror on 16 cores.
//
// Every output is poisoned (NaN) before the call; every O element must be finite afterwards and
// every LSE finite (or -inf exactly for a row that sees no key). Rows checked against the mirror:
// all of them when there are <= 512, else 128 drawn at random plus the first and last row. The
// per-element tolerances restate check_against_mirror's (test_attention.cu) in terms of exact
// FP64 attention on the same E4M3 inputs, computed for the checked rows (see tolerances()).
//
//   FP8ATTN_FUZZ_SEED (default 20261201), FP8ATTN_FUZZ_COUNT (1000), FP8ATTN_FUZZ_FIRST (0):
//   replay shape i alone with FP8ATTN_FUZZ_FIRST=i FP8ATTN_FUZZ_COUNT=1 and the same seed.
// Each failing shape is printed as "FUZZ FAIL seed=S i=I <shape>: why", and the run ends with
// "RELIABILITY fuzz_shapes=N fuzz_failed=F seed=S" for scripts/gpu/reliability.py.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "attn/scheduler.cuh"
#include "attn/select.h"
#include "fp8attn/fp8attn.h"
#include "tests/gpu/test_attention_util.cuh"

namespace fp8attn::test {
namespace {

uint64_t env_u64(const char* name, uint64_t dflt) {
  const char* e = std::getenv(name);
  return e ? std::strtoull(e, nullptr, 0) : dflt;
}

struct FuzzShape {
  Shape s;
  bool strided = false;
  std::string name() const { return s.name() + (strided ? "_strided" : ""); }
};

int pick_len(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_real_distribution<double> lg(0.0, std::log2(16384.0));
  const int k = kind(rng);
  if (k == 0) return 1;
  if (k <= 2) {  // a tile multiple or a neighbour of one (64, 128, 192-key and 128-row tiles)
    const int tiles[] = {64, 128, 192};
    const int t = tiles[rng() % 3];
    const int m = 1 + static_cast<int>(rng() % (16384 / t));
    return std::clamp(m * t + static_cast<int>(rng() % 3) - 1, 1, 16384);
  }
  return std::clamp(static_cast<int>(std::exp2(lg(rng))), 1, 16384);
}

FuzzShape draw_shape(uint64_t seed, int i) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i));
  FuzzShape f;
  Shape& s = f.s;
  s.sq = pick_len(rng);
  s.sk = pick_len(rng);
  const int ratios[] = {1, 2, 3, 4, 5, 8, 16};
  const int ratio = ratios[rng() % 7];
  s.h_kv = 1 + static_cast<int>(rng() % 8);
  s.h = s.h_kv * ratio;
  s.b = 1 + static_cast<int>(std::exp2(std::uniform_real_distribution<double>(0.0, 5.0)(rng))) - 1;
  s.b = std::clamp(s.b, 1, 32);
  s.causal = rng() % 2;
  s.p_precision = static_cast<int>(rng() % 4);  // E4M3, hi+lo, FP16, E4M3 exact
  s.k_head = rng() % 2;
  if (s.p_precision == FP8ATTN_P_E4M3_EXACT) s.k_head = true;  // its only K descale granularity
  s.biases = rng() % 4 == 0;
  f.strided = rng() % 2;
  // Bound the inputs: shrink b, then the heads, until ~2M elements of Q, K and V.
  auto elems = [&] { return int64_t(s.b) * (int64_t(s.sq) * s.h + 2 * int64_t(s.sk) * s.h_kv) * kD; };
  constexpr int64_t kMaxElems = int64_t{2} << 20;
  while (elems() > kMaxElems && s.b > 1) s.b = std::max(1, s.b / 2);
  while (elems() > kMaxElems && s.h_kv > 1) s.h_kv = std::max(1, s.h_kv / 2), s.h = s.h_kv * ratio;
  while (elems() > kMaxElems && s.h > s.h_kv) s.h = std::max(s.h_kv, s.h / 2) / s.h_kv * s.h_kv;
  return f;
}

// Device buffers of one call, in the fuzz shape's layout. Outputs are poisoned with NaN.
struct FuzzRun {
  std::vector<void*> allocs;
  fp8attn_fwd_params p{};
  size_t o_elems = 0;
  ~FuzzRun() {
    for (void* a : allocs) cudaFree(a);
  }
  void* alloc(size_t bytes, int fill) {
    void* d = nullptr;
    if (cudaMalloc(&d, std::max<size_t>(bytes, 16)) != cudaSuccess) return nullptr;
    allocs.push_back(d);
    cudaMemset(d, fill, std::max<size_t>(bytes, 16));
    return d;
  }
  template <class T>
  T* upload(const std::vector<T>& h) {
    if (h.empty()) return nullptr;
    T* d = static_cast<T*>(alloc(h.size() * sizeof(T), 0));
    if (d) cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
    return d;
  }
};

// Copies (n_rows, 128)-byte rows to a device buffer where row r starts at element offset(r).
template <class F>
void* upload_rows(FuzzRun& run, const uint8_t* rows, int64_t n_rows, size_t total_bytes, F offset) {
  std::vector<uint8_t> h(total_bytes, 0);
  for (int64_t r = 0; r < n_rows; ++r) std::memcpy(&h[offset(r)], rows + r * kD, kD);
  return run.upload(h);
}

void setup(FuzzRun& run, const Problem& prob, bool strided) {
  const Shape& s = prob.s;
  fp8attn_fwd_params& a = run.p;
  fp8attn_fwd_params_init(&a, s.b, s.sq, s.sk, s.h, s.h_kv, kD);
  if (strided) {
    // Q (b, h, sq, d), rows of 144; K (b, sk, h_kv, d), heads of 160; V^T key dimension padded
    // by 32 more keys (zeros) and rows of that + 64; O (b, h, sq, d), rows of 136.
    a.q_stride_s = 144, a.q_stride_h = int64_t(s.sq) * 144, a.q_stride_b = int64_t(s.h) * a.q_stride_h;
    a.k_stride_h = 160, a.k_stride_s = int64_t(s.h_kv) * 160, a.k_stride_b = int64_t(s.sk) * a.k_stride_s;
    a.vt_seqlen_pad = s.sk_pad() + 32;
    a.vt_stride_d = a.vt_seqlen_pad + 64, a.vt_stride_h = 128 * a.vt_stride_d,
    a.vt_stride_b = int64_t(s.h_kv) * a.vt_stride_h;
    a.o_stride_s = 136, a.o_stride_h = int64_t(s.sq) * 136, a.o_stride_b = int64_t(s.h) * a.o_stride_h;
  }
  // Q rows in (b, sq, h) order in the problem.
  a.q = upload_rows(run, prob.q8.data(), int64_t(s.b) * s.sq * s.h, size_t(a.q_stride_b) * s.b, [&](int64_t r) {
    const int64_t h = r % s.h, t = r / s.h % s.sq, b = r / s.h / s.sq;
    return b * a.q_stride_b + t * a.q_stride_s + h * a.q_stride_h;
  });
  a.k = upload_rows(run, prob.k8.data(), int64_t(s.b) * s.sk * s.h_kv, size_t(a.k_stride_b) * s.b, [&](int64_t r) {
    const int64_t h = r % s.h_kv, t = r / s.h_kv % s.sk, b = r / s.h_kv / s.sk;
    return b * a.k_stride_b + t * a.k_stride_s + h * a.k_stride_h;
  });
  if (s.vt_fp16) {  // FP16 V^T: natural key order, FP16 codes of the same E4M3 values (exact)
    a.vt = run.upload(fp16_vt_codes(prob, a.vt_stride_b, a.vt_stride_h, a.vt_stride_d));
    a.vt_dtype = FP8ATTN_VT_FP16;
  } else {  // V^T: (b, h_kv, 128) rows of sk_pad permuted keys in the problem
    std::vector<uint8_t> h(size_t(a.vt_stride_b) * s.b, 0);
    for (int64_t r = 0; r < int64_t(s.b) * s.h_kv * kD; ++r)
      std::memcpy(&h[r * a.vt_stride_d], &prob.vt8[r * s.sk_pad()], s.sk_pad());
    a.vt = run.upload(h);
  }
  run.o_elems = size_t(a.o_stride_b) * s.b;
  a.o = run.alloc(run.o_elems * 2, 0xFF);
  a.lse = static_cast<float*>(run.alloc(size_t(s.b) * s.h * s.sq * 4, 0xFF));
  a.q_descale = run.upload(prob.q_descale);
  a.qd_stride_b = int64_t(s.h) * s.sq, a.qd_stride_h = s.sq, a.qd_stride_s = 1;
  a.k_descale = run.upload(prob.k_descale);
  a.kd_stride_b = int64_t(s.h_kv) * s.k_blocks(), a.kd_stride_h = s.k_blocks(), a.kd_stride_blk = s.k_head ? 0 : 1;
  a.v_descale = run.upload(prob.v_descale);
  a.vd_stride_b = int64_t(s.h_kv) * kD, a.vd_stride_h = kD, a.vd_stride_d = 1;
  a.lse_bias = run.upload(prob.lse_bias);
  a.o_bias = run.upload(prob.o_bias);
  a.ob_stride_b = int64_t(s.h_kv) * kD, a.ob_stride_h = kD;
  a.softmax_scale = prob.softmax_scale;
  a.causal = s.causal;
  a.p_precision = s.p_precision;
}

double bf16_ulp(double x) {
  int e;
  std::frexp(std::max(std::fabs(x), 1e-30), &e);
  return std::ldexp(1.0, e - 8);
}

// Exact attention terms of one row (FP64 on the dequantized inputs): the tolerance's ingredients.
struct RowTerms {
  std::vector<double> abs_pv, max_pv;  // per channel: sum_j P_j |v_jc|, max_j P_j |v_jc|
  double p_max = 0, abs_score_max = 0;  // largest P_j; largest sum_c |scale q_c k_jc|
};

RowTerms row_terms(const Problem& pr, int b, int t, int h) {
  const Shape& s = pr.s;
  const int hk = h / (s.h / s.h_kv), end = s.key_end(t);
  RowTerms r;
  r.abs_pv.assign(kD, 0.0), r.max_pv.assign(kD, 0.0);
  if (end == 0) return r;
  std::vector<double> sc(end);
  double mx = -INFINITY;
  for (int j = 0; j < end; ++j) {
    double acc = 0, abs_acc = 0;
    for (int c = 0; c < kD; ++c) {
      const double x = double(pr.q_deq[pr.qi(b, t, h, c)]) * pr.k_deq[pr.ki(b, j, hk, c)];
      acc += x, abs_acc += std::fabs(x);
    }
    sc[j] = acc * pr.softmax_scale;
    r.abs_score_max = std::max(r.abs_score_max, abs_acc * pr.softmax_scale);
    mx = std::max(mx, sc[j]);
  }
  double l = 0;
  for (int j = 0; j < end; ++j) l += std::exp(sc[j] - mx);
  for (int j = 0; j < end; ++j) {
    const double pj = std::exp(sc[j] - mx) / l;
    r.p_max = std::max(r.p_max, pj);
    for (int c = 0; c < kD; ++c) {
      const double x = pj * std::fabs(pr.v_deq[pr.ki(b, j, hk, c)]);
      r.abs_pv[c] += x;
      r.max_pv[c] = std::max(r.max_pv[c], x);
    }
  }
  return r;
}

// Checks the kernel's output against the mirror on `rows`, and the whole output for poison.
std::string check_shape(const Problem& pr, const FuzzRun& run, const std::vector<int64_t>& rows) {
  const Shape& s = pr.s;
  const fp8attn_fwd_params& a = run.p;
  std::vector<uint16_t> o(run.o_elems);
  std::vector<float> lse(size_t(s.b) * s.h * s.sq);
  if (cudaMemcpy(o.data(), a.o, o.size() * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(lse.data(), a.lse, lse.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
    return std::string("cudaMemcpy: ") + cudaGetErrorString(cudaGetLastError());
  auto o_at = [&](int b, int t, int h, int c) {
    return model::bf16_to_float(o[b * a.o_stride_b + t * a.o_stride_s + h * a.o_stride_h + c]);
  };
  char buf[256];
  // Every row written: O finite, LSE finite or -inf exactly where no key is visible.
  for (int b = 0; b < s.b; ++b)
    for (int h = 0; h < s.h; ++h)
      for (int t = 0; t < s.sq; ++t) {
        const float l = lse[(int64_t(b) * s.h + h) * s.sq + t];
        const bool empty = s.key_end(t) == 0;
        if (empty ? !(l == -INFINITY) : !std::isfinite(l)) {
          std::snprintf(buf, sizeof buf, "LSE at b %d h %d t %d is %g (row sees %d keys)", b, h, t, l, s.key_end(t));
          return buf;
        }
        for (int c = 0; c < kD; ++c)
          if (!std::isfinite(o_at(b, t, h, c))) {
            std::snprintf(buf, sizeof buf, "O at b %d h %d t %d c %d is %g (poison left or NaN)", b, h, t, c, o_at(b, t, h, c));
            return buf;
          }
      }
  const Output m = mirror_kernel(pr, nullptr, nullptr, &rows);
  const KernelChoice kc = kernel_choice(s);
  // r: l's relative error from the tensor core's row sum of the rounded P (E4M3 P), per block.
  const double r = kc.l_rounded ? (kc.block_n + kc.block_n / 32) * std::ldexp(1.0, -13) : std::ldexp(1.0, -20);
  std::string why;
  std::mutex mu;
  parallel_for(int64_t(rows.size()), [&](int64_t k) {
    const int64_t idx = rows[k];
    const int t = int(idx % s.sq), h = int(idx / s.sq % s.h), b = int(idx / s.sq / s.h);
    const RowTerms rt = row_terms(pr, b, t, h);
    // The scores' accumulation (FP32 in the wgmma, ~2^-11 of the sum of |terms|) moves every P
    // by a factor e^delta; exp2.approx and FP32 add 1e-5 relative.
    const double delta = std::ldexp(1.0, -11) * rt.abs_score_max;
    for (int c = 0; c < kD; ++c) {
      const double kv = o_at(b, t, h, c), mv = m.o(pr.qi(b, t, h, c));
      const double tight = bf16_ulp(std::max(std::fabs(kv), std::fabs(mv))) +
                           (std::ldexp(1.0, -12) + 2 * delta + r / (1 - r)) * rt.abs_pv[c];
      const double flips = 2 * (kc.p_ulp * rt.max_pv[c] + kc.p_sub_ulp / 256 * rt.abs_pv[c]);
      const double loose = tight + flips + bf16_ulp(std::fabs(mv) + rt.max_pv[c]);
      if (!(std::fabs(kv - mv) <= loose)) {
        char b2[256];
        std::snprintf(b2, sizeof b2, "|O - O_mirror| = %.3e > %.3e at b %d h %d t %d c %d (kernel %g, mirror %g)",
                      std::fabs(kv - mv), loose, b, h, t, c, kv, mv);
        std::lock_guard<std::mutex> lock(mu);
        if (why.empty()) why = b2;
        return;
      }
    }
    const int64_t li = (int64_t(b) * s.h + h) * s.sq + t;
    if (s.key_end(t) == 0) return;
    const double lm = m.lse[li];
    const double tol = 1e-5 * (1 + std::fabs(lm)) + std::ldexp(1.0, -22) * s.sk + delta + r / (1 - r) +
                       2 * kc.p_ulp * rt.p_max;
    if (!(std::fabs(lse[li] - lm) <= tol)) {
      char b2[256];
      std::snprintf(b2, sizeof b2, "|LSE - LSE_mirror| = %.3e > %.3e at b %d h %d t %d (kernel %g, mirror %g)",
                    std::fabs(lse[li] - lm), tol, b, h, t, lse[li], lm);
      std::lock_guard<std::mutex> lock(mu);
      if (why.empty()) why = b2;
    }
  });
  return why;
}

std::vector<int64_t> rows_to_check(const Shape& s, uint64_t seed) {
  const int64_t n = int64_t(s.b) * s.h * s.sq;
  std::vector<int64_t> rows;
  if (n <= 512) {
    for (int64_t i = 0; i < n; ++i) rows.push_back(i);
    return rows;
  }
  std::mt19937_64 rng(seed);
  rows.push_back(0), rows.push_back(n - 1);
  for (int i = 0; i < 128; ++i) rows.push_back(static_cast<int64_t>(rng() % n));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

TEST(Fuzz, RandomShapesAgreeWithMirror) {
  FP8ATTN_REQUIRE_SM90();
  const uint64_t seed = env_u64("FP8ATTN_FUZZ_SEED", 20261201);
  const int count = static_cast<int>(env_u64("FP8ATTN_FUZZ_COUNT", 1000));
  const int first = static_cast<int>(env_u64("FP8ATTN_FUZZ_FIRST", 0));
  std::printf("[ seed ] FP8ATTN_FUZZ_SEED=%llu FP8ATTN_FUZZ_FIRST=%d FP8ATTN_FUZZ_COUNT=%d\n",
              static_cast<unsigned long long>(seed), first, count);
  const auto t0 = std::chrono::steady_clock::now();
  int failed = 0, ran = 0;
  int by_precision[4] = {}, causal = 0, strided = 0, decode = 0, gqa16 = 0;
  for (int i = first; i < first + count; ++i) {
    const FuzzShape f = draw_shape(seed, i);
    const Problem prob = make_problem(f.s, seed ^ (uint64_t(i) << 20));
    FuzzRun run;
    setup(run, prob, f.strided);
    std::string why;
    const fp8attn_status st = fp8attn_attention_fwd(&run.p, nullptr);
    if (st != FP8ATTN_SUCCESS) why = std::string("status ") + std::to_string(st) + ": " + fp8attn_last_error();
    else if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) why = cudaGetErrorString(e);
    else why = check_shape(prob, run, rows_to_check(f.s, seed + i));
    ++ran;
    ++by_precision[f.s.p_precision];
    causal += f.s.causal, strided += f.strided, decode += f.s.sq == 1, gqa16 += f.s.h / f.s.h_kv == 16;
    if (!why.empty()) {
      ++failed;
      std::printf("FUZZ FAIL seed=%llu i=%d %s: %s\n", static_cast<unsigned long long>(seed), i, f.name().c_str(),
                  why.c_str());
      ADD_FAILURE() << "shape " << i << " " << f.name() << ": " << why;
      if (cudaGetLastError() != cudaSuccess) break;  // a sticky error: nothing after it can run
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ info ] %d shapes in %.1f s: E4M3 %d, hi+lo %d, FP16 %d, exact %d; causal %d, "
              "strided %d, decode (sq = 1) %d, GQA 16 %d\n",
              ran, secs, by_precision[0], by_precision[1], by_precision[2], by_precision[3], causal, strided, decode, gqa16);
  std::printf("RELIABILITY fuzz_shapes=%d fuzz_failed=%d seed=%llu\n", ran, failed,
              static_cast<unsigned long long>(seed));
}

// Rehearsal without a GPU (FP8ATTN_FUZZ_DRY_RUN=1, else skipped): draws the run's shapes and does
// all of its host work (inputs, the mirror and the FP64 terms of the checked rows), with
// timing, so the run's cost and coverage can be read before a GPU
// session. Prints the same shape statistics as the GPU run.
TEST(Fuzz, DryRunHostWork) {
  if (!std::getenv("FP8ATTN_FUZZ_DRY_RUN")) GTEST_SKIP() << "set FP8ATTN_FUZZ_DRY_RUN=1 to rehearse";
  const uint64_t seed = env_u64("FP8ATTN_FUZZ_SEED", 20261201);
  const int count = static_cast<int>(env_u64("FP8ATTN_FUZZ_COUNT", 1000));
  const int first = static_cast<int>(env_u64("FP8ATTN_FUZZ_FIRST", 0));
  const auto t0 = std::chrono::steady_clock::now();
  int by_precision[4] = {}, causal = 0, strided = 0, decode = 0, gqa16 = 0, sq_gt_sk = 0, sk_gt_sq = 0;
  int len1 = 0, odd_len = 0, max_b = 0, max_len = 0;
  double checksum = 0;
  for (int i = first; i < first + count; ++i) {
    const FuzzShape f = draw_shape(seed, i);
    const Problem prob = make_problem(f.s, seed ^ (uint64_t(i) << 20));
    const std::vector<int64_t> rows = rows_to_check(f.s, seed + i);
    const Output m = mirror_kernel(prob, nullptr, nullptr, &rows);
    parallel_for(int64_t(rows.size()), [&](int64_t k) {
      const int64_t idx = rows[k];
      row_terms(prob, int(idx / f.s.sq / f.s.h), int(idx % f.s.sq), int(idx / f.s.sq % f.s.h));
    });
    checksum += m.lse[rows[0] % m.lse.size()];
    ++by_precision[f.s.p_precision];
    causal += f.s.causal, strided += f.strided, decode += f.s.sq == 1, gqa16 += f.s.h / f.s.h_kv == 16;
    sq_gt_sk += f.s.sq > f.s.sk, sk_gt_sq += f.s.sk > f.s.sq;
    len1 += f.s.sq == 1 || f.s.sk == 1;
    odd_len += f.s.sq % 64 != 0 || f.s.sk % 64 != 0;
    max_b = std::max(max_b, f.s.b), max_len = std::max({max_len, f.s.sq, f.s.sk});
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ info ] dry run: %d shapes, host work %.1f s on %u threads: E4M3 %d, hi+lo %d, FP16 %d, "
              "exact %d; causal %d, strided %d, decode %d, GQA 16 %d, sq > sk %d, sk > sq %d, a length 1 %d, "
              "a length not a multiple of 64 %d, max b %d, max length %d (checksum %g)\n",
              count, secs, std::max(1u, std::thread::hardware_concurrency()), by_precision[0],
              by_precision[1], by_precision[2], by_precision[3], causal, strided, decode, gqa16, sq_gt_sk, sk_gt_sq,
              len1, odd_len, max_b, max_len, checksum);
  EXPECT_GT(causal, 0);
  EXPECT_GT(decode, 0);
  EXPECT_GT(gqa16, 0);
  EXPECT_GT(sq_gt_sk, 0);
  EXPECT_GT(sk_gt_sq, 0);
}

// The causal tile order in several sections of (batch, head) pairs (attn/scheduler.cuh: at most
// half of L2 each; the fuzz's bounded shapes fit in one), sampled rows: tiles of at most
// kBalancedSectionKeys keys on average keep full sections and a remainder (128 KV heads of 2048 keys),
// longer ones take balanced sections (64 KV heads of 4096 keys). Each shape must span several
// sections with a last one smaller than the others; the section size is the launch's own
// (TileScheduler::section_heads, with select.h's rule for balancing).
void multi_section(const Shape& s, bool balanced) {
  int l2 = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), cudaSuccess);
  const uint64_t seed = env_u64("FP8ATTN_TEST_SEED", 0x5ec7);
  const Problem prob = make_problem(s, seed);
  FuzzRun run;
  setup(run, prob, false);
  ASSERT_EQ(fp8attn::attn::balanced_sections(run.p), balanced) << "the shape no longer takes that order";
  const int64_t pairs = int64_t(s.b) * s.h;
  const int64_t section_heads = fp8attn::attn::TileScheduler::section_heads(
      s.b, s.h, s.h_kv, s.sk, /*causal=*/true, /*causal_sections=*/true, balanced, l2);
  const int64_t sections = (pairs + section_heads - 1) / section_heads;
  std::printf("[ info ] L2 %d bytes: %lld pairs per section, %lld sections, the last of %lld\n", l2,
              static_cast<long long>(section_heads), static_cast<long long>(sections),
              static_cast<long long>(pairs - (sections - 1) * section_heads));
  ASSERT_GE(sections, 2) << "the shape no longer spans several sections: make it larger";
  ASSERT_LT(pairs - (sections - 1) * section_heads, section_heads) << "no partial last section";
  ASSERT_EQ(fp8attn_attention_fwd(&run.p, nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::string why = check_shape(prob, run, rows_to_check(s, seed));
  EXPECT_TRUE(why.empty()) << s.name() << ": " << why;
}

TEST(Fuzz, MultiSectionCausalOrder) {
  FP8ATTN_REQUIRE_SM90();
  Shape s{1, 2048, 2048, 128, 128, true};
  s.k_head = true;  // the default 192-key kernels
  multi_section(s, false);
}

TEST(Fuzz, MultiSectionBalanced) {
  FP8ATTN_REQUIRE_SM90();
  Shape s{1, 4096, 4096, 64, 64, true};
  s.k_head = true;
  multi_section(s, true);
}

// The FP16 V^T kernel's three-warpgroup form, which only long non-causal calls with many 192-row
// tiles take (select.h, fp16_vt_three_warpgroups): a shape that takes it, its last tile one
// warpgroup's rows (8128 = 42 x 192 + 64), sampled rows against the mirror at its 128-key blocks.
TEST(Fuzz, ThreeWarpgroupFp16VtKernel) {
  FP8ATTN_REQUIRE_SM90();
  Shape s{1, 8128, 8192, 24, 8, false, FP8ATTN_P_FP16};
  s.k_head = true, s.vt_fp16 = true;
  ASSERT_TRUE(three_warpgroups(s)) << "the shape no longer takes the three-warpgroup kernel";
  const uint64_t seed = env_u64("FP8ATTN_TEST_SEED", std::random_device{}());
  std::printf("[ seed ] %llu\n", static_cast<unsigned long long>(seed));
  const Problem prob = make_problem(s, seed);
  FuzzRun run;
  setup(run, prob, false);
  ASSERT_EQ(fp8attn::attn::select_kernel(run.p), fp8attn::attn::KernelId::kFP16VtTrioBlock128);
  ASSERT_EQ(fp8attn_attention_fwd(&run.p, nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::string why = check_shape(prob, run, rows_to_check(s, seed));
  EXPECT_TRUE(why.empty()) << s.name() << ": " << why;
}

// Fixed shapes the fuzz may not draw: a decode shape (sq = 1 against a long sk) and GQA 16, with
// every row checked, in every precision mode.
class FixedShapes : public ::testing::TestWithParam<FuzzShape> {};

TEST_P(FixedShapes, AgreeWithMirror) {
  FP8ATTN_REQUIRE_SM90();
  const FuzzShape f = GetParam();
  const uint64_t seed = env_u64("FP8ATTN_TEST_SEED", 0xdec0de);
  std::printf("[ seed ] %llu\n", static_cast<unsigned long long>(seed));
  const Problem prob = make_problem(f.s, seed);
  FuzzRun run;
  setup(run, prob, f.strided);
  ASSERT_EQ(fp8attn_attention_fwd(&run.p, nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<int64_t> rows(size_t(f.s.b) * f.s.h * f.s.sq);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t(i);
  const std::string why = check_shape(prob, run, rows);
  EXPECT_TRUE(why.empty()) << f.name() << ": " << why;
}

FuzzShape fixed(Shape s, bool strided = false) { return FuzzShape{s, strided}; }

INSTANTIATE_TEST_SUITE_P(
    DecodeAndGqa16, FixedShapes,
    ::testing::Values(fixed({4, 1, 16384, 32, 2, false}),                        // decode, GQA 16
                      fixed({4, 1, 16384, 32, 2, true, FP8ATTN_P_E4M3_HILO}),    // causal: sees all
                      fixed({2, 1, 9000, 16, 1, false, FP8ATTN_P_FP16}, true),   // GQA 16, strided
                      fixed({1, 300, 8191, 16, 1, true}, true),                  // GQA 16, sq < sk
                      [] { Shape s{1, 1100, 1100, 16, 1, true}; s.k_head = true; return fixed(s); }()),
    [](const ::testing::TestParamInfo<FuzzShape>& info) { return info.param.name(); });

}  // namespace
}  // namespace fp8attn::test
