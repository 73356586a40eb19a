// Which attention kernel a call runs: a pure function of the call's arguments (P precision and
// K-scale granularity, V^T dtype, the tiles' length), over the configurations instantiated in attn/instantiations/.
#pragma once
#include "fp8attn/fp8attn.h"

namespace fp8attn::attn {

enum class KernelId : int {
  // E4M3 P, one-level accumulation, 192-key blocks, l from the tensor core (the row sums fused
  // into the P V product), one K descale per head (or none): per-block costs spread over 1.5x the
  // keys of a 128-key block. The first block a warpgroup visits is skipped where it sees none of
  // it and else trimmed (its first 64 or 128 keys where those hold every key its rows see: the
  // diagonal, or sk's partial last block); O leaves through shared memory and the TMA. Every call
  // of the default with one K descale per head, both masks.
  kE4M3Block192Trim,
  // FP8ATTN_P_E4M3_EXACT (FA3 FP8's softmax: offset 8, the exact running max, l from the FP32 p):
  // the same kernel with that softmax, both masks.
  kE4M3ExactBlock192Trim,
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
  // S 96 + O 64 + P 48 registers, per-block costs spread over 1.5x the keys, l from the tensor
  // core (the row sums of the FP16 P in the P V product: one FADD per score fewer); both masks.
  kFP16VtBlock192RowSum,
  // ... or, for long non-causal calls with many tiles (fp16_vt_three_warpgroups), three consumer
  // warpgroups over 128-key blocks with P through shared memory (launch.h's
  // KernelFP16VtTrioBlock128).
  kFP16VtTrioBlock128,
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

// The causal tile order's L2 sections balanced (attn/sections.h) where tiles visit more than
// kBalancedSectionKeys keys on average: measured +3% at GQA 2k x 16k causal (its remainder section
// held 2 of 32 pairs) and +1% at 4k causal, but -0.9% at 16 x 1k causal (docs/kernel.md,
// "Configurations and dispatch"). Every kernel's launch asks (launch.cuh).
inline constexpr int kBalancedSectionKeys = 1024;
constexpr bool balanced_sections(const fp8attn_fwd_params& p) {
  return average_keys(p) > kBalancedSectionKeys;
}

// The E4M3-P kernel for one K descale per head (or none): every call, causal or not, takes the
// TMA-store kernel with the first block skipped or trimmed (e4m3_block192_trim; the exact
// softmax's form for FP8ATTN_P_E4M3_EXACT). Measured head to head with FA3 FP8 against the
// register-epilogue kernels this replaced (docs/kernel.md, "Configurations and dispatch"): the
// default +9% at 16 x 1k non-causal, +2-5% on the other non-causal rows, output bits equal; the
// exact mode +2-5% at 1k and 2k non-causal, up to +1% at 4k, level at 8k.
constexpr KernelId e4m3_head_scale_kernel(const fp8attn_fwd_params& p) {
  return p.p_precision == FP8ATTN_P_E4M3_EXACT ? KernelId::kE4M3ExactBlock192Trim
                                               : KernelId::kE4M3Block192Trim;
}

// The accurate mode's kernel for an FP16 V^T with one K descale per head: three consumer
// warpgroups (192-row tiles, 128-key blocks) where they measured faster, head to head with FA3
// FP8 against the two-warpgroup 192-key kernel (docs/kernel.md, the dispatch table): non-causal
// calls with at least 8192 keys and at least 1024 tiles of 192 rows (+4% at 8k, +5% at 16k, level
// at 8000). Not causal calls (the 192-row tiles' diagonal: 2-18% slower), nor short keys (level
// at 4k, slower at 1k and 2k), nor few tiles (sq 2k x sk 16k, 352 tiles: 8% slower).
inline constexpr int kThreeWarpgroupMinKeys = 8192;
inline constexpr long long kThreeWarpgroupMinTiles = 1024;
inline constexpr int kThreeWarpgroupTileRows = 192;  // KernelFP16VtTrioBlock128::kBlockM (launch.h)
constexpr bool fp16_vt_three_warpgroups(bool causal, int seqlen_q, int seqlen_k, int batch, int heads) {
  const long long tiles = (seqlen_q + kThreeWarpgroupTileRows - 1) / kThreeWarpgroupTileRows;
  return !causal && seqlen_k >= kThreeWarpgroupMinKeys &&
         tiles * heads * batch >= kThreeWarpgroupMinTiles;
}

// kInvalid for an unknown p_precision or vt_dtype, or FP16 V^T with an E4M3 P (validate()
// rejects them first).
constexpr KernelId select_kernel(const fp8attn_fwd_params& p) {
  if (p.vt_dtype == FP8ATTN_VT_FP16) {
    if (p.p_precision != FP8ATTN_P_FP16) return KernelId::kInvalid;
    if (k_scale_per_block(p)) return KernelId::kFP16VtBlock128;
    return fp16_vt_three_warpgroups(p.causal != 0, p.seqlen_q, p.seqlen_k, p.batch, p.heads)
               ? KernelId::kFP16VtTrioBlock128
               : KernelId::kFP16VtBlock192RowSum;
  }
  if (p.vt_dtype != FP8ATTN_VT_E4M3) return KernelId::kInvalid;
  switch (p.p_precision) {
    case FP8ATTN_P_E4M3:
      if (k_scale_per_block(p)) return KernelId::kE4M3Block128;
      return e4m3_head_scale_kernel(p);
    case FP8ATTN_P_E4M3_EXACT:  // validate() refuses a per-block K descale
      if (k_scale_per_block(p)) return KernelId::kInvalid;
      return e4m3_head_scale_kernel(p);
    case FP8ATTN_P_E4M3_HILO: return KernelId::kE4M3HiLoTwoLevel;
    case FP8ATTN_P_FP16: return KernelId::kFP16Block128;
    default: return KernelId::kInvalid;
  }
}

constexpr const char* kernel_name(KernelId id) {
  switch (id) {
    case KernelId::kE4M3Block192Trim: return "e4m3_block192_trim";
    case KernelId::kE4M3ExactBlock192Trim: return "e4m3_exact_block192_trim";
    case KernelId::kE4M3Block128: return "e4m3_block128";
    case KernelId::kE4M3HiLoTwoLevel: return "e4m3_hilo_two_level";
    case KernelId::kFP16Block128: return "fp16_block128";
    case KernelId::kFP16VtBlock128: return "fp16_vt_block128";
    case KernelId::kFP16VtBlock192RowSum: return "fp16_vt_block192_rowsum";
    case KernelId::kFP16VtTrioBlock128: return "fp16_vt_trio_block128";
    default: return "invalid";
  }
}

}  // namespace fp8attn::attn
