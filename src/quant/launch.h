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

// kv_stats.cu: per-channel partial sums (and V's max / min) over chunks of
// FP8ATTN_QUANT_STATS_CHUNK keys, then one thread per (batch, kv head, channel) folds them.
struct KvStatsArgs {
  Bf16Input k, v;
  bool smooth_k, smooth_v, v_scale_per_head;
  int nchunks;                      // ceil(seqlen / chunk)
  float *k_part_sum, *v_part_sum;   // workspace (b, h, nchunks, 128)
  float *v_part_max, *v_part_min;   // workspace (b, h, nchunks, 128)
  float *k_mean, *v_mean;           // out (b, h, 128): zeros when not smoothed
  float *v_descale, *v_inv;         // out (b, h, 128): v_inv into the workspace
};
cudaError_t launch_kv_stats(const KvStatsArgs& args, cudaStream_t stream);

// quantize_rows.cu: Q and K. One CTA per (128 rows of a (batch, head)); each row is smoothed,
// rotated, scaled by the amax of its group (1 row or 128 rows) and stored as E4M3.
struct RowQuantArgs {
  Bf16Input x;
  uint8_t* out;                 // E4M3 (batch, seqlen, heads, 128), contiguous
  float* descale;               // per row (b, h, seqlen) or per group (b, h, ceil(seqlen/128))
  bool descale_per_row;
  int group_rows;               // 1 or 128
  bool rotate;
  uint32_t negate_bits[4];      // Hadamard sign flips, bit c = channel c
  float descale_factor;         // multiplies the descale (1/128 for rotated K), else 1
  // Visit the tiles last to first: K right after the channel reduction, whose last reads (the
  // highest batch and heads of K) are still in L2 (order only; results do not change).
  bool reverse_order;
  const float* mean;            // (b, heads, 128) subtracted before rotation, or null
  // Q only: lse_bias (b, h, seqlen) = softmax_scale * (q . k_mean[kv head]); zeros without
  // k_mean. Null for K.
  float* lse_bias;
  const float* k_mean;          // (b, heads / heads_per_kv, 128) or null
  int heads_per_kv;
  float softmax_scale;
};
cudaError_t launch_quantize_rows(const RowQuantArgs& args, cudaStream_t stream);

// quantize_vt.cu: V -> V^T (b, h, 128, vt_pad) E4M3 with the per-channel mean and scale from
// kv_stats, keys permuted inside each group of 32, zeros from seqlen on.
struct VtQuantArgs {
  Bf16Input v;
  const float* v_mean;          // (b, h, 128) or null (no smoothing)
  const float* v_inv;           // (b, h, 128)
  uint8_t* vt;
  int vt_pad;
  bool reverse_order;           // as RowQuantArgs: when V is read right after the reduction
};
cudaError_t launch_quantize_vt(const VtQuantArgs& args, cudaStream_t stream);

}  // namespace fp8attn::quant
