// The fused pass for Q: every tile of every (batch, head), head
// fastest (quant/rows_tile.cuh). Scale per row (token) or per tile (128 tokens).
#include "quant/launch.h"
#include "quant/pdl.h"
#include "quant/rows_tile.cuh"

namespace fp8attn::quant {
namespace {

// Per row (the default): 128 threads, 8 rows each, 3 CTAs per SM (168 registers), holding
// their lane's sign masks and k_mean runs in registers: a row then reads no shared memory and
// nothing but itself from L1 (two rows' loads in flight per thread: 48 KB per SM). Per tile:
// every row of the tile in registers until its amax, 256 threads, 2 CTAs per SM (128 registers),
// the constants reloaded per row.
template <rows::Scale kScale>
struct QTile {
  static constexpr bool kPerRow = kScale == rows::Scale::kRow;
  static constexpr int kThreads = kPerRow ? 128 : 256;
  static constexpr int kCtasPerSm = kPerRow ? 3 : 2;
  static constexpr rows::Constants kConstants =
      kPerRow ? rows::Constants::kHeldKMean : rows::Constants::kReload;
};

// Rows two side by side where the scale is per token (rows_tile.cuh step_pair: -4% time
// for the rotated pass on the H200).
// kRope: the rope entry's rotary embedding first (rope, the last argument: read only then).
template <bool kRotate, rows::Scale kScale, bool kRope>
__global__ void __launch_bounds__(QTile<kScale>::kThreads, QTile<kScale>::kCtasPerSm)
    quantize_q_kernel(RowQuantArgs a, int tiles, RopeRows rope) {
  using T = QTile<kScale>;
  // With the rope two rows side by side spill (each row holds its table entries too): one row.
  rows::quantize_rows_tile<kRotate, kScale, false, T::kThreads, T::kConstants, !kRope, kRope>(
      a, rows::tile_of(blockIdx.x, a.x.heads, tiles), rope);
}

template <bool kRotate, rows::Scale kScale, bool kRope>
cudaError_t launch(const RowQuantArgs& a, cudaStream_t stream, const RopeRows& rope) {
  constexpr int kRows = rows::kTileRows<kScale>;
  const int tiles = (a.x.seqlen + kRows - 1) / kRows;
  const int64_t ctas = static_cast<int64_t>(tiles) * a.x.heads * a.x.batch;
  // Whatever ran before on the stream (the K/V pass, or the kernel writing Q): the tile waits
  // for it before its first load.
  return launch_after(quantize_q_kernel<kRotate, kScale, kRope>, dim3(static_cast<unsigned>(ctas)),
                      dim3(QTile<kScale>::kThreads), stream, a, tiles, rope);
}

template <bool kRotate, bool kRope>
cudaError_t launch(const RowQuantArgs& a, cudaStream_t stream, const RopeRows& rope) {
  return a.group_rows == 1 ? launch<kRotate, rows::Scale::kRow, kRope>(a, stream, rope)
                           : launch<kRotate, rows::Scale::kTile, kRope>(a, stream, rope);
}

template <bool kRope>
cudaError_t launch(const RowQuantArgs& a, cudaStream_t stream, const RopeRows& rope) {
  return a.rotate ? launch<true, kRope>(a, stream, rope) : launch<false, kRope>(a, stream, rope);
}

}  // namespace

cudaError_t launch_quantize_q(const RowQuantArgs& args, cudaStream_t stream,
                              const RopeRows* rope) {
  return rope != nullptr ? launch<true>(args, stream, *rope)
                         : launch<false>(args, stream, RopeRows{});
}

}  // namespace fp8attn::quant
