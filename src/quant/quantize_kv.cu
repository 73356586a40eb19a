// The fused pass for K and V (FP8ATTN_QUANT_VARIANT=v2), one launch: K's row tiles
// (quant/rows_tile.cuh: rotate, smooth, scale per head or per 128 keys) spread evenly among V's
// transposed tiles (quant/vt_tile.cuh), so that every SM runs the rotation-heavy K beside the
// light V. The end-to-end pre-pass (fp8attn_quantize_qkv) adds Q's tiles to the same launch
// when they have the same shape (the defaults): no launch boundary between K/V and Q, and
// Q's rotation beside V's light tiles too.
// Last to first when `reverse_order`: the channel reduction's last reads are then still in L2.
#include <cstdlib>
#include <cstring>

#include "ptx/griddep.cuh"
#include "quant/launch.h"
#include "quant/pdl.h"
#include "quant/rows_tile.cuh"
#include "quant/vt_tile.cuh"

namespace fp8attn::quant {
namespace {

// Rotated, scale per head (the default): 128 threads, 3 CTAs per SM (168 registers); a K tile's
// threads hold their lane's sign masks and mean runs in registers across their 8 rows (a row then
// reads no shared memory and nothing but itself from L1), a V tile is done in two sweeps of 64
// channels. Otherwise: 256 threads, 2 CTAs per SM (128 registers), K's constants reloaded per row
// (the tile scale holds every row's values; unrotated, there are no masks to hold).
template <bool kRotate, rows::Scale kScale>
struct KvTile {
  static constexpr bool kHeld = kRotate && kScale == rows::Scale::kKnown;
  static constexpr int kThreads = kHeld ? 128 : 256;
  static constexpr int kCtasPerSm = kHeld ? 3 : 2;
  static constexpr rows::Constants kConstants =
      kHeld ? rows::Constants::kHeldMean : rows::Constants::kReload;
};

// Which tile position n of `total` (visited last to first when reversed) is: `count` tiles of
// one kind spread evenly among the others, so that the ones before n are floor(n count / total)
// and n is one of them when that count steps at n + 1.
struct Spread {
  uint32_t before;  // tiles of the kind before position n
  bool here;        // position n is one of them
};
__device__ __forceinline__ Spread spread(uint32_t n, uint32_t count, uint32_t total) {
  const uint32_t before = static_cast<uint32_t>(static_cast<uint64_t>(n) * count / total);
  const uint32_t upto = static_cast<uint32_t>(static_cast<uint64_t>(n + 1) * count / total);
  return {before, upto > before};
}

// Tile counts of one launch.
struct Tiles {
  uint32_t nk, nv, nq;           // K, V and Q tiles (nq = 0: K and V only)
  uint32_t k_tiles, v_tiles, q_tiles;  // per (batch, head)
  bool q_last;                   // probe knob FP8ATTN_QKV_ORDER=last: Q's tiles after K's and V's
};

// K tiles spread evenly among V's (K's tiles hold twice V's rows); with Q (kWithQ: the
// end-to-end pre-pass, fp8attn_quantize_qkv), Q's tiles spread evenly among both. Every tile
// waits for the finalize step (means, scales) before its first write; its inputs were complete
// before the statistics pass began, so every tile loads its first rows before that wait.
template <bool kRotate, rows::Scale kScale, bool kWithQ>
__global__ void __launch_bounds__(KvTile<kRotate, kScale>::kThreads,
                                  KvTile<kRotate, kScale>::kCtasPerSm)
    quantize_kv_kernel(RowQuantArgs k, VtQuantArgs v, RowQuantArgs q, Tiles n_tiles) {
  ptx::let_next_grid_start();  // the Q pass, when it follows, takes the SMs this one leaves
  using T = KvTile<kRotate, kScale>;
  const uint32_t total = n_tiles.nk + n_tiles.nv + n_tiles.nq;
  uint32_t n = k.reverse_order ? total - 1 - blockIdx.x : blockIdx.x;
  if constexpr (kWithQ) {
    static_assert(T::kThreads == 128, "Q's row-scaled tile: 128 threads holding k_mean");
    const Spread sq = n_tiles.q_last ? Spread{n < n_tiles.nq ? n : n_tiles.nq, n < n_tiles.nq}
                                     : spread(n, n_tiles.nq, total);
    if (sq.here) {
      rows::quantize_rows_tile<kRotate, rows::Scale::kRow, true, 128,
                               rows::Constants::kHeldKMean>(
          q, rows::tile_of(sq.before, q.x.heads, n_tiles.q_tiles));
      return;
    }
    n -= sq.before;  // among K's and V's tiles
  }
  const Spread sk = spread(n, n_tiles.nk, n_tiles.nk + n_tiles.nv);
  if (sk.here) {
    // K is complete: the statistics pass read it.
    rows::quantize_rows_tile<kRotate, kScale, true, T::kThreads, T::kConstants>(
        k, rows::tile_of(sk.before, k.x.heads, n_tiles.k_tiles));
  } else {
    vt::quantize_vt_tile<T::kThreads>(v, rows::tile_of(n - sk.before, v.v.heads, n_tiles.v_tiles));
  }
}

template <bool kRotate, rows::Scale kScale, bool kWithQ>
cudaError_t launch(const RowQuantArgs& k, const VtQuantArgs& v, const RowQuantArgs& q,
                   cudaStream_t stream) {
  constexpr int kRows = rows::kTileRows<kScale>;
  constexpr int kQRows = rows::kTileRows<rows::Scale::kRow>;
  const int k_tiles = (k.x.seqlen + kRows - 1) / kRows;
  const int v_tiles = (v.vt_pad + vt::kTileKeys - 1) / vt::kTileKeys;
  const int q_tiles = kWithQ ? (q.x.seqlen + kQRows - 1) / kQRows : 0;
  const int64_t nk = static_cast<int64_t>(k_tiles) * k.x.heads * k.x.batch;
  const int64_t nv = static_cast<int64_t>(v_tiles) * v.v.heads * v.v.batch;
  const int64_t nq = kWithQ ? static_cast<int64_t>(q_tiles) * q.x.heads * q.x.batch : 0;
  if (nk + nv + nq >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  const Tiles tiles{static_cast<uint32_t>(nk), static_cast<uint32_t>(nv),
                    static_cast<uint32_t>(nq), static_cast<uint32_t>(k_tiles),
                    static_cast<uint32_t>(v_tiles), static_cast<uint32_t>(q_tiles),
                    kWithQ && std::getenv("FP8ATTN_QKV_ORDER") != nullptr &&
                        std::strcmp(std::getenv("FP8ATTN_QKV_ORDER"), "last") == 0};
  // After the statistics' finalize step, which writes the means and scales read here.
  return launch_after(quantize_kv_kernel<kRotate, kScale, kWithQ>,
                      dim3(static_cast<unsigned>(nk + nv + nq)),
                      dim3(KvTile<kRotate, kScale>::kThreads), stream, k, v, q, tiles);
}

}  // namespace

cudaError_t launch_quantize_kv(const RowQuantArgs& k, const VtQuantArgs& v, cudaStream_t stream) {
  const RowQuantArgs none{};
  if (k.group_rows == 0) {
    return k.rotate ? launch<true, rows::Scale::kKnown, false>(k, v, none, stream)
                    : launch<false, rows::Scale::kKnown, false>(k, v, none, stream);
  }
  return k.rotate ? launch<true, rows::Scale::kTile, false>(k, v, none, stream)
                  : launch<false, rows::Scale::kTile, false>(k, v, none, stream);
}

bool fused_qkv_supported(const RowQuantArgs& k, const RowQuantArgs& q) {
  // Q's row-scaled tile and the rotated, head-scaled K tile both run 128 threads holding their
  // constants; other option sets run the two launches.
  return k.rotate && q.rotate && k.group_rows == 0 && q.group_rows == 1;
}

cudaError_t launch_quantize_qkv(const RowQuantArgs& k, const VtQuantArgs& v, const RowQuantArgs& q,
                                cudaStream_t stream) {
  if (!fused_qkv_supported(k, q)) return cudaErrorInvalidValue;
  RowQuantArgs kr = k;
  kr.reverse_order = true;  // as launch_quantize_kv: start where the reduction ended
  return launch<true, rows::Scale::kKnown, true>(kr, v, q, stream);
}

}  // namespace fp8attn::quant
