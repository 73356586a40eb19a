// Device pieces shared by the pre-pass kernels. Every FP32 operation here has a twin in
// model/prepass.cc: keep the two in the same order (docs/prepass.md).
#pragma once

#include <cfloat>
#include <cstdint>

#include "quant/lanes.h"

namespace fp8attn::quant {

inline constexpr float kE4M3Max = 448.0f;
// H_128 is applied unnormalized (sqrt(128) x an orthogonal rotation) on both Q and K; the
// product's 128 is taken out of K's descale, exactly (a power of two).
inline constexpr float kHadamardDescale = 0.0078125f;

struct GroupScale {
  float inv, descale;
};

// Multiply by inv to quantize, by descale to dequantize. Below 2^-100 the reciprocal could
// overflow; such a group quantizes to zeros with scale 1 (so does amax = 0). An infinite or NaN
// amax (an Inf in the group, or a NaN mean from smoothing) gives NaN scales, so the whole group
// and every attention row that reads it come out NaN: loud, never saturated to a finite +-448
// (docs/reliability.md). A NaN element needs nothing: it quantizes to the E4M3 NaN.
__device__ __forceinline__ GroupScale group_scale(float amax) {
  if (!(amax <= FLT_MAX)) return {__int_as_float(0x7fffffff), __int_as_float(0x7fffffff)};
  if (!(amax >= 0x1p-100f)) return {1.0f, 1.0f};
  return {__fdiv_rn(kE4M3Max, amax), __fdiv_rn(amax, kE4M3Max)};
}

// The amax of x - mean over all rows of a channel from its max and min (exact: rounding is
// monotone), or of x itself when not smoothed.
__device__ __forceinline__ float channel_amax(float max, float min, float mean, bool smoothed) {
  return smoothed ? fmaxf(__fsub_rn(max, mean), __fsub_rn(mean, min)) : fmaxf(max, -min);
}

// Two floats -> two E4M3 codes (RNE, saturating to +-448), `lo` in the low byte.
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

// 16 floats * inv -> 16 E4M3 codes in channel order (byte i of the result = value i).
__device__ __forceinline__ uint4 quantize16(const float (&x)[16], float inv) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    w[i] = e4m3x2(__fmul_rn(x[4 * i], inv), __fmul_rn(x[4 * i + 1], inv)) |
           (e4m3x2(__fmul_rn(x[4 * i + 2], inv), __fmul_rn(x[4 * i + 3], inv)) << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// 8 floats * inv -> 8 E4M3 codes (byte i = value i).
__device__ __forceinline__ uint2 quantize8(const float* x, float inv) {
  uint32_t w[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    w[i] = e4m3x2(__fmul_rn(x[4 * i], inv), __fmul_rn(x[4 * i + 1], inv)) |
           (e4m3x2(__fmul_rn(x[4 * i + 2], inv), __fmul_rn(x[4 * i + 3], inv)) << 16);
  }
  return make_uint2(w[0], w[1]);
}

// Eight BF16 codes packed in a uint4 -> floats (exact).
__device__ __forceinline__ void bf16x8_to_float(uint4 u, float* out) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(w[i] << 16);
    out[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

// Eight BF16 codes with sign flips: mask word i holds bit 15 / 31 to negate value 2i / 2i + 1
// (negating a BF16 code is exact, so flipping before the conversion equals flipping after).
__device__ __forceinline__ void bf16x8_to_float_signed(uint4 u, const uint32_t* mask, float* out) {
  const uint32_t w[4] = {u.x ^ mask[0], u.y ^ mask[1], u.z ^ mask[2], u.w ^ mask[3]};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(w[i] << 16);
    out[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

// 16 consecutive BF16 values (32 bytes, 16-byte aligned) -> floats.
__device__ __forceinline__ void load_bf16x16(const uint16_t* p, float (&out)[16]) {
  const uint4* v = reinterpret_cast<const uint4*>(p);
  const uint4 a = __ldg(v), b = __ldg(v + 1);
  bf16x8_to_float(a, out);
  bf16x8_to_float(b, out + 8);
}

// 16 bytes of BF16 codes, loaded here: volatile, so that the compiler keeps the place in the
// pipeline the code chose (n loads in flight) instead of hoisting every later load to the top
// of an unrolled loop, which costs registers, occupancy or spills.
__device__ __forceinline__ uint4 ld_u32x4_here(const uint16_t* p) {
  uint4 r;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

// The same load, coherent (no .nc): for data the previous grid of the stream may still be
// writing when a grid launched with quant/pdl.h's launch_after starts. ptxas may move an .nc
// load (read-only for the kernel's whole life) above ptx::wait_for_previous_grid(); not this one.
__device__ __forceinline__ uint4 ld_u32x4_coherent_here(const uint16_t* p) {
  uint4 r;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

// One float / four floats (16-byte aligned) written by the previous kernel (the statistics'
// finalize step): coherent loads, after ptx::wait_for_previous_grid().
__device__ __forceinline__ float ld_f32_coherent(const float* p) {
  float r;
  asm volatile("ld.global.f32 %0, [%1];" : "=f"(r) : "l"(p));
  return r;
}
// The max of one value per thread over a CTA of kHeadDim threads (order-free), through
// warp_max[kHeadDim / 32] in shared memory (which a previous call may still be reading).
__device__ __forceinline__ float cta_max(float m, float* warp_max) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
  __syncthreads();
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  m = warp_max[0];
#pragma unroll
  for (int w = 1; w < kHeadDim / 32; ++w) m = fmaxf(m, warp_max[w]);
  return m;
}
__device__ __forceinline__ float4 ld_f32x4_coherent(const float* p) {
  float4 r;
  asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
               : "l"(p));
  return r;
}

// Values computed before this point: an empty asm that takes and "changes" each value, ordered
// (volatile) before the next volatile load. Without it the compiler moves the conversion of a row
// below the load that refills the row's registers, which then cannot be the same registers: the
// loop ends with copies that wait for every load in flight (docs/prepass.md).
template <int N>
__device__ __forceinline__ void computed_here(float (&v)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(v[i]));
}

// 8 floats from global memory (32-byte aligned), loaded where they are used: volatile, so that
// the compiler neither hoists nor merges the loads of a small per-(b, h) vector (L1 hits) and
// keeps it in 32 registers across a tile instead. Coherent (no .nc): the vector (a mean) comes
// from the statistics' finalize step, which may still run when the kernel starts (quant/pdl.h).
__device__ __forceinline__ void ld_f32x8_here(const float* p, float* out) {
  asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(out[0]), "=f"(out[1]), "=f"(out[2]), "=f"(out[3])
               : "l"(p));
  asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(out[4]), "=f"(out[5]), "=f"(out[6]), "=f"(out[7])
               : "l"(p + 4));
}

// --- Rows held by L consecutive lanes (quant/lanes.h: which channels each lane holds) ---------

// The sign-flip masks of RowLanes<L>, one table per CTA in shared memory: word p of m[lane][hi]
// negates channels RowLanes<L>::channel(hi, lane, 2p) and + 1 (bits 15 and 31, as
// bf16x8_to_float_signed takes them). Loaded per run of 8 channels where it is used
// (sign_masks_here): held in registers across a loop, 16 masks cost the compiler either
// registers or a recomputation from the seed's bits in every iteration (5 instructions a word).
template <int L>
struct SignTable {
  uint4 m[L][RowLanes<L>::kChunks];
};

// Threads 0 .. 4 L kChunks - 1 write one word each; the caller synchronizes before reading.
template <int L>
__device__ __forceinline__ void fill_sign_table(const uint32_t (&neg)[4], SignTable<L>& t) {
  constexpr int kWords = 4 * L * RowLanes<L>::kChunks;
  const int i = static_cast<int>(threadIdx.x);
  if (i >= kWords) return;
  const int lane = i / (4 * RowLanes<L>::kChunks), hi = (i / 4) % RowLanes<L>::kChunks, p = i % 4;
  const int c = RowLanes<L>::channel(hi, lane, 2 * p);
  const int word = c >> 5;  // selects: a dynamic index could put neg in local memory
  uint32_t w = neg[0];
  w = word == 1 ? neg[1] : w;
  w = word == 2 ? neg[2] : w;
  w = word == 3 ? neg[3] : w;
  const uint32_t bits = (w >> (c & 31)) & 3u;  // c even: c and c + 1 in the same word
  reinterpret_cast<uint32_t*>(&t.m[lane][hi])[p] = ((bits & 1u) << 15) | ((bits & 2u) << 30);
}

// All kChunks x 4 mask words of this lane, as SignTable holds them, computed in registers (for a
// thread that keeps them across its rows). Channel RowLanes<L>::channel(hi, lane, 2p) is bit
// 8 lane + 2p of word hi of the seed's bits when 8 L = 32.
template <int L>
__device__ __forceinline__ void sign_masks_of_lane(const uint32_t (&neg)[4], int lane,
                                                   uint32_t (&mask)[RowLanes<L>::kChunks][4]) {
  static_assert(8 * L == 32, "run hi of the L lanes is word hi of the seed's bits");
#pragma unroll
  for (int hi = 0; hi < RowLanes<L>::kChunks; ++hi) {
    const uint32_t w = neg[hi] >> (8 * lane);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const uint32_t bits = (w >> (2 * p)) & 3u;
      mask[hi][p] = ((bits & 1u) << 15) | ((bits & 2u) << 30);
    }
  }
}

// The 4 mask words of run hi of this lane, loaded here (volatile: not hoisted out of a loop).
template <int L>
__device__ __forceinline__ void sign_masks_here(const SignTable<L>& t, int lane, int hi,
                                                uint32_t (&mask)[4]) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(&t.m[lane][hi]));
  asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(mask[0]), "=r"(mask[1]), "=r"(mask[2]), "=r"(mask[3])
               : "r"(addr));
}

