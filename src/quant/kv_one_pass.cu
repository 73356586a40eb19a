// FP8ATTN_CENTRE_SAMPLE, the one-pass pre-pass (quant.h): what replaces the statistics pass.
//   before the fused pass (kv_sample_kernel): the centre (mean of fp8attn_sample_rows(seqlen) keys
//     spread over the sequence, fp8attn_sample_key) and the scales' bound (headroom x the
//     sample's amax), written where the statistics pass writes the mean and scales, so the fused
//     pass runs unchanged on them and folds the true max |x - centre| into an accumulator;
//   after it (kv_regroup_kernel): a group whose true amax exceeds its bound gets the true amax's
//     scale and its head a flag, on which the fused pass quantizes that head again.
// model/prepass.cc (sample_stats, the `one_pass` branch) repeats every FP32 operation.
#include "fp8attn/quant.h"
#include "ptx/griddep.cuh"
#include "quant/launch.h"
#include "quant/pdl.h"
#include "quant/quant_common.cuh"
#include "quant/rope.cuh"

namespace fp8attn::quant {
namespace {

constexpr int kL = 8;  // lanes per row (RowLanes<8>: 16 values a lane)
using Lanes = RowLanes<kL>;
constexpr int kValues = Lanes::kValues;
constexpr int kChunks = Lanes::kChunks;
constexpr int kThreads = kHeadDim;  // 16 slots of 8 lanes; thread c = channel c when folding
constexpr int kSlots = kThreads / kL;
static_assert(kSlots == FP8ATTN_QUANT_SAMPLE_SLOTS);
static_assert(FP8ATTN_QUANT_SAMPLE_ROWS_MAX % kSlots == 0);

struct __align__(16) SlotStats {
  float sum[kSlots][kHeadDim], max[kSlots][kHeadDim], min[kSlots][kHeadDim];
};

// The largest of one word per thread over the CTA.
__device__ __forceinline__ uint32_t cta_max_bits(uint32_t m, float* warp_max) {
  m = __reduce_max_sync(0xFFFFFFFFu, m);
  __syncthreads();
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = __uint_as_float(m);
  __syncthreads();
  m = __float_as_uint(warp_max[0]);
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) m = max(m, __float_as_uint(warp_max[w]));
  return m;
}

// Sample row i of x goes to slot i % 16 (thread t: slot t / 8, lane t % 8), rows of a slot in i
// order; then thread c folds the 16 slots of channel c in slot order. Returns sum, max, min of
// channel threadIdx.x.
// kRope: each sampled key rotated by `rope` (quant/rope.cuh) before the Hadamard signs.
template <bool kRotate, bool kRope = false>
__device__ __forceinline__ void sample_channel(const Bf16Input& x, int b, int head,
                                               const SignTable<kL>& signs, SlotStats& sh,
                                               float& sum_c, float& max_c, float& min_c,
                                               const RopeRows& rope = RopeRows{}) {
  const int lane = threadIdx.x % kL, slot = threadIdx.x / kL;
  const int S = x.seqlen, n = fp8attn_sample_rows(S);
  const uint16_t* src = x.data + b * x.stride_b + head * x.stride_h;
  float sum[kValues], mx[kValues], mn[kValues];
#pragma unroll
  for (int v = 0; v < kValues; ++v) sum[v] = 0.0f, mx[v] = -INFINITY, mn[v] = INFINITY;
  // This thread's rows (at most FP8ATTN_QUANT_SAMPLE_ROWS_MAX / 16) in rounds of kRound, each
  // round's loads issued before any is used (one memory round trip per round); rows past n are
  // masked. Every lane of a warp runs every row (the rotation shuffles).
  constexpr int kMaxRows = FP8ATTN_QUANT_SAMPLE_ROWS_MAX / kSlots;
  constexpr int kRound = kMaxRows < 8 ? kMaxRows : 8;
  static_assert(kMaxRows % kRound == 0);
#pragma unroll 1
  for (int r0 = 0; r0 < kMaxRows; r0 += kRound) {
    if (r0 * kSlots >= n) break;  // the same for every thread of the CTA
    uint4 raw[kRound][kChunks];
    int key[kRound];
#pragma unroll
    for (int r = 0; r < kRound; ++r) {
      const int i = (r0 + r) * kSlots + slot;
      key[r] = fp8attn_sample_key(S, i < n ? i : 0);
      const uint16_t* row = src + static_cast<int64_t>(key[r]) * x.stride_s;
#pragma unroll
      for (int hi = 0; hi < kChunks; ++hi) {
        raw[r][hi] = i < n ? ld_u32x4_here(row + Lanes::channel(hi, lane, 0)) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int r = 0; r < kRound; ++r) {
      const int i = (r0 + r) * kSlots + slot;
      const bool valid = i < n;
      float v[kValues];
      decode_key_runs<kL, kChunks, kRotate, kRope>(raw[r], signs, lane, rope, valid, key[r], v);
      if constexpr (kRotate) hadamard_lanes<kL>(v, lane);
      if (valid) {
#pragma unroll
        for (int k = 0; k < kValues; ++k) {
          sum[k] = __fadd_rn(sum[k], v[k]);
          mx[k] = fmaxf(mx[k], v[k]), mn[k] = fminf(mn[k], v[k]);
        }
      }
    }
  }
  __syncthreads();  // sh may still be read from a previous call
#pragma unroll
  for (int hi = 0; hi < kChunks; ++hi) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int c = Lanes::channel(hi, lane, j);
      sh.sum[slot][c] = sum[8 * hi + j], sh.max[slot][c] = mx[8 * hi + j];
      sh.min[slot][c] = mn[8 * hi + j];
    }
  }
  __syncthreads();
  const int c = threadIdx.x;
  sum_c = 0.0f, max_c = -INFINITY, min_c = INFINITY;
#pragma unroll
  for (int j = 0; j < kSlots; ++j) {
    sum_c = __fadd_rn(sum_c, sh.sum[j][c]);
    max_c = fmaxf(max_c, sh.max[j][c]), min_c = fminf(min_c, sh.min[j][c]);
  }
}

