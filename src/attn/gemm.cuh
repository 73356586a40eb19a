// The consumers' two tensor-core products: S = Q K^T (issue_qk) and P V (issue_pv), P's register
// fragments, and the accumulation of O across key blocks (PVAccumulator: one- or two-level, l
// from the tensor core).
#pragma once
#include <cstdint>

#include "attn/config.h"
#include "attn/pipeline.cuh"
#include "attn/softmax.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"
#include "ptx/wgmma_f16.cuh"
#include "ptx/wgmma_fp8.cuh"

namespace fp8attn::attn {

template <class Cfg>
using Softmax = OnlineSoftmax<Cfg::kBlockN, Cfg::kPolyExpEvery, Cfg::kTcRowSum, Cfg::kExactSoftmax>;

// P as A-fragments of the PV wgmma: E4M3 (4 keys a register), plus the lo term for hi+lo; or
// FP16 (2 keys a register).
// With P in shared memory (Config::kPSmem) no fragment is kept: one unused register.
template <class Cfg>
struct PFragments {
  static constexpr bool kHiLo = Cfg::kP == PPrecision::kE4M3HiLo;
  uint32_t hi[Cfg::kPSmem ? 1 : Cfg::kFP16P ? Cfg::kBlockN / 4 : Cfg::kBlockN / 8];
  uint32_t lo[kHiLo ? Cfg::kBlockN / 8 : 1];
};

// The address of consumer warpgroup wg's P buffer (Config::kPSmem; 0 in the other kernels).
template <class Cfg>
__device__ __forceinline__ uint32_t p_buffer_addr(SharedStorage<Cfg>& sm, int wg) {
  if constexpr (Cfg::kPSmem) return ptx::smem_addr(sm.p.b[wg]);
  else return 0u;
}

// Consumer warpgroup wg's O staging buffer (Config::kTmaStoreO; with P in shared memory, P's
// buffer), or none.
template <class Cfg>
__device__ __forceinline__ uint8_t* o_staging(SharedStorage<Cfg>& sm, int wg) {
  if constexpr (Cfg::kPSmem) return sm.p.b[wg];
  else if constexpr (Cfg::kTmaStoreO) return sm.o[wg];
  else return nullptr;
}

// p (FP32, accumulator layout) -> FP16 in the warpgroup's P buffer (Config::kPSmem), the K-major
// A operand of the SS P V: [kBlockN / 64 halves][64 rows][128 B], 128-byte swizzle (16-byte chunk
// c of row r at chunk c ^ (r % 8)): the epilogue's O staging layout, whose addressing
// (store_o_tma) this repeats, since one helper for both moved the default kernel's key loop by 16
// bytes (its SASS, unmeasured). k-step j (keys 16j..16j+15) is one stmatrix x4 per thread:
// its registers {s[8j], s[8j+1]}, {s[8j+2], s[8j+3]}, {s[8j+4], s[8j+5]}, {s[8j+6], s[8j+7]} are
// the 8 x 8 matrices (rows r0, keys 16j..), (r0 + 8, 16j..), (r0, 16j + 8..), (r0 + 8, 16j + 8..),
// and lane l gives the address of row l % 8 of matrix l / 8. Then made visible to the async proxy;
// the turn's barrier (all 128 threads of the warpgroup) orders every warp's stores before the
// wgmma. The caller has waited for the P V that read the buffer before.
template <class Cfg, int kR = Softmax<Cfg>::kRegs>
__device__ __forceinline__ void store_p_smem(const float (&s)[kR], uint32_t p_addr) {
  static_assert(kR % 8 == 0 && kR <= Softmax<Cfg>::kRegs, "whole 16-key k-steps");
  const int t128 = threadIdx.x % 128, lane = t128 % 32, m = lane / 8;
  const int row = 16 * (t128 / 32) + 8 * (m % 2) + lane % 8;
  const uint32_t row_addr = p_addr + row * 128;
#pragma unroll
  for (int j = 0; j < Cfg::kBlockN / 16; ++j) {
    const int key0 = 16 * j + 8 * (m / 2);
    const uint32_t addr = row_addr + (key0 / 64) * (64 * 128) + ((((key0 % 64) / 8) ^ (row % 8)) << 4);
    if (8 * j < kR) {
      ptx::stmatrix_x4(addr, ptx::pack_f16x2(s[8 * j], s[8 * j + 1]), ptx::pack_f16x2(s[8 * j + 2], s[8 * j + 3]),
                       ptx::pack_f16x2(s[8 * j + 4], s[8 * j + 5]), ptx::pack_f16x2(s[8 * j + 6], s[8 * j + 7]));
    } else {
      ptx::stmatrix_x4(addr, 0u, 0u, 0u, 0u);  // a trimmed block's later keys: P = 0
    }
  }
  // The fence (to the async proxy) comes just before the turn that issues the P V.
}

// p (FP32, in S's registers) -> P's fragments (or, Config::kPSmem, P's buffer at p_addr). kR < the
// block's registers: a trimmed first block, its later k-steps P = 0.
template <class Cfg, int kR = Softmax<Cfg>::kRegs>
__device__ __forceinline__ void make_p_fragments(const float (&s)[kR], PFragments<Cfg>& pf, uint32_t p_addr = 0) {
  if constexpr (Cfg::kPSmem) {
    store_p_smem<Cfg, kR>(s, p_addr);
  } else if constexpr (Cfg::kFP16P) {
    Softmax<Cfg>::template to_f16_fragments<kR>(s, pf.hi);
  } else {
    Softmax<Cfg>::template to_e4m3_fragments<PFragments<Cfg>::kHiLo, kR>(s, pf.hi, pf.lo);
  }
}

// The V operand of the P V product and its barriers: the TMA's E4M3 V^T ring; with FP16 P from
// E4M3 V^T the converters' FP16 ring (whose E4M3 slots the converters release themselves); with
// FP16 V^T the FP16 ring that the TMA fills itself (v16 with the TMA's v_full / v_empty).
template <class Cfg>
struct PVOperand {
  __device__ __forceinline__ static uint64_t* full(SharedStorage<Cfg>& sm, int s) {
    if constexpr (Cfg::kConvertV) return &sm.v16_full[s];
    else return &sm.v_full[s];
  }
  __device__ __forceinline__ static uint64_t* empty(SharedStorage<Cfg>& sm, int s) {
    if constexpr (Cfg::kConvertV) return &sm.v16_empty[s];
    else return &sm.v_empty[s];
  }
  __device__ __forceinline__ static uint32_t addr(SharedStorage<Cfg>& sm, int s) {
    if constexpr (Cfg::kFP16P) return ptx::smem_addr(sm.v16[s]);
    else return ptx::smem_addr(sm.v[s]);
  }
};

// S = Q_wg K^T: 4 k-steps of 32 along d (both tiles: 128-byte rows, 128-byte swizzle).
template <int kRegs>
__device__ __forceinline__ void issue_qk(float (&s)[kRegs], uint32_t q_addr, uint32_t k_addr) {
  using D = ptx::DescKMajor<128>;
  const uint32_t dq = D::lo(q_addr), dk = D::lo(k_addr);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) ptx::wgmma_ss(s, D::make(dq + 2 * kk), D::make(dk + 2 * kk), kk > 0);
}

