// The compile-time configuration of the attention kernel: P precision, accumulation, tile sizes,
// roles and their register budgets. The shared-memory plan and barriers are in pipeline.cuh.
#pragma once
#include <cstdint>

namespace fp8attn::attn {

// P's precision in the P @ V product (see fp8attn_p_precision in the public header).
// kFP16: P in FP16 against V up-converted to FP16 in shared memory by the producer warpgroup's
// idle warps (see SharedStorage::v16 and v_converter in kernel.cuh).
enum class PPrecision : int { kE4M3 = 0, kE4M3HiLo = 1, kFP16 = 2 };

template <PPrecision kP_, bool kTwoLevel_, int kBlockN_, int kStages_, bool kTcRowSum_,
          int kPolyExpEvery_ = 0>
struct Config {
  // l from the tensor core: each P V k-step also issues m64n8k32 of P against a block of E4M3
  // ones into a fresh per-block accumulator (the sum of the rounded P that weighted V), added to
  // the FP32 l once per block, so 96 FADD per thread per block leave the softmax. Otherwise l is
  // the FP32 sum of the unrounded p. Summed in the overlapped order only (one-level kernels).
  static constexpr bool kTcRowSum = kTcRowSum_;
  // Every kPolyExpEvery-th group of 8 keys takes its exponentials from a polynomial on the FMA
  // pipe instead of MUFU (0 = none): MUFU's 16 results/clk/SM equal the FP8 tensor rate at
  // d = 128, so moving a share off it leaves slack for the overlap.
  static constexpr int kPolyExpEvery = kPolyExpEvery_;
  static constexpr PPrecision kP = kP_;
  static constexpr bool kFP16P = kP == PPrecision::kFP16;
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
  // setmaxnreg budget: producer + 2 x consumer <= 504 (the 168 registers per thread the launch
  // allocates for 384 threads, x 3), each a multiple of 8. FP16 P: the producer warpgroup's warps
  // 1..3 convert V to FP16 and need more than 24 (40 + 2 x 232 = 504).
  static constexpr int kProducerRegs = kFP16P ? 40 : 24;
  static constexpr int kConsumerRegs = kFP16P ? 232 : 240;
  static_assert(kProducerRegs + 2 * kConsumerRegs <= 504 && kProducerRegs % 8 == 0 &&
                    kConsumerRegs % 8 == 0,
                "setmaxnreg: the pool is 504 registers per thread slot, in multiples of 8");
  // FP16 P: the converter warps (producer warpgroup warps 1..3).
  static constexpr int kConverterWarps = kFP16P ? 3 : 0;
  static constexpr int kTileBytesQ = kBlockM * kHeadDim;  // E4M3: one byte per element
  static constexpr int kTileBytesK = kBlockN * kHeadDim;
  // V^T arrives in atoms of 64 keys (64-byte rows, 64-byte swizzle: a TMA box's inner extent
  // must not exceed its swizzle span), each atom [128 channels][64 keys]. A 224-key block takes 4
  // atoms, the last half of which belongs to the next block (loaded twice, never read here).
  static constexpr int kVAtomKeys = 64;
  static constexpr int kVAtoms = (kBlockN + kVAtomKeys - 1) / kVAtomKeys;
  static constexpr int kVAtomBytes = kHeadDim * kVAtomKeys;
  static constexpr int kVTileSmemBytes = kVAtoms * kVAtomBytes;
  static constexpr int kTileBytesV = kVTileSmemBytes;  // TMA bytes per V tile
  // FP16 P: V in FP16, [2 halves of 64 keys][128 channels][64 keys] (128-byte rows: one 128-byte
  // swizzle row), K-major for the FP16 wgmma's B, keys in natural order (un-permuted).
  static constexpr int kV16HalfKeys = 64;
  static constexpr int kV16HalfBytes = kHeadDim * kV16HalfKeys * 2;
  static constexpr int kV16TileBytes = kFP16P ? (kBlockN / kV16HalfKeys) * kV16HalfBytes : 16;
  static_assert(!kFP16P || (kBlockN == 128 && !kTwoLevel),
                "FP16 P: one-level accumulation, 128-key blocks (S 64 + O 64 + P 32 registers)");
  static_assert(kHeadDim == 128, "one 128-byte swizzle atom per row: d = 128 E4M3 values");
  static_assert(kBlockN % 32 == 0, "PV consumes keys 32 at a time");
  static_assert(!kTcRowSum || !kTwoLevel, "l from the tensor core needs the overlapped (one-level) loop");
  static_assert(kBlockN == 128 || ((kBlockN == 192 || kBlockN == 224) && !kTwoLevel),
                "192/224-key blocks fit in registers only with one-level accumulation");
};

}  // namespace fp8attn::attn
