// Array4: an owning, row-major (b, s, h, d) array. Activations are (batch, token, head, channel)
// as FlashAttention takes them; the last dimension is contiguous.
#ifndef FP8ATTN_MODEL_TENSOR_H_
#define FP8ATTN_MODEL_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp8attn::model {

template <typename T>
struct Array4 {
  int b = 0, s = 0, h = 0, d = 0;
  std::vector<T> data;

  Array4() = default;
  Array4(int b_, int s_, int h_, int d_, T fill = T(0))
      : b(b_), s(s_), h(h_), d(d_), data(static_cast<size_t>(b_) * s_ * h_ * d_, fill) {}

  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int64_t index(int bi, int si, int hi, int di = 0) const {
    return ((static_cast<int64_t>(bi) * s + si) * h + hi) * d + di;
  }
  T& operator()(int bi, int si, int hi, int di) { return data[index(bi, si, hi, di)]; }
  const T& operator()(int bi, int si, int hi, int di) const { return data[index(bi, si, hi, di)]; }
  // The d contiguous channels of one (batch, token, head).
  T* row(int bi, int si, int hi) { return data.data() + index(bi, si, hi); }
  const T* row(int bi, int si, int hi) const { return data.data() + index(bi, si, hi); }
  bool same_shape(const Array4& o) const { return b == o.b && s == o.s && h == o.h && d == o.d; }
};

using Tensor = Array4<float>;
using TensorD = Array4<double>;

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_TENSOR_H_