// acc (+)= P V_n: kBlockN/32 k-steps of 32 keys, two per 64-key V^T atom. kAccumulate = false
// starts a fresh accumulator (two-level accumulation).
// With P hi+lo, each k-step issues the lo term too, into the same accumulator.
// FP16 P: kBlockN/16 k-steps of 16 keys, four per 64-key FP16 half (32 bytes each inside the
// 128-byte swizzle row, as the QK^T's k-steps).
// kAccRegs = 68 (Config::kFusedRowSum): m64n136k32, the atom's 8 ones rows after its 128 channels.
template <class Cfg, bool kAccumulate, int kAccRegs>
__device__ __forceinline__ void issue_pv(float (&acc)[kAccRegs], const PFragments<Cfg>& pf, uint32_t v_addr) {
  static_assert(kAccRegs == 64 || (kAccRegs == 68 && Cfg::kFusedRowSum),
                "m64n128 (O), or m64n136 (O and the row sums) for l from the tensor core");
  if constexpr (Cfg::kFP16P) {
    using D = ptx::DescKMajor<128>;
    const uint32_t dv0 = D::lo(v_addr);  // once: each k-step adds its offset / 16 (no carry)
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockN / 16; ++kk) {
      const uint64_t dv = D::make(dv0 + ((kk / 4) * Cfg::kV16HalfStride + (kk % 4) * 32) / 16);
      const uint32_t a[4] = {pf.hi[4 * kk], pf.hi[4 * kk + 1], pf.hi[4 * kk + 2], pf.hi[4 * kk + 3]};
      ptx::wgmma_rs_f16(acc, a, dv, kAccumulate || kk > 0);
    }
  } else {
    using D = ptx::DescKMajor<64>;
    const uint32_t dv0 = D::lo(v_addr);
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockN / 32; ++kk) {
      const uint64_t dv = D::make(dv0 + ((kk / 2) * Cfg::kVAtomStride + (kk % 2) * 32) / 16);
      const uint32_t a[4] = {pf.hi[4 * kk], pf.hi[4 * kk + 1], pf.hi[4 * kk + 2], pf.hi[4 * kk + 3]};
      ptx::wgmma_rs(acc, a, dv, kAccumulate || kk > 0);
      if constexpr (Cfg::kP == PPrecision::kE4M3HiLo) {
        const uint32_t b[4] = {pf.lo[4 * kk], pf.lo[4 * kk + 1], pf.lo[4 * kk + 2], pf.lo[4 * kk + 3]};
        ptx::wgmma_rs(acc, b, dv, 1);
      }
    }
  }
}

