// The channel reduction before the fused pass: per (batch, kv head, channel) the sum, max and
// min of V, and of K's rows (rotated first when hadamard_qk) when K is smoothed or scaled per
// head; then means, V's scales and K's per-head scale, whose amax is exact: the rotated rows'
// max and min per channel give the largest |x - mean| (rounding is monotone). The sums have the
// fixed order of quant.h (chunks, groups, total) that model/prepass.cc repeats.
#include "fp8attn/quant.h"
#include "ptx/griddep.cuh"
#include "quant/launch.h"
#include "quant/pdl.h"
#include "quant/quant_common.cuh"
#include "quant/rope.cuh"

namespace fp8attn::quant {
namespace {

constexpr int kChunk = FP8ATTN_QUANT_STATS_CHUNK;
constexpr int kGroupChunks = FP8ATTN_QUANT_STATS_GROUP;
constexpr int kL = kStatsLanes;
using Lanes = RowLanes<kL>;
constexpr int kValues = Lanes::kValues;  // 16 channels per thread
constexpr int kChunks = Lanes::kChunks;  // 2 runs of 8
constexpr int kInFlight = 4;             // keys per thread whose loads are in flight
static_assert(kStatsThreads == kGroupChunks * kL, "one slot of 8 lanes per chunk of the group");
static_assert(kChunk % kInFlight == 0);

struct __align__(16) GroupPartials {
  float sum[kGroupChunks][kHeadDim], max[kGroupChunks][kHeadDim], min[kGroupChunks][kHeadDim];
};

// The rotation of K's rows without shuffles (quant/lanes.h StatsTranspose): strides 1, 2, 4 in
// the load layout, one transpose through shared memory, strides 8 .. 64 in the lane, in which
// the row is then summed. Same butterflies in the same order as hadamard_lanes<8> (its
// fma(x, +-1, other) across lanes is the add / subtract here, one rounding). Per warp, 4 rows
// (slots) and two buffers: a row's writes wait for one __syncwarp only, since every lane has
// read the buffer's previous row before the __syncwarp of the row in between.
using Tr = StatsTranspose;
constexpr int kTBufs = 2;
static_assert(kChunks == 2 && Tr::kRow * 8 <= Tr::kSlot && Tr::kSlot % 32 == 16 && Tr::kRow % 4 == 0);
struct __align__(16) Transpose {
  float v[kStatsThreads / 32][kTBufs][32 / kL][Tr::kSlot];
};

// x (layout Lanes, strides 1, 2, 4 done) -> y[k] = channel 8 k + lane, strides 8 .. 64 done.
__device__ __forceinline__ void transpose_and_finish(const float (&x)[kValues], float* buf,
                                                     int lane, float (&y)[kValues]) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    *reinterpret_cast<float2*>(buf + Tr::pos(lane, j)) = make_float2(x[j], x[8 + j]);
  }
  __syncwarp();
#pragma unroll
  for (int q = 0; q < kValues / 4; ++q) {
    const float4 f = reinterpret_cast<const float4*>(buf + Tr::row_start(lane))[q];
    y[Tr::k(4 * q)] = f.x, y[Tr::k(4 * q + 1)] = f.y, y[Tr::k(4 * q + 2)] = f.z;
    y[Tr::k(4 * q + 3)] = f.w;
  }
#pragma unroll
  for (int h = 1; h < kValues; h *= 2) {
#pragma unroll
    for (int k = 0; k < kValues; ++k) {
      if (k & h) continue;
      const float a = y[k], b = y[k + h];
      y[k] = __fadd_rn(a, b);
      y[k + h] = __fsub_rn(a, b);
    }
  }
}

