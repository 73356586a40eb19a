// fp8attn_rope_bf16 (include/fp8attn/rope.h): the rotary embedding alone, in place on BF16. The
// same FP32 operations as the rope entry (quant/rope.cuh), rounded once to BF16. A thread takes
// 8 channel pairs (c, c + 64) of one row: two 16-byte loads and stores of the row, the 8 table
// entries of cos and of sin (L2 hits: every head of a position reads the same table row).
#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "common/status.h"
#include "fp8attn/rope.h"
#include "quant/plan.h"
#include "quant/rope.cuh"

using namespace fp8attn::quant;

namespace {

constexpr int kThreads = 256;
constexpr int kRunsPerHalf = kRopeHalf / 8;  // 8 threads a row

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);  // .x = lo (low half), RNE
  return *reinterpret_cast<const uint32_t*>(&p);
}

__global__ void __launch_bounds__(kThreads) rope_bf16_kernel(Bf16Input x, RopeRows rope,
                                                             int64_t total) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (n >= total) return;
  const int run = static_cast<int>(n % kRunsPerHalf);
  int64_t r = n / kRunsPerHalf;
  const int h = static_cast<int>(r % x.heads);
  r /= x.heads;
  const int s = static_cast<int>(r % x.seqlen);
  const int b = static_cast<int>(r / x.seqlen);
  uint16_t* row = const_cast<uint16_t*>(x.data) + b * x.stride_b + s * x.stride_s + h * x.stride_h;
  uint4* lo_p = reinterpret_cast<uint4*>(row + 8 * run);
  uint4* hi_p = reinterpret_cast<uint4*>(row + kRopeHalf + 8 * run);
  float a[8], c[8], sn[8], out_lo[8], out_hi[8];
  float bv[8];
  bf16x8_to_float(*lo_p, a);
  bf16x8_to_float(*hi_p, bv);
  const int64_t e = static_cast<int64_t>(rope.pos0 + s) * kRopeHalf + 8 * run;
  const float4* cp = reinterpret_cast<const float4*>(rope.cos + e);
  const float4* sp = reinterpret_cast<const float4*>(rope.sin + e);
  const float4 c0 = cp[0], c1 = cp[1], s0 = sp[0], s1 = sp[1];
  c[0] = c0.x, c[1] = c0.y, c[2] = c0.z, c[3] = c0.w, c[4] = c1.x, c[5] = c1.y, c[6] = c1.z;
  c[7] = c1.w;
  sn[0] = s0.x, sn[1] = s0.y, sn[2] = s0.z, sn[3] = s0.w, sn[4] = s1.x, sn[5] = s1.y;
  sn[6] = s1.z, sn[7] = s1.w;
#pragma unroll
  for (int j = 0; j < 8; ++j) {  // quant/rope.cuh rope_runs, the same two roundings
    out_lo[j] = __fmaf_rn(a[j], c[j], -__fmul_rn(bv[j], sn[j]));
    out_hi[j] = __fmaf_rn(bv[j], c[j], __fmul_rn(a[j], sn[j]));
  }
  *lo_p = make_uint4(pack_bf16x2(out_lo[0], out_lo[1]), pack_bf16x2(out_lo[2], out_lo[3]),
                     pack_bf16x2(out_lo[4], out_lo[5]), pack_bf16x2(out_lo[6], out_lo[7]));
  *hi_p = make_uint4(pack_bf16x2(out_hi[0], out_hi[1]), pack_bf16x2(out_hi[2], out_hi[3]),
                     pack_bf16x2(out_hi[4], out_hi[5]), pack_bf16x2(out_hi[6], out_hi[7]));
}

}  // namespace

extern "C" fp8attn_status fp8attn_rope_bf16(const fp8attn_bf16_tensor* x,
                                            const fp8attn_rope_tables* rope, int32_t pos0,
                                            void* stream) {
  fp8attn::clear_error();
  if (fp8attn_status s = check_tensor(x, "x"); s != FP8ATTN_SUCCESS) return s;
  if (rope == nullptr) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "rope: tables struct is null");
  // The tables' checks with the call's positions (q_pos0 = pos0, one row set).
  fp8attn_rope_tables r = *rope;
  r.q_pos0 = r.k_pos0 = pos0;
  if (fp8attn_status s = fp8attn_check_rope_tables(&r, x->seqlen, x->seqlen); s != FP8ATTN_SUCCESS) {
    return s;
  }
  if (fp8attn_status s = check_device(); s != FP8ATTN_SUCCESS) return s;
  const int64_t total = static_cast<int64_t>(x->batch) * x->seqlen * x->heads * kRunsPerHalf;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  if (blocks >= (int64_t{1} << 31)) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "rope_bf16: tensor too large for one grid");
  }
  rope_bf16_kernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                     static_cast<cudaStream_t>(stream)>>>(input_of(*x), RopeRows{r.cos, r.sin, pos0},
                                                          total);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return cuda_fail(e, "rope_bf16");
  return FP8ATTN_SUCCESS;
}
