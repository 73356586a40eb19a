// The attention kernel: one producer warpgroup (TMA loads) and two consumer warpgroups (wgmma +
// online softmax), wired in one launch.
//
//   producer : Q tile once per tile; then K_n, V_n for n = n_hi-1 down to n_lo into a
//              kStages-deep ring of shared-memory buffers (mbarrier full/empty pairs).
//   converter: FP8ATTN_P_FP16 only: the producer warpgroup's warps 1..3 turn each E4M3 V^T block
//              into FP16 (un-permuted keys, 128-byte swizzle) in a second ring (v16).
//   consumer : per block n, S = Q K_n^T (SS wgmma) -> softmax -> P (E4M3 or FP16, registers)
//              -> O_n = P V_n (RS wgmma, fresh accumulator) -> O = O * alpha + O_n.
//              Intra-warpgroup overlap: the QK^T of block n is issued together with the PV of
//              block n+1, so the softmax of block n runs while the PV is on the tensor cores
//              (one-level kernels; the two-level ones wait for the PV: key_blocks_serial).
//              Ping-pong: the two warpgroups take turns issuing (named barriers), so one's
//              softmax also runs under the other's GEMMs.
//   epilogue : O * v_descale / l (+ o_bias) -> BF16, LSE -> FP32, straight from registers.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>

#include "attn/config.h"
#include "attn/params.h"
#include "attn/scheduler.cuh"
#include "attn/softmax.cuh"
#include "attn/v16_layout.h"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"
#include "ptx/convert.cuh"
#include "ptx/wgmma_f16.cuh"
#include "ptx/wgmma_fp8.cuh"