// One group of one (batch, head) of tensor x: slot t / 8 sums its chunk of 32 keys in key order
// (lane t % 8 holds 16 channels of each row: Lanes, or when rotated 8 k + lane), then thread c adds the chunk sums of channel c in
// chunk order and writes the group's partials (b, h, group, 128).
// kRope: each valid key rotated by `rope` (quant/rope.cuh) before the Hadamard signs.
template <bool kRotate, bool kMinMax, bool kRope = false>
__device__ __forceinline__ void group_stats(const Bf16Input& x, int b, int head, int group,
                                            int ngroups, const uint32_t (&neg)[4],
                                            GroupPartials& sh, float* part_sum, float* part_max,
                                            float* part_min, const RopeRows& rope = RopeRows{}) {
  const int lane = threadIdx.x % kL, slot = threadIdx.x / kL;
  const int S = x.seqlen;
  const int s0 = (group * kGroupChunks + slot) * kChunk;
  const uint16_t* src = x.data + b * x.stride_b + head * x.stride_h + 8 * lane;
  __shared__ SignTable<kL> signs;
  __shared__ Transpose tr;
  if constexpr (kRotate) {
    fill_sign_table<kL>(neg, signs);
    __syncthreads();
  }
  float* const tr_buf = tr.v[threadIdx.x / 32][0][slot % (32 / kL)];

  float sum[kValues], mx[kValues], mn[kValues];
#pragma unroll
  for (int v = 0; v < kValues; ++v) sum[v] = 0.0f, mx[v] = -INFINITY, mn[v] = INFINITY;
  // A ring of kInFlight keys: the load of key t + kInFlight is issued as key t is converted, so
  // that kInFlight keys (128 bytes per thread) are always in flight. Keys are addressed by a
  // pointer advanced one key at a time; bounds are checked only in a group that reaches the end
  // (kTail).
  uint4 raw[kInFlight][kChunks];
  auto chunk = [&]<bool kTail>() {
    const uint16_t* next = src + s0 * x.stride_s;  // key s0 + (keys loaded so far)
    auto load = [&](int t, int slot_in_ring) {
#pragma unroll
      for (int hi = 0; hi < kChunks; ++hi) {
        raw[slot_in_ring][hi] = !kTail || s0 + t < S
                                    ? ld_u32x4_here(next + Lanes::channel(hi, 0, 0))
                                    : make_uint4(0, 0, 0, 0);
      }
      next += x.stride_s;
    };
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) load(u, u);
#pragma unroll 1
    for (int t0 = 0; t0 < kChunk; t0 += kInFlight) {
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        float v[kValues];
        decode_key_runs<kL, kChunks, kRotate, kRope>(raw[u], signs, lane, rope,
                                                     !kTail || s0 + t0 + u < S, s0 + t0 + u, v);
        if (t0 + kInFlight < kChunk) load(t0 + kInFlight + u, u);
        if constexpr (kRotate) {
          hadamard_in_runs(v);
          float y[kValues];
          transpose_and_finish(v, tr_buf + (u % kTBufs) * (32 / kL) * Tr::kSlot, lane, y);
#pragma unroll
          for (int i = 0; i < kValues; ++i) v[i] = y[i];
        }
        if (!kTail || s0 + t0 + u < S) {
#pragma unroll
          for (int i = 0; i < kValues; ++i) {
            sum[i] = __fadd_rn(sum[i], v[i]);
            if constexpr (kMinMax) mx[i] = fmaxf(mx[i], v[i]), mn[i] = fminf(mn[i], v[i]);
          }
        }
      }
    }
  };
  if ((group + 1) * kGroupChunks * kChunk <= S) {
    chunk.template operator()<false>();
  } else {
    chunk.template operator()<true>();
  }
  auto put = [&](float* row, const float* v) {  // 8 channels from Lanes::channel(hi, lane, 0)
    reinterpret_cast<float4*>(row)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(row)[1] = make_float4(v[4], v[5], v[6], v[7]);
  };
  if constexpr (kRotate) {  // lane holds channels 8 k + lane
#pragma unroll
    for (int k = 0; k < kValues; ++k) {
      sh.sum[slot][8 * k + lane] = sum[k];
      if constexpr (kMinMax) sh.max[slot][8 * k + lane] = mx[k], sh.min[slot][8 * k + lane] = mn[k];
    }
  } else {
#pragma unroll
    for (int hi = 0; hi < kChunks; ++hi) {
      const int c = Lanes::channel(hi, lane, 0);
      put(&sh.sum[slot][c], &sum[8 * hi]);
      if constexpr (kMinMax) put(&sh.max[slot][c], &mx[8 * hi]), put(&sh.min[slot][c], &mn[8 * hi]);
    }
  }
  __syncthreads();
  const int c = threadIdx.x;
  float gs = 0.0f, gmax = -INFINITY, gmin = INFINITY;
