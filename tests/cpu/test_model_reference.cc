// Exact attention against a naive loop written from the definition (long double).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "model/reference.h"

namespace fm = fp8attn::model;

namespace {

fm::Tensor random_tensor(int b, int s, int h, int d, uint32_t seed, float sd = 1.0f) {
  fm::Tensor t(b, s, h, d);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, sd);
  for (float& x : t.data) x = n(rng);
  return t;
}

// O and LSE of one query row, by the definition, in long double.
void naive_row(const fm::Tensor& q, const fm::Tensor& k, const fm::Tensor& v, int b, int i, int h,
               bool causal, double scale, std::vector<long double>& o, long double& lse) {
  const int kh = h / (q.h / k.h);
  const int sq = q.s, sk = k.s;
  o.assign(q.d, 0.0L);
  std::vector<long double> s;
  for (int j = 0; j < sk; ++j) {
    if (causal && j > i + (sk - sq)) break;
    long double dot = 0;
    for (int c = 0; c < q.d; ++c) dot += static_cast<long double>(q(b, i, h, c)) * k(b, j, kh, c);
    s.push_back(dot * scale);
  }
  if (s.empty()) {
    lse = -std::numeric_limits<long double>::infinity();
    return;
  }
  long double m = -INFINITY, l = 0;
  for (auto x : s) m = std::max(m, x);
  for (size_t j = 0; j < s.size(); ++j) {
    const long double p = std::exp(s[j] - m);
    l += p;
    for (int c = 0; c < q.d; ++c) o[c] += p * v(b, static_cast<int>(j), kh, c);
  }
  for (auto& x : o) x /= l;
  lse = m + std::log(l);
}

struct Case {
  int b, sq, sk, h, hk, d;
  bool causal;
};

}  // namespace

class ReferenceVsNaive : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceVsNaive, Matches) {
  const Case c = GetParam();
  const fm::Tensor q = random_tensor(c.b, c.sq, c.h, c.d, 1, 2.0f);
  const fm::Tensor k = random_tensor(c.b, c.sk, c.hk, c.d, 2, 2.0f);
  const fm::Tensor v = random_tensor(c.b, c.sk, c.hk, c.d, 3);
  fm::AttnConfig cfg;
  cfg.causal = c.causal;
  const fm::ExactF64 r64 = fm::attention_exact_f64(q, k, v, cfg);
  const fm::ExactF32 r32 = fm::attention_exact_f32(q, k, v, cfg);
  const double scale = cfg.scale_for(c.d);
  std::vector<long double> o;
  long double lse;
  for (int b = 0; b < c.b; ++b) {
    for (int h = 0; h < c.h; ++h) {
      for (int i = 0; i < c.sq; ++i) {
        naive_row(q, k, v, b, i, h, c.causal, scale, o, lse);
        const size_t li = (static_cast<size_t>(b) * c.h + h) * c.sq + i;
        if (std::isinf(lse)) {
          EXPECT_TRUE(std::isinf(r64.lse[li]) && r64.lse[li] < 0);
          EXPECT_TRUE(std::isinf(r32.lse[li]) && r32.lse[li] < 0);
        } else {
          EXPECT_NEAR(r64.lse[li], static_cast<double>(lse), 1e-12);
          EXPECT_NEAR(r32.lse[li], static_cast<double>(lse), 1e-4);
        }
        for (int d = 0; d < c.d; ++d) {
          ASSERT_NEAR(r64.o(b, i, h, d), static_cast<double>(o[d]), 1e-13) << b << " " << i << " " << h;
          ASSERT_NEAR(r32.o(b, i, h, d), static_cast<double>(o[d]), 2e-5) << b << " " << i << " " << h;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ReferenceVsNaive,
    ::testing::Values(Case{1, 1, 1, 1, 1, 8, false}, Case{2, 37, 37, 4, 2, 16, false},
                      Case{2, 37, 37, 4, 2, 16, true}, Case{1, 200, 300, 3, 1, 32, true},
                      Case{1, 300, 200, 2, 2, 32, true},  // sq > sk: first 100 rows see nothing
                      Case{1, 129, 257, 2, 1, 128, false}, Case{3, 5, 1000, 2, 1, 64, true}));