namespace fp8attn::attn {

template <class Cfg>
using Softmax = OnlineSoftmax<Cfg::kBlockN, Cfg::kPolyExpEvery, Cfg::kVariant>;

// Position in a ring of kStages buffers and the parity of the barrier phase to wait for.
// Ring position of the it-th block through a kStages-deep ring, and the parity of its phase.
template <int kStages>
struct KVCounter {
  __device__ __forceinline__ static int stage_of(uint32_t it) { return it % kStages; }
  __device__ __forceinline__ static uint32_t phase_of(uint32_t it) { return (it / kStages) & 1; }
};

template <int kStages>
struct PipelineState {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Producer: one thread issues every TMA load.
template <class Cfg>
__device__ __forceinline__ void producer(const KernelParams& p, SharedStorage<Cfg>& sm) {
  PipelineState<Cfg::kStages> kv;  // K and V advance together
  PipelineState<2> sched;
  PipelineState<2> qs;  // Q buffer of the next tile with keys to visit
  for (int t = TileScheduler::first();; ) {
    // Publish the tile (or the end) to the consumers.
    // The producer decodes the tile (integer divisions) once for all 256 consumer threads.
    const Tile tile = t < p.num_tiles ? TileScheduler::at(p, t) : Tile{-1, 0, 0};
    ptx::mbar_wait(&sm.tile_empty[sched.stage], sched.phase ^ 1);
    sm.tile[sched.stage] = tile;
    ptx::mbar_arrive(&sm.tile_full[sched.stage]);
    sched.advance();
    if (t >= p.num_tiles) break;
    const KeyRange kr = key_range<Cfg::kBlockM, Cfg::kBlockN>(p, tile.m_block);
    if (kr.n_hi <= kr.n_lo) {
      t = TileScheduler::next(p);
      continue;
    }
    const int kv_head = tile.head / p.q_per_kv;
    // Q double buffer: the next tile's Q is requested as soon as this tile's K/V loads are
    // issued (a few blocks before its end), not when its last QK^T has completed.
    ptx::mbar_wait(&sm.q_empty[qs.stage], qs.phase ^ 1);
    ptx::mbar_arrive_expect_tx(&sm.q_full[qs.stage], Cfg::kTileBytesQ);
    ptx::tma_load_4d(sm.q[qs.stage], &p.tma_q, &sm.q_full[qs.stage], 0, tile.head,
                     tile.m_block * Cfg::kBlockM, tile.batch);
    qs.advance();
    // Not unrolled: the producer runs in 24 registers (setmaxnreg), and ptxas's 4x unroll of this
    // loop spilled the tile-level state (ring positions, tile id) to local memory.
#pragma unroll 1
    for (int n = kr.n_hi - 1; n >= kr.n_lo; --n) {
      ptx::mbar_wait(&sm.k_empty[kv.stage], kv.phase ^ 1);
      ptx::mbar_arrive_expect_tx(&sm.k_full[kv.stage], Cfg::kTileBytesK);
      ptx::tma_load_4d(sm.k[kv.stage], &p.tma_k, &sm.k_full[kv.stage], 0, kv_head,
                       n * Cfg::kBlockN, tile.batch);
      ptx::mbar_wait(&sm.v_empty[kv.stage], kv.phase ^ 1);
      ptx::mbar_arrive_expect_tx(&sm.v_full[kv.stage], Cfg::kTileBytesV);
#pragma unroll
      for (int a = 0; a < Cfg::kVAtoms; ++a)
        ptx::tma_load_4d(sm.v[kv.stage] + a * Cfg::kVAtomBytes, &p.tma_vt, &sm.v_full[kv.stage],
                         n * Cfg::kBlockN + a * Cfg::kVAtomKeys, 0, kv_head, tile.batch);
      kv.advance();
    }
    // Claimed only now, when this tile's loads are all issued (the consumers are a few blocks
    // from its end), so no CTA sits on a claimed tile while others run dry.
    t = TileScheduler::next(p);
  }
}

// ---------------------------------------------------------------------------------------------
// FP16 P: V's conversion, by the producer warpgroup's warps 1..3 (96 threads, idle otherwise).
// Per V block, in the producer's order: wait for the TMA's E4M3 V^T (v_full) and for the FP16
// slot to be free (v16_empty: the PV that read it has completed), convert, release the E4M3
// slot (v_empty) and publish the FP16 one (v16_full). No scaling: V's descale stays in the
// epilogue (E4M3 -> FP16 is exact).
//   in : v[s]   2 atoms x [128 channels][64 positions] E4M3, 64-byte rows, 64-byte swizzle;
//                positions permuted per 32-key group (fp8attn_vt_key_at)
//   out: v16[s] 2 halves x [128 channels][64 keys] FP16, 128-byte rows, 128-byte swizzle, keys in
//                natural order: the K-major B operand of the m64n128k16 FP16 wgmma
// One 16-byte input chunk (16 positions of one channel) -> two 16-byte output chunks (keys 0-7 and
// 8-15 of that half). The index arithmetic is attn/v16_layout.h's (replayed on the CPU by
// tests/cpu/test_v16_layout.cc).
template <class Cfg>
__device__ __forceinline__ void v_converter(const KernelParams& p, SharedStorage<Cfg>& sm) {
  constexpr int kThreads = 32 * Cfg::kConverterWarps;
  constexpr int kChunks = Cfg::kVAtoms * Cfg::kHeadDim * v16::kInChunksPerRow;  // 1024 per block
  static_assert(Cfg::kVAtomKeys == v16::kAtomKeys && Cfg::kV16HalfKeys == v16::kAtomKeys &&
                    Cfg::kVAtomBytes == v16::kAtomBytes && Cfg::kV16HalfBytes == v16::kHalfBytes,
                "one E4M3 atom -> one FP16 half, as v16_layout.h says");
  const int t = static_cast<int>(threadIdx.x) - 32;
  const bool leader = threadIdx.x % 32 == 0;
  PipelineState<Cfg::kStages> kv;  // in step with the producer's K/V ring
  PipelineState<2> sched;
  for (;;) {
    ptx::mbar_wait(&sm.tile_full[sched.stage], sched.phase);
    const Tile tile = sm.tile[sched.stage];  // decoded by the producer
    __syncwarp();
    if (leader) ptx::mbar_arrive(&sm.tile_empty[sched.stage]);
    sched.advance();
    if (tile.m_block < 0) break;  // the end
    const KeyRange kr = key_range<Cfg::kBlockM, Cfg::kBlockN>(p, tile.m_block);
    for (int n = kr.n_lo; n < kr.n_hi; ++n) {  // as many blocks as the producer loads
      ptx::mbar_wait(&sm.v_full[kv.stage], kv.phase);
      ptx::mbar_wait(&sm.v16_empty[kv.stage], kv.phase ^ 1);
      const uint8_t* src = sm.v[kv.stage];
      uint8_t* dst = sm.v16[kv.stage];
#pragma unroll 2
      for (int i = t; i < kChunks; i += kThreads) {
        const v16::Chunk ch = v16::chunk_of(i);  // atom (= FP16 half), channel, 16-position chunk
        const uint4 w = *reinterpret_cast<const uint4*>(src + ch.atom * v16::kAtomBytes +
                                                        v16::in_offset(ch.channel, ch.j));
        uint4 lo, hi;
        lo.x = ptx::e4m3x2_to_f16x2(static_cast<uint16_t>(w.x & 0xFFFF));
        lo.y = ptx::e4m3x2_to_f16x2(static_cast<uint16_t>(w.y & 0xFFFF));
        lo.z = ptx::e4m3x2_to_f16x2(static_cast<uint16_t>(w.z & 0xFFFF));
        lo.w = ptx::e4m3x2_to_f16x2(static_cast<uint16_t>(w.w & 0xFFFF));
        hi.x = ptx::e4m3x2_to_f16x2(static_cast<uint16_t>(w.x >> 16));
        hi.y = ptx::e4m3x2_to_f16x2(static_cast<uint16_t>(w.y >> 16));
        hi.z = ptx::e4m3x2_to_f16x2(static_cast<uint16_t>(w.z >> 16));
        hi.w = ptx::e4m3x2_to_f16x2(static_cast<uint16_t>(w.w >> 16));
        uint8_t* half = dst + ch.atom * v16::kHalfBytes;
        *reinterpret_cast<uint4*>(half + v16::out_offset(ch.channel, v16::out_chunk_lo(ch.j))) = lo;
        *reinterpret_cast<uint4*>(half + v16::out_offset(ch.channel, v16::out_chunk_hi(ch.j))) = hi;
      }
      ptx::fence_proxy_async_shared();  // this thread's FP16 stores -> visible to the wgmma
      __syncwarp();
      if (leader) {
        ptx::mbar_arrive(&sm.v_empty[kv.stage]);
        ptx::mbar_arrive(&sm.v16_full[kv.stage]);
      }
      kv.advance();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Consumer helpers.

// P as A-fragments of the PV wgmma: E4M3 (4 keys a register), plus the lo term for hi+lo; or
// FP16 (2 keys a register).
template <class Cfg>
struct PFragments {
  static constexpr bool kHiLo = Cfg::kP == PPrecision::kE4M3HiLo;
  uint32_t hi[Cfg::kFP16P ? Cfg::kBlockN / 4 : Cfg::kBlockN / 8];
  uint32_t lo[kHiLo ? Cfg::kBlockN / 8 : 1];
};

// p (FP32, in S's registers) -> P's fragments.
template <class Cfg>
__device__ __forceinline__ void make_p_fragments(const float (&s)[Softmax<Cfg>::kRegs], PFragments<Cfg>& pf) {
  if constexpr (Cfg::kFP16P) Softmax<Cfg>::to_f16_fragments(s, pf.hi);
  else Softmax<Cfg>::template to_e4m3_fragments<PFragments<Cfg>::kHiLo>(s, pf.hi, pf.lo);
}

// The V operand of the P V product and its barriers: the TMA's E4M3 V^T ring, or with FP16 P the
// converters' FP16 ring (whose E4M3 slots the converters release themselves).
template <class Cfg>
struct PVOperand {
  __device__ __forceinline__ static uint64_t* full(SharedStorage<Cfg>& sm, int s) {
    if constexpr (Cfg::kFP16P) return &sm.v16_full[s];
    else return &sm.v_full[s];
  }
  __device__ __forceinline__ static uint64_t* empty(SharedStorage<Cfg>& sm, int s) {
    if constexpr (Cfg::kFP16P) return &sm.v16_empty[s];
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
template <class Cfg, bool kAccumulate>
__device__ __forceinline__ void issue_pv(float (&acc)[64], const PFragments<Cfg>& pf, uint32_t v_addr) {
  if constexpr (Cfg::kFP16P) {
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockN / 16; ++kk) {
      const uint64_t dv = ptx::make_desc_kmajor<128>(v_addr + (kk / 4) * Cfg::kV16HalfBytes + (kk % 4) * 32);
      const uint32_t a[4] = {pf.hi[4 * kk], pf.hi[4 * kk + 1], pf.hi[4 * kk + 2], pf.hi[4 * kk + 3]};
      ptx::wgmma_rs_f16(acc, a, dv, kAccumulate || kk > 0);
    }
  } else {
    using D = ptx::DescKMajor<64>;
    const uint32_t dv0 = D::lo(v_addr);
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockN / 32; ++kk) {
      const uint64_t dv = D::make(dv0 + ((kk / 2) * Cfg::kVAtomBytes + (kk % 2) * 32) / 16);
      const uint32_t a[4] = {pf.hi[4 * kk], pf.hi[4 * kk + 1], pf.hi[4 * kk + 2], pf.hi[4 * kk + 3]};
      ptx::wgmma_rs(acc, a, dv, kAccumulate || kk > 0);
      if constexpr (Cfg::kP == PPrecision::kE4M3HiLo) {
        const uint32_t b[4] = {pf.lo[4 * kk], pf.lo[4 * kk + 1], pf.lo[4 * kk + 2], pf.lo[4 * kk + 3]};
        ptx::wgmma_rs(acc, b, dv, 1);
      }
    }
  }
}

// The P V product of one block and its merge into the running O, in the two ways Config allows:
//   two-level: O_n into fresh registers, then O = O * alpha + O_n in FP32: the wgmma's
//              reduced-precision accumulation never spans more than one block;
//   one-level: O *= alpha, then the wgmma accumulates P V_n into O itself (as FlashAttention-3):
//              fewer live registers, so 192/224-key blocks fit; the tensor core's truncating
//              accumulation spans all keys.
// l: with kTcRowSum (the E4M3 one-level default) each k-step also issues P against a block of
// E4M3 ones into l_blk, a fresh accumulator per block that the softmax adds to its FP32 l
// (perf-log v9; v3's single accumulator across blocks was biased). Otherwise the softmax sums the
// FP32 p itself.
template <class Cfg>
struct PVAccumulator {
  static constexpr bool kTwoLevel = Cfg::kTwoLevel;
  static constexpr int kRegs = 64;
  static constexpr bool kTcRowSum = Softmax<Cfg>::kTcRowSum;
  float o[kRegs];
  float o_blk[kTwoLevel ? kRegs : 1];
  float l_blk[4];  // kTcRowSum: this block's row sums of P (fresh each block)
  uint32_t ones_addr = 0;

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
  }
  __device__ __forceinline__ void issue(const PFragments<Cfg>& pf, uint32_t v_addr) {
    if constexpr (Cfg::kVariant == kAblateNoPV) return;
    if constexpr (kTwoLevel) issue_pv<Cfg, false>(o_blk, pf, v_addr);
    else issue_pv<Cfg, true>(o, pf, v_addr);
    if constexpr (kTcRowSum) {
      const uint64_t d1 = ptx::make_desc_kmajor<64>(ones_addr);  // ones_addr: warp-uniform
#pragma unroll
      for (int kk = 0; kk < Cfg::kBlockN / 32; ++kk) {
        const uint32_t a[4] = {pf.hi[4 * kk], pf.hi[4 * kk + 1], pf.hi[4 * kk + 2], pf.hi[4 * kk + 3]};
        ptx::wgmma_rs(l_blk, a, d1, kk > 0);
      }
    }
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
#pragma unroll
      for (int i = 0; i < kRegs; ++i) ptx::fence_operand(o[i]);
    }
    if constexpr (kTcRowSum) {
#pragma unroll
      for (int i = 0; i < 4; ++i) ptx::fence_operand(l_blk[i]);
    }
  }
};

template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) ptx::fence_operand(r[i]);
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) ptx::fence_operand(r[i]);
}
// P's fragments (and the lo term's, with hi+lo): pinned around the P V wgmma that reads them.
template <class Cfg>
__device__ __forceinline__ void fence_regs(PFragments<Cfg>& pf) {
  fence_regs(pf.hi);
  if constexpr (PFragments<Cfg>::kHiLo) fence_regs(pf.lo);
}

