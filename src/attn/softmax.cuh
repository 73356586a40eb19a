// Online softmax of one consumer warpgroup, in the layout of the m64nN wgmma accumulator
// (N = kBlockN keys).
//
// Each thread holds two rows (r0 = 16*warp + lane/4 and r0 + 8) and, for each of the N/8 column
// groups i of 8 keys, keys 8i + 2*(lane%4) + {0, 1}: s[4i + {0,1}] in row r0, s[4i + {2,3}] in r0+8.
//
// Numerics (mirrored by the CPU model, model/kernel_mirror):
//   scale = softmax_scale * log2(e) * q_descale[row] * k_descale[block]
//   c     = max(m, rowmax(S) * scale)                       log2 units
//   m'    = c if c > m + slack else m                       running max (slack 3): most blocks
//                                                           leave m, so O and l need no rescale
//   p     = exp2(S * scale - (m' - offset))                 offset 5: P in [0, 2^(5+3) = 256]
//           (FP8ATTN_P_E4M3_EXACT: offset 8, slack 0, l from the FP32 p: FA3 FP8's numerics)
//   P8    = e4m3(p), in the A-fragment order of the PV wgmma (V^T's keys are stored permuted to
//           match, so no register shuffles are needed); FP8ATTN_P_FP16: P16 = fp16(p), whose
//           A-fragment order is the accumulator's (to_f16_fragments)
//   l'    = l * exp2(m - m') + rowsum(p)    FP32 p, before rounding; each thread sums its keys
//                                           in four interleaved partial sums (key group % 4)
//                                           (kTcRowSum: rowsum(P8), the rounded P, from the
//                                           tensor core, see add_block_sum)
#pragma once
#include <cmath>

#include "attn/config.h"
#include "fp8attn/fp8attn.h"
#include "ptx/convert.cuh"

namespace fp8attn::attn {

// kTcRowSum: l is the sum of the rounded P, from the tensor core (add_block_sum), not the FP32 sum
// of p. kPolyExpEvery > 0: every kPolyExpEvery-th group of 8 keys takes exp2 from a polynomial on
// the FMA pipe (ptx::exp2_poly); no shipped configuration uses it (0: MUFU only). kExact:
// FP8ATTN_P_E4M3_EXACT's offset and no slack (Config::kExactSoftmax).
template <int kBlockN, int kPolyExpEvery, bool kTcRowSum_, bool kExact = false>
struct OnlineSoftmax {
  // P's exponent offset and the running max's slack (fp8attn.h): m moves only when a block's max
  // exceeds it by more than the slack, so p = exp2(S * scale - (m - offset)) <= 2^(offset + slack)
  // = 256 either way.
  static constexpr float kPOffsetLog2 = kExact ? FP8ATTN_P_EXACT_OFFSET_LOG2 : FP8ATTN_P_OFFSET_LOG2;
  static constexpr float kRescaleSlackLog2 = kExact ? 0.f : FP8ATTN_RESCALE_SLACK_LOG2;
  static_assert(kPOffsetLog2 + kRescaleSlackLog2 <= 8.8f, "P must stay <= 448 (E4M3's max)");

  static constexpr int kRegs = kBlockN / 2;  // accumulator registers per thread
  float row_max[2];  // m, log2 units; -inf until a visible key is seen
  float row_sum[2];  // l, this thread's partial FP32 sum of p (the quad reduces it in finalize)

  __device__ __forceinline__ void init() {
    row_max[0] = row_max[1] = -INFINITY;
    row_sum[0] = row_sum[1] = 0.f;
  }

  // Score i of this thread, or -inf where the key is masked. Key i of this thread is key0 +
  // 2*(lane%4) + 8*(i/4) + (i&1); room[r] = limit[r] - key0 - 2*(lane%4) is computed once per block,
  // so each score costs one compare against a compile-time offset and one select.
  // limit[r]: first key row r must not see (min(sk, row + sk - sq + 1) if causal, else sk).
  template <bool kMask, int kR>
  __device__ __forceinline__ static float score(const float (&s)[kR], int i, const int (&room)[2]) {
    if constexpr (kMask) {
      return 8 * (i / 4) + (i & 1) < room[(i >> 1) & 1] ? s[i] : -INFINITY;
    } else {
      return s[i];
    }
  }

  static constexpr bool kTcRowSum = kTcRowSum_;
  float neg_bias_[2];  // between step_max and step_exp: 8 - m (m = 0 while a row has seen no key)

