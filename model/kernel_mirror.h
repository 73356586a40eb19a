// The CPU mirror of the attention kernel (src/attn/): the same E4M3 inputs, descales and order of
// operations, for the GPU tests to compare element by element.
//
// What it reproduces exactly: the scales (softmax_scale * log2 e formed in FP32, times the Q
// descale of the row, times the K descale of the key block), the running max, exp2 with the
// offset 8 (P in [0, 256]), P rounded to E4M3 (RNE, satfinite), l and the block size and the O
// accumulation as kernel_numerics describes, blocks visited last to first, the epilogue
// fma(O * v_descale, 1/l, o_bias), BF16 RNE, LSE = (m + log2 l - 8) ln 2 + lse_bias, and
// -inf / zeros for rows that see no key.
// What it cannot reproduce bit for bit: the tensor cores' summation order and width inside each
// product (here: FP32 GEMMs; Accumulator::kHopperFP8 models the width), which for E4M3 P includes
// l itself (the tensor core's sum of each block's rounded P: here FP32 sums of 32 keys added into
// a fresh FP32 accumulator per block), and ex2.approx.ftz (here: exp2f, flushed to zero below
// FLT_MIN). Expect O to agree to a few FP32 ulps of the accumulated values before the BF16
// rounding, i.e. mostly equal BF16 outputs with rare 1-ulp differences; LSE to ~1e-6 relative
// with l from the FP32 p (hi+lo). With l from the tensor core (E4M3), its sum falls short of
// the FP32 sum by the bits its adder drops (products aligned to at most the block sum's
// exponent, ~13 fraction bits: < (block_n + block_n / 32) 2^-13 relative per block, the worst
// case tests/gpu/test_attention.cu allows; Accumulator::kHopperFP8 models only the k-steps'
// truncation).
#ifndef FP8ATTN_MODEL_KERNEL_MIRROR_H_
#define FP8ATTN_MODEL_KERNEL_MIRROR_H_

#include <cstdint>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "model/flash.h"
#include "model/tensor.h"

namespace fp8attn::model {

struct KernelMirrorInputs {
  int batch = 0, seqlen_q = 0, seqlen_k = 0, heads = 0, heads_kv = 0;  // head_dim = 128
  const uint8_t* q = nullptr;  // E4M3 (b, sq, h, 128)
  const uint8_t* k = nullptr;  // E4M3 (b, sk, h_kv, 128)
  const uint8_t* v = nullptr;  // E4M3 (b, sk, h_kv, 128), NOT transposed (see vt_to_v)
  // FP16 V (b, sk, h_kv, 128) codes, natural order (see vt16_to_v): the FP8ATTN_VT_FP16 kernel's
  // operand. When set, v is unused; p_precision must be FP8ATTN_P_FP16.
  const uint16_t* v_f16 = nullptr;
  const float* q_descale = nullptr;  // (b, h, sq), null = 1
  const float* k_descale = nullptr;  // (b, h_kv, ceil(sk / 128)), null = 1
  const float* v_descale = nullptr;  // (b, h_kv, 128), null = 1
  const float* lse_bias = nullptr;   // (b, h, sq), null = none
  const float* o_bias = nullptr;     // (b, h_kv, 128), null = none
  float softmax_scale = 0.0f;        // 0: 1/sqrt(128)
  bool causal = false;
  int p_precision = FP8ATTN_P_E4M3;  // FP8ATTN_P_E4M3_HILO: P = e4m3(p) + e4m3(p - e4m3(p)),
                                     // both unscaled, summed by two PV products per block;
                                     // FP8ATTN_P_FP16: P = fp16(p), V in FP16 (exact)
  Accumulator accumulator = Accumulator::kFP32;  // of both products
  // How the kernel was called: k_descale with kd_stride_blk != 0 (per 128-key block) or one value
  // per (b, h_kv). The kernel picks its tiling from it (src/api.cu): E4M3 P with per-head K
  // descales runs 192-key blocks.
  bool k_descale_per_block = true;
  // V^T in FP16 (FP8ATTN_VT_FP16; implied by v_f16): FP16 P with per-head K descales then runs
  // 192-key blocks. The values may still be E4M3 ones given in v.
  bool vt_fp16 = false;
  // The FP16 V^T kernel's three-warpgroup form (128-key blocks; src/attn/select.h's
  // fp16_vt_three_warpgroups says which calls take it).
  bool three_warpgroups = false;
};

struct KernelMirrorOutputs {
  Tensor o_f32;                // (b, sq, h, 128): O before the BF16 rounding
  std::vector<uint16_t> o_bf16;  // (b, sq, h, 128): BF16 codes, as the kernel stores them
  Tensor o;                    // the BF16 values as floats
  std::vector<float> lse;      // (b, h, sq), natural log
};

KernelMirrorOutputs kernel_mirror_forward(const KernelMirrorInputs& in);

// The kernel's numerics as FlashNumerics (for schemes that reuse them), following the kernel's
// default dispatch (src/api.cu): E4M3 P -> one-level accumulation, l the tensor core's sum of the
// rounded P (l_from_rounded_p), 192-key blocks (128 with per-block K descales); hi+lo P ->
// two-level accumulation over 128-key blocks, l from the FP32 p; FP16 P -> one-level, P rounded
// to FP16, the P V product accumulated in FP32 whatever `acc` says (the FP16 wgmma), over
// 192-key blocks from an FP16 V^T (vt_fp16) with per-head K descales, else 128; l the tensor
// core's sum of the FP16 P in the 192-key kernel (either mask), else the FP32 sum of the
// unrounded p.
// three_warpgroups: the FP16 V^T kernel's three-warpgroup form (128-key blocks), which the
// kernel's dispatch takes for long non-causal calls (src/attn/select.h, fp16_vt_three_warpgroups).
FlashNumerics kernel_numerics(int p_precision = FP8ATTN_P_E4M3,
                              Accumulator acc = Accumulator::kFP32, bool k_descale_per_block = true,
                              bool vt_fp16 = false, bool three_warpgroups = false);

// V^T as the pre-pass writes it, (b, h_kv, 128, vt_seqlen_pad) with keys permuted within groups
// of 32 (fp8attn_vt_key_at), back to V (b, sk, h_kv, 128).
std::vector<uint8_t> vt_to_v(const uint8_t* vt, int batch, int heads_kv, int seqlen_k,
                             int vt_seqlen_pad);
// FP16 V^T (FP8ATTN_VT_FP16: natural key order) back to V (b, sk, h_kv, 128).
std::vector<uint16_t> vt16_to_v(const uint16_t* vt, int batch, int heads_kv, int seqlen_k,
                                int vt_seqlen_pad);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_KERNEL_MIRROR_H_