// A tile's first QK^T, alone in the warpgroup's ping-pong turn: wait for the K block at ring
// position `it`, take the turn, issue, hand the turn over (the caller waits for S).
template <class Cfg, int kRegs>
__device__ __forceinline__ void issue_first_qk(SharedStorage<Cfg>& sm, float (&s)[kRegs],
                                               uint32_t q_addr, uint32_t it, int my_turn,
                                               int other_turn) {
  constexpr int kThreadsPingPong = 2 * 128;
  using KV = KVCounter<Cfg::kStages>;
  ptx::mbar_wait(&sm.k_full[KV::stage_of(it)], KV::phase_of(it));
  ptx::named_barrier_sync(my_turn, kThreadsPingPong);
  ptx::wgmma_fence();
  issue_qk(s, q_addr, ptx::smem_addr(sm.k[KV::stage_of(it)]));
  ptx::wgmma_commit();
  ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
}

// One arrive per warp on an "empty" barrier (its count is the number of consumer warps).
__device__ __forceinline__ void release(uint64_t* bar) {
  if (threadIdx.x % 32 == 0) ptx::mbar_arrive(bar);
}

__device__ __forceinline__ float load_or_one(const float* ptr, int64_t off) {
  return ptr ? __ldg(ptr + off) : 1.f;
}

