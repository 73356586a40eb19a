// The attention kernel: one producer warpgroup (TMA loads) and two consumer warpgroups (wgmma +
// online softmax), wired in one launch.
//
//   producer : Q tile once per tile; then K_n, V_n for n = n_hi-1 down to n_lo into a
//              kStages-deep ring of shared-memory buffers (mbarrier full/empty pairs).
//   converter: FP8ATTN_P_FP16 with E4M3 V^T only: the producer warpgroup's warps 1..3 turn each
//              E4M3 V^T block into FP16 (un-permuted keys, 128-byte swizzle) in a second ring
//              (v16). With FP16 V^T (FP8ATTN_VT_FP16) the TMA fills v16 itself.
//   consumer : per block n, S = Q K_n^T (SS wgmma) -> softmax -> P (E4M3 or FP16, registers)
//              -> O_n = P V_n (RS wgmma, fresh accumulator) -> O = O * alpha + O_n.
//              Intra-warpgroup overlap: the QK^T of block n is issued together with the PV of
//              block n+1, so the softmax of block n runs while the PV is on the tensor cores
//              (one-level kernels; the two-level ones wait for the PV: key_blocks_serial).
//              Ping-pong: the two warpgroups take turns issuing (named barriers), so one's
//              softmax also runs under the other's GEMMs.
//   epilogue : O * v_descale / l (+ o_bias) -> BF16 -> shared memory (stmatrix) -> TMA store,
//              LSE -> FP32 from registers.
#pragma once
#include <cuda.h>

#include "attn/config.h"
#include "attn/mainloop.cuh"
#include "attn/params.h"
#include "attn/pipeline.cuh"
#include "attn/producer.cuh"
#include "attn/softmax.cuh"
#include "attn/v_converter.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"

namespace fp8attn::attn {

// The fused row sums' ones (Config::kFusedRowSum): kOnesBytes of `word` after each of a ring
// stage's kSlabs slabs (V^T atoms or FP16 halves, kSlabBytes each, kSlabStride apart), in every
// stage; the TMA never writes them, and any swizzle reads 1 from bytes that are all 1. Made
// visible to the wgmma (async proxy).
template <int kThreads, int kSlabs, int kSlabStride, int kSlabBytes, int kOnesBytes, int kStages, int kTileBytes>
__device__ __forceinline__ void fill_ones_rows(uint8_t (&ring)[kStages][kTileBytes], uint32_t word) {
  constexpr int kWords = kOnesBytes / 4;
  for (int i = threadIdx.x; i < kStages * kSlabs * kWords; i += kThreads) {
    const int slab = i / kWords;  // stage * kSlabs + slab within the stage
    reinterpret_cast<uint32_t*>(ring[slab / kSlabs] + (slab % kSlabs) * kSlabStride + kSlabBytes)[i % kWords] = word;
  }
  ptx::fence_proxy_async_shared();
}

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
    if (Cfg::kTmaStoreO && p.o_tma) ptx::tma_prefetch_descriptor(&p.tma_o);
    for (int s = 0; s < 2; ++s) {
      ptx::mbar_init(&sm.tile_full[s], 1);
      // Every thread that reads the published tile arrives itself (its own read ordered before
      // its own arrive): 32 per consumer and converter warp.
      ptx::mbar_init(&sm.tile_empty[s], 32 * (kConsumerWarps + Cfg::kConverterWarps));
    }
    for (int s = 0; s < 2; ++s) {
      ptx::mbar_init(&sm.q_full[s], 1);
      ptx::mbar_init(&sm.q_empty[s], kConsumerWarps);
    }
    for (int s = 0; s < Cfg::kStages; ++s) {
      ptx::mbar_init(&sm.k_full[s], 1);
      ptx::mbar_init(&sm.k_empty[s], kConsumerWarps);
      ptx::mbar_init(&sm.v_full[s], 1);
      // FP16 P from E4M3 V^T: the converter warps release the E4M3 slot, the consumers the
      // FP16 one.
      ptx::mbar_init(&sm.v_empty[s], Cfg::kConvertV ? Cfg::kConverterWarps : kConsumerWarps);
      ptx::mbar_init(&sm.v16_full[s], Cfg::kConverterWarps > 0 ? Cfg::kConverterWarps : 1);
      ptx::mbar_init(&sm.v16_empty[s], kConsumerWarps);
    }
    ptx::mbar_fence_init();
  }
  if constexpr (Cfg::kFusedRowSum && Cfg::kVtF16) {
    // The FP16 ones rows after every FP16 V^T half of every stage (Config::kV16HalfStride).
    fill_ones_rows<Cfg::kThreads, Cfg::kV16Halves, Cfg::kV16HalfStride, Cfg::kV16HalfBytes, Cfg::kV16OnesBytes>(
        sm.v16, 0x3C003C00u);  // FP16 1.0
  } else if constexpr (Cfg::kFusedRowSum) {
    // The ones rows after every V^T atom of every stage (Config::kVAtomStride).
    fill_ones_rows<Cfg::kThreads, Cfg::kVAtoms, Cfg::kVAtomStride, Cfg::kVAtomBytes, Cfg::kOnesRowBytes>(
        sm.v, 0x38383838u);  // E4M3 1.0
  } else if constexpr (Softmax<Cfg>::kTcRowSum) {
    for (int i = threadIdx.x; i < static_cast<int>(sizeof(sm.ones.b)) / 4; i += Cfg::kThreads)
      reinterpret_cast<uint32_t*>(sm.ones.b)[i] = 0x38383838u;  // E4M3 1.0
    ptx::fence_proxy_async_shared();  // visible to the wgmma (async proxy)
  }
  __syncthreads();

  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (threadIdx.x == 0) {
      producer<Cfg>(p, sm);
    } else if constexpr (Cfg::kConvertV) {
      if (threadIdx.x >= 32) v_converter<Cfg>(p, sm);  // warps 1..3
    }
  } else {
    ptx::setmaxnreg_inc<Cfg::kConsumerRegs>();
    consumer<Cfg>(p, sm, warpgroup - 1);
  }
}

}  // namespace fp8attn::attn
