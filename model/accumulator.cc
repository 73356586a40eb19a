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

template <AccRounding R, typename T>
inline T cut(T x) {
  if constexpr (R == AccRounding::kTowardZero) return std::trunc(x);
  else if constexpr (R == AccRounding::kDown) return std::floor(x);
  else return std::nearbyint(x);
}

// T: the type of the exact sum of the cut terms, integers times the unit below
// 2^(fraction_bits + 1 + log2(group + 1)): float while that fits in 24 bits, else double.
// Two passes per group: the largest |term| (its exponent sets the unit), then the cut terms.
template <AccRounding R, typename T>
void aligned_impl(const AlignedRule& rule, int rows, int cols, int k, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float* acc, int64_t ld_acc) {
  std::vector<float> mx_v(cols);
  std::vector<T> sum_v(cols), inv_v(cols), unit_v(cols);
  float* __restrict mx = mx_v.data();
  T* __restrict sum = sum_v.data();
  T* __restrict inv_unit = inv_v.data();
  T* __restrict unit = unit_v.data();
  for (int r = 0; r < rows; ++r) {
    const float* ar = a + static_cast<int64_t>(r) * lda;
    float* cr = acc + static_cast<int64_t>(r) * ld_acc;
    for (int k0 = 0; k0 < k; k0 += rule.group) {
      const int k1 = std::min(k, k0 + rule.group);
      for (int c = 0; c < cols; ++c) mx[c] = rule.c_aligned ? std::fabs(cr[c]) : 0.0f;
      for (int kk = k0; kk < k1; ++kk) {
        const float av = ar[kk];
        if (av == 0.0f) continue;
        const float* __restrict bk = b + static_cast<int64_t>(kk) * ldb;
        for (int c = 0; c < cols; ++c) mx[c] = std::max(mx[c], std::fabs(av * bk[c]));
      }
      for (int c = 0; c < cols; ++c) {
        // Clamped so that 2^-e stays a finite float: only groups whose largest term is below
        // 2^(fraction_bits - 100) (never products of E4M3 codes, >= 2^-18) are cut finer.
        const int e = std::max(exponent_of(mx[c]) - rule.fraction_bits, -100);
        unit[c] = static_cast<T>(std::ldexp(1.0, e));
        inv_unit[c] = static_cast<T>(std::ldexp(1.0, -e));
        sum[c] = rule.c_aligned ? cut<R>(static_cast<T>(cr[c]) * inv_unit[c]) : T(0);
      }
      for (int kk = k0; kk < k1; ++kk) {
        const float av = ar[kk];
        if (av == 0.0f) continue;
        const float* __restrict bk = b + static_cast<int64_t>(kk) * ldb;
        for (int c = 0; c < cols; ++c) sum[c] += cut<R>(static_cast<T>(av * bk[c]) * inv_unit[c]);
      }
      for (int c = 0; c < cols; ++c) {
        const double s = static_cast<double>(sum[c]) * static_cast<double>(unit[c]);
        cr[c] = rule.c_aligned ? static_cast<float>(s) : static_cast<float>(cr[c] + s);
      }
    }
  }
}

template <AccRounding R>
void aligned_dispatch(const AlignedRule& rule, int rows, int cols, int k, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float* acc, int64_t ld_acc) {
  // The cut terms are integers below 2^(fraction_bits + 1) each: their sum over a group and C
  // is exact in float while it stays below 2^24.
  if (rule.fraction_bits + 1 + std::bit_width(static_cast<unsigned>(rule.group + 1)) <= 24) {
    aligned_impl<R, float>(rule, rows, cols, k, a, lda, b, ldb, acc, ld_acc);
  } else {
    aligned_impl<R, double>(rule, rows, cols, k, a, lda, b, ldb, acc, ld_acc);
  }
}

}  // namespace

void aligned_gemm_acc(const AlignedRule& rule, int rows, int cols, int k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* acc, int64_t ld_acc) {
  if (rule.group <= 0 || rule.fraction_bits < 0 || rule.fraction_bits > 40) {
    throw std::invalid_argument("aligned_gemm_acc: group > 0 and fraction_bits in [0, 40]");
  }
  switch (rule.rounding) {
    case AccRounding::kTowardZero:
      return aligned_dispatch<AccRounding::kTowardZero>(rule, rows, cols, k, a, lda, b, ldb, acc, ld_acc);
    case AccRounding::kDown:
      return aligned_dispatch<AccRounding::kDown>(rule, rows, cols, k, a, lda, b, ldb, acc, ld_acc);
    case AccRounding::kNearest:
      return aligned_dispatch<AccRounding::kNearest>(rule, rows, cols, k, a, lda, b, ldb, acc, ld_acc);
  }
}

float aligned_dot(const AlignedRule& rule, float c, const float* a, const float* b, int k) {
  float acc = c;
  aligned_gemm_acc(rule, 1, 1, k, a, k, b, 1, &acc, 1);
  return acc;
}

}  // namespace fp8attn::model
