// What the kernel reads: the validated public parameters, pre-digested on the host.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>

namespace fp8attn::attn {

struct KernelParams {
  CUtensorMap tma_q;   // E4M3 (d, h, sq, b), box (128, 1, kBlockM, 1), 128-byte swizzle
  CUtensorMap tma_k;   // E4M3 (d, h_kv, sk, b), box (128, 1, kBlockN, 1)
  CUtensorMap tma_vt;  // V^T in bytes (sk_pad * elem, d, h_kv, b): E4M3 box (64, 128, 1, 1),
                       // 64-byte swizzle; FP16 box (128, 128, 1, 1), 128-byte swizzle
  CUtensorMap tma_o;   // BF16 O in bytes (2 d, h, sq, b), box (128, 1, 64, 1), 128-byte swizzle

  int batch, seqlen_q, seqlen_k, heads, heads_kv, q_per_kv;
  int num_m_blocks, num_tiles;
  int* tile_counter;  // persistent scheduling: 0 before the launch, reset to 0 by its last claim;
                     // nullptr = one tile per CTA
  int causal;
  // Causal tile order: (batch, head) pairs are taken in sections of this many, sized so that a
  // section's K and V fit in about half of L2; inside a section, query blocks go longest first
  // across all its heads. 0: head-major (each head's query blocks in turn, longest first).
  int section_heads;
  float softmax_scale_log2;  // softmax_scale * log2(e)

  __nv_bfloat16* o;
  int64_t o_stride_b, o_stride_s, o_stride_h;
  float* lse;  // (b, h, sq) or nullptr
  int o_tma;   // O leaves through shared memory and tma_o (else straight from registers)

  const float* q_descale;  // nullptr = 1
  int64_t qd_stride_b, qd_stride_h, qd_stride_s;
  const float* k_descale;
  int64_t kd_stride_b, kd_stride_h, kd_stride_blk;
  const float* v_descale;
  int64_t vd_stride_b, vd_stride_h, vd_stride_d;
  const float* lse_bias;  // (b, h, sq) or nullptr
  const float* o_bias;    // (b, h_kv, d) or nullptr
  int64_t ob_stride_b, ob_stride_h;
  // v_descale (null, one value per (b, h_kv) with vd_stride_d = 0, or channel-contiguous) and
  // o_bias (null or channel-contiguous), the contiguous ones 8-byte aligned per (b, h_kv): the
  // epilogue reads each thread's two adjacent channels as one float2 (a broadcast descale once).
  int epilogue_vec2;
  int vd_broadcast;  // v_descale given with vd_stride_d = 0
};

}  // namespace fp8attn::attn
