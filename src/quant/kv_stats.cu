// The channel reduction before the fused pass: K's mean (smoothing) and V's mean, max and min
// (V's per-channel scale needs every key). The sums have a fixed order that
// model/prepass.cc repeats (quant.h: chunks, runs of chunks, total).
#include "fp8attn/quant.h"
#include "quant/launch.h"
#include "quant/quant_common.cuh"

namespace fp8attn::quant {
namespace {

constexpr int kChunk = FP8ATTN_QUANT_STATS_CHUNK;
constexpr int kLanesPerChunk = kHeadDim / 8;  // 8 channels (16 bytes) per thread
constexpr int kChunksPerCta = 8;
constexpr int kStatsThreads = kLanesPerChunk * kChunksPerCta;

// grid.x: groups of kChunksPerCta (b, h, chunk) triples; grid.y: 0 = V, 1 = K (K last, so that
// its last reads are in L2 when the K pass starts from there).
__global__ void __launch_bounds__(kStatsThreads) kv_partial_stats_kernel(KvStatsArgs a) {
  const bool is_k = blockIdx.y == 1;
  const Bf16Input& x = is_k ? a.k : a.v;
  const int64_t flat = static_cast<int64_t>(blockIdx.x) * kChunksPerCta +
                       threadIdx.x / kLanesPerChunk;  // (b * h + head) * nchunks + chunk
  if (flat >= static_cast<int64_t>(x.batch) * x.heads * a.nchunks) return;
  const int chunk = static_cast<int>(flat % a.nchunks);
  const int head = static_cast<int>((flat / a.nchunks) % x.heads);
  const int b = static_cast<int>(flat / a.nchunks / x.heads);
  const int c0 = (threadIdx.x % kLanesPerChunk) * 8;
  const int s0 = chunk * kChunk;
  const int s_end = min(x.seqlen, s0 + kChunk);
  const uint16_t* src = x.data + b * x.stride_b + head * x.stride_h + c0;

  float sum[8], mx[8], mn[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) sum[i] = 0.0f, mx[i] = -INFINITY, mn[i] = INFINITY;
#pragma unroll 8
  for (int s = s0; s < s_end; ++s) {
    float f[8];
    bf16x8_to_float(__ldg(reinterpret_cast<const uint4*>(src + s * x.stride_s)), f);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      sum[i] = __fadd_rn(sum[i], f[i]);
      mx[i] = fmaxf(mx[i], f[i]);
      mn[i] = fminf(mn[i], f[i]);
    }
  }
  const int64_t o = flat * kHeadDim + c0;
  float* sums = is_k ? a.k_part_sum : a.v_part_sum;
  reinterpret_cast<float4*>(sums + o)[0] = make_float4(sum[0], sum[1], sum[2], sum[3]);
  reinterpret_cast<float4*>(sums + o)[1] = make_float4(sum[4], sum[5], sum[6], sum[7]);
  if (!is_k) {
    reinterpret_cast<float4*>(a.v_part_max + o)[0] = make_float4(mx[0], mx[1], mx[2], mx[3]);
    reinterpret_cast<float4*>(a.v_part_max + o)[1] = make_float4(mx[4], mx[5], mx[6], mx[7]);
    reinterpret_cast<float4*>(a.v_part_min + o)[0] = make_float4(mn[0], mn[1], mn[2], mn[3]);
    reinterpret_cast<float4*>(a.v_part_min + o)[1] = make_float4(mn[4], mn[5], mn[6], mn[7]);
  }
}

constexpr int kSegments = FP8ATTN_QUANT_STATS_SEGMENTS;
constexpr int kFinalizeThreads = kHeadDim * kSegments;

// One CTA per (batch, kv head): thread (segment, channel) sums one run of consecutive chunk sums
// (quant.h's order), then the 128 threads of segment 0 add the runs in order and finish.
__global__ void __launch_bounds__(kFinalizeThreads) kv_finalize_kernel(KvStatsArgs a) {
  __shared__ float run_k[kSegments][kHeadDim], run_v[kSegments][kHeadDim];
  __shared__ float run_max[kSegments][kHeadDim], run_min[kSegments][kHeadDim];
  __shared__ float warp_max[kHeadDim / 32];
  const int c = threadIdx.x % kHeadDim, seg = threadIdx.x / kHeadDim;
  const int64_t bh = static_cast<int64_t>(blockIdx.y) * a.v.heads + blockIdx.x;
  const int run = (a.nchunks + kSegments - 1) / kSegments;
  const int ch_end = min(a.nchunks, (seg + 1) * run);
  float k_sum = 0.0f, v_sum = 0.0f, v_max = -INFINITY, v_min = INFINITY;
#pragma unroll 4
  for (int ch = seg * run; ch < ch_end; ++ch) {
    const int64_t i = (bh * a.nchunks + ch) * kHeadDim + c;
    if (a.smooth_k) k_sum = __fadd_rn(k_sum, a.k_part_sum[i]);
    v_sum = __fadd_rn(v_sum, a.v_part_sum[i]);
    v_max = fmaxf(v_max, a.v_part_max[i]);
    v_min = fminf(v_min, a.v_part_min[i]);
  }
  run_k[seg][c] = k_sum, run_v[seg][c] = v_sum, run_max[seg][c] = v_max, run_min[seg][c] = v_min;
  __syncthreads();

  float amax = 0.0f, k_mean = 0.0f, v_mean = 0.0f;
  if (seg == 0) {
    k_sum = 0.0f, v_sum = 0.0f;
#pragma unroll
    for (int r = 0; r < kSegments; ++r) {
      k_sum = __fadd_rn(k_sum, run_k[r][c]);
      v_sum = __fadd_rn(v_sum, run_v[r][c]);
      v_max = fmaxf(v_max, run_max[r][c]);
      v_min = fminf(v_min, run_min[r][c]);
    }
    const float n = static_cast<float>(a.v.seqlen);
    k_mean = a.smooth_k ? __fdiv_rn(k_sum, n) : 0.0f;
    v_mean = a.smooth_v ? __fdiv_rn(v_sum, n) : 0.0f;
    amax = a.smooth_v ? fmaxf(__fsub_rn(v_max, v_mean), __fsub_rn(v_mean, v_min))
                      : fmaxf(v_max, -v_min);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
      const float other = __shfl_xor_sync(~0u, amax, off);
      if (a.v_scale_per_head) amax = fmaxf(amax, other);
    }
    if (c % 32 == 0) warp_max[c / 32] = amax;
  }
  __syncthreads();
  if (seg != 0) return;
  if (a.v_scale_per_head) {
    amax = fmaxf(fmaxf(warp_max[0], warp_max[1]), fmaxf(warp_max[2], warp_max[3]));
  }
  const GroupScale g = group_scale(amax);
  const int64_t o = bh * kHeadDim + c;
  a.k_mean[o] = k_mean;
  a.v_mean[o] = v_mean;
  a.v_descale[o] = g.descale;
  a.v_inv[o] = g.inv;
}

}  // namespace

cudaError_t launch_kv_stats(const KvStatsArgs& args, cudaStream_t stream) {
  const int64_t triples = static_cast<int64_t>(args.v.batch) * args.v.heads * args.nchunks;
  const dim3 grid(static_cast<unsigned>((triples + kChunksPerCta - 1) / kChunksPerCta),
                  args.smooth_k ? 2 : 1);
  kv_partial_stats_kernel<<<grid, kStatsThreads, 0, stream>>>(args);
  kv_finalize_kernel<<<dim3(args.v.heads, args.v.batch), kFinalizeThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace fp8attn::quant
