// The fused pass for K and V, one launch: K's row tiles
// (quant/rows_tile.cuh: rotate, smooth, scale per head or per 128 keys) spread evenly among V's
// transposed tiles (quant/vt_tile.cuh), so that every SM runs the rotation-heavy K beside the
// light V.
// Last to first when `reverse_order`: the channel reduction's last reads are then still in L2.
#include <algorithm>

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

// K's rows one after the other: two side by side (rows_tile.cuh step_pair) measured 0.5% slower
// here, where V's tiles already fill the waits.
template <bool kRotate, rows::Scale kScale, bool kRope, bool kFoldAmax, bool kF16>
__device__ __forceinline__ void kv_tile(const RowQuantArgs& k, const VtQuantArgs& v, uint32_t n,
                                        uint32_t nk, uint32_t total, uint32_t k_tiles,
                                        uint32_t v_tiles, const uint8_t* again,
                                        const RopeRows& rope) {
  // K tiles spread evenly among V's (K's tiles can hold twice V's rows): K tiles before
  // position n = floor(n nk / total).
  const uint32_t k_before = static_cast<uint32_t>(static_cast<uint64_t>(n) * nk / total);
  const uint32_t k_upto = static_cast<uint32_t>(static_cast<uint64_t>(n + 1) * nk / total);
  const bool is_k = k_upto > k_before;
  const rows::Tile t = is_k ? rows::tile_of(k_before, k.x.heads, k_tiles)
                            : rows::tile_of(n - k_before, v.v.heads, v_tiles);
  if (again != nullptr) {  // the second quantization: only the flagged heads' tiles
    const uint8_t f = again[static_cast<int64_t>(t.b) * v.v.heads + t.head];
    if (!(f & (is_k ? 1u : 2u))) return;
  }
  if (is_k) {
    // K is complete: the statistics pass read it (or the sample's launch started after it).
    using T = KvTile<kRotate, kScale>;
    rows::quantize_rows_tile<kRotate, kScale, true, T::kThreads, T::kConstants, false, kRope,
                             kFoldAmax && kScale == rows::Scale::kKnown>(k, t, rope);
  } else {
    vt::quantize_vt_tile<KvTile<kRotate, kScale>::kThreads, kFoldAmax, kF16>(v, t);
  }
}

// K's rows one after the other: two side by side (rows_tile.cuh step_pair) measured 0.5% slower
// here, where V's tiles already fill the waits.
// `again` null: one CTA per tile. Non-null (FP8ATTN_CENTRE_SAMPLE's second quantization): a
// small grid that returns at once when no head is flagged (the usual case), else strides over
// the tiles and does the flagged heads' ones.
// (A separate kernel for the second quantization, so that its loop does not weigh on the first
// pass's registers. Its loop may only run tiles that use no shared memory across iterations: V
// tiles and per-head K tiles; a per-128-key K scale is never regrouped.)
// kRope: K's rows rotated by `rope` (the last argument, read only then) as they are loaded.
// kFoldAmax: FP8ATTN_CENTRE_SAMPLE's first pass (the true amax into k.true_amax, v.true_amax);
// kF16: V^T in FP16 (v.vt_f16). Compile-time, so that the default pass carries neither's code.
template <bool kRotate, rows::Scale kScale, bool kAgain, bool kRope, bool kFoldAmax, bool kF16>
__global__ void __launch_bounds__(KvTile<kRotate, kScale>::kThreads,
                                  KvTile<kRotate, kScale>::kCtasPerSm)
    quantize_kv_kernel(RowQuantArgs k, VtQuantArgs v, uint32_t nk, uint32_t nv, uint32_t k_tiles,
                       uint32_t v_tiles, const uint8_t* again, uint32_t heads_total,
                       RopeRows rope) {
  ptx::let_next_grid_start();  // the Q pass, when it follows, takes the SMs this one leaves
  const uint32_t total = nk + nv;
  if constexpr (!kAgain) {
    const uint32_t n = k.reverse_order ? total - 1 - blockIdx.x : blockIdx.x;
    kv_tile<kRotate, kScale, kRope, kFoldAmax, kF16>(k, v, n, nk, total, k_tiles, v_tiles, nullptr,
                                                      rope);
    return;
  }
  ptx::wait_for_previous_grid();  // the regroup's flags
  int any = 0;
  for (uint32_t i = threadIdx.x; i < heads_total; i += blockDim.x) any |= again[i];
  if (!__syncthreads_or(any)) return;
  for (uint32_t n = blockIdx.x; n < total; n += gridDim.x) {
    kv_tile<kRotate, kScale, kRope, kFoldAmax, kF16>(k, v, n, nk, total, k_tiles, v_tiles, again,
                                                      rope);
  }
}

