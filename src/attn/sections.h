// The causal tile order's sections (attn/scheduler.cuh): how many (batch, head) pairs one section
// holds. Plain integer arithmetic, shared by the host (TileScheduler::section_heads) and
// tests/cpu/test_sections.cc.
#pragma once
#include <cstdint>

namespace fp8attn::attn {

// pairs (batch, head) pairs, at most cap of them per section: the fewest sections that respect
// cap, ceil(pairs / cap), each as large as the others or one smaller. A small last section put
// its longest tiles at the end of the order, after the other sections' shortest: its
// remainder of cap (3 pairs of 4k keys after five sections of 25) started 32-key-block tiles
// while most SMs had nothing left to claim.
constexpr int64_t balanced_section_pairs(int64_t pairs, int64_t cap) {
  if (pairs <= 0) return 1;
  cap = cap < 1 ? 1 : cap > pairs ? pairs : cap;
  const int64_t sections = (pairs + cap - 1) / cap;
  return (pairs + sections - 1) / sections;
}

}  // namespace fp8attn::attn