// Starts bringing a line into L1 and holds no register afterwards.
__device__ __forceinline__ void prefetch_l1(const float* ptr) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(ptr));
}

// ---------------------------------------------------------------------------------------------
// Epilogue: BF16 O and FP32 LSE from registers.
// The per-channel factors of this thread's 32 output columns (V's descale and o_bias). Loaded
// before the tile's last P V product is issued, so their latency hides under it.
struct EpilogueOperands {
  float vd[32], ob[32];
  float lb[2];  // lse_bias of rows row0 and row0 + 8 (lanes q4 == 0, which store the LSE)
  __device__ __forceinline__ void load(const KernelParams& p, const Tile& tile, int row0) {
    const int kv_head = tile.head / p.q_per_kv;
    const int q4 = threadIdx.x % 4;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + 8 * r;
      lb[r] = p.lse_bias && q4 == 0 && row < p.seqlen_q
                  ? __ldg(p.lse_bias + (static_cast<int64_t>(tile.batch) * p.heads + tile.head) * p.seqlen_q + row)
                  : 0.f;
    }
    if (p.epilogue_vec2) {  // channels 8i + 2 q4 + {0, 1}: float2 number 4i + q4 of the head
      const float* vbase = p.v_descale ? p.v_descale + tile.batch * p.vd_stride_b + kv_head * p.vd_stride_h
                                       : nullptr;
      const float vb = vbase && p.vd_broadcast ? __ldg(vbase) : 1.f;
      const float2* vd2 = vbase && !p.vd_broadcast ? reinterpret_cast<const float2*>(vbase) + q4 : nullptr;
      const float2* ob2 = p.o_bias ? reinterpret_cast<const float2*>(
                                         p.o_bias + tile.batch * p.ob_stride_b + kv_head * p.ob_stride_h) + q4
                                   : nullptr;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const float2 v = vd2 ? __ldg(vd2 + 4 * i) : make_float2(vb, vb);
        const float2 b = ob2 ? __ldg(ob2 + 4 * i) : make_float2(0.f, 0.f);
        vd[2 * i] = v.x, vd[2 * i + 1] = v.y;
        ob[2 * i] = b.x, ob[2 * i + 1] = b.y;
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = 8 * i + 2 * q4 + e;
        vd[2 * i + e] = load_or_one(p.v_descale, tile.batch * p.vd_stride_b +
                                                     kv_head * p.vd_stride_h + c * p.vd_stride_d);
        ob[2 * i + e] = p.o_bias ? __ldg(p.o_bias + tile.batch * p.ob_stride_b +
                                         kv_head * p.ob_stride_h + c)
                                 : 0.f;
      }
    }
  }
  // The same addresses, into L1 only: for kernels that cannot hold the 64 registers while their
  // last P V runs (key_blocks_serial); load() then hits L1.
  __device__ __forceinline__ static void prefetch(const KernelParams& p, const Tile& tile) {
    const int kv_head = tile.head / p.q_per_kv;
    const int q4 = threadIdx.x % 4;
    if (p.v_descale) {
      const float* vd = p.v_descale + tile.batch * p.vd_stride_b + kv_head * p.vd_stride_h;
#pragma unroll
      for (int i = 0; i < 32; ++i) prefetch_l1(vd + (8 * (i / 2) + 2 * q4 + i % 2) * p.vd_stride_d);
    }
    if (p.o_bias) {
      const float* ob = p.o_bias + tile.batch * p.ob_stride_b + kv_head * p.ob_stride_h;
#pragma unroll
      for (int i = 0; i < 32; ++i) prefetch_l1(ob + 8 * (i / 2) + 2 * q4 + i % 2);
    }
  }
};

