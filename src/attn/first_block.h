// A tile's first key block for one consumer warpgroup (Config::kTrimFirstBlock): how many of its
// keys the warpgroup's rows may see, and so how much of the block the warpgroup computes. Plain
// integer arithmetic, shared by the kernel (attn/mainloop.cuh) and tests/cpu/test_first_block.cc,
// which checks it against a count over every row.
#pragma once

#if defined(__CUDACC__)
#define FP8ATTN_ATTN_FB_HD __host__ __device__
#else
#define FP8ATTN_ATTN_FB_HD
#endif

namespace fp8attn::attn {

// The keys [0, limit) that some row of the warpgroup may see: rows m_block * block_m + 64 * wg ..
// + 63 (rows past seqlen_q included: their output is discarded, and counting them only keeps
// more keys). Bottom-right causal: row i sees keys j <= i + sk - sq. 0 when no row sees a key.
FP8ATTN_ATTN_FB_HD constexpr long long warpgroup_key_limit(bool causal, long long seqlen_q,
                                                           long long seqlen_k, int m_block,
                                                           int block_m, int wg) {
  if (!causal) return seqlen_k;
  const long long row_end = static_cast<long long>(m_block) * block_m + 64LL * (wg + 1);
  const long long lim = row_end + seqlen_k - seqlen_q;
  return lim < 0 ? 0 : lim < seqlen_k ? lim : seqlen_k;
}

// How the warpgroup computes block n (keys n * block_n ..) given that limit: 0 skip it (no visible
// key), else the keys it computes: 64, 128 or block_n, the fewest that hold every visible key.
FP8ATTN_ATTN_FB_HD constexpr int first_block_keys(long long limit, int n, int block_n) {
  const long long keys = limit - static_cast<long long>(n) * block_n;
  return keys <= 0 ? 0 : keys <= 64 ? 64 : keys <= 128 ? 128 : block_n;
}

}  // namespace fp8attn::attn
