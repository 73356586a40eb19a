// Tile sizes, roles, shared-memory plan and named barriers of the attention kernel.
#pragma once
#include <cstdint>

namespace fp8attn::attn {

// P's precision in the P @ V product (see fp8attn_p_precision in the public header).
enum class PPrecision : int { kE4M3 = 0, kE4M3HiLo = 1 };

// Softmax variants (kVariant). The kAblate* variants compute WRONG results on purpose: timing
// probes that remove one stage (tools/kernel_probe).
enum Variant : int {
  kVariantDefault = 0,
  // l from the tensor core (the library's E4M3-P one-level kernel): each P V k-step also issues
  // m64n8k32 of P against a block of E4M3 ones into a fresh per-block accumulator (the sum of the
  // rounded P that weighted V), added to the FP32 l once per block: 96 FADD per thread per block
  // leave the softmax (docs/perf-log.md, v8). kVariantDefault keeps the FP32 sum of unrounded p.
  kVariantTcRowSum = 2,
  kAblateNoSoftmax = 11,  // P = e4m3(raw S): no max, exp or sum
  kAblateNoExp = 12,      // max and sum kept, exp2 replaced by a copy (no MUFU)
  kAblateNoPV = 13,       // the P V wgmma is not issued
};

template <PPrecision kP_, bool kTwoLevel_, int kBlockN_, int kStages_, int kPolyExpEvery_ = 0,
          int kVariant_ = kVariantDefault>
struct Config {
  static constexpr int kVariant = kVariant_;
  // Every kPolyExpEvery-th group of 8 keys takes its exponentials from a polynomial on the FMA
  // pipe instead of MUFU (0 = none): MUFU's 16 results/clk/SM equal the FP8 tensor rate at
  // d = 128, so moving a share off it leaves slack for the overlap.
  static constexpr int kPolyExpEvery = kPolyExpEvery_;
  static constexpr PPrecision kP = kP_;
  // Two-level O accumulation (see PVAccumulator in kernel.cuh).
  static constexpr bool kTwoLevel = kTwoLevel_;
  // Intra-warpgroup overlap: the softmax of block n runs while the warpgroup's own PV of block
  // n+1 is in flight, so S (kBlockN/2), the running O (64), the PV's accumulator and P are live
  // at once. Two-level's fresh per-block O adds 64 registers to that: 64 + 64 + 64 + 16 (+16 lo
  // for hi+lo) and the addressing do not fit in 240, so the two-level kernels wait for their PV
  // before the softmax (ping-pong still overlaps it with the other warpgroup's GEMMs; see
  // key_blocks_serial in kernel.cuh).
  static constexpr bool kIntraWgOverlap = !kTwoLevel_;
  static constexpr int kHeadDim = 128;
  // 64 query rows per consumer warpgroup (the wgmma M), two consumer warpgroups per CTA.
  static constexpr int kConsumerWarpgroups = 2;
  static constexpr int kBlockM = 64 * kConsumerWarpgroups;
  // Keys per block. 128: the S accumulator (64 regs), the running O (64), the fresh per-block O
  // of two-level accumulation (64) and P (16) fit in 240 registers, and a block is one
  // FP8ATTN_K_SCALE_BLOCK, so a per-block K descale is one scalar per block. 192: only with
  // one-level accumulation (S 96 + O 64 + P 24) and one K descale per head; per-block costs
  // (row-max shuffles, barrier handshakes, O rescale) spread over 1.5x more keys. 224 (FA3's
  // FP8 choice): S 112 + O 64 + P 28.
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kStages = kStages_;  // K/V pipeline depth
  static constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
  // setmaxnreg budget: 24 + 2 x 240 per thread of each warpgroup <= 64K registers / 128.
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  static constexpr int kTileBytesQ = kBlockM * kHeadDim;  // E4M3: one byte per element
  static constexpr int kTileBytesK = kBlockN * kHeadDim;
  // V^T arrives in atoms of 64 keys (64-byte rows, 64-byte swizzle: a TMA box's inner extent
  // must not exceed its swizzle span), each atom [128 channels][64 keys].
  // V^T arrives in atoms of 64 keys (64-byte rows, 64-byte swizzle: a TMA box's inner extent
  // must not exceed its swizzle span), each atom [128 channels][64 keys]. A 224-key block takes 4
  // atoms, the last half of which belongs to the next block (loaded twice, never read here).
  static constexpr int kVAtomKeys = 64;
  static constexpr int kVAtoms = (kBlockN + kVAtomKeys - 1) / kVAtomKeys;
  static constexpr int kVAtomBytes = kHeadDim * kVAtomKeys;
  static constexpr int kVTileSmemBytes = kVAtoms * kVAtomBytes;
  static constexpr int kTileBytesV = kVTileSmemBytes;  // TMA bytes per V tile
  static_assert(kHeadDim == 128, "one 128-byte swizzle atom per row: d = 128 E4M3 values");
  static_assert(kBlockN % 32 == 0, "PV consumes keys 32 at a time");
  static_assert(kBlockN == 128 || ((kBlockN == 192 || kBlockN == 224) && !kTwoLevel),
                "192/224-key blocks fit in registers only with one-level accumulation");
};

// Shared memory: tiles first (1024-byte aligned for the 128-byte swizzle), barriers last.
template <class Cfg>
struct alignas(1024) SharedStorage {
  alignas(1024) uint8_t q[2][Cfg::kTileBytesQ];  // double buffer: the next tile's Q loads early
  alignas(1024) uint8_t k[Cfg::kStages][Cfg::kTileBytesK];
  alignas(1024) uint8_t v[Cfg::kStages][Cfg::kVTileSmemBytes];
  // E4M3 ones (0x38): the B operand of the row-sum wgmma (kVariantTcRowSum). Any layout reads 1.
  alignas(1024) uint8_t ones[Cfg::kVariant == kVariantTcRowSum ? 1024 : 16];  // 1 KiB: the 64B-swizzle atom of 8 rows is 512 B
  uint64_t q_full[2], q_empty[2];
  uint64_t k_full[Cfg::kStages], k_empty[Cfg::kStages];
  uint64_t v_full[Cfg::kStages], v_empty[Cfg::kStages];
  // The producer tells the consumers which tile comes next (a ring of two slots).
  int tile_id[2];
  uint64_t tile_full[2], tile_empty[2];
};

// Named barrier ids (0 is __syncthreads). kWarpSchedulerWG0 + i lets consumer warpgroup i issue
// its GEMMs: the two warpgroups alternate (ping-pong), so one's softmax runs under the other's
// tensor-core work.
enum class NamedBarrier : int { kWarpSchedulerWG0 = 1, kWarpSchedulerWG1 = 2 };

}  // namespace fp8attn::attn