// This lane's kChunks runs of 8 BF16 values as floats, each run's sign flips applied first when
// the pass rotates (kRotate; the masks loaded here, per run).
template <int L, int kChunks, bool kRotate>
__device__ __forceinline__ void decode_runs(const uint4 (&raw)[kChunks], const SignTable<L>& signs, int lane,
                                            float* v) {
#pragma unroll
  for (int hi = 0; hi < kChunks; ++hi) {
    if constexpr (kRotate) {
      uint32_t mask[4];
      sign_masks_here<L>(signs, lane, hi, mask);
      bf16x8_to_float_signed(raw[hi], mask, &v[8 * hi]);
    } else {
      bf16x8_to_float(raw[hi], &v[8 * hi]);
    }
  }
}

// The strides 1, 2, 4: inside each run of 8 values.
template <int N>
__device__ __forceinline__ void hadamard_in_runs(float (&x)[N]) {
#pragma unroll
  for (int h = 1; h < 8; h *= 2) {
#pragma unroll
    for (int hi = 0; hi < N / 8; ++hi) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (j & h) continue;
        const float a = x[8 * hi + j], b = x[8 * hi + j + h];
        x[8 * hi + j] = __fadd_rn(a, b);
        x[8 * hi + j + h] = __fsub_rn(a, b);
      }
    }
  }
}