template <bool kRotate, rows::Scale kScale, bool kRope, bool kFoldAmax, bool kF16>
cudaError_t launch(const RowQuantArgs& k, const VtQuantArgs& v, cudaStream_t stream,
                   const uint8_t* again, int num_sms, const RopeRows& rope) {
  constexpr int kRows = rows::kTileRows<kScale>;
  const int k_tiles = (k.x.seqlen + kRows - 1) / kRows;
  const int v_tiles = (v.vt_pad + vt::kTileKeys - 1) / vt::kTileKeys;
  const int64_t nk = static_cast<int64_t>(k_tiles) * k.x.heads * k.x.batch;
  const int64_t nv = static_cast<int64_t>(v_tiles) * v.v.heads * v.v.batch;
  if (nk + nv >= (int64_t{1} << 31)) return cudaErrorInvalidConfiguration;
  // After the statistics' finalize step, which writes the means and scales read here.
  const int64_t full = nk + nv;
  const int64_t ctas =
      again == nullptr ? full : std::min<int64_t>(full, int64_t{num_sms} * KvTile<kRotate, kScale>::kCtasPerSm);
  // The second quantization never folds (the true amax is what it quantizes with).
  return launch_after(again == nullptr ? quantize_kv_kernel<kRotate, kScale, false, kRope, kFoldAmax, kF16>
                                       : quantize_kv_kernel<kRotate, kScale, true, kRope, false, kF16>,
                      dim3(static_cast<unsigned>(ctas)),
                      dim3(KvTile<kRotate, kScale>::kThreads), stream, k, v,
                      static_cast<uint32_t>(nk), static_cast<uint32_t>(nv),
                      static_cast<uint32_t>(k_tiles), static_cast<uint32_t>(v_tiles), again,
                      static_cast<uint32_t>(static_cast<int64_t>(v.v.batch) * v.v.heads), rope);
}

template <bool kRope, bool kFoldAmax, bool kF16>
cudaError_t launch(const RowQuantArgs& k, const VtQuantArgs& v, cudaStream_t stream,
                   const uint8_t* again, int num_sms, const RopeRows& rope) {
  if (k.group_rows == 0) {
    return k.rotate ? launch<true, rows::Scale::kKnown, kRope, kFoldAmax, kF16>(k, v, stream, again, num_sms, rope)
                    : launch<false, rows::Scale::kKnown, kRope, kFoldAmax, kF16>(k, v, stream, again, num_sms, rope);
  }
  return k.rotate ? launch<true, rows::Scale::kTile, kRope, kFoldAmax, kF16>(k, v, stream, again, num_sms, rope)
                  : launch<false, rows::Scale::kTile, kRope, kFoldAmax, kF16>(k, v, stream, again, num_sms, rope);
}

template <bool kRope, bool kFoldAmax>
cudaError_t launch(const RowQuantArgs& k, const VtQuantArgs& v, cudaStream_t stream,
                   const uint8_t* again, int num_sms, const RopeRows& rope) {
  return v.vt_f16 ? launch<kRope, kFoldAmax, true>(k, v, stream, again, num_sms, rope)
                  : launch<kRope, kFoldAmax, false>(k, v, stream, again, num_sms, rope);
}

template <bool kRope>
cudaError_t launch(const RowQuantArgs& k, const VtQuantArgs& v, cudaStream_t stream,
                   const uint8_t* again, int num_sms, const RopeRows& rope) {
  // The fold writes both true amaxes (K's only when K is scaled per head, i.e. group_rows 0);
  // the second quantization (again) folds nothing.
  const bool fold = again == nullptr && v.true_amax != nullptr;
  const bool k_fold = again == nullptr && k.true_amax != nullptr;
  if (k_fold != (fold && k.group_rows == 0)) return cudaErrorInvalidValue;
  return fold ? launch<kRope, true>(k, v, stream, again, num_sms, rope)
              : launch<kRope, false>(k, v, stream, again, num_sms, rope);
}

}  // namespace

cudaError_t launch_quantize_kv(const RowQuantArgs& k, const VtQuantArgs& v, cudaStream_t stream,
                               const uint8_t* again, int num_sms, const RopeRows* k_rope) {
  return k_rope != nullptr ? launch<true>(k, v, stream, again, num_sms, *k_rope)
                           : launch<false>(k, v, stream, again, num_sms, RopeRows{});
}

}  // namespace fp8attn::quant
