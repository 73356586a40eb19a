// The consumer warpgroups' main loop: per query tile, the key blocks from last to first,
// S = Q K_n^T -> online softmax -> P -> O (+)= P V_n, in ping-pong with the other warpgroup, then
// the epilogue.
#pragma once
#include <cstdint>
#include <type_traits>

#include "attn/config.h"
#include "attn/epilogue.cuh"
#include "attn/first_block.h"
#include "attn/gemm.cuh"
#include "attn/params.h"
#include "attn/pipeline.cuh"
#include "attn/scheduler.cuh"
#include "attn/softmax.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/warpgroup.cuh"

namespace fp8attn::attn {

// A tile's first QK^T, alone in the warpgroup's ping-pong turn: wait for the K block at ring
// position `it`, take the turn, issue, hand the turn over (the caller waits for S).
template <class Cfg, int kRegs>
__device__ __forceinline__ void issue_first_qk(SharedStorage<Cfg>& sm, float (&s)[kRegs],
                                               uint32_t q_addr, uint32_t it, int my_turn,
                                               int other_turn) {
  constexpr int kThreadsPingPong = 2 * 128;
  using KV = KVCounter<Cfg::kStages>;
  ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.k_full[KV::stage_of(it)], KV::phase_of(it));
  ptx::named_barrier_sync(my_turn, kThreadsPingPong);
  ptx::wgmma_fence();
  issue_qk(s, q_addr, ptx::smem_addr(sm.k[KV::stage_of(it)]));
  ptx::wgmma_commit();
  ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
}

// A key block this warpgroup's rows cannot see (consumer(): causal, warpgroup 0, the tile's
// first block visited, Config::kTrimFirstBlock): its K and V slots are released once filled
// (an arrive before the fill would count towards the slot's previous use) and its ping-pong turn
// is passed on unused, so the rings and the turns stay in step with the other warpgroup, which
// does visit the block.
template <class Cfg>
__device__ __forceinline__ void skip_masked_block(SharedStorage<Cfg>& sm, uint32_t& it_k,
                                                  int my_turn, int other_turn) {
  constexpr int kThreadsPingPong = 2 * 128;
  using KV = KVCounter<Cfg::kStages>;
  const int stage = KV::stage_of(it_k);
  const uint32_t phase = KV::phase_of(it_k);
  ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.k_full[stage], phase);
  ptx::named_barrier_sync(my_turn, kThreadsPingPong);
  ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
  release(&sm.k_empty[stage]);
  ptx::mbar_wait<Cfg::kSleepingWaits>(PVOperand<Cfg>::full(sm, stage), phase);
  release(PVOperand<Cfg>::empty(sm, stage));
  ++it_k;
}

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
    ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.k_full[KV::stage_of(it_k)], KV::phase_of(it_k));
    ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.v_full[KV::stage_of(it_k - 1)], KV::phase_of(it_k - 1));
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
  ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.v_full[KV::stage_of(it_k - 1)], KV::phase_of(it_k - 1));
  ptx::named_barrier_sync(my_turn, kThreadsPingPong);
  issue_pv_blk();
  ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
  wait_pv_blk();
  acc.after_wait(alpha);
  eo.load(p, tile, row0);
}

