// The composition's one piece of layout knowledge: the attention kernel's parameters
// (fp8attn_fwd_params) from the pre-pass's outputs (a quantized Q and an FP8 KV cache). The
// pre-pass never sees the kernel's struct; the kernel never sees the pre-pass's. Plain C++, no
// CUDA call (tested on the CPU: tests/cpu/test_kernel_params.cc).
#pragma once
#include "fp8attn/attention.h"

namespace fp8attn::compose {

// Shapes; Q and K contiguous; V^T with the cache's pad; Q's descales per (b, h, token), K's per
// (b, h_kv, 128 keys) with kd_stride_blk = 0 when the cache holds one scale per head (the kernel
// then runs its 192-key blocks); V's per (b, h_kv, channel); lse_bias when the cache's K was
// smoothed, o_bias (the cache's V mean) when its V was; q's softmax_scale (the one lse_bias was
// made with). O is contiguous BF16, lse may be null; causal 0, p_precision E4M3. No checks: the
// caller has checked that q and cache agree (batch; heads_kv divides heads).
fp8attn_fwd_params kernel_params(const fp8attn_q_quant& q, const fp8attn_kv_cache& cache, void* o,
                                 float* lse);

// What an end-to-end call's arguments change in those parameters: O's strides (when any of them
// is non-zero), causal, p_precision.
void apply_call_args(const fp8attn_attention_args& a, fp8attn_fwd_params* p);

}  // namespace fp8attn::compose
