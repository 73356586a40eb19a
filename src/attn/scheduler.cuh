// Which (query block, head, batch) a CTA works on. Tiles of one (batch, head) are adjacent in the
// order, so CTAs running at the same time share K/V in L2. Causal: inside a head, the query
// blocks that see the most keys come first (longest first), so short tiles fill the tail.
#pragma once
#include "attn/params.h"

namespace fp8attn::attn {

struct Tile {
  int m_block, head, batch;
};

struct TileScheduler {
  __device__ static Tile at(const KernelParams& p, int t) {
    const int bh = t / p.num_m_blocks;
    int m = t % p.num_m_blocks;
    if (p.causal) m = p.num_m_blocks - 1 - m;
    return Tile{m, bh % p.heads, bh / p.heads};
  }
  // Persistent when the grid is smaller than the tile count: CTA i takes tiles i, i + grid, ...
  __device__ static int first() { return blockIdx.x; }
  __device__ static int next(int t) { return t + gridDim.x; }
};

// The key blocks a query tile visits: [n_lo, n_hi), visited from n_hi - 1 down to n_lo.
// Bottom-right causal: query i sees keys j <= i + (sk - sq).
struct KeyRange {
  int n_lo, n_hi;
  int n_mask_lo;  // blocks >= n_mask_lo hold keys some row of the tile must not see
};

template <int kBlockM, int kBlockN>
__device__ __forceinline__ KeyRange key_range(const KernelParams& p, int m_block) {
  const int m0 = m_block * kBlockM;
  const int n_blocks = (p.seqlen_k + kBlockN - 1) / kBlockN;
  KeyRange r{0, n_blocks, p.seqlen_k / kBlockN};
  if (p.causal) {
    const int shift = p.seqlen_k - p.seqlen_q;
    // last key the last row of the tile may see, +1
    const long long end = static_cast<long long>(m0) + kBlockM + shift;
    const long long hi = end <= 0 ? 0 : (end + kBlockN - 1) / kBlockN;
    r.n_hi = static_cast<int>(hi < n_blocks ? hi : n_blocks);
    // first row's limit: keys >= m0 + shift + 1 are masked for it
    const long long first_limit = static_cast<long long>(m0) + shift + 1;
    const long long limit = first_limit < p.seqlen_k ? first_limit : p.seqlen_k;
    r.n_mask_lo = limit <= 0 ? 0 : static_cast<int>(limit / kBlockN);
  }
  return r;
}

}  // namespace fp8attn::attn
