// The epilogue: O * v_descale / l (+ o_bias) -> BF16 through shared memory and a TMA store (or
// straight from the consumers' registers), the LSE -> FP32, and the per-channel operands it reads.
#pragma once
#include <cuda_bf16.h>

#include "attn/config.h"
#include "attn/gemm.cuh"
#include "attn/params.h"
#include "attn/pipeline.cuh"
#include "attn/scheduler.cuh"
#include "ptx/tma.cuh"
#include "ptx/warpgroup.cuh"

namespace fp8attn::attn {

__device__ __forceinline__ float load_or_one(const float* ptr, int64_t off) {
  return ptr ? __ldg(ptr + off) : 1.f;
}

// Starts bringing a line into L1 and holds no register afterwards.
__device__ __forceinline__ void prefetch_l1(const float* ptr) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(ptr));
}

// Epilogue: BF16 O and FP32 LSE from registers.
// The per-channel factors of this thread's 32 output columns (V's descale and o_bias). Loaded
// before the tile's last P V product is issued, so their latency hides under it.
struct EpilogueOperands {
  float vd[32], ob[32];
  float lb[2];  // lse_bias of rows row0 and row0 + 8 (lanes q4 == 0, which store the LSE)
  // One V descale for every channel (per-head V): loaded here as one scalar and copied into vd[]
  // only by expand(), after the tile's last P V has completed. Copied at load time, the 32
  // copies waited for the load before the last P V could be issued (a global load's latency
  // on every tile's critical path: docs/kernel.md, the tile boundary).
  float vb;
  bool vd_bcast;
  __device__ __forceinline__ void expand() {
    if (vd_bcast) {
#pragma unroll
      for (int i = 0; i < 32; ++i) vd[i] = vb;
    }
  }
  __device__ __forceinline__ void load(const KernelParams& p, const Tile& tile, int row0) {
    load(p, tile, row0, tile.head / p.q_per_kv);
  }
  // The same with the tile's KV head given (the short-tile configuration's, published by the
  // producer).
  __device__ __forceinline__ void load(const KernelParams& p, const Tile& tile, int row0, int kv_head) {
    vb = 1.f;
    vd_bcast = false;
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
      vd_bcast = vbase && p.vd_broadcast;
      if (vd_bcast) vb = __ldg(vbase);
      const float2* vd2 = vbase && !p.vd_broadcast ? reinterpret_cast<const float2*>(vbase) + q4 : nullptr;
      const float2* ob2 = p.o_bias ? reinterpret_cast<const float2*>(
                                         p.o_bias + tile.batch * p.ob_stride_b + kv_head * p.ob_stride_h) + q4
                                   : nullptr;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const float2 v = vd2 ? __ldg(vd2 + 4 * i) : make_float2(1.f, 1.f);  // expand() sets vb
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

// This thread's BF16 pair of row r (row0 + 8 r), channels 8 i + 2 q4 + {0, 1}: O * v_descale / l
// (+ o_bias); 0 for a row with no visible key (a NaN reached the row: NaN).
template <class Cfg>
__device__ __forceinline__ uint32_t o_pair(const PVAccumulator<Cfg>& acc, const EpilogueOperands& eo,
                                           const float (&inv_l)[2], int r, int i) {
  float x0 = acc.o[4 * i + 2 * r] * eo.vd[2 * i] * inv_l[r] + eo.ob[2 * i];
  float x1 = acc.o[4 * i + 2 * r + 1] * eo.vd[2 * i + 1] * inv_l[r] + eo.ob[2 * i + 1];
  if (inv_l[r] == 0.f) x0 = x1 = 0.f;
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// O through the warpgroup's staging buffer and two TMA stores (p.o_tma): 8 stmatrix per thread
// instead of 32 scattered global stores, and the warpgroup moves on while the TMA writes.
// Thread t128 == 0 issues the stores; before the buffer is written again it waits until the
// previous tile's stores have read it. Rows past seqlen_q lie outside tma_o and are not written.
template <class Cfg>
__device__ __forceinline__ void store_o_tma(const KernelParams& p, const Tile& tile, int wg,
                                            uint8_t* buf, const PVAccumulator<Cfg>& acc,
                                            const EpilogueOperands& eo, const float (&inv_l)[2]) {
  const int t128 = threadIdx.x % 128, lane = t128 % 32, warp = t128 / 32;
  const int bar = epilogue_barrier<Cfg>(wg);
  if (t128 == 0) ptx::bulk_wait_group_read_all();
  ptx::named_barrier_sync(bar, 128);
  // stmatrix x4 number j4 covers channel groups i = 2 j4, 2 j4 + 1 (8 channels each) of rows
  // 16 warp .. + 15: matrix m = lane / 8 is (i = 2 j4 + m / 2, rows + 8 (m % 2)); lane gives the
  // address of row lane % 8 of matrix m. 128-byte swizzle: 16-byte chunk c of row r sits at
  // chunk c ^ (r % 8).
  const int m = lane / 8;
  const int row = 16 * warp + 8 * (m % 2) + lane % 8;
  const uint32_t base = ptx::smem_addr(buf) + row * 128;
#pragma unroll
  for (int j4 = 0; j4 < 8; ++j4) {
    const int i = 2 * j4 + m / 2;  // this lane's address: channel group i
    const uint32_t addr = base + (i / 8) * kOHalfBytes + (((i % 8) ^ (row % 8)) << 4);
    ptx::stmatrix_x4(addr, o_pair<Cfg>(acc, eo, inv_l, 0, 2 * j4), o_pair<Cfg>(acc, eo, inv_l, 1, 2 * j4),
                     o_pair<Cfg>(acc, eo, inv_l, 0, 2 * j4 + 1), o_pair<Cfg>(acc, eo, inv_l, 1, 2 * j4 + 1));
  }
  ptx::fence_proxy_async_shared_cta();
  ptx::named_barrier_sync(bar, 128);
  if (t128 == 0) {
    const int row0 = tile.m_block * Cfg::kBlockM + 64 * wg;
    ptx::tma_store_4d(&p.tma_o, buf, 0, tile.head, row0, tile.batch);
    ptx::tma_store_4d(&p.tma_o, buf + kOHalfBytes, 128, tile.head, row0, tile.batch);
    ptx::bulk_commit_group();
  }
}

template <class Cfg>
__device__ __forceinline__ void epilogue(const KernelParams& p, const Tile& tile, int row0, int wg,
                                         uint8_t* o_buf, const PVAccumulator<Cfg>& acc, Softmax<Cfg>& sm,
                                         EpilogueOperands& eo) {
  eo.expand();
  float inv_l[2];
  sm.finalize(inv_l);
  const int q4 = threadIdx.x % 4;
  if constexpr (Cfg::kTmaStoreO) {
    if (p.o_tma) store_o_tma<Cfg>(p, tile, wg, o_buf, acc, eo, inv_l);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= p.seqlen_q) continue;
    const bool empty = inv_l[r] == 0.f;
    if (!p.o_tma) {
      __nv_bfloat16* out = p.o + tile.batch * p.o_stride_b + row * p.o_stride_s + tile.head * p.o_stride_h;
#pragma unroll
      for (int i = 0; i < 16; ++i)
        *reinterpret_cast<uint32_t*>(out + 8 * i + 2 * q4) = o_pair<Cfg>(acc, eo, inv_l, r, i);
    }
    if (p.lse && q4 == 0) {
      const int64_t li = (static_cast<int64_t>(tile.batch) * p.heads + tile.head) * p.seqlen_q + row;
      float lse = sm.lse(r);
      if (!empty) lse += eo.lb[r];  // 0 without lse_bias
      p.lse[li] = lse;
    }
  }
}

// Config::kPSmem: a tile's first P goes into the buffer that staged the previous tile's O; wait
// until that tile's TMA stores have read it (the whole warpgroup, before any warp writes).
template <class Cfg>
__device__ __forceinline__ void wait_staging_read(int wg) {
  if (threadIdx.x % 128 == 0) ptx::bulk_wait_group_read_all();
  ptx::named_barrier_sync(epilogue_barrier<Cfg>(wg), 128);
}

// Before the consumer warpgroup exits: its last TMA stores have completed.
template <class Cfg>
__device__ __forceinline__ void epilogue_drain(const KernelParams& p) {
  if constexpr (Cfg::kTmaStoreO) {
    if (p.o_tma && threadIdx.x % 128 == 0) ptx::bulk_wait_group_all();
  }
}

}  // namespace fp8attn::attn