// acc (+)= P V_n with P from the warpgroup's buffer (Config::kPSmem): kBlockN/16 k-steps of 16
// keys, four per 64-key half of both P (64 rows x 128 B) and V (kV16HalfStride). Apart from
// issue_pv's FP16 loop on purpose: one loop with the two A sources put 6 local loads and stores
// back into this kernel's steady loop (ptxas at 160 registers).
template <class Cfg, int kAccRegs>
__device__ __forceinline__ void issue_pv_smem(float (&acc)[kAccRegs], uint32_t p_addr, uint32_t v_addr) {
  static_assert(Cfg::kPSmem && kAccRegs == 68, "P in shared memory: the fused row sums' m64n136k16");
  using D = ptx::DescKMajor<128>;
  const uint32_t dp0 = D::lo(p_addr), dv0 = D::lo(v_addr);
#pragma unroll
  for (int kk = 0; kk < Cfg::kBlockN / 16; ++kk) {
    const uint64_t dp = D::make(dp0 + ((kk / 4) * (64 * 128) + (kk % 4) * 32) / 16);
    const uint64_t dv = D::make(dv0 + ((kk / 4) * Cfg::kV16HalfStride + (kk % 4) * 32) / 16);
    ptx::wgmma_ss_f16(acc, dp, dv, 1);
  }
}

