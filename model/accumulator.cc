#include "model/accumulator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace fp8attn::model {

const char* acc_rounding_name(AccRounding r) {
  switch (r) {
    case AccRounding::kTowardZero: return "zero";
    case AccRounding::kDown: return "down";
    case AccRounding::kNearest: return "nearest";
  }
  return "?";
}

namespace {

// Unbiased exponent of a float's leading bit (zero and subnormals: -127, below every product
// that matters; a zero term then sets no alignment).
inline int exponent_of(float x) {
  return static_cast<int>((std::bit_cast<uint32_t>(x) >> 23) & 0xFFu) - 127;
}

inline double cut(double x, AccRounding r) {
  switch (r) {
    case AccRounding::kTowardZero: return std::trunc(x);
    case AccRounding::kDown: return std::floor(x);
    case AccRounding::kNearest: return std::nearbyint(x);
  }
  return x;
}

}  // namespace

void aligned_gemm_acc(const AlignedRule& rule, int rows, int cols, int k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* acc, int64_t ld_acc) {
  if (rule.group <= 0 || rule.fraction_bits < 0 || rule.fraction_bits > 40) {
    throw std::invalid_argument("aligned_gemm_acc: group > 0 and fraction_bits in [0, 40]");
  }
  std::vector<int> emax(cols);
  std::vector<double> sum(cols), inv_unit(cols), unit(cols);
  for (int r = 0; r < rows; ++r) {
    const float* ar = a + static_cast<int64_t>(r) * lda;
    float* cr = acc + static_cast<int64_t>(r) * ld_acc;
    for (int k0 = 0; k0 < k; k0 += rule.group) {
      const int k1 = std::min(k, k0 + rule.group);
      for (int c = 0; c < cols; ++c) emax[c] = rule.c_aligned ? exponent_of(cr[c]) : -127;
      for (int kk = k0; kk < k1; ++kk) {
        const float av = ar[kk];
        if (av == 0.0f) continue;
        const float* bk = b + static_cast<int64_t>(kk) * ldb;
        for (int c = 0; c < cols; ++c) emax[c] = std::max(emax[c], exponent_of(av * bk[c]));
      }
      for (int c = 0; c < cols; ++c) {
        const int e = emax[c] - rule.fraction_bits;
        unit[c] = std::ldexp(1.0, e);
        inv_unit[c] = std::ldexp(1.0, -e);
        sum[c] = rule.c_aligned ? cut(static_cast<double>(cr[c]) * inv_unit[c], rule.rounding) : 0.0;
      }
      for (int kk = k0; kk < k1; ++kk) {
        const float av = ar[kk];
        if (av == 0.0f) continue;
        const float* bk = b + static_cast<int64_t>(kk) * ldb;
        for (int c = 0; c < cols; ++c) {
          sum[c] += cut(static_cast<double>(av * bk[c]) * inv_unit[c], rule.rounding);
        }
      }
      for (int c = 0; c < cols; ++c) {
        const double s = sum[c] * unit[c];
        cr[c] = rule.c_aligned ? static_cast<float>(s) : static_cast<float>(cr[c] + s);
      }
    }
  }
}

float aligned_dot(const AlignedRule& rule, float c, const float* a, const float* b, int k) {
  float acc = c;
  aligned_gemm_acc(rule, 1, 1, k, a, k, b, 1, &acc, 1);
  return acc;
}

}  // namespace fp8attn::model