#pragma unroll
  for (int r = 0; r < kGroupChunks; ++r) {
    if ((group * kGroupChunks + r) * kChunk >= S) break;  // chunks past the end: none
    gs = __fadd_rn(gs, sh.sum[r][c]);
    if constexpr (kMinMax) gmax = fmaxf(gmax, sh.max[r][c]), gmin = fminf(gmin, sh.min[r][c]);
  }
  const int64_t o = ((static_cast<int64_t>(b) * x.heads + head) * ngroups + group) * kHeadDim + c;
  part_sum[o] = gs;
  if constexpr (kMinMax) part_max[o] = gmax, part_min[o] = gmin;
}

// grid.x: (tensor, head, group, batch) with the tensor fastest (V, K, V, K, ... when K's
// statistics are needed: K's rotation beside V's light work on every SM), then heads.
// kRope: K's keys rotated by `rope` (the last argument, read only then).
template <bool kRotate, bool kKMinMax, bool kRope>
__global__ void __launch_bounds__(kStatsThreads, 4) kv_group_stats_kernel(KvStatsArgs a,
                                                                          RopeRows rope) {
  ptx::let_next_grid_start();  // the finalize step's CTAs wait on SMs this one leaves
  __shared__ GroupPartials sh;
  const uint32_t tensors = a.k_stats ? 2 : 1;  // 32-bit: a grid has fewer than 2^31 CTAs
  uint32_t n = blockIdx.x;
  const bool is_k = n % tensors == 1;
  n /= tensors;
  const uint32_t heads = a.v.heads, q = n / heads;
  const int head = static_cast<int>(n - q * heads);
  const int group = static_cast<int>(q % static_cast<uint32_t>(a.ngroups));
  const int b = static_cast<int>(q / static_cast<uint32_t>(a.ngroups));
  if (is_k) {
    group_stats<kRotate, kKMinMax, kRope>(a.k, b, head, group, a.ngroups, a.negate_bits, sh,
                                          a.k_part_sum, a.k_part_max, a.k_part_min, rope);
  } else {
    group_stats<false, true>(a.v, b, head, group, a.ngroups, a.negate_bits, sh, a.v_part_sum,
                             a.v_part_max, a.v_part_min);
  }
}

