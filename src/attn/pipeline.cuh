// The pipeline plan of the attention kernel: what lives in shared memory (SharedStorage), the
// mbarrier rings that hand Q, K, V (and FP16 V) from producer to consumers, their ring counters,
// and the named barriers of the consumers' ping-pong.
#pragma once
#include <cstdint>

#include "attn/config.h"
#include "attn/scheduler.cuh"
#include "ptx/mbarrier.cuh"

namespace fp8attn::attn {

// The epilogue's O staging per consumer warpgroup: 64 rows x 128 channels of BF16.
inline constexpr int kOHalfBytes = 64 * 64 * 2;
inline constexpr int kOStageBytes = 2 * kOHalfBytes;

// The separate row-sum wgmma's ones (1 KiB: the 64B-swizzle atom of 8 rows is 512 B); 16 unused
// bytes in the kernels without l from the tensor core; nothing (an empty member) with the fused
// row sums.
template <int kBytes>
struct alignas(1024) OnesTile {
  uint8_t b[kBytes];
};
template <>
struct OnesTile<0> {};

// P's buffers (Config::kPSmem): per consumer warpgroup [kBlockN / 64 halves][64 rows][128 B] of
// FP16, the P V wgmma's K-major A operand (128-byte swizzle), also the warpgroup's O staging in
// the epilogue (64 rows x 128 channels of BF16: the same 16 KiB at 128-key blocks). Nothing (an
// empty member) in the other kernels.
template <int kWarpgroups, int kBytes>
struct alignas(1024) PTiles {
  uint8_t b[kWarpgroups][kBytes];
};
template <int kWarpgroups>
struct PTiles<kWarpgroups, 0> {};

// Shared memory: tiles first (1024-byte aligned for the 128-byte swizzle), barriers last.
template <class Cfg>
struct alignas(1024) SharedStorage {
  alignas(1024) uint8_t q[2][Cfg::kTileBytesQ];  // double buffer: the next tile's Q loads early
  alignas(1024) uint8_t k[Cfg::kStages][Cfg::kTileBytesK];
  // E4M3 V^T atoms (kFusedRowSum: each followed by 8 rows of E4M3 ones, Config::kVAtomStride).
  alignas(1024) uint8_t v[Cfg::kStages][Cfg::kVTileSmemBytes];
  // FP16 P: V in FP16 (Config::kV16*), a ring in step with v (16 bytes otherwise): converted
  // from v by the converter warps, or (FP16 V^T) loaded by the TMA, which then leaves v unused.
  alignas(1024) uint8_t v16[Cfg::kFP16P ? Cfg::kStages : 1][Cfg::kV16TileBytes];
  // E4M3 ones (0x38): the B operand of the separate row-sum wgmma (kTcRowSum without
  // kFusedRowSum; any layout reads 1). None with kFusedRowSum (whose ones follow V^T's atoms).
  [[no_unique_address]] OnesTile<Cfg::kFusedRowSum ? 0 : Cfg::kTcRowSum ? 1024 : 16> ones;
  // The epilogue's BF16 O (Config::kTmaStoreO; 16 bytes otherwise), one buffer per consumer
  // warpgroup: two column halves of [64 rows][64 channels] (128-byte rows, 128-byte swizzle),
  // stored to global memory by the TMA.
  // With P in shared memory (Config::kPSmem) the staging is P's buffer (p below).
  alignas(1024) uint8_t o[Cfg::kTmaStoreO && !Cfg::kPSmem ? Cfg::kConsumerWarpgroups : 1]
                         [Cfg::kTmaStoreO && !Cfg::kPSmem ? kOStageBytes : 16];
  [[no_unique_address]] PTiles<Cfg::kConsumerWarpgroups, Cfg::kPSmem ? Cfg::kBlockN * 64 * 2 : 0> p;
  uint64_t q_full[2], q_empty[2];
  uint64_t k_full[Cfg::kStages], k_empty[Cfg::kStages];
  uint64_t v_full[Cfg::kStages], v_empty[Cfg::kStages];
  // FP16 P from E4M3 V^T: v16[s] written by the converter warps (full: 3 arrives) / read by the
  // PV (empty: 8). With FP16 V^T, v_full / v_empty guard v16 (the TMA writes it).
  uint64_t v16_full[Cfg::kStages], v16_empty[Cfg::kStages];
  // The producer tells the consumers which tile comes next (a ring of two slots).
  Tile tile[2];  // m_block = -1: no more tiles
  uint64_t tile_full[2], tile_empty[2];
  // The TMA-store configurations (kTmaStoreO: the E4M3 kernel's short tiles, the 192-key FP16 V^T
  // kernel): each slot's KV head, divided once by the producer (the consumers' two divisions
  // per tile are a visible share of a short tile). Last, so that the other kernels' layout, and
  // code, stay as they were.
  int tile_kv_head[Cfg::kTmaStoreO ? 2 : 1];
};

// Named barrier ids (0 is __syncthreads). kWarpSchedulerWG0 + i lets consumer warpgroup i issue
// its GEMMs: the warpgroups take turns (two: ping-pong; three: a ring), so one's softmax runs
// under the others' tensor-core work. After the kConsumerWarpgroups turns, epilogue_barrier(i):
// consumer warpgroup i's 128 threads around its O staging buffer.
enum class NamedBarrier : int { kWarpSchedulerWG0 = 1 };
template <class Cfg>
__device__ __forceinline__ int epilogue_barrier(int wg) {
  return static_cast<int>(NamedBarrier::kWarpSchedulerWG0) + Cfg::kConsumerWarpgroups + wg;
}
// The turn consumer warpgroup wg hands over: the next one's in the ring.
template <class Cfg>
__device__ __forceinline__ int next_turn(int wg) {
  return static_cast<int>(NamedBarrier::kWarpSchedulerWG0) + (wg + 1) % Cfg::kConsumerWarpgroups;
}

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


// One arrive per warp on an "empty" barrier (its count is the number of consumer warps).
__device__ __forceinline__ void release(uint64_t* bar) {
  if (threadIdx.x % 32 == 0) ptx::mbar_arrive(bar);
}

}  // namespace fp8attn::attn
