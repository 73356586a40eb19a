// The fused pass for Q and K: read each BF16 row once, smooth (K), rotate (Hadamard), take the
// amax of its scale group, write E4M3 and the descale; for Q also lse_bias = scale * q . k_mean.
#include "quant/launch.h"
#include "quant/quant_common.cuh"

namespace fp8attn::quant {
namespace {

constexpr int kRowsPerCta = 128;   // one K scale block (FP8ATTN_K_SCALE_BLOCK)
constexpr int kThreads = 256;
constexpr int kLanesPerRow = 8;    // 16 channels (32 bytes in, 16 bytes out) per thread
constexpr int kRowsPerPass = kThreads / kLanesPerRow;
constexpr int kPasses = kRowsPerCta / kRowsPerPass;

// grid: (ceil(seqlen / 128), heads, batch).
__global__ void __launch_bounds__(kThreads) quantize_rows_kernel(RowQuantArgs a) {
  const int lane8 = threadIdx.x % kLanesPerRow;
  const int c0 = lane8 * 16;
  const int tile = a.reverse_order ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = a.reverse_order ? gridDim.y - 1 - blockIdx.y : blockIdx.y;
  const int b = a.reverse_order ? gridDim.z - 1 - blockIdx.z : blockIdx.z;
  const int s_base = tile * kRowsPerCta + threadIdx.x / kLanesPerRow;
  const int64_t bh = static_cast<int64_t>(b) * a.x.heads + head;
  const uint16_t* src = a.x.data + b * a.x.stride_b + head * a.x.stride_h + c0;

  // All loads first: 8 x 16 bytes in flight per thread.
  float x[kPasses][16];
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int s = s_base + p * kRowsPerPass;
    if (s < a.x.seqlen) {
      load_bf16x16(src + s * a.x.stride_s, x[p]);
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) x[p][i] = 0.0f;
    }
  }

  if (a.lse_bias != nullptr) {
    // Dot product with the unrotated BF16 q: FMA chain per lane, then a tree over the 8 lanes
    // (offsets 4, 2, 1), as model/prepass.cc.
    const float* km = a.k_mean ? a.k_mean + (static_cast<int64_t>(b) * (a.x.heads / a.heads_per_kv) +
                                             head / a.heads_per_kv) * kHeadDim + c0
                               : nullptr;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      float acc = 0.0f;
      if (km) {
#pragma unroll
        for (int i = 0; i < 16; ++i) acc = __fmaf_rn(x[p][i], __ldg(km + i), acc);
#pragma unroll
        for (int off = kLanesPerRow / 2; off > 0; off /= 2) {
          acc = __fadd_rn(acc, __shfl_xor_sync(~0u, acc, off));
        }
      }
      const int s = s_base + p * kRowsPerPass;
      if (lane8 == 0 && s < a.x.seqlen) {
        a.lse_bias[bh * a.x.seqlen + s] = __fmul_rn(a.softmax_scale, acc);
      }
    }
  }

  float amax[kPasses];
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const bool valid = s_base + p * kRowsPerPass < a.x.seqlen;
    if (a.mean != nullptr && valid) {
      const float* m = a.mean + bh * kHeadDim + c0;
#pragma unroll
      for (int i = 0; i < 16; ++i) x[p][i] = __fsub_rn(x[p][i], __ldg(m + i));
    }
    if (a.rotate) hadamard_row(x[p], lane8, a.negate_bits);
    amax[p] = 0.0f;
    if (valid) {
#pragma unroll
      for (int i = 0; i < 16; ++i) amax[p] = fmaxf(amax[p], fabsf(x[p][i]));
    }
  }

  // amax over the scale group: the 8 lanes of a row, or all 128 rows of the CTA.
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
#pragma unroll
    for (int off = kLanesPerRow / 2; off > 0; off /= 2) {
      amax[p] = fmaxf(amax[p], __shfl_xor_sync(~0u, amax[p], off));
    }
  }
  if (a.group_rows != 1) {
    __shared__ float warp_amax[kThreads / 32];
    float m = amax[0];
#pragma unroll
    for (int p = 1; p < kPasses; ++p) m = fmaxf(m, amax[p]);
#pragma unroll
    for (int off = 16; off >= kLanesPerRow; off /= 2) m = fmaxf(m, __shfl_xor_sync(~0u, m, off));
    if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = m;
    __syncthreads();
    m = warp_amax[0];
#pragma unroll
    for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, warp_amax[w]);
#pragma unroll
    for (int p = 0; p < kPasses; ++p) amax[p] = m;
  }

#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int s = s_base + p * kRowsPerPass;
    GroupScale g = group_scale(amax[p]);
    g.descale = __fmul_rn(g.descale, a.descale_factor);
    if (s < a.x.seqlen) {
      const int64_t row = (static_cast<int64_t>(b) * a.x.seqlen + s) * a.x.heads + head;
      *reinterpret_cast<uint4*>(a.out + row * kHeadDim + c0) = quantize16(x[p], g.inv);
      if (a.descale_per_row && lane8 == 0) a.descale[bh * a.x.seqlen + s] = g.descale;
    }
    if (!a.descale_per_row && p == 0 && threadIdx.x == 0) {
      a.descale[bh * gridDim.x + tile] = g.descale;
    }
  }
}

}  // namespace

cudaError_t launch_quantize_rows(const RowQuantArgs& args, cudaStream_t stream) {
  const dim3 grid((args.x.seqlen + kRowsPerCta - 1) / kRowsPerCta, args.x.heads, args.x.batch);
  quantize_rows_kernel<<<grid, kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace fp8attn::quant
