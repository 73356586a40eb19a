// The flash-attention emulation engine: the blocked online softmax that FA3 and our kernel run,
// with every numeric choice a field of FlashNumerics. bf16-flash, the FP8 schemes and the kernel
// mirror are configurations of this one loop.
//
// Per (batch, head) and tile of 128 query rows, in the kernel's order (src/attn/softmax.cuh):
//   S      = Q K_n^T                        FP32 (or the Hopper FP8 accumulator model)
//   scale  = (softmax_scale * log2 e * q_scale[row]) * k_scale[block]
//   c      = max(m, rowmax(S) * scale)      log2 units; blocks visited last to first
//   m'     = c if c > m + slack else m      slack 0: the exact running max; rescale_per_warp:
//                                           c for every row of the warp if any of its rows moves
//   p      = exp2(fma(S, scale, offset - m'))  FA3: offset 8, P in [0, 256]
//   P      = round(p)                       E4M3, E4M3 hi+lo, BF16, FP16 or FP32
//   l'     = fma(l, exp2(m - m'), rowsum(p)) four partial sums per row, as the four threads of a
//                                           quad hold them: keys with (key % 8) / 2 == t;
//                                           l_from_rounded_p: rowsum(P) as the kernel's tensor
//                                           core forms it (below)
//   O'     = fma(O, exp2(m - m'), P V_n)    two-level: P V_n in a fresh accumulator, or
//                                           O = O * alpha, then P V_n accumulated into O
//   out    = fma(O * v_scale[c], 1 / l, o_bias[c]), rounded to the output format
//   LSE    = (m + log2 l - offset) ln 2 + lse_bias
// l = (l_0 + l_1) + (l_2 + l_3) (the quad's shuffle reduction).
// l_from_rounded_p (the E4M3 kernel's kVariantTcRowSum): per block, the rounded P summed into a
// fresh accumulator acc_chunk keys at a time (the m64n8k32 wgmma of P against ones; truncated as
// the acc_pv model says, which leaves out the tensor core's alignment inside a k-step), then, in the kernel's order, l = l * exp2(m - m') when the block's max
// is known and l = fma(rowsum_prev, exp2(m - m'), l) with the previous block's sum (in the units
// of the max it was made with); the last block's sum is added at the end. One sum per row.
#ifndef FP8ATTN_MODEL_FLASH_H_
#define FP8ATTN_MODEL_FLASH_H_

#include <vector>

#include "model/accumulator.h"
#include "model/codecs.h"
#include "model/tensor.h"

namespace fp8attn::model {

enum class Accumulator {
  kFP32,       // IEEE FP32 accumulation
  kHopperFP8,  // model of Hopper's FP8 wgmma: after each k-step of acc_chunk products the running
               // sum keeps acc_mantissa_bits explicit mantissa bits, the rest truncated
  kAligned,    // the measured adder as a rule (model/accumulator.h: acc_rule): terms aligned to
               // the largest of each group and cut below its fraction bits
};

struct FlashNumerics {
  int block_n = 128;             // keys per block (also the K scale block of k_scale)
  bool last_to_first = true;     // KV block order (FA3 and our kernel: last to first)
  Format p_format = Format::E4M3;
  bool p_hilo = false;           // P = e4m3(p) + e4m3(p - e4m3(p)) (two PV products)
  float p_hilo_min_log2 = -1e30f; // with p_hilo: the low term only in a row's key blocks whose max p
                                 // is >= 2^this (else hi alone). Decided per row here; a kernel
                                 // decides per warpgroup (any of its rows), which is more accurate
  float p_offset_log2 = 8.0f;    // p = 2^(t - m + offset): max(P) = 2^offset
  float rescale_slack_log2 = 0;  // m moves only when a block's max exceeds it by more than this
                                 // (0: m is the exact running max; the kernel: 3, so max(P) =
                                 // 2^(offset + slack))
  bool rescale_per_warp = false; // the slack test per warp (16 rows of the tile, the kernel's
                                 // warp): when any row of the warp's max moves past the slack,
                                 // every row of the warp takes its exact running max (the warp's
                                 // O rescale runs anyway); else per row (a row moves alone)
  bool l_from_rounded_p = false; // l sums P as rounded, per block, as the E4M3 kernel's tensor
                                 // core does (else the FP32 p: FA3, the hi+lo kernel)
  float l_mix = -1.0f;           // >= 0: both sums kept, l = l_mix x (rounded P's) +
                                 // (1 - l_mix) x (FP32 p's); < 0: l_from_rounded_p decides
  Accumulator acc_qk = Accumulator::kFP32;
  Accumulator acc_pv = Accumulator::kFP32;
  int acc_mantissa_bits = 13;    // kHopperFP8: explicit mantissa bits kept
  int acc_chunk = 32;            // kHopperFP8: products per k-step (FP8 wgmma K = 32)
  AlignedRule acc_rule;          // kAligned: group, fraction bits, rounding, C in the alignment
  bool two_level = true;         // PV of each block into a fresh accumulator, then added to O
  bool exp_fa3 = false;          // FA3's exp2 argument: max_scaled = fma(m_raw, scale, -offset),
                                 // p = exp2(fma(S, scale, -max_scaled)), alpha = exp2((m_raw_prev -
                                 // m_raw) * scale) with m_raw unscaled (slack 0 only); else
                                 // p = exp2(fma(S, scale, offset - m)), m = max(S * scale)
  bool exp2_ftz = false;         // flush subnormal exp2 results to zero (ex2.approx.ftz)
  Format o_format = Format::BF16;
};

// Operands as the products see them: code values (E4M3, INT8, BF16 values as floats) with their
// factorable scales, or dequantized values with null scales. Layouts (b, s, h, d) contiguous.
struct FlashInputs {
  const Tensor* q = nullptr;          // (b, sq, h, d)
  const Tensor* k = nullptr;          // (b, sk, h_kv, d)
  const Tensor* v = nullptr;          // (b, sk, h_kv, d)
  const float* q_scale = nullptr;     // (b, h, sq), or null = 1
  const float* k_scale = nullptr;     // (b, h_kv, ceil(sk / block_n)), or null = 1
  const float* v_scale = nullptr;     // (b, h_kv, d), or null = 1
  const float* key_bias = nullptr;    // (b, h, sk), log2 units, added to the scaled score
  const float* lse_bias = nullptr;    // (b, h, sq), added to the LSE of rows that see a key
  const float* o_bias = nullptr;      // (b, h_kv, d), added to O before the output rounding
  float softmax_scale = 0.0f;         // 0: 1/sqrt(d)
  bool causal = false;
};

struct FlashOutputs {
  Tensor o_acc;            // FP32 O before the output rounding (o_bias included)
  Tensor o;                // o_acc rounded to o_format (as floats)
  std::vector<float> lse;  // (b, h, sq), natural log; -inf for a row that sees no key
};

FlashOutputs flash_forward(const FlashInputs& in, const FlashNumerics& nm);

// x truncated (toward zero) to `bits` explicit mantissa bits: the accumulator model's step.
float truncate_mantissa(float x, int bits);

// The engine's 2^x: a Cephes polynomial (relative error <= 1.7e-7, like the GPU's ex2.approx),
// 0 below x = -126 (flush to zero; the engine's non-ftz mode uses exp2f there).
float flash_exp2(float x);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_FLASH_H_