// One CTA per (batch, kv head), thread c = channel c: the group sums of c added in group order.
__global__ void __launch_bounds__(kHeadDim) kv_finalize_kernel(KvStatsArgs a) {
  ptx::let_next_grid_start();    // the fused K/V pass's CTAs take the SMs meanwhile
  ptx::wait_for_previous_grid();  // the group partials
  __shared__ float warp_max_v[kHeadDim / 32], warp_max_k[kHeadDim / 32];
  const int c = threadIdx.x;
  const int64_t bh = blockIdx.x;
  const float n = static_cast<float>(a.v.seqlen);
  // The group partials of V and (when needed) K, kFoldBatch groups at a time: all of a batch's
  // loads are issued before the first add, so a batch costs one memory round trip instead of
  // one per few groups (the adds keep their group order).
  constexpr int kFoldBatch = 16;
  struct Fold {
    float s = 0.0f, mx = -INFINITY, mn = INFINITY;
  };
  Fold fv, fk;
  const int64_t base = bh * a.ngroups * kHeadDim + c;
  for (int g0 = 0; g0 < a.ngroups; g0 += kFoldBatch) {
    float vs[kFoldBatch], vx[kFoldBatch], vn[kFoldBatch];
    float ks[kFoldBatch], kx[kFoldBatch], kn[kFoldBatch];
#pragma unroll
    for (int j = 0; j < kFoldBatch; ++j) {
      const bool in = g0 + j < a.ngroups;
      const int64_t o = base + static_cast<int64_t>(g0 + j) * kHeadDim;
      vs[j] = in ? a.v_part_sum[o] : 0.0f;
      vx[j] = in ? a.v_part_max[o] : -INFINITY;
      vn[j] = in ? a.v_part_min[o] : INFINITY;
      ks[j] = in && a.k_stats ? a.k_part_sum[o] : 0.0f;
      kx[j] = in && a.k_scale_per_head ? a.k_part_max[o] : -INFINITY;
      kn[j] = in && a.k_scale_per_head ? a.k_part_min[o] : INFINITY;
    }
#pragma unroll
    for (int j = 0; j < kFoldBatch; ++j) {
      if (g0 + j >= a.ngroups) break;
      fv.s = __fadd_rn(fv.s, vs[j]), fv.mx = fmaxf(fv.mx, vx[j]), fv.mn = fminf(fv.mn, vn[j]);
      fk.s = __fadd_rn(fk.s, ks[j]), fk.mx = fmaxf(fk.mx, kx[j]), fk.mn = fminf(fk.mn, kn[j]);
    }
  }

  float s = fv.s, mx = fv.mx, mn = fv.mn;
  const float v_mean = a.smooth_v ? __fdiv_rn(s, n) : 0.0f;
  float amax = channel_amax(mx, mn, v_mean, a.smooth_v);
  if (a.v_scale_per_head) amax = cta_max(amax, warp_max_v);
  const GroupScale gv = group_scale(amax);
  a.v_mean[bh * kHeadDim + c] = v_mean;
  a.v_descale[bh * kHeadDim + c] = gv.descale;
  a.v_inv[bh * kHeadDim + c] = gv.inv;

  float k_mean = 0.0f;
  if (a.k_stats) {
    s = fk.s, mx = fk.mx, mn = fk.mn;
    if (a.smooth_k) k_mean = __fdiv_rn(s, n);
    if (a.k_scale_per_head) {
      const float head_amax = cta_max(channel_amax(mx, mn, k_mean, a.smooth_k), warp_max_k);
      const GroupScale gk = group_scale(head_amax);
      if (c == 0) a.k_inv[bh] = gk.inv;
      const float descale = __fmul_rn(gk.descale, a.k_descale_factor);
      for (int blk = c; blk < a.nblk; blk += kHeadDim) a.k_descale[bh * a.nblk + blk] = descale;
    }
  }
  a.k_mean[bh * kHeadDim + c] = k_mean;
}

template <bool kRotate, bool kKMinMax, bool kRope>
void launch_groups(const KvStatsArgs& a, cudaStream_t stream, const RopeRows& rope) {
  const int64_t ctas = static_cast<int64_t>(a.k_stats ? 2 : 1) * a.v.batch * a.v.heads * a.ngroups;
  kv_group_stats_kernel<kRotate, kKMinMax, kRope>
      <<<static_cast<unsigned>(ctas), kStatsThreads, 0, stream>>>(a, rope);
}

template <bool kRope>
void launch_groups(const KvStatsArgs& args, cudaStream_t stream, const RopeRows& rope) {
  const bool rotate = args.k_stats && args.rotate;
  const bool k_minmax = args.k_stats && args.k_scale_per_head;
  if (rotate) {
    k_minmax ? launch_groups<true, true, kRope>(args, stream, rope)
             : launch_groups<true, false, kRope>(args, stream, rope);
  } else {
    k_minmax ? launch_groups<false, true, kRope>(args, stream, rope)
             : launch_groups<false, false, kRope>(args, stream, rope);
  }
}

}  // namespace

cudaError_t launch_kv_stats(const KvStatsArgs& args, cudaStream_t stream,
                            const RopeRows* k_rope) {
  // K's rope only when K is read (k_stats).
  if (k_rope != nullptr && args.k_stats) {
    launch_groups<true>(args, stream, *k_rope);
  } else {
    launch_groups<false>(args, stream, RopeRows{});
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  return launch_after(kv_finalize_kernel,
                      dim3(static_cast<unsigned>(static_cast<int64_t>(args.v.batch) * args.v.heads)),
                      dim3(kHeadDim), stream, args);
}

}  // namespace fp8attn::quant