// The P V product of one block and its merge into the running O, in the two ways Config allows:
//   two-level: O_n into fresh registers, then O = O * alpha + O_n in FP32: the wgmma's
//              reduced-precision accumulation never spans more than one block;
//   one-level: O *= alpha, then the wgmma accumulates P V_n into O itself (as FlashAttention-3):
//              fewer live registers, so 192/224-key blocks fit; the tensor core's truncating
//              accumulation spans all keys.
// l: with kTcRowSum (the E4M3 one-level default) the tensor core sums the rounded P that
// weighted V, per block, in one of two ways:
//   separate: each P V k-step also issues m64n8k32 of P against a block of E4M3 ones (sm.ones)
//             into l_blk, a fresh accumulator per block;
//   fused (Config::kFusedRowSum): the P V k-step itself is m64n136k32, whose last 8 columns are
//             P against the E4M3 ones that follow each V^T atom (Config::kVAtomStride); their 4
//             registers (o[64..67]) restart from 0 every block.
// Either way the block's sums are added to the FP32 l by the softmax (one accumulation across
// all blocks would sum in the tensor core's truncating accumulation and is biased). Without
// kTcRowSum the softmax sums the FP32 p itself.
template <class Cfg>
struct PVAccumulator {
  static constexpr bool kTwoLevel = Cfg::kTwoLevel;
  static constexpr int kRegs = 64;
  static constexpr bool kTcRowSum = Softmax<Cfg>::kTcRowSum;
  static constexpr bool kFused = Cfg::kFusedRowSum;
  static constexpr int kAccRegs = kRegs + (kFused ? 4 : 0);  // the P V product's accumulator
  float o[kAccRegs];  // O; fused: then this block's row sums of P
  float o_blk[kTwoLevel ? kRegs : 1];
  float l_blk[kTcRowSum && !kFused ? 4 : 1];  // separate: this block's row sums of P
  uint32_t ones_addr = 0;                      // separate: sm.ones

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < kRegs; ++i) o[i] = 0.f;
  }
  // Before the wgmma fence (O is not an operand of the QK^T in flight). One-level rescales O here,
  // skipped when no row of the warp raised its max (alpha == 1): after the first blocks the max
  // rarely moves, since blocks are visited last to first and the sink block comes last.
  __device__ __forceinline__ void before_issue(const float (&alpha)[2]) {
    if constexpr (!kTwoLevel) {
      if (__any_sync(0xffffffff, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
        for (int i = 0; i < 64; ++i) o[i] *= alpha[(i >> 1) & 1];
      }
    }
    // Fused: the row sums restart from 0. min(|x|, 0) is +0 for every x, NaN and the registers'
    // value before a tile's first block included; assigning the constant 0 instead (here, or
    // once per tile) made ptxas serialize every wgmma of the kernel (C7511).
    if constexpr (kFused) {
#pragma unroll
      for (int i = kRegs; i < kAccRegs; ++i) o[i] = fminf(fabsf(o[i]), 0.f);
    }
  }
  // p_addr: the warpgroup's P buffer (Config::kPSmem only).
  __device__ __forceinline__ void issue(const PFragments<Cfg>& pf, uint32_t v_addr, uint32_t p_addr = 0) {
    if constexpr (Cfg::kPSmem) issue_pv_smem<Cfg>(o, p_addr, v_addr);
    else if constexpr (kTwoLevel) issue_pv<Cfg, false>(o_blk, pf, v_addr);
    else issue_pv<Cfg, true>(o, pf, v_addr);
    if constexpr (kTcRowSum && !kFused) {
      const uint64_t d1 = ptx::make_desc_kmajor<64>(ones_addr);  // ones_addr: warp-uniform
#pragma unroll
      for (int kk = 0; kk < Cfg::kBlockN / 32; ++kk) {
        const uint32_t a[4] = {pf.hi[4 * kk], pf.hi[4 * kk + 1], pf.hi[4 * kk + 2], pf.hi[4 * kk + 3]};
        ptx::wgmma_rs(l_blk, a, d1, kk > 0);
      }
    }
  }
  // This block's row sums of P (kTcRowSum, after the wait), as the m64n8 columns lay them out:
  // registers 0, 1 hold row r0's (twice), 2, 3 row r0 + 8's (fused: o[64..67]).
  __device__ __forceinline__ float block_sum_r0() const {
    if constexpr (kFused) return o[kRegs];
    else return l_blk[0];
  }
  __device__ __forceinline__ float block_sum_r8() const {
    if constexpr (kFused) return o[kRegs + 2];
    else return l_blk[2];
  }
  // After the PV wgmma has completed.
  __device__ __forceinline__ void after_wait(const float (&alpha)[2]) {
    if constexpr (kTwoLevel) {
#pragma unroll
      for (int i = 0; i < kRegs; ++i) {
        ptx::fence_operand(o_blk[i]);
        o[i] = fmaf(o[i], alpha[(i >> 1) & 1], o_blk[i]);
      }
    } else {
      ptx::fence_regs(o);
    }
    if constexpr (kTcRowSum && !kFused) ptx::fence_regs(l_blk);
  }
};

using ptx::fence_regs;
// P's fragments (and the lo term's, with hi+lo): pinned around the P V wgmma that reads them.
template <class Cfg>
__device__ __forceinline__ void fence_regs(PFragments<Cfg>& pf) {
  fence_regs(pf.hi);
  if constexpr (PFragments<Cfg>::kHiLo) fence_regs(pf.lo);
}

}  // namespace fp8attn::attn
