// Non-finite data is loud (docs/reliability.md): a NaN that reaches a row makes that row NaN,
// never O = 0 / LSE = -inf (what a row that sees no key gets) and never a finite wrong value.
//   Kernel alone (E4M3 inputs: NaN codes, NaN descales), each precision mode, causal and not:
//     the rows the NaN reaches are NaN exactly where it reaches them, every other output is bit
//     for bit the clean run's.
//   End to end (BF16 inputs with a NaN or an Inf in Q, K or V, default pre-pass options): the
//     rows it reaches are NaN (K and V smoothing spread it over their (batch, KV head)), the
//     other batches' rows stay finite.
// Prints "RELIABILITY nonfinite_cases=N nonfinite_failed=F" for scripts/gpu/reliability.py.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/attention.h"
#include "tests/common/attention_args.h"
#include "fp8attn/fp8attn.h"
#include "tests/gpu/attention_device_run.cuh"

namespace fp8attn::test {
namespace {

constexpr uint8_t kE4M3NaN = 0x7F;

int g_cases = 0, g_failed = 0;

// What a poisoned input may do to one output element: stay bit for bit the clean run's, or be NaN.
// kNaNOrClean: V's NaN in a key block that a row visits without seeing that key (causal): its
// P is 0 there, and 0 x NaN is NaN in the P V product, so the row's channel may or may not be NaN.
enum class Expect { kClean, kNaN, kFinite, kNaNOrClean };

struct Poison {
  std::string name;
  std::function<void(Problem&)> apply;
  // Per output element (b, t, h, c; c = -1: the LSE of the row).
  std::function<Expect(const Shape&, int b, int t, int h, int c)> expect;
};

int vt_position_of_key(int j) {
  for (int p = 0; p < FP8ATTN_VT_KEY_GROUP; ++p)
    if (fp8attn_vt_key_at(p) == j % FP8ATTN_VT_KEY_GROUP) return j / FP8ATTN_VT_KEY_GROUP * FP8ATTN_VT_KEY_GROUP + p;
  return -1;
}

// The poisons of the kernel-alone tests, for a shape (b >= 2, h / h_kv >= 2).
std::vector<Poison> kernel_poisons(const Shape& s) {
  const int b = 1, t = s.sq - 1, h = 1, hk = h / (s.h / s.h_kv), j = s.sk / 2, c = 37;
  const int group = s.h / s.h_kv;
  auto sees = [](const Shape& sh, int tt, int jj) { return jj < sh.key_end(tt); };
  std::vector<Poison> v;
  v.push_back({"nan_in_q", [=](Problem& p) { p.q8[p.qi(b, t, h, c)] = kE4M3NaN; },
               [=](const Shape& sh, int bb, int tt, int hh, int) {
                 return bb == b && tt == t && hh == h && sh.key_end(tt) > 0 ? Expect::kNaN : Expect::kClean;
               }});
  v.push_back({"nan_in_k", [=](Problem& p) { p.k8[p.ki(b, j, hk, c)] = kE4M3NaN; },
               [=](const Shape& sh, int bb, int tt, int hh, int) {
                 return bb == b && hh / group == hk && sees(sh, tt, j) ? Expect::kNaN : Expect::kClean;
               }});
  v.push_back({"nan_in_v",
               [=](Problem& p) {
                 p.vt8[((int64_t(b) * s.h_kv + hk) * kD + c) * s.sk_pad() + vt_position_of_key(j)] = kE4M3NaN;
               },
               [=](const Shape& sh, int bb, int tt, int hh, int cc) {
                 if (!(bb == b && hh / group == hk && cc == c)) return Expect::kClean;
                 return sees(sh, tt, j) ? Expect::kNaN : Expect::kNaNOrClean;
               }});
  v.push_back({"nan_q_descale",
               [=](Problem& p) { p.q_descale[(int64_t(b) * s.h + h) * s.sq + t] = NAN; },
               [=](const Shape& sh, int bb, int tt, int hh, int) {
                 return bb == b && tt == t && hh == h && sh.key_end(tt) > 0 ? Expect::kNaN : Expect::kClean;
               }});
  v.push_back({"nan_v_descale",
               [=](Problem& p) { p.v_descale[(int64_t(b) * s.h_kv + hk) * kD + c] = NAN; },
               [=](const Shape& sh, int bb, int tt, int hh, int cc) {
                 return bb == b && hh / group == hk && cc == c && sh.key_end(tt) > 0 ? Expect::kNaN : Expect::kClean;
               }});
  return v;
}

Output run_kernel(const Problem& p) {
  DeviceRun run(p);
  fp8attn_fwd_params a = run.params();
  Output out;
  EXPECT_EQ(fp8attn_attention_fwd(&a, nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::string why;
  EXPECT_TRUE(run.download(out, why)) << why;
  return out;
}

// Compares a poisoned run with the clean one element by element; returns the first violation.
std::string check(const Shape& s, const Output& clean, const Output& got, const Poison& poison) {
  for (int b = 0; b < s.b; ++b)
    for (int h = 0; h < s.h; ++h)
      for (int t = 0; t < s.sq; ++t) {
        for (int c = -1; c < kD; ++c) {
          const int64_t i = c < 0 ? (int64_t(b) * s.h + h) * s.sq + t : ((int64_t(b) * s.sq + t) * s.h + h) * kD + c;
          const float x = c < 0 ? got.lse[i] : got.o(i);
          const bool same = c < 0 ? std::memcmp(&got.lse[i], &clean.lse[i], 4) == 0 : got.o_bits[i] == clean.o_bits[i];
          const Expect e = poison.expect(s, b, t, h, c);
          const bool ok = e == Expect::kNaN     ? std::isnan(x)
                          : e == Expect::kClean ? same
                          : e == Expect::kFinite ? std::isfinite(x)
                                                 : same || std::isnan(x);
          if (!ok) {
            char buf[200];
            std::snprintf(buf, sizeof buf, "b %d t %d h %d %s%d: got %g, clean %g, expected %s", b, t, h,
                          c < 0 ? "LSE" : "c ", c < 0 ? 0 : c, x, c < 0 ? clean.lse[i] : clean.o(i),
                          e == Expect::kNaN ? "NaN" : e == Expect::kClean ? "the clean bits" : "finite");
            return buf;
          }
        }
      }
  return "";
}

class NonFiniteKernel : public ::testing::TestWithParam<Shape> {};

TEST_P(NonFiniteKernel, NaNReachesExactlyItsRows) {
  FP8ATTN_REQUIRE_SM90();
  const Shape s = GetParam();
  const char* e = std::getenv("FP8ATTN_TEST_SEED");
  const uint64_t seed = e ? std::strtoull(e, nullptr, 0) : 0x4e614e;
  std::printf("[ seed ] %llu\n", static_cast<unsigned long long>(seed));
  const Problem clean_problem = make_problem(s, seed);
  const Output clean = run_kernel(clean_problem);
  for (const Poison& poison : kernel_poisons(s)) {
    Problem p = clean_problem;
    poison.apply(p);
    const Output got = run_kernel(p);
    const std::string why = check(s, clean, got, poison);
    ++g_cases;
    if (!why.empty()) ++g_failed;
    EXPECT_TRUE(why.empty()) << s.name() << " " << poison.name << ": " << why;
  }
}

Shape with_precision(Shape s, int pp) {
  s.p_precision = pp;
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, NonFiniteKernel,
    ::testing::Values(Shape{2, 300, 517, 4, 2, false}, Shape{2, 517, 300, 4, 2, true},
                      with_precision(Shape{2, 300, 517, 4, 2, true}, FP8ATTN_P_E4M3_HILO),
                      with_precision(Shape{2, 300, 517, 4, 2, false}, FP8ATTN_P_FP16),
                      [] { Shape s{2, 300, 517, 4, 2, true, FP8ATTN_P_E4M3_EXACT}; s.k_head = true; return s; }(),
                      // the default 192-key kernel (one K descale per head), persistent (> 132 tiles)
                      [] { Shape s{2, 2048, 2048, 8, 2, true}; s.k_head = true; return s; }()),
    [](const ::testing::TestParamInfo<Shape>& info) { return info.param.name(); });

// End to end: BF16 inputs with one non-finite value.
struct E2ECase {
  const char* tensor;  // "q", "k" or "v"
  float value;         // NaN or Inf
};

class NonFiniteEndToEnd : public ::testing::TestWithParam<E2ECase> {};

TEST_P(NonFiniteEndToEnd, ReachedRowsAreNaNOthersFinite) {
  FP8ATTN_REQUIRE_SM90();
  const E2ECase cs = GetParam();
  const int B = 2, SQ = 200, SK = 333, H = 4, HKV = 2, group = H / HKV;
  const int b = 1, t = 77, h = 3, hk = h / group, j = 150, c = 5;
  std::mt19937_64 rng(0xe2e);
  std::normal_distribution<float> n01(0.f, 1.f);
  auto random = [&](size_t n) {
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = model::float_to_bf16(n01(rng));
    return v;
  };
  std::vector<uint16_t> q = random(size_t(B) * SQ * H * kD), k = random(size_t(B) * SK * HKV * kD),
                        v = random(size_t(B) * SK * HKV * kD);
  const uint16_t bad = model::float_to_bf16(cs.value);
  const std::string which = cs.tensor;
  if (which == "q") q[((size_t(b) * SQ + t) * H + h) * kD + c] = bad;
  if (which == "k") k[((size_t(b) * SK + j) * HKV + hk) * kD + c] = bad;
  if (which == "v") v[((size_t(b) * SK + j) * HKV + hk) * kD + c] = bad;
  void *dq, *dk, *dv, *dout, *dlse;
  ASSERT_EQ(cudaMalloc(&dq, q.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dk, k.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dv, v.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, q.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dlse, size_t(B) * H * SQ * 4), cudaSuccess);
  cudaMemcpy(dq, q.data(), q.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dk, k.data(), k.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dv, v.data(), v.size() * 2, cudaMemcpyHostToDevice);
  fp8attn_attention_args a =
      contiguous_attention_args(dq, dk, dv, dout, static_cast<float*>(dlse), B, SQ, SK, H, HKV);
  fp8attn_workspace* ws = fp8attn_workspace_create();
  ASSERT_EQ(fp8attn_attention(&a, ws, nullptr), FP8ATTN_SUCCESS) << fp8attn_quant_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> o(q.size());
  std::vector<float> lse(size_t(B) * H * SQ);
  cudaMemcpy(o.data(), dout, o.size() * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(lse.data(), dlse, lse.size() * 4, cudaMemcpyDeviceToHost);
  fp8attn_workspace_destroy(ws);
  for (void* ptr : {dq, dk, dv, dout, dlse}) cudaFree(ptr);

  std::string why;
  for (int bb = 0; bb < B && why.empty(); ++bb)
    for (int hh = 0; hh < H && why.empty(); ++hh)
      for (int tt = 0; tt < SQ && why.empty(); ++tt) {
        const float l = lse[(size_t(bb) * H + hh) * SQ + tt];
        auto O = [&](int cc) { return model::bf16_to_float(o[((size_t(bb) * SQ + tt) * H + hh) * kD + cc]); };
        // Reached: Q -> its row; K -> every row of its (batch, KV head) group (non-causal: all see
        // the key; smoothing spreads it anyway); V -> channel c of those rows (O only).
        const bool in_group = bb == b && hh / group == hk;
        const bool reached_row = which == "q" ? (bb == b && tt == t && hh == h) : which == "k" ? in_group : false;
        const bool reached_channel = which == "v" && in_group;
        char buf[160];
        if (reached_row) {
          if (!std::isnan(l)) std::snprintf(buf, sizeof buf, "b %d h %d t %d: LSE %g, expected NaN", bb, hh, tt, l), why = buf;
          for (int cc = 0; cc < kD && why.empty(); ++cc)
            if (!std::isnan(O(cc))) std::snprintf(buf, sizeof buf, "b %d h %d t %d c %d: O %g, expected NaN", bb, hh, tt, cc, O(cc)), why = buf;
        } else if (reached_channel) {
          if (!std::isnan(O(c))) std::snprintf(buf, sizeof buf, "b %d h %d t %d c %d: O %g, expected NaN", bb, hh, tt, c, O(c)), why = buf;
          if (!std::isfinite(l)) std::snprintf(buf, sizeof buf, "b %d h %d t %d: LSE %g, expected finite (V does not reach it)", bb, hh, tt, l), why = buf;
        } else if (bb != b) {  // another batch: nothing of it reads the bad value
          if (!std::isfinite(l)) std::snprintf(buf, sizeof buf, "b %d h %d t %d: LSE %g, expected finite", bb, hh, tt, l), why = buf;
          for (int cc = 0; cc < kD && why.empty(); ++cc)
            if (!std::isfinite(O(cc))) std::snprintf(buf, sizeof buf, "b %d h %d t %d c %d: O %g, expected finite", bb, hh, tt, cc, O(cc)), why = buf;
        }
      }
  ++g_cases;
  if (!why.empty()) ++g_failed;
  EXPECT_TRUE(why.empty()) << cs.tensor << " = " << cs.value << ": " << why;
}

INSTANTIATE_TEST_SUITE_P(Inputs, NonFiniteEndToEnd,
                         ::testing::Values(E2ECase{"q", NAN}, E2ECase{"k", NAN}, E2ECase{"v", NAN},
                                           E2ECase{"q", INFINITY}, E2ECase{"k", INFINITY},
                                           E2ECase{"v", INFINITY}),
                         [](const ::testing::TestParamInfo<E2ECase>& info) {
                           return std::string(info.param.tensor) + (std::isnan(info.param.value) ? "_nan" : "_inf");
                         });

// Runs last (gtest keeps the order of definition within a file only per suite, so this is a
// global test environment's TearDown): the summary line.
class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("RELIABILITY nonfinite_cases=%d nonfinite_failed=%d\n", g_cases, g_failed);
  }
};
const auto* const g_summary = ::testing::AddGlobalTestEnvironment(new Summary);

}  // namespace
}  // namespace fp8attn::test
