// The first fused pass for V (FP8ATTN_QUANT_VARIANT=v1; the default is quant/vt_tile.cuh): read
// each BF16 row once, subtract the channel mean, scale per channel, convert to E4M3, and write V^T
// (b, h, 128, vt_pad) with the keys of every 32-key group in the order the kernel's PV wgmma wants
// (fp8attn_vt_key_at), zeros from seqlen on, through a byte gather in shared memory.
#include "fp8attn/fp8attn.h"
#include "quant/launch.h"
#include "quant/quant_common.cuh"

namespace fp8attn::quant {
namespace {

constexpr int kKeysPerCta = 128;
constexpr int kThreads = 256;
constexpr int kLanesPerKey = 8;                      // 16 channels per thread on the way in
constexpr int kKeysPerPass = kThreads / kLanesPerKey;
constexpr int kChunksPerRow = kKeysPerCta / 16;      // 16-byte chunks of one V^T row (channel)

// Shared tile: E4M3 [key][channel], 128 bytes per key. The 16-byte chunk q of key r lives at
// chunk q ^ ((r / 16) % 8): the gather below reads 8 keys 16 apart at once, which this spreads
// over 8 different bank groups.
// fp8attn_vt_key_at (fp8attn.h) for the device; the GPU test checks the two agree through the
// CPU mirror, which calls the header's.
__device__ __forceinline__ int vt_key_at(int p) {
  const int half = p / 16, quad = (p % 16) / 4, m = p % 4;
  return half * 16 + (m / 2) * 8 + quad * 2 + (m % 2);
}

__device__ __forceinline__ int tile_offset(int key, int channel) {
  return key * kHeadDim + ((((channel >> 4) ^ (key >> 4)) & 7) << 4) + (channel & 15);
}

// grid: (ceil(vt_pad / 128), heads, batch).
__global__ void __launch_bounds__(kThreads) quantize_vt_kernel(VtQuantArgs a) {
  __shared__ __align__(16) uint8_t tile[kKeysPerCta * kHeadDim];
  const int key_tile = a.reverse_order ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = a.reverse_order ? gridDim.y - 1 - blockIdx.y : blockIdx.y;
  const int b = a.reverse_order ? gridDim.z - 1 - blockIdx.z : blockIdx.z;
  const int64_t bh = static_cast<int64_t>(b) * a.v.heads + head;
  const int key0 = key_tile * kKeysPerCta;
  const int lane8 = threadIdx.x % kLanesPerKey;
  const int c0 = lane8 * 16;
  const uint16_t* src = a.v.data + b * a.v.stride_b + head * a.v.stride_h + c0;

  float mean[16], inv[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    mean[i] = a.v_mean ? __ldg(a.v_mean + bh * kHeadDim + c0 + i) : 0.0f;
    inv[i] = __ldg(a.v_inv + bh * kHeadDim + c0 + i);
  }

  constexpr int kPasses = kKeysPerCta / kKeysPerPass;
  float x[kPasses][16];
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int s = key0 + p * kKeysPerPass + threadIdx.x / kLanesPerKey;
    if (s < a.v.seqlen) {
      load_bf16x16(src + s * a.v.stride_s, x[p]);
    }
  }
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int r = p * kKeysPerPass + threadIdx.x / kLanesPerKey;
    uint4 codes = make_uint4(0, 0, 0, 0);  // padding keys stay zero
    if (key0 + r < a.v.seqlen) {
      uint32_t w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float y[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int k = 4 * i + j;
          const float f = a.v_mean ? __fsub_rn(x[p][k], mean[k]) : x[p][k];
          y[j] = __fmul_rn(f, inv[k]);
        }
        w[i] = e4m3x2(y[0], y[1]) | (e4m3x2(y[2], y[3]) << 16);
      }
      codes = make_uint4(w[0], w[1], w[2], w[3]);
    }
    *reinterpret_cast<uint4*>(tile + tile_offset(r, c0)) = codes;
  }
  __syncthreads();

  // Out: 128 channels x 8 chunks of 16 positions; 8 consecutive threads write one channel's
  // 128 contiguous bytes.
#pragma unroll
  for (int i = 0; i < kHeadDim * kChunksPerRow / kThreads; ++i) {
    const int id = i * kThreads + threadIdx.x;
    const int c = id / kChunksPerRow, j = id % kChunksPerRow;
    const int pos0 = key0 + 16 * j;
    if (pos0 >= a.vt_pad) continue;
    uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int n = 0; n < 16; ++n) {
      const int p = 16 * (j % 2) + n;  // position inside the 32-key group 32 * (j / 2)
      const int key = 32 * (j / 2) + vt_key_at(p);
      w[n / 4] |= static_cast<uint32_t>(tile[tile_offset(key, c)]) << (8 * (n % 4));
    }
    *reinterpret_cast<uint4*>(a.vt + (bh * kHeadDim + c) * a.vt_pad + pos0) =
        make_uint4(w[0], w[1], w[2], w[3]);
  }
}

}  // namespace

cudaError_t launch_quantize_vt_v1(const VtQuantArgs& args, cudaStream_t stream) {
  const dim3 grid((args.vt_pad + kKeysPerCta - 1) / kKeysPerCta, args.v.heads, args.v.batch);
  quantize_vt_kernel<<<grid, kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace fp8attn::quant
