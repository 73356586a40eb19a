// The producer: one thread of the producer warpgroup claims tiles from the tile scheduler,
// publishes each to the consumers and issues every TMA load (Q per tile, then K_n and V_n for
// n = n_hi-1 down to n_lo into the kStages-deep ring).
#pragma once
#include "attn/config.h"
#include "attn/params.h"
#include "attn/pipeline.cuh"
#include "attn/scheduler.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"

namespace fp8attn::attn {

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
    int kv_head_published = 0;
    if constexpr (Cfg::kTmaStoreO) kv_head_published = tile.head / p.q_per_kv;
    ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.tile_empty[sched.stage], sched.phase ^ 1);
    sm.tile[sched.stage] = tile;
    if constexpr (Cfg::kTmaStoreO) sm.tile_kv_head[sched.stage] = kv_head_published;
    ptx::mbar_arrive(&sm.tile_full[sched.stage]);
    sched.advance();
    if (t >= p.num_tiles) break;
    const KeyRange kr = key_range<Cfg::kBlockM, Cfg::kBlockN>(p, tile.m_block);
    if (kr.n_hi <= kr.n_lo) {
      t = TileScheduler::next(p);
      continue;
    }
    const int kv_head = Cfg::kTmaStoreO ? kv_head_published : tile.head / p.q_per_kv;
    // Q double buffer: the next tile's Q is requested as soon as this tile's K/V loads are
    // issued (a few blocks before its end), not when its last QK^T has completed.
    ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.q_empty[qs.stage], qs.phase ^ 1);
    ptx::mbar_arrive_expect_tx(&sm.q_full[qs.stage], Cfg::kTileBytesQ);
    ptx::tma_load_4d(sm.q[qs.stage], &p.tma_q, &sm.q_full[qs.stage], 0, tile.head,
                     tile.m_block * Cfg::kBlockM, tile.batch);
    qs.advance();
    // Not unrolled: the producer runs in 24 registers (setmaxnreg), and ptxas's 4x unroll of this
    // loop spilled the tile-level state (ring positions, tile id) to local memory.
#pragma unroll 1
    for (int n = kr.n_hi - 1; n >= kr.n_lo; --n) {
      ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.k_empty[kv.stage], kv.phase ^ 1);
      ptx::mbar_arrive_expect_tx(&sm.k_full[kv.stage], Cfg::kTileBytesK);
      ptx::tma_load_4d(sm.k[kv.stage], &p.tma_k, &sm.k_full[kv.stage], 0, kv_head,
                       n * Cfg::kBlockN, tile.batch);
      ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.v_empty[kv.stage], kv.phase ^ 1);
      ptx::mbar_arrive_expect_tx(&sm.v_full[kv.stage], Cfg::kTileBytesV);
      if constexpr (Cfg::kVtF16) {
        // FP16 V^T: one box of [128 channels][64 keys] (128 bytes a row, the descriptor counts
        // bytes) per FP16 half, straight into the P V wgmma's B operand.
#pragma unroll
        for (int h = 0; h < Cfg::kV16Halves; ++h)
          ptx::tma_load_4d(sm.v16[kv.stage] + h * Cfg::kV16HalfStride, &p.tma_vt,
                           &sm.v_full[kv.stage], 2 * (n * Cfg::kBlockN + h * Cfg::kV16HalfKeys), 0,
                           kv_head, tile.batch);
      } else {
#pragma unroll
        for (int a = 0; a < Cfg::kVAtoms; ++a)
          ptx::tma_load_4d(sm.v[kv.stage] + a * Cfg::kVAtomStride, &p.tma_vt, &sm.v_full[kv.stage],
                           n * Cfg::kBlockN + a * Cfg::kVAtomKeys, 0, kv_head, tile.batch);
      }
      kv.advance();
    }
    // Claimed only now, when this tile's loads are all issued (the consumers are a few blocks
    // from its end), so no CTA sits on a claimed tile while others run dry.
    t = TileScheduler::next(p);
  }
}

}  // namespace fp8attn::attn
