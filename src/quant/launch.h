// Host-side launchers of the pre-pass kernels (one .cu per kernel); quant_api.cu validates the
// arguments and calls these. All tensors are already checked: aligned, head_dim 128.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace fp8attn::quant {

// A BF16 tensor (batch, seqlen, heads, 128) as the kernels read it.
struct Bf16Input {
  const uint16_t* data;
  int64_t stride_b, stride_s, stride_h;
  int batch, seqlen, heads;
};

// The rotary embedding of the rope entry (fp8attn_quantize_qkv_rope, rope_api.cu), NeoX
// "rotate_half": channel i < 64 pairs with i + 64, x'_i = fma(x_i, cos, -(x_{i+64} sin)),
// x'_{i+64} = fma(x_{i+64}, cos, x_i sin), cos and sin of table row pos0 + s for row s, entry i.
// Applied in FP32 right after the BF16 load, before the Hadamard signs. A separate trailing
// kernel argument (not a member of the Args structs): the kernels without rope keep their
// parameter layout, and their instantiations (kRope false) never read it.
struct RopeRows {
  const float* cos = nullptr;  // (max_positions, 64), 16-byte aligned
  const float* sin = nullptr;
  int pos0 = 0;                // row s of the tensor uses table row pos0 + s
};

// kv_stats.cu: the channel statistics, one CTA per (tensor, batch, head, group of
// FP8ATTN_QUANT_STATS_GROUP chunks), K (rotated when `rotate`) and V interleaved; then one CTA
// per (batch, head) folds the group partials into means and scales.
struct KvStatsArgs {
  Bf16Input k, v;
  bool k_stats;                     // K's statistics are needed: smooth_k or a per-head K scale
  bool smooth_k, smooth_v, v_scale_per_head, k_scale_per_head;
  bool rotate;                      // K's rows are rotated first (Hadamard)
  uint32_t negate_bits[4];          // Hadamard sign flips, bit c = channel c
  int ngroups;                      // ceil(seqlen / (chunk * group))
  int nblk;                         // ceil(seqlen / FP8ATTN_K_SCALE_BLOCK)
  float k_descale_factor;           // 1/128 for rotated K, else 1
  float *k_part_sum, *k_part_max, *k_part_min;  // workspace (b, h, ngroups, 128)
  float *v_part_sum, *v_part_max, *v_part_min;  // workspace (b, h, ngroups, 128)
  float *k_mean, *v_mean;           // out (b, h, 128): zeros when not smoothed
  float *v_descale, *v_inv;         // out (b, h, 128): v_inv into the workspace
  float *k_descale, *k_inv;         // out, per-head K scale only: (b, h, nblk) every block the
                                    // head's descale; (b, h) its inverse, into the workspace
};
// k_rope non-null: K's rows are rotated (RopeRows) as they are loaded.
cudaError_t launch_kv_stats(const KvStatsArgs& args, cudaStream_t stream,
                            const RopeRows* k_rope = nullptr);

// kv_one_pass.cu, FP8ATTN_CENTRE_SAMPLE: before the fused pass, one CTA per (batch, kv head)
// takes the sample's centre and bounds (the scales the fused pass uses) and zeroes the true-amax
// accumulators; after it, one CTA per (batch, kv head) compares the true amax with the bounds and
// for a group over its bound writes the true amax's scale and sets the head's flag (bit 0 K, bit
// 1 V), on which the fused pass runs again for that head only.
struct KvOnePassArgs {
  KvStatsArgs s;                    // shapes, options and the outputs as the statistics pass's
  float headroom;                   // FP8ATTN_QUANT_SAMPLE_HEADROOM
  float *k_bound, *v_bound;         // (b, h): K's per-head bound; (b, h, 128) V's per channel
  uint32_t *k_true, *v_true;        // the fused pass's max |x - centre| as bits: (b, h), (b, h, 128)
  float *k_inv_again, *v_inv_again; // the scales of the second quantization, (b, h), (b, h, 128)
  uint8_t* again;                   // (b, h) flags
};
cudaError_t launch_kv_sample(const KvOnePassArgs& args, cudaStream_t stream,
                             const RopeRows* k_rope = nullptr);
