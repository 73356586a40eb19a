// One tile of the fused pass for Q and K rows: 128 or 256 rows of one
// (batch, head), 256 threads (Q scaled per row, rotated K scaled per head: 128), 4 lanes per row
// (quant/lanes.h). Each row is read once (16-byte loads, every warp instruction whole 32-byte
// sectors), rotated (signs folded into the BF16 conversion, two butterfly stages across lanes),
// smoothed (K, in the rotated basis), scaled and written as E4M3 (8-byte stores, whole sectors).
// Used by quantize_q.cu and quantize_kv.cu.
#pragma once

#include "ptx/griddep.cuh"
#include "quant/launch.h"
#include "quant/quant_common.cuh"
#include "quant/rope.cuh"

namespace fp8attn::quant::rows {

inline constexpr int kThreads = 256;            // unless the caller holds its constants
inline constexpr int kL = kRowLanes;
using Lanes = RowLanes<kL>;
inline constexpr int kValues = Lanes::kValues;   // 32 per thread
inline constexpr int kChunks = Lanes::kChunks;   // 4 runs of 8 channels
inline constexpr int kScaleTileRows = 128;       // a K scale block (FP8ATTN_K_SCALE_BLOCK)

// Where a thread finds its lane's per-(b, h) constants (the sign masks of its 32 channels, and
// the run values of Q's k_mean or K's mean) in the row loop: reloaded for every row (the sign
// table in shared memory, the runs from L1: 4 16-byte shared loads and 8 16-byte L1 loads a row)
// so that a 256-thread CTA fits 2 per SM in 128 registers; or held in 48 registers across the
// thread's rows, loaded once (128 threads, 3 CTAs per SM, 168 registers). kHeldKMean: the Q
// pass's row-scaled tile (RowQuantArgs::mean is ignored); kHeldMean: the K/V pass's rotated
// head-scaled K tile (lse_bias and k_mean are ignored).
enum class Constants { kReload, kHeldKMean, kHeldMean };

// Where a row's scale comes from: its own amax, the amax of its 128-row tile, or a known value
// per (batch, head) (K per head: the statistics pass computed it).
enum class Scale { kRow, kTile, kKnown };

// Rows per CTA: one scale tile, or (scale per row or known) 256 rows, whose per-thread set-up
// (sign masks, indices; k_mean when held) is then spread over 4 rows (256 threads) or 8 (128),
// 2 of them in flight at any time.
template <Scale kScale>
inline constexpr int kTileRows = kScale == Scale::kTile ? kScaleTileRows : 256;

struct Tile {
  int b, head, tile;
};

// CTA order: head fastest, then tiles, then batch, so that the CTAs in flight read neighbouring
// heads of the same rows (whole DRAM pages) rather than one head's rows a stride apart. 32-bit
// arithmetic: a grid has fewer than 2^31 CTAs.
__device__ __forceinline__ Tile tile_of(uint32_t n, uint32_t heads, uint32_t tiles) {
  Tile t;
  const uint32_t q = n / heads;
  t.head = static_cast<int>(n - q * heads);
  t.tile = static_cast<int>(q % tiles);
  t.b = static_cast<int>(q / tiles);
  return t;
}

// kInputReady: the input was complete before the previous kernel of the stream ended (K: the
// statistics pass read it), so a tile loads its first rows before waiting for that kernel
// (quant/pdl.h), with .nc loads. Otherwise (Q: the previous kernel may be the one writing it)
// it waits first and loads coherently.
// kRope (the rope entry): each valid row is rotated by `rope` (quant/rope.cuh) right after the
// BF16 conversion, and the Hadamard signs are flipped after it (on the FP32 values).
// kFoldAmax (FP8ATTN_CENTRE_SAMPLE's first fused pass, K scaled per head): max |x - mean| of
// the valid rows folded into a.true_amax (non-null). A compile-time flag: as a runtime test of
// the pointer it made every default pass carry the fold's code (docs/prepass.md, "A regression and
// its repair").
template <bool kRotate, Scale kScale, bool kInputReady, int kThreads = rows::kThreads,
          Constants kConstants = Constants::kReload, bool kPairRows = false, bool kRope = false,
          bool kFoldAmax = false>
__device__ __forceinline__ void quantize_rows_tile(const RowQuantArgs& a, Tile t,
                                                   const RopeRows& rope = RopeRows{}) {
  constexpr int kRowsPerPass = kThreads / kL;
  constexpr int kPasses = kTileRows<kScale> / kRowsPerPass;
  constexpr bool kHeld = kConstants != Constants::kReload;
  constexpr bool kHeldMean = kConstants == Constants::kHeldMean;
  static_assert(!kHeld || kScale != Scale::kTile, "the tile scale holds every row's values");
  const int lane = threadIdx.x % kL;
  const int S = a.x.seqlen;
  const int64_t bh = static_cast<int64_t>(t.b) * a.x.heads + t.head;
  const uint16_t* src = a.x.data + t.b * a.x.stride_b + t.head * a.x.stride_h + 8 * lane;
  // This thread's row of pass p: s_first + p * kRowsPerPass.
  const int s_first = t.tile * kTileRows<kScale> + static_cast<int>(threadIdx.x) / kL;

  // Row s, whose first element this lane reads is `row` (= row_ptr(s)); zeros past the end
  // (checked only in a tile that reaches the end).
  auto load = [&]<bool kTail>(int s, const uint16_t* row, uint4 (&raw)[kChunks]) {
#pragma unroll
    for (int hi = 0; hi < kChunks; ++hi) {
      const uint16_t* p = row + Lanes::channel(hi, 0, 0);
      raw[hi] = !kTail || s < S ? (kInputReady ? ld_u32x4_here(p) : ld_u32x4_coherent_here(p))
                                : make_uint4(0, 0, 0, 0);
    }
  };
  auto row_ptr = [&](int s) { return src + s * a.x.stride_s; };
  auto out_ptr = [&](int s) {
    return a.out + ((static_cast<int64_t>(t.b) * S + s) * a.x.heads + t.head) * kHeadDim;
  };
  float* const lse_row = !kHeldMean && a.lse_bias != nullptr ? a.lse_bias + bh * S : nullptr;
  float* const descale_row = a.descale_per_row ? a.descale + bh * S : nullptr;

  __shared__ SignTable<kL> signs;
  if constexpr (kRotate && !kHeld) {
    fill_sign_table<kL>(a.negate_bits, signs);
    __syncthreads();
  }
  // Held: this lane's 16 mask words (from the seed's bits, no table) and, once the previous
  // grid is done, the runs of k_mean (Q) or of the mean (K). (The compiler still recomputes a
  // few masks in the loop from the seed's bits in the constant bank: ALU, not MIO.)
  uint32_t held_mask[kHeld ? kChunks : 1][4];
  if constexpr (kHeld && kRotate) sign_masks_of_lane<kL>(a.negate_bits, lane, held_mask);
  float held_run[kHeld ? kValues : 1];
  // K's mean and Q's k_mean (per (b, h), 512 bytes: L1 hits) are loaded per run where they are
  // used (kReload), not held in 32 registers across the tile. A held tile holds one of them and
  // ignores the other (kept out of its registers).
  const float* mean = kConstants != Constants::kHeldKMean && a.mean != nullptr
                          ? a.mean + bh * kHeadDim : nullptr;
  const float* km = nullptr;
  if (!kHeldMean && a.lse_bias != nullptr && a.k_mean != nullptr) {
    km = a.k_mean + (static_cast<int64_t>(t.b) * (a.x.heads / a.heads_per_kv) +
                     t.head / a.heads_per_kv) * kHeadDim;
  }

  // BF16 -> FP32 with the sign flips (with kRope: after the rope, in transform).
  auto convert = [&](const uint4 (&raw)[kChunks], float (&x)[kValues]) {
#pragma unroll
    for (int hi = 0; hi < kChunks; ++hi) {
      if constexpr (kRope) {
        bf16x8_to_float(raw[hi], &x[8 * hi]);
      } else if constexpr (kRotate && kHeld) {
        bf16x8_to_float_signed(raw[hi], held_mask[hi], &x[8 * hi]);
      } else if constexpr (kRotate) {
        uint32_t mask[4];
        sign_masks_here<kL>(signs, lane, hi, mask);
        bf16x8_to_float_signed(raw[hi], mask, &x[8 * hi]);
      } else {
        bf16x8_to_float(raw[hi], &x[8 * hi]);
      }
    }
  };

  // FP8ATTN_CENTRE_SAMPLE (K, known scale): max |x - mean| of this thread's valid rows, as bits.
  uint32_t true_amax = 0u;
  static_assert(!kFoldAmax || kScale == Scale::kKnown, "the true amax is folded per head");

  // Row s (valid: s < S): rotation, smoothing (K), lse_bias (Q).
  auto transform = [&](int s, bool valid, float (&x)[kValues]) {
    if constexpr (kRope) {
      if (valid) rope_runs<kL>(rope, s, lane, x);  // rows past the end: zeros, no table row
      if constexpr (kRotate) {
#pragma unroll
        for (int hi = 0; hi < kChunks; ++hi) {
          if constexpr (kHeld) {
            flip_signs8(&x[8 * hi], held_mask[hi]);
          } else {
            uint32_t mask[4];
            sign_masks_here<kL>(signs, lane, hi, mask);
            flip_signs8(&x[8 * hi], mask);
          }
        }
      }
    }
    if constexpr (kRotate) hadamard_lanes<kL>(x, lane);
    if (mean != nullptr) {
#pragma unroll
      for (int hi = 0; hi < kChunks; ++hi) {
        float m[8];
        if constexpr (kHeldMean) {
#pragma unroll
          for (int j = 0; j < 8; ++j) m[j] = held_run[8 * hi + j];
        } else {
          ld_f32x8_here(mean + Lanes::channel(hi, lane, 0), m);
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) x[8 * hi + j] = __fsub_rn(x[8 * hi + j], m[j]);
      }
    }
    if constexpr (kFoldAmax) {
      if (valid) {
#pragma unroll
        for (int v = 0; v < kValues; ++v) true_amax = max(true_amax, __float_as_uint(fabsf(x[v])));
      }
    }
    if (lse_row != nullptr) {
      // model/prepass.cc lse_dot_128: chain g = 4 hi + lane over this lane's run hi; the lane's
      // four chains (s_lane, s_4+lane, s_8+lane, s_12+lane) pairwise, then across the 4 lanes.
      float dot = 0.0f;
      if (km != nullptr) {
        float chain[kChunks];
#pragma unroll
        for (int hi = 0; hi < kChunks; ++hi) {
          float m[8];
          if constexpr (kHeld) {
#pragma unroll
            for (int j = 0; j < 8; ++j) m[j] = held_run[8 * hi + j];
          } else {
            ld_f32x8_here(km + Lanes::channel(hi, lane, 0), m);
          }
          float acc = 0.0f;
#pragma unroll
          for (int j = 0; j < 8; ++j) acc = __fmaf_rn(x[8 * hi + j], m[j], acc);
          chain[hi] = acc;
        }
        dot = __fadd_rn(__fadd_rn(chain[0], chain[1]), __fadd_rn(chain[2], chain[3]));
        dot = __fadd_rn(dot, __shfl_xor_sync(0xFFFFFFFFu, dot, 1));
        dot = __fadd_rn(dot, __shfl_xor_sync(0xFFFFFFFFu, dot, 2));
        if constexpr (kRotate) dot = __fmul_rn(dot, kHadamardDescale);
        dot = __fmul_rn(a.softmax_scale, dot);
      }
      if (lane == 0 && valid) lse_row[s] = dot;
    }
  };

  // The row's amax: 8 interleaved partial maxima, then a tree (the max is exact, so any order
  // gives the same value): a chain of 32 dependent FMNMX per row was on the Q pass's critical
  // path.
  auto row_amax = [&](bool valid, const float (&x)[kValues]) {
    constexpr int kParts = 8;
    float part[kParts];
#pragma unroll
    for (int i = 0; i < kParts; ++i) part[i] = 0.0f;
    if (valid) {
#pragma unroll
      for (int v = 0; v < kValues; ++v) part[v % kParts] = fmaxf(part[v % kParts], fabsf(x[v]));
    }
#pragma unroll
    for (int w = kParts / 2; w > 0; w /= 2) {
#pragma unroll
      for (int i = 0; i < w; ++i) part[i] = fmaxf(part[i], part[i + w]);
    }
    float m = part[0];
#pragma unroll
    for (int off = 1; off < kL; off *= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
    return m;
  };

  // Row s to dst = out_ptr(s).
  auto store = [&](int s, bool valid, uint8_t* dst, const float (&x)[kValues], const GroupScale& g) {
    if (!valid) return;
#pragma unroll
    for (int hi = 0; hi < kChunks; ++hi) {
      *reinterpret_cast<uint2*>(dst + Lanes::channel(hi, lane, 0)) = quantize8(&x[8 * hi], g.inv);
    }
    if (descale_row != nullptr && lane == 0) descale_row[s] = g.descale;
  };

  if constexpr (kScale == Scale::kTile) {
    // One scale for the tile's 128 rows: all loads first, both rows in registers until the
    // CTA's amax.
    __shared__ float warp_amax[kThreads / 32];
    uint4 raw[kPasses][kChunks];
    if constexpr (!kInputReady) ptx::wait_for_previous_grid();
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int s = s_first + p * kRowsPerPass;
      load.template operator()<true>(s, row_ptr(s), raw[p]);
    }
    if constexpr (kInputReady) ptx::wait_for_previous_grid();  // before the mean, any write
    float x[kPasses][kValues];
    float m = 0.0f;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int s = s_first + p * kRowsPerPass;
      convert(raw[p], x[p]);
      transform(s, s < S, x[p]);
      m = fmaxf(m, row_amax(s < S, x[p]));
    }
#pragma unroll
    for (int off = kL; off < 32; off *= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
    if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = m;
    __syncthreads();
    m = warp_amax[0];
#pragma unroll
    for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, warp_amax[w]);
    GroupScale g = group_scale(m);
    g.descale = __fmul_rn(g.descale, a.descale_factor);
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int s = s_first + p * kRowsPerPass;
      store(s, s < S, out_ptr(s), x[p], g);
    }
    if (!a.descale_per_row && threadIdx.x == 0) {
      a.descale[bh * ((S + kScaleTileRows - 1) / kScaleTileRows) + t.tile] = g.descale;
    }
  } else {
    // One row at a time, two rows' loads in flight: row s + 2 * kRowsPerPass is loaded into the
    // registers of row s as soon as they are converted (a rolled loop: no overlap of rows, so
    // no register pressure beyond two rows).
    // Bounds are checked only in a tile that reaches the end (kTail). Each row's conversion is
    // pinned before the load that refills its registers (computed_here): both loads in flight
    // then have a whole iteration to arrive, and the loop needs no register copies.
    static_assert(kPasses % 2 == 0);
    auto rolled = [&]<bool kTail>() {
      uint4 ra[kChunks], rb[kChunks];
      if constexpr (!kInputReady) ptx::wait_for_previous_grid();
      load.template operator()<kTail>(s_first, row_ptr(s_first), ra);
      load.template operator()<kTail>(s_first + kRowsPerPass, row_ptr(s_first + kRowsPerPass), rb);
      if constexpr (kInputReady) ptx::wait_for_previous_grid();  // before scale, mean, writes
      if constexpr (kHeld) {
        // k_mean (Q) or the mean (K): 0 where absent (then unused). Loaded once: the loop reads
        // only registers.
        const float* run = kHeldMean ? mean : km;
#pragma unroll
        for (int hi = 0; hi < kChunks; ++hi) {
          if (run != nullptr) {
            ld_f32x8_here(run + Lanes::channel(hi, lane, 0), &held_run[8 * hi]);
          } else {
#pragma unroll
            for (int j = 0; j < 8; ++j) held_run[8 * hi + j] = 0.0f;
          }
        }
      }
      GroupScale known{1.0f, 1.0f};
      if constexpr (kScale == Scale::kKnown) known.inv = ld_f32_coherent(a.scale_inv + bh);
      // Row s's registers are free once converted: load row s + 2 kRowsPerPass into them.
      auto refill = [&](int s, uint4 (&raw)[kChunks]) {
        const int s_next = s + 2 * kRowsPerPass;
        load.template operator()<kTail>(s_next, row_ptr(s_next), raw);
      };
      // The row's scale: its own amax (per token) or the known one.
      auto scale_of = [&](bool valid, const float (&x)[kValues]) {
        GroupScale g = known;
        if constexpr (kScale == Scale::kRow) {
          g = group_scale(row_amax(valid, x));
          g.descale = __fmul_rn(g.descale, a.descale_factor);
        }
        return g;
      };
      auto step = [&](int s, uint4 (&raw)[kChunks], bool more) {
        const bool valid = !kTail || s < S;
        float x[kValues];
        convert(raw, x);
        computed_here(x);  // raw's registers are free: refill them
        if (more) refill(s, raw);
        transform(s, valid, x);
        store(s, valid, out_ptr(s), x, scale_of(valid, x));
      };
      // Both rows of an iteration side by side (when kPairRows): both converted and both
      // refills issued first, then the two rows' transforms, scales and stores as two
      // independent instruction streams that the compiler interleaves. The rotated Q pass waits
      // on short dependency chains (Nsight Compute's stall samples): a second row in the same warp
      // fills those waits. Same operations per row, same order within a row.
      auto step_pair = [&](int s, bool more) {
        const int s2 = s + kRowsPerPass;
        const bool va = !kTail || s < S, vb = !kTail || s2 < S;
        float xa[kValues], xb[kValues];
        convert(ra, xa);
        convert(rb, xb);
        computed_here(xa);
        computed_here(xb);
        if (more) refill(s, ra), refill(s2, rb);
        transform(s, va, xa);
        transform(s2, vb, xb);
        const GroupScale ga = scale_of(va, xa), gb = scale_of(vb, xb);
        store(s, va, out_ptr(s), xa, ga);
        store(s2, vb, out_ptr(s2), xb, gb);
      };
#pragma unroll 1
      for (int p = 0; p < kPasses; p += 2) {
        const int s = s_first + p * kRowsPerPass;
        const bool more = p + 2 < kPasses;
        if constexpr (kScale != Scale::kTile && kPairRows) {
          step_pair(s, more);
        } else {
          step(s, ra, more);
          step(s + kRowsPerPass, rb, more);
        }
      }
    };
    if ((t.tile + 1) * kTileRows<kScale> <= S) {
      rolled.template operator()<false>();
    } else {
      rolled.template operator()<true>();
    }
  }
  if constexpr (kFoldAmax) {  // after the wait (the loop's): the sample zeroed it
    const uint32_t m = __reduce_max_sync(0xFFFFFFFFu, true_amax);
    if (threadIdx.x % 32 == 0) atomicMax(a.true_amax + bh, m);
  }
}

}  // namespace fp8attn::quant::rows
