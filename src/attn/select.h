// Which attention kernel a call runs: a pure function of the call's arguments (P precision and
// K-scale granularity, V^T dtype, the tiles' length), over the configurations instantiated in attn/instantiations/.
#pragma once
#include "fp8attn/fp8attn.h"

namespace fp8attn::attn {

enum class KernelId : int {
  // E4M3 P, one-level accumulation, 192-key blocks, l from the tensor core: one K descale per
  // head (or none); per-block costs spread over 1.5x the keys of a 128-key block. The first
  // block a warpgroup visits is computed only as far as its rows see (sk's partial last block).
  kE4M3Block192,
  // The same arithmetic with O written through shared memory and the TMA: for short tiles, where
  // the epilogue's 32 scattered stores per thread are a visible share of a tile (measured: +4-6%
  // at 16 x 1k, +0-2% at 8 x 2k, -1-3% at 8k).
  kE4M3Block192TmaStore,
  // The TMA-store kernel with the first block also trimmed (its first 64 or 128 keys where those
  // hold every key its rows see) and the row sums fused into the P V product: every causal call
  // and the shortest non-causal tiles (trim_tiles below, with the measurements).
  kE4M3Block192Trim,
  // E4M3 P with a per-block K descale: a block must be one FP8ATTN_K_SCALE_BLOCK (128 keys) so
  // that its descale is one scalar per block; 3 stages fill the shared memory 192 would use.
  kE4M3Block128,
  // P hi+lo: two-level accumulation (its precision would otherwise be lost to the wgmma's
  // accumulation across all keys), which fits in registers with 128-key blocks only.
  kE4M3HiLoTwoLevel,
  // FP16 P from E4M3 V^T: one-level (the FP16 wgmma accumulates in FP32), 128-key blocks (S 64 +
  // O 64 + P 32), V converted to FP16 in shared memory by three producer-warpgroup warps.
  kFP16Block128,
  // FP16 P from FP16 V^T: the same product, V loaded by the TMA in the wgmma's layout: no
  // converter warps, so the consumers get 240 registers and the producer 24. 128-key blocks for a
  // per-block K descale (one per FP8ATTN_K_SCALE_BLOCK keys) ...
  kFP16VtBlock128,
  // ... 192-key blocks for one K descale per head (what the end-to-end call's pre-pass writes):
  // S 96 + O 64 + P 48 registers, per-block costs spread over 1.5x the keys.
  kFP16VtBlock192,
  kInvalid,
};

// A per-block K descale: k_descale given with a nonzero stride along key blocks.
constexpr bool k_scale_per_block(const fp8attn_fwd_params& p) {
  return p.k_descale != nullptr && p.kd_stride_blk != 0;
}

// The keys a query row visits on average (bottom-right causal: row i of sq sees
// min(sk, max(0, i + sk - sq + 1)) keys).
constexpr long long average_keys(const fp8attn_fwd_params& p) {
  const long long sq = p.seqlen_q, sk = p.seqlen_k;
  if (!p.causal) return sk;
  return sq <= sk ? sk - sq + sq / 2 : sk * sk / (2 * sq);
}

// Short non-causal tiles, at most 2048 keys: O through shared memory and the TMA
// (e4m3_block192_tma_store); longer ones store O from registers (e4m3_block192). Causal calls
// take the trimmed kernel below at every length.
inline constexpr int kShortTileKeys = 2048;
constexpr bool short_tiles(const fp8attn_fwd_params& p) { return average_keys(p) <= kShortTileKeys; }

// The trimmed first block (Config::kTrimFirstBlock, with the row sums fused into the P V
// product): every causal call, and non-causal ones of at most 1024 keys. Measured head to head
// with FA3 FP8 against the skip-only and long-tile kernels at every causal row of the sweep (1k to
// 16k, GQA, sq 2k against sk 16k: level at 1k, +1.5% at 2k, +4.5 to +5% from 4k on) and at 1k
// non-causal; behind them non-causal from 2k on (8 x 2k -2%, 8k -8%) (docs/kernel.md,
// "Configurations and dispatch").
inline constexpr int kTrimTileKeys = 1024;
constexpr bool trim_tiles(const fp8attn_fwd_params& p) {
  return p.causal || average_keys(p) <= kTrimTileKeys;
}

// The causal tile order's L2 sections balanced (attn/sections.h) where tiles visit more than
// kBalancedSectionKeys keys on average: measured +3% at GQA 2k x 16k causal (its remainder section
// held 2 of 32 pairs) and +1% at 4k causal, but -0.9% at 16 x 1k causal (docs/kernel.md,
// "Configurations and dispatch"). Every kernel's launch asks (launch.cuh).
inline constexpr int kBalancedSectionKeys = 1024;
constexpr bool balanced_sections(const fp8attn_fwd_params& p) {
  return average_keys(p) > kBalancedSectionKeys;
}

// The E4M3-P kernel for one K descale per head (or none), by the tiles' length.
constexpr KernelId e4m3_head_scale_kernel(const fp8attn_fwd_params& p) {
  if (trim_tiles(p)) return KernelId::kE4M3Block192Trim;
  return short_tiles(p) ? KernelId::kE4M3Block192TmaStore : KernelId::kE4M3Block192;
}

// kInvalid for an unknown p_precision or vt_dtype, or FP16 V^T with an E4M3 P (validate()
// rejects them first).
constexpr KernelId select_kernel(const fp8attn_fwd_params& p) {
  if (p.vt_dtype == FP8ATTN_VT_FP16) {
    if (p.p_precision != FP8ATTN_P_FP16) return KernelId::kInvalid;
    return k_scale_per_block(p) ? KernelId::kFP16VtBlock128 : KernelId::kFP16VtBlock192;
  }
  if (p.vt_dtype != FP8ATTN_VT_E4M3) return KernelId::kInvalid;
  switch (p.p_precision) {
    case FP8ATTN_P_E4M3:
      if (k_scale_per_block(p)) return KernelId::kE4M3Block128;
      return e4m3_head_scale_kernel(p);
    case FP8ATTN_P_E4M3_HILO: return KernelId::kE4M3HiLoTwoLevel;
    case FP8ATTN_P_FP16: return KernelId::kFP16Block128;
    default: return KernelId::kInvalid;
  }
}

constexpr const char* kernel_name(KernelId id) {
  switch (id) {
    case KernelId::kE4M3Block192: return "e4m3_block192";
    case KernelId::kE4M3Block192TmaStore: return "e4m3_block192_tma_store";
    case KernelId::kE4M3Block192Trim: return "e4m3_block192_trim";
    case KernelId::kE4M3Block128: return "e4m3_block128";
    case KernelId::kE4M3HiLoTwoLevel: return "e4m3_hilo_two_level";
    case KernelId::kFP16Block128: return "fp16_block128";
    case KernelId::kFP16VtBlock128: return "fp16_vt_block128";
    case KernelId::kFP16VtBlock192: return "fp16_vt_block192";
    default: return "invalid";
  }
}

}  // namespace fp8attn::attn