cudaError_t launch_kv_regroup(const KvOnePassArgs& args, cudaStream_t stream);

// Q and K rows: each row is rotated (Hadamard), smoothed (K, in the rotated basis), scaled and
// stored as E4M3; for Q also lse_bias = softmax_scale * (q . k_mean) in the basis of k_mean.
struct RowQuantArgs {
  Bf16Input x;
  uint8_t* out;                 // E4M3 (batch, seqlen, heads, 128), contiguous
  // group_rows 1: one scale per row, descale (b, h, seqlen); 128: per 128 rows, descale
  // (b, h, ceil(seqlen / 128)); 0: the scale is known per (b, h) (scale_inv; the statistics
  // pass wrote the descales).
  int group_rows;
  float* descale;
  bool descale_per_row;         // Q: (b, h, seqlen) whatever the group (the kernel's layout)
  const float* scale_inv;       // (b, heads) when group_rows == 0
  bool rotate;
  uint32_t negate_bits[4];      // Hadamard sign flips, bit c = channel c
  float descale_factor;         // multiplies the descale (1/128 for rotated K), else 1
  // Visit the tiles last to first: K right after the channel reduction, whose last reads (the
  // highest batch and heads of K) are still in L2 (order only; results do not change).
  bool reverse_order;
  const float* mean;            // (b, heads, 128) subtracted after the rotation, or null
  // Q only: lse_bias (b, h, seqlen) = softmax_scale * (q . k_mean[kv head]) (times 1/128 when
  // rotated: the dot product of two rotated rows); zeros without k_mean. Null for K.
  float* lse_bias;
  const float* k_mean;          // (b, heads / heads_per_kv, 128) or null
  int heads_per_kv;
  float softmax_scale;
  // K, FP8ATTN_CENTRE_SAMPLE with a per-head scale: max |x - mean| of every valid row folded in
  // (atomicMax on the bits, (b, heads)); null otherwise.
  uint32_t* true_amax;
};

// V -> V^T (b, h, 128, vt_pad) with the per-channel mean and scale from kv_stats, zeros from
// seqlen on: E4M3 with keys permuted inside each group of 32, or (vt_f16) FP16 in natural key
// order (the same scaled values, rounded to FP16 instead of E4M3).
struct VtQuantArgs {
  Bf16Input v;
  const float* v_mean;          // (b, h, 128) or null (no smoothing)
  const float* v_inv;           // (b, h, 128)
  uint8_t* vt;                  // E4M3, or FP16 (2 bytes an element) when vt_f16
  int vt_pad;
  bool vt_f16;                  // fp8attn_kv_cache.vt_dtype == FP8ATTN_VT_FP16
  bool reverse_order;           // as RowQuantArgs: when V is read right after the reduction
  uint32_t* true_amax;          // FP8ATTN_CENTRE_SAMPLE: max |x - mean| per channel as bits
                                // (b, h, 128), atomicMax; null otherwise
};

// quantize_q.cu / quantize_kv.cu: Q alone; K and V in
// one launch, their tiles interleaved (the rotation-heavy K beside the light V on every SM),
// last to first when `reverse_order` (k.reverse_order).
// rope non-null (quantize_q / quantize_kv): Q's / K's rows rotated as loaded (RopeRows).
cudaError_t launch_quantize_q(const RowQuantArgs& args, cudaStream_t stream,
                              const RopeRows* rope = nullptr);
// `again` (non-null: the second quantization of FP8ATTN_CENTRE_SAMPLE): num_sms x (CTAs per SM)
// CTAs that return at once when no head is flagged, else stride over the tiles and do those of
// the flagged heads (bit 0 K, bit 1 V).
cudaError_t launch_quantize_kv(const RowQuantArgs& k, const VtQuantArgs& v, cudaStream_t stream,
                               const uint8_t* again = nullptr, int num_sms = 0,
                               const RopeRows* k_rope = nullptr);

}  // namespace fp8attn::quant
