// The first fused pass for Q and K (FP8ATTN_QUANT_VARIANT=v1; the default is
// quant/rows_tile.cuh): read each BF16 row once, rotate (Hadamard), smooth (K, in the rotated
// basis), take the amax of its scale group (or the known per-head scale), write E4M3 and the
// descale; for Q also lse_bias = scale * q . k_mean. 8 lanes per row, lane l holding channels
// 16 l .. 16 l + 15; one CTA per 128 rows of a (batch, head).
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

  float amax[kPasses];
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const bool valid = s_base + p * kRowsPerPass < a.x.seqlen;
    if (a.rotate) hadamard_row(x[p], lane8, a.negate_bits);
    if (a.mean != nullptr) {
      const float* m = a.mean + bh * kHeadDim + c0;
#pragma unroll
      for (int i = 0; i < 16; ++i) x[p][i] = __fsub_rn(x[p][i], __ldg(m + i));
    }
    amax[p] = 0.0f;
    if (valid) {
#pragma unroll
      for (int i = 0; i < 16; ++i) amax[p] = fmaxf(amax[p], fabsf(x[p][i]));
    }
  }

  if (a.lse_bias != nullptr) {
    // model/prepass.cc lse_dot_128 on the (rotated) q: chains of 8 channels (this lane holds
    // chains 2 lane8 and 2 lane8 + 1), every lane gathers the row's 16 chain sums and adds them
    // as t_j = (s_j + s_4+j) + (s_8+j + s_12+j), (t_0 + t_1) + (t_2 + t_3).
    const float* km = a.k_mean ? a.k_mean + (static_cast<int64_t>(b) * (a.x.heads / a.heads_per_kv) +
                                             head / a.heads_per_kv) * kHeadDim + c0
                               : nullptr;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      float dot = 0.0f;
      if (km) {
        float lo = 0.0f, hi = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) lo = __fmaf_rn(x[p][i], __ldg(km + i), lo);
#pragma unroll
        for (int i = 0; i < 8; ++i) hi = __fmaf_rn(x[p][8 + i], __ldg(km + 8 + i), hi);
        float chain[16];
#pragma unroll
        for (int l = 0; l < 8; ++l) {
          chain[2 * l] = __shfl_sync(0xFFFFFFFFu, lo, l, kLanesPerRow);
          chain[2 * l + 1] = __shfl_sync(0xFFFFFFFFu, hi, l, kLanesPerRow);
        }
        float t[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          t[j] = __fadd_rn(__fadd_rn(chain[j], chain[4 + j]), __fadd_rn(chain[8 + j], chain[12 + j]));
        }
        dot = __fadd_rn(__fadd_rn(t[0], t[1]), __fadd_rn(t[2], t[3]));
        if (a.rotate) dot = __fmul_rn(dot, kHadamardDescale);
        dot = __fmul_rn(a.softmax_scale, dot);
      }
      const int s = s_base + p * kRowsPerPass;
      if (lane8 == 0 && s < a.x.seqlen) a.lse_bias[bh * a.x.seqlen + s] = dot;
    }
  }

  // amax over the scale group: the 8 lanes of a row, or all 128 rows of the CTA; or known.
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
#pragma unroll
    for (int off = kLanesPerRow / 2; off > 0; off /= 2) {
      amax[p] = fmaxf(amax[p], __shfl_xor_sync(~0u, amax[p], off));
    }
  }
  if (a.group_rows == kRowsPerCta) {
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

  const float known_inv = a.group_rows == 0 ? __ldg(a.scale_inv + bh) : 1.0f;
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int s = s_base + p * kRowsPerPass;
    GroupScale g{known_inv, 1.0f};
    if (a.group_rows != 0) {
      g = group_scale(amax[p]);
      g.descale = __fmul_rn(g.descale, a.descale_factor);
    }
    if (s < a.x.seqlen) {
      const int64_t row = (static_cast<int64_t>(b) * a.x.seqlen + s) * a.x.heads + head;
      *reinterpret_cast<uint4*>(a.out + row * kHeadDim + c0) = quantize16(x[p], g.inv);
      if (a.descale_per_row && lane8 == 0) a.descale[bh * a.x.seqlen + s] = g.descale;
    }
    if (a.group_rows != 0 && !a.descale_per_row && p == 0 && threadIdx.x == 0) {
      a.descale[bh * gridDim.x + tile] = g.descale;
    }
  }
}

}  // namespace

cudaError_t launch_quantize_rows_v1(const RowQuantArgs& args, cudaStream_t stream) {
  const dim3 grid((args.x.seqlen + kRowsPerCta - 1) / kRowsPerCta, args.x.heads, args.x.batch);
  quantize_rows_kernel<<<grid, kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace fp8attn::quant