// The Walsh-Hadamard butterflies (after the sign flips) on a row held by L consecutive lanes,
// x[8 hi + j] = channel RowLanes<L>::channel(hi, lane, j). Strides 1, 2, 4 inside the lane's runs
// of 8; 8 .. 4L across lanes; 8L .. 64 across runs; in ascending order, as model/prepass.cc's
// hadamard_rotate_128. At every butterfly (a, b) -> (a + b, a - b), a the lower channel; across
// lanes the lower lane computes a + b = fma(a, 1, b), the upper one a - b = fma(b, -1, a) (a
// product by +-1 is exact, so each is one rounding, as the mirror's add). Every lane of the warp
// must call this (shuffles).
template <int L>
__device__ __forceinline__ void hadamard_lanes(float (&x)[RowLanes<L>::kValues], int lane) {
  constexpr int kChunks = RowLanes<L>::kChunks;
  hadamard_in_runs(x);
#pragma unroll
  for (int m = 1; m < L; m *= 2) {
    const float sign = (lane & m) ? -1.0f : 1.0f;
#pragma unroll
    for (int v = 0; v < RowLanes<L>::kValues; ++v) {
      const float other = __shfl_xor_sync(0xFFFFFFFFu, x[v], m);
      x[v] = __fmaf_rn(x[v], sign, other);
    }
  }
#pragma unroll
  for (int h = 1; h < kChunks; h *= 2) {
#pragma unroll
    for (int hi = 0; hi < kChunks; ++hi) {
      if (hi & h) continue;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float a = x[8 * hi + j], b = x[8 * (hi + h) + j];
        x[8 * hi + j] = __fadd_rn(a, b);
        x[8 * (hi + h) + j] = __fsub_rn(a, b);
      }
    }
  }
}

}  // namespace fp8attn::quant
