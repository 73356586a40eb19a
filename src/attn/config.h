// The compile-time configuration of the attention kernel: P precision, accumulation, tile sizes,
// roles and their register budgets. The shared-memory plan and barriers are in pipeline.cuh.
#pragma once
#include <cstdint>

namespace fp8attn::attn {

// P's precision in the P @ V product (see fp8attn_p_precision in the public header).
// kFP16: P in FP16 against V in FP16 in shared memory (SharedStorage::v16): up-converted there
// from E4M3 V^T by the producer warpgroup's idle warps (v_converter.cuh), or, with VtType::kFP16,
// loaded by the TMA from an FP16 V^T the pre-pass wrote.
enum class PPrecision : int { kE4M3 = 0, kE4M3HiLo = 1, kFP16 = 2 };
// The dtype of V^T in global memory (fp8attn_vt_dtype): E4M3 with keys permuted per 32
// (fp8attn_vt_key_at), or FP16 in natural key order.
enum class VtType : int { kE4M3 = 0, kFP16 = 1 };
// How a consumer warpgroup computes a tile's first key block (consumer() in mainloop.cuh):
// whole; or skipped when all of it lies past the warpgroup's rows' diagonal and else computed
// only as far as its keys are visible: its first 64 or 128 keys when those hold every key the
// warpgroup's rows see (kTrim: the diagonal, or sk's last partial block). (1 was the skip alone,
// whose only kernel was removed; kTrim keeps 2, the value kernel names and tools carry.)
enum class FirstBlock : int { kWhole = 0, kTrim = 2 };

template <PPrecision kP_, bool kTwoLevel_, int kBlockN_, int kStages_, bool kTcRowSum_,
          int kPolyExpEvery_ = 0, VtType kVt_ = VtType::kE4M3, bool kTmaStoreO_ = false,
          FirstBlock kFirst_ = FirstBlock::kWhole, bool kFusedRowSum_ = false,
          bool kExactSoftmax_ = false, int kConsumerWarpgroups_ = 2>
struct Config {
  // FP8ATTN_P_E4M3_EXACT's softmax: P's offset FP8ATTN_P_EXACT_OFFSET_LOG2 (8) against the exact
  // running max (no slack), instead of FP8ATTN_P_OFFSET_LOG2 (5) with FP8ATTN_RESCALE_SLACK_LOG2
  // (3). With l from the FP32 p (kTcRowSum off), FA3 FP8's numerics (softmax.cuh).
  static constexpr bool kExactSoftmax = kExactSoftmax_;
  static_assert(!kExactSoftmax || (kP_ == PPrecision::kE4M3 && !kTcRowSum_),
                "the exact softmax: E4M3 P, l from the FP32 p");
  // l from the tensor core: each P V k-step also issues m64n8k32 of P against a block of E4M3
  // ones into a fresh per-block accumulator (the sum of the rounded P that weighted V), added to
  // the FP32 l once per block, so 96 FADD per thread per block leave the softmax. Otherwise l is
  // the FP32 sum of the unrounded p. Summed in the overlapped order only (one-level kernels).
  static constexpr bool kTcRowSum = kTcRowSum_;
  // With kTcRowSum: the row sums from the P V product itself, an m64n136k32 per k-step whose
  // last 8 columns read the 8 rows of E4M3 ones after each V^T atom (kVAtomStride), instead of
  // a separate m64n8k32 per k-step: 6 wgmmas fewer per 192-key block inside the ping-pong turn.
  // The trimmed-first-block kernel only: measured +1-3% on its rows (16 x 1k both masks, 8 x 2k
  // causal) head to head with FA3 FP8, while the re-scheduled long-tile kernel lost 8-9% and the
  // skip-only kernel up to 3.6% (docs/kernel.md, "Configurations and dispatch"). With FP16 P on
  // an FP16 V^T: each 64-key FP16 half followed by 8 rows of FP16 ones (kV16OnesBytes), one
  // m64n136k16 per k-step (the non-causal 192-key FP16 V^T kernel: +2-4% against the FP32 l).
  static constexpr bool kFusedRowSum = kFusedRowSum_;
  static_assert(!kFusedRowSum || (kTcRowSum && ((kP_ == PPrecision::kE4M3 && kVt_ == VtType::kE4M3) ||
                                                (kP_ == PPrecision::kFP16 && kVt_ == VtType::kFP16))),
                "the fused row sums: l from the tensor core, E4M3 P against the E4M3 V^T ring or "
                "FP16 P against the FP16 V^T ring");
  // Every kPolyExpEvery-th group of 8 keys takes its exponentials from a polynomial on the FMA
  // pipe instead of MUFU (0 = none): MUFU's 16 results/clk/SM equal the FP8 tensor rate at
  // d = 128, so moving a share off it leaves slack for the overlap.
  static constexpr int kPolyExpEvery = kPolyExpEvery_;
  static constexpr PPrecision kP = kP_;
  static constexpr bool kFP16P = kP == PPrecision::kFP16;
  // Barrier waits that sleep after a failed test (ptx::mbar_wait<true>) instead of spinning: the
  // E4M3 P kernels only. Head to head with FA3 FP8 the default kernels measured +0.5-0.9% with
  // them on the 8k rows and within 0.5% either way at 1k-2k; the FP16 P kernels, head to head
  // with FA3 BF16, measured slower with them on every row (0.2-0.6% at 8k: their softmax is
  // issue-bound while the longer FP16 P V is in flight), so they keep the spin (on the split
  // loop, Config::kSplitMaskLoop, level with it head to head with FA3 FP8 at 8k).
  static constexpr bool kSleepingWaits = !kFP16P;
  // The steady loop's ring counter made warp-uniform (a shuffle from lane 0 at the top of each
  // iteration tells ptxas so): the stage addresses and wgmma descriptors derived from it stay in
  // uniform registers instead of being formed in regular ones and moved over (R2UR) at every
  // k-step. The FP16 P kernels only: head to head with FA3 BF16 the accurate mode measured
  // +3.0-3.2% at 8k non-causal, +1.8-1.9% causal, +2.0% at 8 x 2k and +2.9% at 16 x 1k
  // non-causal, -1.4% and +0.3% on the short causal rows; the E4M3 P kernels measured 2-6%
  // slower with it on the 8k rows against FA3 FP8 (faster only at 8 x 2k and 16 x 1k causal,
  // which run the same kernel as 8k causal). On the split loop (Config::kSplitMaskLoop) the
  // accurate mode ran 4% slower at 8k without it, head to head with FA3 FP8.
  static constexpr bool kUniformRingCounter = kFP16P;
  // The key loop hands the ping-pong turn to the other warpgroup after this one's row maxima
  // instead of right after its issue. The turn barrier alone leaves the two warpgroups' phase
  // free between the tensor pipe's minimum (~0.29 of a period) and ~0.7, and a tile boundary
  // can leave it anywhere in that range for the whole tile; the period is shortest near half a
  // period (the two warpgroups' exponentials least on top of each other). Handing over after the
  // maxima holds it there: measured (clock stamps) at 0.50 in every block at 1k, 2k and 8k. The
  // E4M3 fused-row-sum kernel (the default's kernel) only: head to head with FA3 FP8 +1-2% on the
  // causal rows from 1k to 16k; the register-epilogue E4M3 kernel (since removed) measured 0-1.5%
  // slower with it (its own tile boundary left it near 0.5-0.6 already), and the accurate mode's
  // FP16 P kernel 1-2% slower.
  static constexpr bool kTurnAfterMax = kFusedRowSum_ && !kFP16P;
  // The steady loop as two loops: the blocks that need the causal / sequence-end mask (visited
  // first: blocks go last to first), then the rest, each with one max and no branch between a
  // masked and an unmasked copy; the second loop no longer holds the rows' limits. The same
  // arithmetic in the same order, so the same bits. The accurate mode's FP16 P kernel only: its
  // unmasked loop then schedules the exponentials apart from their FFMAs as the default's does,
  // and head to head with FA3 FP8 it ran +4-5% at 8k (both masks) and +2-3% at 16 x 1k, output
  // bits equal; with the split, the E4M3 kernel (the default's) ran 3-16% slower, its unmasked
  // loop losing that schedule instead (docs/kernel.md, the accurate mode's turn).
  static constexpr bool kSplitMaskLoop = kFusedRowSum_ && kFP16P;
  // FP16 V^T from global memory: the TMA writes the FP16 wgmma's B operand (v16) itself, so no
  // converter warps and no E4M3 V ring.
  static constexpr VtType kVt = kVt_;
  // The epilogue's O through a per-warpgroup shared-memory buffer (stmatrix) and TMA stores
  // instead of 32 scattered BF16 stores per thread: cheaper per tile; the default E4M3 kernel
  // (with the fused row sums) and the 192-key FP16 V^T kernel at every length, both measured
  // faster with it (select.h; 32 KiB more shared memory). These
  // configurations also take the KV head from the producer (SharedStorage::tile_kv_head).
  static constexpr bool kTmaStoreO = kTmaStoreO_;
  // The first block (FirstBlock). The E4M3 kernels only (select.h): the skip measured +2-3% at
  // 1k-4k causal head to head with FA3 FP8, the trim a further +3-8% at 1k and 2k causal and 1k
  // non-causal; with the fused row sums the trimmed TMA-store kernel is the fastest on every
  // causal row. The long-tile kernel takes the trim without the skip's re-scheduled loop: +1.5 to
  // +4% on the non-causal rows from 4k keys (their last, partial block computed only as far as
  // sk), output bits unchanged. The 192-key FP16 V^T kernel (the accurate mode) takes both:
  // head to head with FA3 BF16, +2-4% on every causal row and +1-6% on the non-causal rows up to
  // 4k keys, -0.5 to -1% on non-causal rows of 8k keys (docs/kernel.md), output bits unchanged.
  static constexpr bool kTrimFirstBlock = kFirst_ == FirstBlock::kTrim;
  static_assert(kFirst_ == FirstBlock::kWhole || !kTwoLevel_,
                "the first-block trim: the overlapped (one-level) loop only");
  static constexpr bool kVtF16 = kVt == VtType::kFP16;
  // One K descale per head only: select.h never sends a per-block K descale (one per
  // FP8ATTN_K_SCALE_BLOCK = 128 keys) to a kernel whose blocks are longer. The FP16 P kernels
  // use it at compile time (the per-block scale's registers freed: the 192-key FP16 V^T kernel
  // spilled without it), and the three-warpgroup FP16 V^T kernel (its 160 registers), which
  // select.h sends no per-block K descale either; the 192-key E4M3 kernels keep their runtime test
  // (their measured SASS).
  static constexpr bool kKScaleHeadOnly = kP_ == PPrecision::kFP16 && (kBlockN_ != 128 || kConsumerWarpgroups_ == 3);
  // FP16 P from E4M3 V^T: the producer warpgroup's warps 1..3 convert each block (v_converter).
  static constexpr bool kConvertV = kFP16P && !kVtF16;
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
  // 64 query rows per consumer warpgroup (the wgmma M), two or three consumer warpgroups per CTA,
  // taking turns at the tensor core in a ring (two: the ping-pong). Three (FP16 P on an FP16 V^T
  // only): two warpgroups' GEMMs run under each softmax instead of one, for a consumer budget of
  // 160 registers, so 128-key blocks and P through shared memory (kPSmem). A synthetic loop
  // promised 13% fewer cycles per score; the kernel measured ~0-1.5% per score, its lead on long
  // non-causal calls coming mostly from its tiles filling the last round (docs/kernel.md, the
  // dispatch table and "The last round").
  static constexpr int kConsumerWarpgroups = kConsumerWarpgroups_;
  static_assert(kConsumerWarpgroups == 2 || kConsumerWarpgroups == 3, "two or three consumer warpgroups");
  static constexpr int kBlockM = 64 * kConsumerWarpgroups;
  // P through shared memory: the softmax stores P (FP16) into its warpgroup's buffer (stmatrix,
  // the wgmma's K-major A layout) and the P V reads it there (SS), so no P register is live
  // across the softmax; the buffer is also the warpgroup's O staging in the epilogue.
  static constexpr bool kPSmem = kConsumerWarpgroups == 3;
  static_assert(!kPSmem || (kFP16P && kVtF16 && kFusedRowSum_ && kTmaStoreO_ && kBlockN_ == 128 &&
                            kFirst_ == FirstBlock::kWhole),
                "three consumer warpgroups: FP16 P on an FP16 V^T with the fused row sums, the "
                "TMA-store epilogue (whose staging is P's buffer), 128-key blocks, whole first blocks");
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
  // allocates for 384 threads, x 3), each a multiple of 8. FP16 P from E4M3 V^T: the producer
  // warpgroup's warps 1..3 convert V to FP16 and need more than 24 (40 + 2 x 232 = 504). Three
  // consumer warpgroups: 128 per thread for 512 threads, x 4 = 512 = 32 + 3 x 160 (FA3's split).
  static constexpr int kRegPool = kConsumerWarpgroups == 2 ? 504 : 512;
  static constexpr int kProducerRegs = kConsumerWarpgroups == 3 ? 32 : kConvertV ? 40 : 24;
  static constexpr int kConsumerRegs = kConsumerWarpgroups == 3 ? 160 : kConvertV ? 232 : 240;
  static_assert(kProducerRegs + kConsumerWarpgroups * kConsumerRegs <= kRegPool && kProducerRegs % 8 == 0 &&
                    kConsumerRegs % 8 == 0,
                "setmaxnreg: the pool is 504 (512 with 512 threads) registers per thread slot, in multiples of 8");
  // FP16 P from E4M3 V^T: the converter warps (producer warpgroup warps 1..3).
  static constexpr int kConverterWarps = kConvertV ? 3 : 0;
  static constexpr int kTileBytesQ = kBlockM * kHeadDim;  // E4M3: one byte per element
  static constexpr int kTileBytesK = kBlockN * kHeadDim;
  // V^T arrives in atoms of 64 keys (64-byte rows, 64-byte swizzle: a TMA box's inner extent
  // must not exceed its swizzle span), each atom [128 channels][64 keys]. A 224-key block takes 4
  // atoms, the last half of which belongs to the next block (loaded twice, never read here).
  static constexpr int kVAtomKeys = 64;
  static constexpr int kVAtoms = (kBlockN + kVAtomKeys - 1) / kVAtomKeys;
  static constexpr int kVAtomBytes = kHeadDim * kVAtomKeys;
  // kFusedRowSum: each atom is followed by 8 rows of E4M3 ones (one 512-byte group of the 64-byte
  // swizzle), written once at the kernel's start, so that one m64n136k32 per k-step reads V^T's
  // 128 channels and the ones: O and the row sums of P in one product (PVAccumulator). The TMA
  // fills the first kVAtomBytes of each atom.
  static constexpr int kOnesRowBytes = kFusedRowSum && kVt_ == VtType::kE4M3 ? 8 * kVAtomKeys : 0;
  static constexpr int kVAtomStride = kVAtomBytes + kOnesRowBytes;
  static_assert(kVAtomStride % 512 == 0, "each atom starts on the 64-byte swizzle's 512-byte period");
  // The E4M3 V ring (16 bytes, unused, when the TMA loads FP16 V^T).
  static constexpr int kVTileSmemBytes = kVtF16 ? 16 : kVAtoms * kVAtomStride;
  // FP16 P: V in FP16, [kBlockN / 64 halves of 64 keys][128 channels][64 keys] (128-byte rows:
  // one 128-byte swizzle row), K-major for the FP16 wgmma's B, keys in natural order.
  static constexpr int kV16HalfKeys = 64;
  static constexpr int kV16HalfBytes = kHeadDim * kV16HalfKeys * 2;
  static constexpr int kV16Halves = kBlockN / kV16HalfKeys;
  // kFusedRowSum with FP16 V^T: each half followed by 8 rows of FP16 ones (1 KiB: one 128-byte
  // swizzle period), so that one m64n136k16 per k-step reads the half's 128 channels and the
  // ones: O and the row sums of P in one product, as the E4M3 atoms' ones do.
  static constexpr int kV16OnesBytes = kFusedRowSum && kVtF16 ? 8 * 128 : 0;
  static constexpr int kV16HalfStride = kV16HalfBytes + kV16OnesBytes;
  static constexpr int kV16TileBytes = kFP16P ? kV16Halves * kV16HalfStride : 16;
  // TMA bytes per V tile: E4M3 atoms, or (FP16 V^T) the FP16 halves straight into v16.
  static constexpr int kTileBytesV = kVtF16 ? kV16Halves * kV16HalfBytes : kVAtoms * kVAtomBytes;
  static_assert(!kVtF16 || kFP16P, "FP16 V^T feeds the FP16 P V product only");
  static_assert(!kFP16P || (kBlockN % kV16HalfKeys == 0 && !kTwoLevel),
                "FP16 P: one-level accumulation, whole 64-key FP16 halves per block");
  static_assert(!kConvertV || kBlockN == 128,
                "FP16 P from E4M3 V^T: 128-key blocks (S 64 + O 64 + P 32 in 232 registers)");
  static_assert(kHeadDim == 128, "one 128-byte swizzle atom per row: d = 128 E4M3 values");
  static_assert(kBlockN % 32 == 0, "PV consumes keys 32 at a time");
  static_assert(!kTcRowSum || !kTwoLevel, "l from the tensor core needs the overlapped (one-level) loop");
  static_assert(kBlockN == 128 || ((kBlockN == 192 || kBlockN == 224) && !kTwoLevel),
                "192/224-key blocks fit in registers only with one-level accumulation");
};

}  // namespace fp8attn::attn