// One CTA per (batch, kv head) and tensor (blockIdx.y: 0 V, 1 K), thread c = channel c.
// kRope: K's sampled keys rotated by `rope` (the last argument, read only then).
template <bool kRotate, bool kRope>
__global__ void __launch_bounds__(kThreads) kv_sample_kernel(KvOnePassArgs a, RopeRows rope) {
  ptx::let_next_grid_start();  // the fused pass's CTAs take the SMs meanwhile
  __shared__ SlotStats sh;
  __shared__ SignTable<kL> signs;
  __shared__ float warp_max[kThreads / 32];
  const KvStatsArgs& s = a.s;
  const int b = static_cast<int>(blockIdx.x) / s.v.heads, head = static_cast<int>(blockIdx.x) % s.v.heads;
  const int64_t bh = blockIdx.x;
  const int c = threadIdx.x;
  const float n = static_cast<float>(fp8attn_sample_rows(s.v.seqlen));
  if constexpr (kRotate) {
    fill_sign_table<kL>(s.negate_bits, signs);
    __syncthreads();
  }
  // Nothing below is read by the kernel before this one (K and V were complete when this
  // ordinary launch started); the writes wait for nothing either.
  float sum, mx, mn;
  if (blockIdx.y == 1) {
    float k_mean = 0.0f;
    if (s.k_stats) {
      sample_channel<kRotate, kRope>(s.k, b, head, signs, sh, sum, mx, mn, rope);
      if (s.smooth_k) k_mean = __fdiv_rn(sum, n);
      if (s.k_scale_per_head) {
        const float k_bound =
            __fmul_rn(cta_max(channel_amax(mx, mn, k_mean, s.smooth_k), warp_max), a.headroom);
        const GroupScale gk = group_scale(k_bound);
        if (c == 0) s.k_inv[bh] = gk.inv, a.k_bound[bh] = k_bound, a.k_true[bh] = 0u;
        const float descale = __fmul_rn(gk.descale, s.k_descale_factor);
        for (int blk = c; blk < s.nblk; blk += kHeadDim) s.k_descale[bh * s.nblk + blk] = descale;
      }
    }
    s.k_mean[bh * kHeadDim + c] = k_mean;
    return;
  }
  sample_channel<false>(s.v, b, head, signs, sh, sum, mx, mn);
  const float v_mean = s.smooth_v ? __fdiv_rn(sum, n) : 0.0f;
  float amax = channel_amax(mx, mn, v_mean, s.smooth_v);
  if (s.v_scale_per_head) amax = cta_max(amax, warp_max);
  const float v_bound = __fmul_rn(amax, a.headroom);
  const GroupScale gv = group_scale(v_bound);
  s.v_mean[bh * kHeadDim + c] = v_mean;
  s.v_descale[bh * kHeadDim + c] = gv.descale;
  s.v_inv[bh * kHeadDim + c] = gv.inv;
  a.v_bound[bh * kHeadDim + c] = v_bound;
  a.v_true[bh * kHeadDim + c] = 0u;
}

