#include "model/metrics.h"

#include <cmath>
#include <stdexcept>

namespace fp8attn::model {
namespace {

template <typename T>
ErrorStats compare_impl(const Array4<T>& out, const TensorD& ref) {
  if (!(out.b == ref.b && out.s == ref.s && out.h == ref.h && out.d == ref.d)) {
    throw std::invalid_argument("compare: shapes differ");
  }
  const int64_t n = ref.size();
  double se = 0, sr = 0, so = 0, dot = 0, mx = -1;
  int64_t at = 0;
  bool finite = true;
#pragma omp parallel
  {
    double l_se = 0, l_sr = 0, l_so = 0, l_dot = 0, l_mx = -1;
    int64_t l_at = 0;
    bool l_finite = true;
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < n; ++i) {
      const double o = out.data[i], r = ref.data[i];
      if (!std::isfinite(o)) {
        l_finite = false;
        continue;
      }
      const double e = o - r;
      l_se += e * e;
      l_sr += r * r;
      l_so += o * o;
      l_dot += o * r;
      if (std::fabs(e) > l_mx) {
        l_mx = std::fabs(e);
        l_at = i;
      }
    }
#pragma omp critical
    {
      se += l_se;
      sr += l_sr;
      so += l_so;
      dot += l_dot;
      finite = finite && l_finite;
      if (l_mx > mx || (l_mx == mx && l_at < at)) {
        mx = l_mx;
        at = l_at;
      }
    }
  }
  ErrorStats s;
  s.finite = finite;
  if (!finite) {
    s.rmse = s.max_abs = s.rel_rmse = NAN;
    s.cosine = NAN;
    return s;
  }
  s.rmse = n ? std::sqrt(se / n) : 0.0;
  s.max_abs = mx < 0 ? 0.0 : mx;
  s.rel_rmse = sr > 0 ? std::sqrt(se / sr) : 0.0;
  s.cosine = (sr > 0 && so > 0) ? dot / std::sqrt(sr * so) : 1.0;
  int64_t r = at;
  s.max_at[3] = static_cast<int>(r % ref.d);
  r /= ref.d;
  s.max_at[2] = static_cast<int>(r % ref.h);
  r /= ref.h;
  s.max_at[1] = static_cast<int>(r % ref.s);
  s.max_at[0] = static_cast<int>(r / ref.s);
  return s;
}

}  // namespace

ErrorStats compare(const Tensor& out, const TensorD& ref) { return compare_impl(out, ref); }
ErrorStats compare(const TensorD& out, const TensorD& ref) { return compare_impl(out, ref); }

}  // namespace fp8attn::model
