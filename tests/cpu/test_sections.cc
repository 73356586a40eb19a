// The causal tile order's section size (src/attn/sections.h), against its definition: the fewest
// sections of at most cap pairs, and sizes that differ by less than the number of sections (the
// last section is never a small remainder). Random and exhaustive small cases, and the rows of
// the speed sweep that motivated it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "src/attn/sections.h"
#include "tests/common/seed.h"

namespace {

using fp8attn::attn::balanced_section_pairs;

void expect_balanced(int64_t pairs, int64_t cap) {
  const int64_t s = balanced_section_pairs(pairs, cap);
  const int64_t c = std::clamp<int64_t>(cap, 1, pairs);
  ASSERT_GE(s, 1) << pairs << " " << cap;
  ASSERT_LE(s, c) << pairs << " " << cap;  // no section holds more than cap pairs
  const int64_t n = (pairs + s - 1) / s;
  ASSERT_EQ(n, (pairs + c - 1) / c) << pairs << " " << cap;  // as few sections as cap allows
  const int64_t last = pairs - (n - 1) * s;
  ASSERT_GT(last, 0) << pairs << " " << cap;
  ASSERT_GT(last, s - n) << pairs << " " << cap;  // the last section is as large as the others, or nearly
}

TEST(Sections, ExhaustiveSmall) {
  for (int64_t pairs = 1; pairs <= 300; ++pairs)
    for (int64_t cap = 0; cap <= pairs + 3; ++cap) expect_balanced(pairs, cap);
}

TEST(Sections, RandomLarge) {
  std::mt19937_64 rng(fp8attn::test::fresh_seed("Sections.RandomLarge"));
  std::uniform_int_distribution<int64_t> pairs_d(1, int64_t{1} << 20), cap_d(1, int64_t{1} << 21);
  for (int i = 0; i < 100000; ++i) expect_balanced(pairs_d(rng), cap_d(rng));
}

// The sweep's rows, with the caps first assumed for a 50 MiB L2 (half of it per section): 4k
// causal (b 4, h 32: 128 pairs, cap 25) used to end with a section of 3 pairs; GQA 2k x 16k
// (32 pairs, cap 25) with 7.
TEST(Sections, SweepRows) {
  EXPECT_EQ(balanced_section_pairs(128, 25), 22);  // 6 sections: 22 x 5 + 18
  EXPECT_EQ(balanced_section_pairs(32, 25), 16);   // 2 sections of 16
  EXPECT_EQ(balanced_section_pairs(64, 12), 11);   // 8k causal: 6 sections, 11 x 5 + 9
  EXPECT_EQ(balanced_section_pairs(32, 6), 6);     // 16k causal: unchanged
  EXPECT_EQ(balanced_section_pairs(64, 100), 64);  // one section: every pair
}

// The same rows on the H200 (60 MiB of L2, 30 MiB per section; a pair's E4M3 K and V take
// sk * 256 bytes / q_per_kv): 4k causal 1 MiB a pair, cap 30 (was 4 x 30 + 8); GQA 2k x 16k
// 1 MiB, cap 30 (was 30 + 2); 8k causal 2 MiB, cap 15 (was 4 x 15 + 4); 16k causal 4 MiB, cap 7.
TEST(Sections, SweepRowsH200) {
  EXPECT_EQ(balanced_section_pairs(128, 30), 26);  // 5 sections: 26 x 4 + 24
  EXPECT_EQ(balanced_section_pairs(32, 30), 16);   // 2 sections of 16
  EXPECT_EQ(balanced_section_pairs(64, 15), 13);   // 5 sections: 13 x 4 + 12
  EXPECT_EQ(balanced_section_pairs(32, 7), 7);     // 5 sections: 7 x 4 + 4, as before
}

}  // namespace