  // One key block: updates m and l, turns S into p = exp2(S * scale - (m - offset)) in place (FP32),
  // and returns the factor the running O must be multiplied by. Runs while the previous block's
  // PV wgmma is in flight, so it writes only S (whose wgmma has completed), never P's fragments.
  // kR < kRegs: a block trimmed to its first 2 * kR keys (a tile's first block, whose later keys
  // no row of the warpgroup sees: Config::kTrimFirstBlock), S in the first kR registers.
  template <bool kMask, int kR = kRegs>
  __device__ __forceinline__ void step(float (&s)[kR], int key0, const int (&limit)[2],
                                       const float (&scale)[2], float (&o_rescale)[2]) {
    step_max<kMask, kR>(s, key0, limit, scale, o_rescale);
    step_exp<kR>(s, scale);
  }

  // First half of step: masks S in place, updates m (and rescales l), and returns the factor the
  // running O must be multiplied by.
  template <bool kMask, int kR = kRegs>
  __device__ __forceinline__ void step_max(float (&s)[kR], int key0, const int (&limit)[2],
                                           const float (&scale)[2], float (&o_rescale)[2]) {
    // Four independent partial maxima (and sums, in step_exp) per row: one running value per row
    // would be a chain of kRegs/2 dependent instructions, and ncu shows the consumers latency bound.
    float mx4[2][4];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int k = 0; k < 4; ++k) mx4[r][k] = -INFINITY;
    int room[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) room[r] = limit[r] - key0 - 2 * static_cast<int>(threadIdx.x % 4);
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      s[i] = score<kMask, kR>(s, i, room);
      mx4[(i >> 1) & 1][(i >> 2) & 3] = fmaxf(mx4[(i >> 1) & 1][(i >> 2) & 3], s[i]);
    }
    float mx[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) mx[r] = fmaxf(fmaxf(mx4[r][0], mx4[r][1]), fmaxf(mx4[r][2], mx4[r][3]));
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffff, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffff, mx[r], 2));
      // The max moves only when it grows by more than the slack (P's headroom absorbs less):
      // then alpha = 1 exactly and the O rescale is skipped. A row with no visible key yet keeps
      // m = -inf (-inf + slack is -inf, so its first visible max always moves it).
      const float cand = fmaxf(row_max[r], mx[r] * scale[r]);
      const bool moves = cand > row_max[r] + kRescaleSlackLog2;
      const float m_new = moves ? cand : row_max[r];
      // Still -inf (no visible key so far): compute with 0 so exp2 gives 0, not NaN.
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      o_rescale[r] = moves ? ptx::exp2_approx(row_max[r] - m_use) : 1.f;
      row_max[r] = m_new;
      neg_bias_[r] = kPOffsetLog2 - m_use;
      row_sum[r] *= o_rescale[r];
    }
  }

  // Second half of step: S -> p = exp2(S * scale - (m - offset)) in place (FP32) and, unless the tensor core
  // sums P (kTcRowSum: add_block_sum), l += rowsum(p) in four interleaved partial sums.
  template <int kR = kRegs>
  __device__ __forceinline__ void step_exp(float (&s)[kR], const float (&scale)[2]) {
    float sum4[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      const int r = (i >> 1) & 1;
      const float x = fmaf(s[i], scale[r], neg_bias_[r]);
      constexpr int kEvery = kPolyExpEvery > 0 ? kPolyExpEvery : 1;  // no % 0 when off
      const bool poly = kPolyExpEvery > 0 && (i / 4) % kEvery == kEvery - 1;
      s[i] = poly ? ptx::exp2_poly(x) : ptx::exp2_approx(x);
      if constexpr (!kTcRowSum) sum4[r][(i >> 2) & 3] += s[i];
    }
    if constexpr (!kTcRowSum) {
#pragma unroll
      for (int r = 0; r < 2; ++r) row_sum[r] += (sum4[r][0] + sum4[r][1]) + (sum4[r][2] + sum4[r][3]);
    }
  }

  // kTcRowSum: a block's sums of rounded P for rows r0 and r0 + 8, from the P V product's 8
  // columns of ones (PVAccumulator::block_sum_r0 / _r8), in the units of the max it was made with;
  // `rescale` carries it to the current max. Every thread of the quad holds the whole row sum,
  // so finalize's quad reduction must not add it up four times: it is added to lane q4 == 0 only.
  __device__ __forceinline__ void add_block_sum(float l_r0, float l_r8, const float (&rescale)[2]) {
    if (threadIdx.x % 4 == 0) {
      row_sum[0] = fmaf(l_r0, rescale[0], row_sum[0]);
      row_sum[1] = fmaf(l_r8, rescale[1], row_sum[1]);
    }
  }

  // p (FP32, accumulator layout) -> E4M3 A-fragments of the PV wgmma. k-step j consumes keys
  // 32j..32j+31; register 4j+{0,1,2,3} holds rows {r0, r0+8, r0, r0+8} x key halves
  // {0-15, 0-15, 16-31, 16-31} of that group, in the key order of fp8attn_vt_key_at.
  // With kHiLo, also the second term: lo = e4m3(p - hi), so that hi + lo carries ~8 significant
  // bits (unscaled: lo's P V adds straight into the same accumulator as hi's).
  // kR < kRegs (a trimmed first block): the k-steps past its 2 * kR keys get P = 0.
  template <bool kHiLo = false, int kR = kRegs>
  __device__ __forceinline__ static void to_e4m3_fragments(const float (&s)[kR], uint32_t (&p)[kBlockN / 8],
                                                           uint32_t (&p_lo)[kHiLo ? kBlockN / 8 : 1]) {
    static_assert(kR % 16 == 0 && kR <= kRegs, "whole 32-key k-steps");
#pragma unroll
    for (int j = kR / 16; j < kBlockN / 32; ++j) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        p[4 * j + r] = 0u;
        if constexpr (kHiLo) p_lo[4 * j + r] = 0u;
      }
    }