// ---------------------------------------------------------------------------------------------
// Consumer warpgroup `wg` (0 .. kConsumerWarpgroups - 1): rows 64*wg .. 64*wg+63 of each query
// tile. `other_turn` is the turn this warpgroup hands over: the other's (ping-pong) or the next
// one's in the ring of three; each turn's barrier counts the warpgroup taking it and the one
// handing it over.
template <class Cfg>
__device__ __forceinline__ void consumer(const KernelParams& p, SharedStorage<Cfg>& sm, int wg) {
  constexpr int kThreadsPingPong = 2 * 128;
  constexpr int kW = Cfg::kConsumerWarpgroups;
  const int my_turn = static_cast<int>(NamedBarrier::kWarpSchedulerWG0) + wg;
  // Two warpgroups keep their own arithmetic, 1 - wg: next_turn's (wg + 1) % 2 compiled them
  // to other SASS.
  const int other_turn = kW == 2 ? static_cast<int>(NamedBarrier::kWarpSchedulerWG0) + (1 - wg) : next_turn<Cfg>(wg);
  const int t128 = threadIdx.x % 128;
  const int row_in_tile = 64 * wg + 16 * (t128 / 32) + (t128 % 32) / 4;
  const uint32_t q_off = 64 * wg * Cfg::kHeadDim;

  // Warpgroup 0 issues first: the last one hands it the first turn.
  if (wg == kW - 1) ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
  // This warpgroup's O staging buffer (TMA-store epilogue only; with P in shared memory, P's).
  uint8_t* const o_buf = o_staging<Cfg>(sm, wg);
  const uint32_t p_addr = p_buffer_addr<Cfg>(sm, wg);

  // K and V rings advance in step: every K block consumed is later followed by its V block.
  // it_k counts K blocks consumed, it_v V blocks; it_v is it_k - 1 inside a tile's loop and
  // it_k at tile boundaries, so one register holds both.
  uint32_t it_k = 0;
  using KV = KVCounter<Cfg::kStages>;
  PipelineState<2> sched;
  PipelineState<2> qs;  // Q buffer of the current tile (tiles with keys to visit only)
  for (;;) {
    ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.tile_full[sched.stage], sched.phase);
    const Tile tile = sm.tile[sched.stage];
    const int kv_head_published = Cfg::kTmaStoreO ? sm.tile_kv_head[sched.stage] : 0;
    ptx::mbar_arrive(&sm.tile_empty[sched.stage]);  // each thread after its own read of the slot
    sched.advance();
    if (tile.m_block < 0) {  // the end
      epilogue_drain<Cfg>(p);
      break;
    }
    const KeyRange kr = key_range<Cfg::kBlockM, Cfg::kBlockN>(p, tile.m_block);
    const int row0 = tile.m_block * Cfg::kBlockM + row_in_tile;
    Softmax<Cfg> softmax;
    softmax.init();
    PVAccumulator<Cfg> acc;
    acc.zero();
    if constexpr (Softmax<Cfg>::kTcRowSum && !Cfg::kFusedRowSum) acc.ones_addr = ptx::smem_addr(sm.ones.b);
    EpilogueOperands eo;
    if (kr.n_hi <= kr.n_lo) {  // no visible key for any row of the tile
      if constexpr (Cfg::kTmaStoreO) eo.load(p, tile, row0, kv_head_published);
      else eo.load(p, tile, row0);
      epilogue<Cfg>(p, tile, row0, wg, o_buf, acc, softmax, eo);
      continue;
    }

    // Per-row constants: the row's scale without the K descale, and its mask limit. The
    // descales are loaded here and multiplied only once the tile's first QK^T has been issued
    // (set_scales): a product here waited for the loads before that issue (tile clocks).
    const int kv_head = Cfg::kTmaStoreO ? kv_head_published : tile.head / p.q_per_kv;
    float q_scale[2];
    int limit[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + 8 * r;
      q_scale[r] = row < p.seqlen_q
                       ? load_or_one(p.q_descale, tile.batch * p.qd_stride_b +
                                                      tile.head * p.qd_stride_h +
                                                      static_cast<int64_t>(row) * p.qd_stride_s)
                       : 0.f;
      const long long causal_limit = static_cast<long long>(row) + p.seqlen_k - p.seqlen_q + 1;
      limit[r] = p.causal && causal_limit < p.seqlen_k ? static_cast<int>(causal_limit < 0 ? 0 : causal_limit)
                                                       : p.seqlen_k;
    }
    const float* kd_base = p.k_descale ? p.k_descale + tile.batch * p.kd_stride_b +
                                             kv_head * p.kd_stride_h
                                       : nullptr;
    // One K descale per head (stride 0 along blocks, the 192-key kernel's case): the products
    // are formed once per tile instead of a load per block.
    const bool kd_per_block = !Cfg::kKScaleHeadOnly && kd_base && p.kd_stride_blk != 0;
    float head_scale[2];
    const float kd_head = kd_base ? __ldg(kd_base) : 1.f;
    // q_scale: from the loaded descale to softmax_scale_log2 * descale; head_scale: that times the
    // K descale (one per head), the scale of every block's scores.
    // The empty volatile asm keeps the products after the QK^T's issue in the PTX; ptxas still
    // interleaves them before the issue's last k-step (SASS), but after the ping-pong barrier and
    // the first k-steps, so the load's wait no longer delays the turn or the first k-steps.
    auto set_scales = [&]() {
      float kd = kd_head;
      asm volatile("" : "+f"(kd), "+f"(q_scale[0]), "+f"(q_scale[1]));
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        q_scale[r] = p.softmax_scale_log2 * q_scale[r];
        head_scale[r] = q_scale[r] * kd;
      }
    };
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
    ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.q_full[qs.stage], qs.phase);
    if constexpr (!Cfg::kIntraWgOverlap) {
      set_scales();
      key_blocks_serial<Cfg>(p, sm, tile, row0, kr, limit, block_scale, q_addr, it_k, qs, my_turn,
                             other_turn, softmax, acc, eo);
      epilogue<Cfg>(p, tile, row0, wg, o_buf, acc, softmax, eo);
      continue;
    }

    // Prologue: S of the last block, its softmax. Config::kTrimFirstBlock: when none of that
    // block's keys is visible to the warpgroup's rows (causal, warpgroup 0), the block is skipped
    // (skip_masked_block) and the one before starts; it also computes only
    // the keys of the (then) first block that some row of the warpgroup sees (its last row's
    // limit; the tile's key range is the tile's last row's, and sk may end inside the block): up
    // to 64 or 128, the QK^T and the softmax run on those keys only (S in the first 32 or 64
    // registers) and the fragments of the later keys are P = 0. The output bits are the same as
    // the whole block's (its other keys are masked: p = 0, and a block with no visible key leaves
    // the max at -inf, l and O at zero).
    int n = kr.n_hi - 1;
    if constexpr (Cfg::kTrimFirstBlock) {
      // sf: S's own registers for a trimmed block (a view of s's first registers made ptxas
      // serialize every wgmma of the kernel, C7511), s itself for the whole block.
      auto first_block = [&](auto& sf) {
        constexpr int kR = sizeof(sf) / sizeof(float);
        issue_first_qk(sm, sf, q_addr, it_k, my_turn, other_turn);
        set_scales();
        ptx::wgmma_wait<0>();
        fence_regs(sf);
        release(&sm.k_empty[KV::stage_of(it_k)]);
        ++it_k;
        block_scale(n, scale);
        if (n >= kr.n_mask_lo) softmax.template step<true, kR>(sf, n * Cfg::kBlockN, limit, scale, alpha);
        else softmax.template step<false, kR>(sf, n * Cfg::kBlockN, limit, scale, alpha);
        make_p_fragments<Cfg, kR>(sf, pf);
      };
      const long long lim = warpgroup_key_limit(p.causal, p.seqlen_q, p.seqlen_k, tile.m_block,
                                                Cfg::kBlockM, wg);
      int keys = first_block_keys(lim, n, Cfg::kBlockN);
      if (keys == 0 && n > kr.n_lo) {
        skip_masked_block<Cfg>(sm, it_k, my_turn, other_turn);
        --n;
        keys = first_block_keys(lim, n, Cfg::kBlockN);
      }
      if (keys <= 64) {
        float s64[32];
        first_block(s64);
      } else if (keys <= 128) {
        float s128[64];
        first_block(s128);
      } else {
        first_block(s);
      }
    } else {
      // The whole block. These lines repeat first_block's on purpose: calling first_block(s) here
      // re-schedules the kernels that take this path (their SASS hashes change), unmeasured.
      issue_first_qk(sm, s, q_addr, it_k, my_turn, other_turn);
      set_scales();
      ptx::wgmma_wait<0>();
      fence_regs(s);
      release(&sm.k_empty[KV::stage_of(it_k)]);
      ++it_k;
      block_scale(n, scale);
      if (n >= kr.n_mask_lo) softmax.template step<true>(s, n * Cfg::kBlockN, limit, scale, alpha);
      else softmax.template step<false>(s, n * Cfg::kBlockN, limit, scale, alpha);
      if constexpr (Cfg::kPSmem) wait_staging_read<Cfg>(wg);
      make_p_fragments<Cfg>(s, pf, p_addr);
    }

    // Steady state: QK^T of block n with PV of block n+1. `masked` (Config::kSplitMaskLoop): the
    // loop's blocks all need the mask (std::true_type) or none does.
    auto steady_block = [&](auto masked) {
      if constexpr (Cfg::kUniformRingCounter) it_k = __shfl_sync(0xffffffff, it_k, 0);
      ptx::mbar_wait<Cfg::kSleepingWaits>(&sm.k_full[KV::stage_of(it_k)], KV::phase_of(it_k));
      if constexpr (Cfg::kPSmem) ptx::fence_proxy_async_shared_cta();
      ptx::named_barrier_sync(my_turn, kThreadsPingPong);
      fence_regs(pf);
      ptx::wgmma_fence();
      issue_qk(s, q_addr, ptx::smem_addr(sm.k[KV::stage_of(it_k)]));
      ptx::wgmma_commit();
      ptx::mbar_wait<Cfg::kSleepingWaits>(PVOperand<Cfg>::full(sm, KV::stage_of(it_k - 1)), KV::phase_of(it_k - 1));
      acc.before_issue(alpha);
      ptx::wgmma_fence();
      acc.issue(pf, PVOperand<Cfg>::addr(sm, KV::stage_of(it_k - 1)), p_addr);
      ptx::wgmma_commit();
      if constexpr (!Cfg::kTurnAfterMax) ptx::named_barrier_arrive(other_turn, kThreadsPingPong);

      ptx::wgmma_wait<1>();  // S ready, PV still running
      fence_regs(s);
      release(&sm.k_empty[KV::stage_of(it_k)]);
      block_scale(n, scale);
      // The two halves apart: only the max half differs between masked and unmasked blocks, so
      // the exp half is one copy of code after the branch (the SASS that was measured).
      if constexpr (!Cfg::kSplitMaskLoop) {
        if (n >= kr.n_mask_lo) softmax.template step_max<true>(s, n * Cfg::kBlockN, limit, scale, alpha_next);
        else softmax.template step_max<false>(s, n * Cfg::kBlockN, limit, scale, alpha_next);
      } else {
        softmax.template step_max<decltype(masked)::value>(s, n * Cfg::kBlockN, limit, scale, alpha_next);
      }
      // Config::kTurnAfterMax: the turn handed over here, after the maxima (the other
      // warpgroup's next issue waits for them), which holds the two warpgroups half a period apart.
      if constexpr (Cfg::kTurnAfterMax) ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
      softmax.step_exp(s, scale);

      ptx::wgmma_wait<0>();  // O_{n+1} ready
      fence_regs(pf);
      release(PVOperand<Cfg>::empty(sm, KV::stage_of(it_k - 1)));
      ++it_k;
      acc.after_wait(alpha);
      if constexpr (Softmax<Cfg>::kTcRowSum) softmax.add_block_sum(acc.block_sum_r0(), acc.block_sum_r8(), alpha_next);
      make_p_fragments<Cfg>(s, pf, p_addr);  // only now: the PV that read pf has completed
      alpha[0] = alpha_next[0];
      alpha[1] = alpha_next[1];
    };
    if constexpr (Cfg::kSplitMaskLoop) {
      for (--n; n >= kr.n_lo && n >= kr.n_mask_lo; --n) steady_block(std::true_type{});
      for (; n >= kr.n_lo; --n) steady_block(std::false_type{});
    } else {
      for (--n; n >= kr.n_lo; --n) steady_block(std::false_type{});
    }
    // Every QK^T of the tile has completed: its Q buffer may be refilled.
    release(&sm.q_empty[qs.stage]);
    qs.advance();

    // Drain: PV of the first block. The epilogue's operands are fetched first (S is dead, so
    // their registers are free) and arrive while the last P V runs.
    if constexpr (Cfg::kTmaStoreO) eo.load(p, tile, row0, kv_head);
    else eo.load(p, tile, row0);
    ptx::mbar_wait<Cfg::kSleepingWaits>(PVOperand<Cfg>::full(sm, KV::stage_of(it_k - 1)), KV::phase_of(it_k - 1));
    if constexpr (Cfg::kPSmem) ptx::fence_proxy_async_shared_cta();
    ptx::named_barrier_sync(my_turn, kThreadsPingPong);
    fence_regs(pf);
    acc.before_issue(alpha);
    ptx::wgmma_fence();
    acc.issue(pf, PVOperand<Cfg>::addr(sm, KV::stage_of(it_k - 1)), p_addr);
    ptx::wgmma_commit();
    ptx::named_barrier_arrive(other_turn, kThreadsPingPong);
    ptx::wgmma_wait<0>();
    release(PVOperand<Cfg>::empty(sm, KV::stage_of(it_k - 1)));
    acc.after_wait(alpha);
    if constexpr (Softmax<Cfg>::kTcRowSum) {
      const float one[2] = {1.f, 1.f};
      softmax.add_block_sum(acc.block_sum_r0(), acc.block_sum_r8(), one);
    }

    epilogue<Cfg>(p, tile, row0, wg, o_buf, acc, softmax, eo);
  }
}

}  // namespace fp8attn::attn
