// Host checks on where strided tensors lie in memory, for the argument validation of the entry
// points (src/api.cu, src/compose/attention.cu): a tensor's byte span, whether a written tensor's own
// elements may share bytes, and whether two tensors' spans meet.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace fp8attn::attn {

// Bytes [lo, hi) that a tensor may touch; empty (lo == hi) for a null pointer or no elements.
struct Extent {
  uintptr_t lo = 0, hi = 0;
  bool empty() const { return lo == hi; }
  bool meets(const Extent& o) const { return !empty() && !o.empty() && lo < o.hi && o.lo < hi; }
};

// dims: (size, stride in elements) pairs; strides >= 0 (0 broadcasts), sizes >= 1.
inline Extent extent_of(const void* base, std::initializer_list<std::pair<int64_t, int64_t>> dims,
                        int64_t elem_bytes) {
  if (!base) return {};
  int64_t last = 0;
  for (const auto& [n, s] : dims) {
    if (n <= 0) return {};
    last += (n - 1) * s;
  }
  const uintptr_t lo = reinterpret_cast<uintptr_t>(base);
  return {lo, lo + static_cast<uintptr_t>((last + 1) * elem_bytes)};
}

// True when no two distinct indices of the tensor can address the same element: with the
// dimensions sorted by stride, each stride reaches past the whole extent of the smaller ones.
// (Sufficient, not necessary: an interleaving that happens to be disjoint is also refused.)
inline bool strides_disjoint(std::initializer_list<std::pair<int64_t, int64_t>> dims) {
  std::vector<std::pair<int64_t, int64_t>> d;  // (stride, size) of the dimensions with size > 1
  for (const auto& [n, s] : dims)
    if (n > 1) d.emplace_back(s, n);
  std::sort(d.begin(), d.end());
  int64_t reach = 1;  // elements spanned by the dimensions so far
  for (const auto& [s, n] : d) {
    if (s < reach) return false;
    reach = s * (n - 1) + reach;
  }
  return true;
}

}  // namespace fp8attn::attn
