// A tile's first key block per consumer warpgroup (src/attn/first_block.h), against a count over
// every row of the warpgroup: the key limit is the largest any of its rows has, the block is
// skipped exactly when none of its keys is visible to any row, and otherwise the warpgroup
// computes the fewest of 64, 128 or all of the block's keys that hold every visible one. Random
// shapes (sq above, below and equal to sk), both block lengths the kernels use, causal and not.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "src/attn/first_block.h"
#include "tests/common/seed.h"

namespace {

using fp8attn::attn::first_block_keys;
using fp8attn::attn::warpgroup_key_limit;

constexpr int kBlockM = 128;

// Keys [0, limit) row `row` may see (bottom-right causal).
long long row_limit(bool causal, long long sq, long long sk, long long row) {
  if (!causal) return sk;
  return std::clamp(row + sk - sq + 1, 0LL, sk);
}

TEST(FirstBlock, LimitIsTheWarpgroupsLargestRowLimit) {
  std::mt19937_64 rng(fp8attn::test::fresh_seed("FirstBlock.Limit"));
  std::uniform_int_distribution<int> len(1, 3000);
  for (int trial = 0; trial < 200; ++trial) {
    const long long sq = len(rng), sk = len(rng);
    const bool causal = trial % 2 == 0;
    const int m_blocks = static_cast<int>((sq + kBlockM - 1) / kBlockM);
    for (int m = 0; m < m_blocks; ++m) {
      for (int wg = 0; wg < 2; ++wg) {
        long long want = 0;
        for (int r = 0; r < 64; ++r) want = std::max(want, row_limit(causal, sq, sk, m * kBlockM + 64 * wg + r));
        ASSERT_EQ(warpgroup_key_limit(causal, sq, sk, m, kBlockM, wg), want)
            << "sq " << sq << " sk " << sk << " causal " << causal << " m " << m << " wg " << wg;
      }
    }
  }
}

TEST(FirstBlock, KeysHoldEveryVisibleKeyAndNoMore) {
  std::mt19937_64 rng(fp8attn::test::fresh_seed("FirstBlock.Keys"));
  std::uniform_int_distribution<int> len(1, 3000);
  for (int block_n : {128, 192}) {
    for (int trial = 0; trial < 200; ++trial) {
      const long long sq = len(rng), sk = len(rng);
      const bool causal = trial % 2 == 0;
      const int n_blocks = static_cast<int>((sk + block_n - 1) / block_n);
      const int m_blocks = static_cast<int>((sq + kBlockM - 1) / kBlockM);
      for (int m = 0; m < m_blocks; ++m) {
        for (int wg = 0; wg < 2; ++wg) {
          const long long lim = warpgroup_key_limit(causal, sq, sk, m, kBlockM, wg);
          for (int n = 0; n < n_blocks; ++n) {
            long long visible = 0;  // keys of block n that some row of the warpgroup sees
            for (int r = 0; r < 64; ++r) {
              const long long rl = row_limit(causal, sq, sk, m * kBlockM + 64 * wg + r);
              visible = std::max(visible, std::clamp(rl - 1LL * n * block_n, 0LL, 1LL * block_n));
            }
            const int keys = first_block_keys(lim, n, block_n);
            const int want = visible == 0 ? 0 : visible <= 64 ? 64 : visible <= 128 ? 128 : block_n;
            ASSERT_EQ(keys, want) << "sq " << sq << " sk " << sk << " causal " << causal << " m " << m
                                  << " wg " << wg << " n " << n << " block " << block_n;
          }
        }
      }
    }
  }
}

// The kernel skips at most one block: the tile's key range is its last row's, so when warpgroup 0
// sees none of the tile's last block it sees some of the block before (unless it sees no key).
TEST(FirstBlock, OneSkipAtMost) {
  std::mt19937_64 rng(fp8attn::test::fresh_seed("FirstBlock.OneSkip"));
  std::uniform_int_distribution<int> len(1, 3000);
  int skips = 0;  // tiles where warpgroup 0 skips (so that the check below is not vacuous)
  for (int block_n : {128, 192}) {
    for (int trial = 0; trial < 300; ++trial) {
      const long long sq = len(rng), sk = len(rng);
      const int n_blocks = static_cast<int>((sk + block_n - 1) / block_n);
      for (int m = 0; m < static_cast<int>((sq + kBlockM - 1) / kBlockM); ++m) {
        // The tile's range as attn/scheduler.cuh key_range has it (causal).
        const long long end = 1LL * m * kBlockM + sk - sq + kBlockM;
        if (end <= 0) continue;
        const int n_hi = static_cast<int>(std::min<long long>((end + block_n - 1) / block_n, n_blocks));
        const long long lim = warpgroup_key_limit(true, sq, sk, m, kBlockM, 0);
        if (n_hi < 2 || lim == 0 || first_block_keys(lim, n_hi - 1, block_n) != 0) continue;
        ++skips;
        EXPECT_GT(first_block_keys(lim, n_hi - 2, block_n), 0)
            << "sq " << sq << " sk " << sk << " m " << m << " block " << block_n;
      }
    }
  }
  EXPECT_GT(skips, 0);
}

}  // namespace
