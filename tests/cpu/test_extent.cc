// The layout checks of the argument validation (src/attn/extent.h): which stride sets let two
// elements of a written tensor share memory, and when two tensors' byte spans meet.
#include <gtest/gtest.h>

#include "../../src/attn/extent.h"

namespace {

using fp8attn::attn::Extent;
using fp8attn::attn::extent_of;
using fp8attn::attn::strides_disjoint;

TEST(Extent, DisjointStrides) {
  EXPECT_TRUE(strides_disjoint({{2, 300 * 4 * 128}, {300, 4 * 128}, {4, 128}, {128, 1}}));  // (b, s, h, d)
  EXPECT_TRUE(strides_disjoint({{2, 4 * 300 * 128}, {300, 128}, {4, 300 * 128}, {128, 1}}));  // (b, h, s, d)
  EXPECT_TRUE(strides_disjoint({{1, 0}, {300, 4 * 136}, {4, 136}, {128, 1}}));  // padded rows, b = 1
  EXPECT_TRUE(strides_disjoint({{1, 128}, {1, 128}, {4, 128}, {128, 1}}));      // size-1 dims ignored
}

TEST(Extent, OverlappingStrides) {
  EXPECT_FALSE(strides_disjoint({{2, 300 * 4 * 128}, {300, 256}, {4, 128}, {128, 1}}));  // s into heads
  EXPECT_FALSE(strides_disjoint({{2, 0}, {300, 4 * 128}, {4, 128}, {128, 1}}));          // b broadcast
  EXPECT_FALSE(strides_disjoint({{300, 4 * 128}, {4, 64}, {128, 1}}));                   // heads 64 apart
}

TEST(Extent, Spans) {
  const Extent a = extent_of(reinterpret_cast<void*>(4096), {{2, 10}, {128, 1}}, 2);
  EXPECT_EQ(a.hi - a.lo, (10 + 127 + 1) * 2u);
  EXPECT_TRUE(a.meets(extent_of(reinterpret_cast<void*>(4096 + 275), {{1, 1}}, 1)));
  EXPECT_FALSE(a.meets(extent_of(reinterpret_cast<void*>(4096 + 276), {{1, 1}}, 1)));  // adjacent
  EXPECT_FALSE(a.meets(extent_of(nullptr, {{1, 1}}, 1)));
  EXPECT_TRUE(extent_of(reinterpret_cast<void*>(64), {{0, 1}}, 4).empty());  // no elements
}

}  // namespace