template <class Cfg>
__device__ __forceinline__ void epilogue(const KernelParams& p, const Tile& tile, int row0,
                                         const PVAccumulator<Cfg>& acc, Softmax<Cfg>& sm,
                                         const EpilogueOperands& eo) {
  const float (&o)[PVAccumulator<Cfg>::kRegs] = acc.o;
  const float (&vd)[32] = eo.vd;
  const float (&ob)[32] = eo.ob;
  float inv_l[2];
  sm.finalize(inv_l);
  const int q4 = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= p.seqlen_q) continue;
    // No visible key: O = 0, LSE = -inf. A NaN inv_l (a NaN reached the row) is not empty: the
    // row comes out NaN.
    const bool empty = inv_l[r] == 0.f;
    __nv_bfloat16* out = p.o + tile.batch * p.o_stride_b + row * p.o_stride_s +
                         tile.head * p.o_stride_h;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int c = 8 * i + 2 * q4;
      float x0 = o[4 * i + 2 * r] * vd[2 * i] * inv_l[r] + ob[2 * i];
      float x1 = o[4 * i + 2 * r + 1] * vd[2 * i + 1] * inv_l[r] + ob[2 * i + 1];
      if (empty) x0 = x1 = 0.f;
      // The ablation skips the stores behind a condition the compiler cannot decide (seqlen_q
      // is never negative), so O and the P V products stay live (perf-log v12: an unconditional
      // skip let the compiler drop the P V wgmmas as well).
      if (Cfg::kVariant != kAblateNoEpilogue || p.seqlen_q < 0)
        *reinterpret_cast<__nv_bfloat162*>(out + c) = __floats2bfloat162_rn(x0, x1);
    }
    if (p.lse && q4 == 0) {
      const int64_t li = (static_cast<int64_t>(tile.batch) * p.heads + tile.head) * p.seqlen_q + row;
      float lse = sm.lse(r);
      if (!empty) lse += eo.lb[r];  // 0 without lse_bias
      p.lse[li] = lse;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The key blocks of one tile without intra-warpgroup overlap (Config::kIntraWgOverlap false: the
// two-level kernels, whose fresh per-block O does not fit beside S and P). Per block, in one
// ping-pong turn: the PV of block n+1 is issued and waited for, then the QK^T of block n is
// issued; O = O * alpha + O_{n+1} runs under that QK^T, and the softmax of block n after it,
// under the other warpgroup's turn. S and O_blk are both live only while the QK^T runs (P is
// dead by then): O 64 + O_blk 64 + S 64. Same arithmetic, in the same order, as the overlapped
// loop in consumer(); only the waits differ.
template <class Cfg, class BlockScale>
__device__ __forceinline__ void key_blocks_serial(const KernelParams& p, SharedStorage<Cfg>& sm,
                                                  const Tile& tile, int row0, const KeyRange& kr,
                                                  const int (&limit)[2], BlockScale& block_scale,
                                                  uint32_t q_addr, uint32_t& it_k,
                                                  PipelineState<2>& qs, int my_turn,
                                                  int other_turn, Softmax<Cfg>& softmax,
                                                  PVAccumulator<Cfg>& acc, EpilogueOperands& eo) {
  static_assert(!Softmax<Cfg>::kTcRowSum, "l from the tensor core is summed in the overlapped order only");
  constexpr int kThreadsPingPong = 2 * 128;
  using KV = KVCounter<Cfg::kStages>;
  float s[Softmax<Cfg>::kRegs], alpha[2], scale[2];
  PFragments<Cfg> pf;
  // S of block n (completed; its scale loaded while the QK^T ran) -> m, l, alpha; P in E4M3
  // fragments.
  auto softmax_block = [&](int n) {
    if (n >= kr.n_mask_lo) softmax.template step_max<true>(s, n * Cfg::kBlockN, limit, scale, alpha);
    else softmax.template step_max<false>(s, n * Cfg::kBlockN, limit, scale, alpha);
    softmax.step_exp(s, scale);
    make_p_fragments<Cfg>(s, pf);
  };
  // O_{n+1} = P V_{n+1} into the fresh accumulator (V ring position it_k - 1), and its wait.
  auto issue_pv_blk = [&]() {
    fence_regs(pf);
    acc.before_issue(alpha);  // one-level: O *= alpha_{n+1} (two-level: nothing)
    ptx::wgmma_fence();
    acc.issue(pf, ptx::smem_addr(sm.v[KV::stage_of(it_k - 1)]));
    ptx::wgmma_commit();
  };
  auto wait_pv_blk = [&]() {
    ptx::wgmma_wait<0>();
    fence_regs(pf);
    release(&sm.v_empty[KV::stage_of(it_k - 1)]);
  };

  // The QK^T of block n issued: its scale while it runs, then its wait, K's slot released, the
  // softmax.
  auto finish_qk_block = [&](int n) {
    block_scale(n, scale);
    ptx::wgmma_wait<0>();
    fence_regs(s);
    release(&sm.k_empty[KV::stage_of(it_k)]);
    ++it_k;
    softmax_block(n);
  };

  // Prologue: S of the last block, its softmax.
  int n = kr.n_hi - 1;
  issue_first_qk(sm, s, q_addr, it_k, my_turn, other_turn);
  finish_qk_block(n);

  // Steady state: PV of block n+1, then QK^T of block n, in one turn.
  for (--n; n >= kr.n_lo; --n) {
    ptx::mbar_wait(&sm.k_full[KV::stage_of(it_k)], KV::phase_of(it_k));
    ptx::mbar_wait(&sm.v_full[KV::stage_of(it_k - 1)], KV::phase_of(it_k - 1));
    ptx::named_barrier_sync(my_turn, kThreadsPingPong);
    issue_pv_blk();
    wait_pv_blk();
    ptx::wgmma_fence();
    issue_qk(s, q_addr, ptx::smem_addr(sm.k[KV::stage_of(it_k)]));
    ptx::wgmma_commit();
    ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
    acc.after_wait(alpha);  // O = O * alpha_{n+1} + O_{n+1}, under the QK^T
    finish_qk_block(n);
  }
  // Every QK^T of the tile has completed: its Q buffer may be refilled.
  release(&sm.q_empty[qs.stage]);
  qs.advance();

  // Drain: PV of the first block. The epilogue's operands go to L1 now and into registers only
  // after the merge (beside O and O_blk, their 64 registers would not fit).
  EpilogueOperands::prefetch(p, tile);
  ptx::mbar_wait(&sm.v_full[KV::stage_of(it_k - 1)], KV::phase_of(it_k - 1));
  ptx::named_barrier_sync(my_turn, kThreadsPingPong);
  issue_pv_blk();
  ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
  wait_pv_blk();
  acc.after_wait(alpha);
  eo.load(p, tile, row0);
}

// ---------------------------------------------------------------------------------------------
// Consumer warpgroup `wg` (0 or 1): rows 64*wg .. 64*wg+63 of each query tile.
template <class Cfg>
__device__ __forceinline__ void consumer(const KernelParams& p, SharedStorage<Cfg>& sm, int wg) {
  constexpr int kThreadsPingPong = 2 * 128;
  const int my_turn = static_cast<int>(NamedBarrier::kWarpSchedulerWG0) + wg;
  const int other_turn = static_cast<int>(NamedBarrier::kWarpSchedulerWG0) + (1 - wg);
  const int t128 = threadIdx.x % 128;
  const int row_in_tile = 64 * wg + 16 * (t128 / 32) + (t128 % 32) / 4;
  const uint32_t q_off = 64 * wg * Cfg::kHeadDim;

  if (wg == 1) ptx::named_barrier_arrive(other_turn, kThreadsPingPong);  // warpgroup 0 issues first

  // K and V rings advance in step: every K block consumed is later followed by its V block.
  // it_k counts K blocks consumed, it_v V blocks; it_v is it_k - 1 inside a tile's loop and
  // it_k at tile boundaries, so one register holds both.
  uint32_t it_k = 0;
  using KV = KVCounter<Cfg::kStages>;
  PipelineState<2> sched;
  PipelineState<2> qs;  // Q buffer of the current tile (tiles with keys to visit only)
  for (;;) {
    ptx::mbar_wait(&sm.tile_full[sched.stage], sched.phase);
    const Tile tile = sm.tile[sched.stage];
    release(&sm.tile_empty[sched.stage]);
    sched.advance();
    if (tile.m_block < 0) break;  // the end
    const KeyRange kr = key_range<Cfg::kBlockM, Cfg::kBlockN>(p, tile.m_block);
    const int row0 = tile.m_block * Cfg::kBlockM + row_in_tile;
    Softmax<Cfg> softmax;
    softmax.init();
    PVAccumulator<Cfg> acc;
    acc.zero();
    acc.ones_addr = ptx::smem_addr(sm.ones);
    EpilogueOperands eo;
    if (kr.n_hi <= kr.n_lo) {  // no visible key for any row of the tile
      eo.load(p, tile, row0);
      epilogue<Cfg>(p, tile, row0, acc, softmax, eo);
      continue;
    }

    // Per-row constants: the row's scale without the K descale, and its mask limit.
    const int kv_head = tile.head / p.q_per_kv;
    float q_scale[2];
    int limit[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + 8 * r;
      const float qd = row < p.seqlen_q
                           ? load_or_one(p.q_descale, tile.batch * p.qd_stride_b +
                                                          tile.head * p.qd_stride_h +
                                                          static_cast<int64_t>(row) * p.qd_stride_s)
                           : 0.f;
      q_scale[r] = p.softmax_scale_log2 * qd;
      const long long causal_limit = static_cast<long long>(row) + p.seqlen_k - p.seqlen_q + 1;
      limit[r] = p.causal && causal_limit < p.seqlen_k ? static_cast<int>(causal_limit < 0 ? 0 : causal_limit)
                                                       : p.seqlen_k;
    }
    const float* kd_base = p.k_descale ? p.k_descale + tile.batch * p.kd_stride_b +
                                             kv_head * p.kd_stride_h
                                       : nullptr;
    // One K descale per head (stride 0 along blocks, the 192-key kernel's case): the products
    // are formed once per tile instead of a load per block.
    const bool kd_per_block = kd_base && p.kd_stride_blk != 0;
    float head_scale[2];
    {
      const float kd = kd_base ? __ldg(kd_base) : 1.f;
      head_scale[0] = q_scale[0] * kd;
      head_scale[1] = q_scale[1] * kd;
    }
    auto block_scale = [&](int n, float (&scale)[2]) {
      if (kd_per_block) {
        const float kd = __ldg(kd_base + n * p.kd_stride_blk);
        scale[0] = q_scale[0] * kd;
        scale[1] = q_scale[1] * kd;
      } else {
        scale[0] = head_scale[0];
        scale[1] = head_scale[1];
      }
    };

    float s[Softmax<Cfg>::kRegs], alpha[2], alpha_next[2], scale[2];
    PFragments<Cfg> pf;

    const uint32_t q_addr = ptx::smem_addr(sm.q[qs.stage]) + q_off;
    ptx::mbar_wait(&sm.q_full[qs.stage], qs.phase);
    if constexpr (!Cfg::kIntraWgOverlap) {
      key_blocks_serial<Cfg>(p, sm, tile, row0, kr, limit, block_scale, q_addr, it_k, qs, my_turn,
                             other_turn, softmax, acc, eo);
      epilogue<Cfg>(p, tile, row0, acc, softmax, eo);
      continue;
    }

    // Prologue: S of the last block, its softmax.
    int n = kr.n_hi - 1;
    issue_first_qk(sm, s, q_addr, it_k, my_turn, other_turn);
    ptx::wgmma_wait<0>();
    fence_regs(s);
    release(&sm.k_empty[KV::stage_of(it_k)]);
    ++it_k;
    block_scale(n, scale);
    if (n >= kr.n_mask_lo && Cfg::kVariant != kAblateNoMask) softmax.template step<true>(s, n * Cfg::kBlockN, limit, scale, alpha);
    else softmax.template step<false>(s, n * Cfg::kBlockN, limit, scale, alpha);
    make_p_fragments<Cfg>(s, pf);

    // Steady state: QK^T of block n with PV of block n+1.
    for (--n; n >= kr.n_lo; --n) {
      ptx::mbar_wait(&sm.k_full[KV::stage_of(it_k)], KV::phase_of(it_k));
      ptx::named_barrier_sync(my_turn, kThreadsPingPong);
      fence_regs(pf);
      ptx::wgmma_fence();
      issue_qk(s, q_addr, ptx::smem_addr(sm.k[KV::stage_of(it_k)]));
      ptx::wgmma_commit();
      ptx::mbar_wait(PVOperand<Cfg>::full(sm, KV::stage_of(it_k - 1)), KV::phase_of(it_k - 1));
      acc.before_issue(alpha);
      ptx::wgmma_fence();
      acc.issue(pf, PVOperand<Cfg>::addr(sm, KV::stage_of(it_k - 1)));
      ptx::wgmma_commit();
      ptx::named_barrier_arrive(other_turn, kThreadsPingPong);

      ptx::wgmma_wait<1>();  // S ready, PV still running
      fence_regs(s);
      release(&sm.k_empty[KV::stage_of(it_k)]);
      block_scale(n, scale);
      // The two halves apart: only the max half differs between masked and unmasked blocks, so
      // the exp half is one copy of code after the branch (the SASS that was measured).
      if (n >= kr.n_mask_lo && Cfg::kVariant != kAblateNoMask) softmax.template step_max<true>(s, n * Cfg::kBlockN, limit, scale, alpha_next);
      else softmax.template step_max<false>(s, n * Cfg::kBlockN, limit, scale, alpha_next);
      softmax.step_exp(s, scale);

      ptx::wgmma_wait<0>();  // O_{n+1} ready
      fence_regs(pf);
      release(PVOperand<Cfg>::empty(sm, KV::stage_of(it_k - 1)));
      ++it_k;
      acc.after_wait(alpha);
      if constexpr (Softmax<Cfg>::kTcRowSum) softmax.add_block_sum(acc.l_blk, alpha_next);
      make_p_fragments<Cfg>(s, pf);  // only now: the PV that read pf has completed
      alpha[0] = alpha_next[0];
      alpha[1] = alpha_next[1];
    }
    // Every QK^T of the tile has completed: its Q buffer may be refilled.
    release(&sm.q_empty[qs.stage]);
    qs.advance();

    // Drain: PV of the first block. The epilogue's operands are fetched first (S is dead, so
    // their registers are free) and arrive while the last P V runs.
    eo.load(p, tile, row0);
    ptx::mbar_wait(PVOperand<Cfg>::full(sm, KV::stage_of(it_k - 1)), KV::phase_of(it_k - 1));
    ptx::named_barrier_sync(my_turn, kThreadsPingPong);
    fence_regs(pf);
    acc.before_issue(alpha);
    ptx::wgmma_fence();
    acc.issue(pf, PVOperand<Cfg>::addr(sm, KV::stage_of(it_k - 1)));
    ptx::wgmma_commit();
    ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
    ptx::wgmma_wait<0>();
    release(PVOperand<Cfg>::empty(sm, KV::stage_of(it_k - 1)));
    acc.after_wait(alpha);
    if constexpr (Softmax<Cfg>::kTcRowSum) {
      const float one[2] = {1.f, 1.f};
      softmax.add_block_sum(acc.l_blk, one);
    }

    epilogue<Cfg>(p, tile, row0, acc, softmax, eo);
  }
}

// ---------------------------------------------------------------------------------------------
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1) attention_fwd_kernel(const __grid_constant__ KernelParams p) {
  extern __shared__ uint8_t smem_raw[];
  // The 128-byte swizzle needs 1024-byte aligned tiles; the launch adds 1 KiB of slack.
  auto& sm = *reinterpret_cast<SharedStorage<Cfg>*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~static_cast<uintptr_t>(1023));
  constexpr int kConsumerWarps = 4 * Cfg::kConsumerWarpgroups;
  // Broadcast from lane 0 so the compiler knows it is warp-uniform: descriptor and barrier
  // arithmetic derived from it then lives in uniform registers.
  const int warpgroup = __shfl_sync(0xffffffff, static_cast<int>(threadIdx.x / 128), 0);

  if (threadIdx.x == 0) {
    ptx::tma_prefetch_descriptor(&p.tma_q);
    ptx::tma_prefetch_descriptor(&p.tma_k);
    ptx::tma_prefetch_descriptor(&p.tma_vt);
    for (int s = 0; s < 2; ++s) {
      ptx::mbar_init(&sm.tile_full[s], 1);
      ptx::mbar_init(&sm.tile_empty[s], kConsumerWarps + Cfg::kConverterWarps);
    }
    for (int s = 0; s < 2; ++s) {
      ptx::mbar_init(&sm.q_full[s], 1);
      ptx::mbar_init(&sm.q_empty[s], kConsumerWarps);
    }
    for (int s = 0; s < Cfg::kStages; ++s) {
      ptx::mbar_init(&sm.k_full[s], 1);
      ptx::mbar_init(&sm.k_empty[s], kConsumerWarps);
      ptx::mbar_init(&sm.v_full[s], 1);
      // FP16 P: the converter warps release the E4M3 slot, the consumers the FP16 one.
      ptx::mbar_init(&sm.v_empty[s], Cfg::kFP16P ? Cfg::kConverterWarps : kConsumerWarps);
      ptx::mbar_init(&sm.v16_full[s], Cfg::kConverterWarps > 0 ? Cfg::kConverterWarps : 1);
      ptx::mbar_init(&sm.v16_empty[s], kConsumerWarps);
    }
    ptx::mbar_fence_init();
  }
  if constexpr (Softmax<Cfg>::kTcRowSum) {
    for (int i = threadIdx.x; i < static_cast<int>(sizeof(sm.ones)) / 4; i += Cfg::kThreads)
      reinterpret_cast<uint32_t*>(sm.ones)[i] = 0x38383838u;  // E4M3 1.0
    ptx::fence_proxy_async_shared();  // visible to the wgmma (async proxy)
  }
  __syncthreads();

  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (threadIdx.x == 0) {
      producer<Cfg>(p, sm);
    } else if constexpr (Cfg::kFP16P) {
      if (threadIdx.x >= 32) v_converter<Cfg>(p, sm);  // warps 1..3
    }
  } else {
    ptx::setmaxnreg_inc<Cfg::kConsumerRegs>();
    consumer<Cfg>(p, sm, warpgroup - 1);
  }
}

}  // namespace fp8attn::attn