#pragma unroll
    for (int j = 0; j < kR / 16; ++j) {
      const int g = 16 * j;  // s index of column group 4j
      constexpr int kOrder[4][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}, {8, 9, 12, 13}, {10, 11, 14, 15}};
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const float x0 = s[g + kOrder[r][0]], x1 = s[g + kOrder[r][1]];
        const float x2 = s[g + kOrder[r][2]], x3 = s[g + kOrder[r][3]];
        p[4 * j + r] = ptx::pack_e4m3x4(x0, x1, x2, x3);
        if constexpr (kHiLo) {
          float h0, h1, h2, h3;
          ptx::unpack_e4m3x2(static_cast<uint16_t>(p[4 * j + r] & 0xFFFF), h0, h1);
          ptx::unpack_e4m3x2(static_cast<uint16_t>(p[4 * j + r] >> 16), h2, h3);
          p_lo[4 * j + r] = ptx::pack_e4m3x4(x0 - h0, x1 - h1, x2 - h2, x3 - h3);
        }
      }
    }
  }

  // p (FP32, accumulator layout) -> FP16 A-fragments of the m64nNk16 PV wgmma (FP8ATTN_P_FP16).
  // With 16-bit A the accumulator layout is the A-fragment layout (the PTX ISA's m64nNk16 A
  // fragment, as mma.m16n8k16's, per warp): k-step j (keys 16j..16j+15) takes registers 4j+r =
  // {s[8j+2r], s[8j+2r+1]}: r = 0 row r0 keys 16j+2q+{0,1}, r = 1 row r0+8 same keys, r = 2 row r0
  // keys 16j+8+2q+{0,1}, r = 3 row r0+8 (q = lane % 4). So register i is simply s[2i], s[2i+1],
  // in natural key order: V is un-permuted when it is converted to FP16.
  // kR < kRegs (a trimmed first block): the k-steps past its 2 * kR keys get P = 0.
  template <int kR = kRegs>
  __device__ __forceinline__ static void to_f16_fragments(const float (&s)[kR], uint32_t (&p)[kBlockN / 4]) {
    static_assert(kR % 8 == 0 && kR <= kRegs, "whole 16-key k-steps");
#pragma unroll
    for (int i = kR / 2; i < kBlockN / 4; ++i) p[i] = 0u;
#pragma unroll
    for (int i = 0; i < kR / 2; ++i) p[i] = ptx::pack_f16x2(s[2 * i], s[2 * i + 1]);
  }

  // End of the tile: reduces l over the quad. Returns 1/l: 0 for a row that saw no key (l == 0),
  // NaN for a row a NaN reached (l is NaN: a NaN score or descale makes its p NaN), so that such
  // a row comes out NaN and never as O = 0, LSE = -inf like a fully masked row. Same cost as a
  // `l > 0` test (one compare, one select).
  __device__ __forceinline__ void finalize(float (&inv_l)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_sum[r] += __shfl_xor_sync(0xffffffff, row_sum[r], 1);
      row_sum[r] += __shfl_xor_sync(0xffffffff, row_sum[r], 2);
      inv_l[r] = row_sum[r] == 0.f ? 0.f : 1.f / row_sum[r];
    }
  }
  // Natural-log LSE of row r (after finalize): ln(sum_j exp(score_j)); -inf for a row that saw no
  // key, NaN for a row a NaN reached.
  __device__ __forceinline__ float lse(int r) const {
    if (row_sum[r] == 0.f) return -INFINITY;
    // lg2.approx (MUFU; absolute error ~2^-22 in log2 units; l >= 2^(offset - slack) is never
    // subnormal), as FA3's __logf: log2f's ~25-instruction polynomial ran at every tile boundary.
    return (row_max[r] + __log2f(row_sum[r]) - kPOffsetLog2) * 0.69314718055994531f;
  }
};

}  // namespace fp8attn::attn
