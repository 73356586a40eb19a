// FP16 P only: the conversion of each E4M3 V^T block into the FP16 operand of the P V wgmma, by
// the producer warpgroup's warps 1..3.
#pragma once
#include "attn/config.h"
#include "attn/params.h"
#include "attn/pipeline.cuh"
#include "attn/scheduler.cuh"
#include "attn/v16_layout.h"
#include "ptx/convert.cuh"
#include "ptx/mbarrier.cuh"

namespace fp8attn::attn {

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
    ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.tile_full[sched.stage], sched.phase);
    const Tile tile = sm.tile[sched.stage];  // decoded by the producer
    ptx::mbar_arrive(&sm.tile_empty[sched.stage]);  // each thread after its own read of the slot
    sched.advance();
    if (tile.m_block < 0) break;  // the end
    const KeyRange kr = key_range<Cfg::kBlockM, Cfg::kBlockN>(p, tile.m_block);
    for (int n = kr.n_lo; n < kr.n_hi; ++n) {  // as many blocks as the producer loads
      ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.v_full[kv.stage], kv.phase);
      ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.v16_empty[kv.stage], kv.phase ^ 1);
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

}  // namespace fp8attn::attn