// One CTA per (batch, kv head), thread c = channel c. A bound is kept when the true amax is at
// most it (as bits: both are >= 0; a NaN true amax is over any bound, as the mirror's !(t <= b)).
__global__ void __launch_bounds__(kThreads) kv_regroup_kernel(KvOnePassArgs a) {
  ptx::let_next_grid_start();
  ptx::wait_for_previous_grid();  // the fused pass's true amax (and, through it, the sample's)
  __shared__ float warp_max[kThreads / 32];
  const KvStatsArgs& s = a.s;
  const int64_t bh = blockIdx.x;
  const int c = threadIdx.x;
  // The fused pass's atomics wrote these words (bits of floats >= 0): read back as floats.
  float t = ld_f32_coherent(reinterpret_cast<const float*>(a.v_true + bh * kHeadDim + c));
  if (s.v_scale_per_head) t = __uint_as_float(cta_max_bits(__float_as_uint(t), warp_max));
  const float v_bound = ld_f32_coherent(a.v_bound + bh * kHeadDim + c);
  const bool v_over = __float_as_uint(t) > __float_as_uint(v_bound);
  const GroupScale gv = group_scale(v_over ? t : v_bound);
  a.v_inv_again[bh * kHeadDim + c] = gv.inv;
  if (v_over) s.v_descale[bh * kHeadDim + c] = gv.descale;
  uint32_t flags = __syncthreads_or(v_over) ? 2u : 0u;
  if (s.k_stats && s.k_scale_per_head) {
    const float kt = ld_f32_coherent(reinterpret_cast<const float*>(a.k_true + bh));
    const float k_bound = ld_f32_coherent(a.k_bound + bh);
    if (__float_as_uint(kt) > __float_as_uint(k_bound)) {
      const GroupScale gk = group_scale(kt);
      if (c == 0) a.k_inv_again[bh] = gk.inv;
      const float descale = __fmul_rn(gk.descale, s.k_descale_factor);
      for (int blk = c; blk < s.nblk; blk += kHeadDim) s.k_descale[bh * s.nblk + blk] = descale;
      flags |= 1u;
    }
  }
  if (c == 0) a.again[bh] = static_cast<uint8_t>(flags);
}

}  // namespace

cudaError_t launch_kv_sample(const KvOnePassArgs& a, cudaStream_t stream,
                             const RopeRows* k_rope) {
  // K's CTAs always run: they write k_mean (zeros when K is not smoothed).
  const dim3 grid(static_cast<unsigned>(static_cast<int64_t>(a.s.v.batch) * a.s.v.heads), 2);
  const bool rotate = a.s.k_stats && a.s.rotate;
  if (k_rope != nullptr && a.s.k_stats) {
    rotate ? kv_sample_kernel<true, true><<<grid, kThreads, 0, stream>>>(a, *k_rope)
           : kv_sample_kernel<false, true><<<grid, kThreads, 0, stream>>>(a, *k_rope);
  } else {
    rotate ? kv_sample_kernel<true, false><<<grid, kThreads, 0, stream>>>(a, RopeRows{})
           : kv_sample_kernel<false, false><<<grid, kThreads, 0, stream>>>(a, RopeRows{});
  }
  return cudaGetLastError();
}

cudaError_t launch_kv_regroup(const KvOnePassArgs& a, cudaStream_t stream) {
  const unsigned ctas = static_cast<unsigned>(static_cast<int64_t>(a.s.v.batch) * a.s.v.heads);
  return launch_after(kv_regroup_kernel, dim3(ctas), dim3(kThreads), stream, a);
}

}  // namespace fp8attn::quant
