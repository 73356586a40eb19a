// Which (query block, head, batch) a CTA works on.
//   non-causal: head-major: the tiles of one (batch, head) are adjacent, so CTAs running at the
//               same time share K/V in L2 (all tiles cost the same).
//   causal:     longest first across a section of (batch, head) pairs whose K/V fit in L2:
//               query block M-1 of every pair of the section, then M-2, ... The CTAs running at
//               the same time read the section's K/V (L2 hits), and the tiles at the end of the
//               order (the last section's first query blocks) are the shortest, so the dynamic
//               scheduler ends with little imbalance. Head-major with longest first inside a head
//               (section_heads = 0) ends with the last head's long tiles running beside idle SMs.
#pragma once
#include <algorithm>
#include <cstdint>

#include "attn/params.h"
#include "attn/sections.h"

namespace fp8attn::attn {

struct Tile {
  int m_block, head, batch;
};

// Tile order: t -> (m_block, head, batch).
struct TileScheduler {
  __device__ static Tile at(const KernelParams& p, int t) {
    int bh, m;
    if (p.causal && p.section_heads > 0) {
      const int per_section = p.section_heads * p.num_m_blocks;
      const int section = t / per_section;
      const int bh0 = section * p.section_heads;
      const int pairs = min(p.section_heads, p.batch * p.heads - bh0);
      const int idx = t - section * per_section;
      m = p.num_m_blocks - 1 - idx / pairs;
      bh = bh0 + idx % pairs;
    } else {
      bh = t / p.num_m_blocks;
      m = t % p.num_m_blocks;
      if (p.causal) m = p.num_m_blocks - 1 - m;
    }
    return Tile{m, bh % p.heads, bh / p.heads};
  }
  // CTA i starts with tile i. Persistent (tile_counter set): the producer claims the next tile
  // from a global counter as soon as it has issued the loads of the current one (dynamic, so
  // causal's uneven tiles balance, and the next tile's loads overlap this tile's tail).
  // Otherwise one tile per CTA, and the hardware hands out CTAs in order.
  //
  // The counter is zero before the launch and the kernel leaves it zero: every tile a CTA works
  // on is followed by exactly one claim, so a launch makes num_tiles claims in all, returning
  // 0 .. num_tiles - 1, and atomicInc with the limit num_tiles - 1 wraps the counter to 0 in the
  // last of them (one atomic, as atomicAdd was; the key loops' SASS is unchanged). No memset per
  // launch, and a CUDA graph replays the launch with the counter it captured (the host gives each
  // stream, and each captured launch, its own counter: attn/tile_counters.h).
  __device__ static int first() { return blockIdx.x; }
  __device__ static int next(const KernelParams& p) {
    if (!p.tile_counter) return p.num_tiles;
    const unsigned last = static_cast<unsigned>(p.num_tiles - 1);
    return static_cast<int>(atomicInc(reinterpret_cast<unsigned*>(p.tile_counter), last)) +
           static_cast<int>(gridDim.x);
  }

  // Host side. Causal tile order: sections of (batch, head) pairs whose K and V (E4M3, shared by
  // q_per_kv query heads) take at most about half of L2; with `balance`, the pairs spread evenly
  // over the fewest such sections (balanced_section_pairs), else as many full sections as fit
  // and the remainder last. 0 (head-major) when not causal or not asked for.
  static int section_heads(int batch, int heads, int heads_kv, int seqlen_k, bool causal,
                           bool causal_sections, bool balance, int l2_bytes) {
    if (!causal || !causal_sections) return 0;
    const int64_t kv_bytes_per_pair =
        std::max<int64_t>(1, int64_t{seqlen_k} * 128 * 2 / (heads / heads_kv));
    const int64_t pairs = int64_t{batch} * heads;
    const int64_t cap = std::clamp<int64_t>(int64_t{l2_bytes} / 2 / kv_bytes_per_pair, 1, pairs);
    return static_cast<int>(balance ? balanced_section_pairs(pairs, cap) : cap);
  }
  // Host side. One CTA per tile (the hardware block scheduler hands tiles out in order, heavy
  // first for causal), or, persistent, one CTA per SM claiming tiles from a counter; only when
  // there are more tiles than SMs.
  static bool persistent_grid(int num_tiles, int num_sms, bool persistent) {
    return persistent && num_tiles > num_sms;
  }
};

// The key blocks a query tile visits: [n_lo, n_hi), visited from n_hi - 1 down to n_lo.
// Bottom-right causal: query i sees keys j <= i + (sk - sq).
struct KeyRange {
  int n_lo, n_hi;
  int n_mask_lo;  // blocks >= n_mask_lo hold keys some row of the tile must not see
};

// Integer math: the API caps sequence lengths at 2^30, so nothing here overflows.
template <int kBlockM, int kBlockN>
__device__ __forceinline__ KeyRange key_range(const KernelParams& p, int m_block) {
  const int n_blocks = (p.seqlen_k + kBlockN - 1) / kBlockN;
  KeyRange r{0, n_blocks, p.seqlen_k / kBlockN};
  if (p.causal) {
    // Keys j <= row + shift are visible. The tile's last row sees keys < end; its first row
    // sees keys < first_limit.
    const int first_limit = m_block * kBlockM + p.seqlen_k - p.seqlen_q + 1;
    const int end = first_limit + kBlockM - 1;
    r.n_hi = end <= 0 ? 0 : min((end + kBlockN - 1) / kBlockN, n_blocks);
    const int limit = min(first_limit, p.seqlen_k);
    r.n_mask_lo = limit <= 0 ? 0 : limit / kBlockN;
  }
  return r;
}

}  // namespace fp8attn::attn
