// The launch of one kernel configuration (launch.cuh), and the configurations the library ships.
#pragma once
#include <cuda_runtime.h>

#include "attn/config.h"
#include "attn/select.h"
#include "common/device.h"
#include "fp8attn/fp8attn.h"

namespace fp8attn::attn {

// How the tiles are handed out. The library's choice is the default; the lab's probe build
// varies it.
struct LaunchOptions {
  bool persistent = true;       // one CTA per SM claiming tiles from a counter (> SM tiles)
  bool causal_sections = true;  // causal: longest first across L2-sized sections of heads
};

// Launches Config Cfg on validated parameters (validate()) on the current device (dev_info,
// common/device.h).
template <class Cfg>
fp8attn_status launch(const fp8attn_fwd_params& p, const DeviceInfo& dev_info,
                      const LaunchOptions& opts, cudaStream_t stream);

// The shipped configurations (select.h's KernelId), one instantiation file each.
// The long-tile E4M3 kernel: O leaving through shared memory and the TMA, the first block
// skipped where the warpgroup sees none of it and else trimmed to the keys it sees, the row sums
// from the P V product itself, the ping-pong turn handed over after the row maxima
// (Config::kTurnAfterMax). Every call of the default with one K descale per head.
using KernelE4M3Block192Trim =
    Config<PPrecision::kE4M3, false, 192, 2, true, /*kPolyExpEvery=*/0, VtType::kE4M3, /*kTmaStoreO=*/true,
           FirstBlock::kTrim, /*kFusedRowSum=*/true>;
static_assert(KernelE4M3Block192Trim::kTurnAfterMax, "Config::kTurnAfterMax: measured faster here");
static_assert(!KernelE4M3Block192Trim::kSplitMaskLoop, "Config::kSplitMaskLoop: measured slower here");
// FP8ATTN_P_E4M3_EXACT: the same kernel with FA3 FP8's softmax (offset 8, the exact running max,
// l from the FP32 p, so no row sum from the tensor core).
using KernelE4M3ExactBlock192Trim =
    Config<PPrecision::kE4M3, false, 192, 2, /*kTcRowSum=*/false, /*kPolyExpEvery=*/0, VtType::kE4M3,
           /*kTmaStoreO=*/true, FirstBlock::kTrim, /*kFusedRowSum=*/false, /*kExactSoftmax=*/true>;
using KernelE4M3Block128 = Config<PPrecision::kE4M3, false, 128, 3, true>;
using KernelE4M3HiLoTwoLevel = Config<PPrecision::kE4M3HiLo, true, 128, 2, false>;
using KernelFP16Block128 = Config<PPrecision::kFP16, false, 128, 2, false>;
// FP16 V^T: 3 stages (Q 32 + K 48 + V 96 KiB), as the E4M3 128-key kernel.
using KernelFP16VtBlock128 =
    Config<PPrecision::kFP16, false, 128, 3, false, /*kPolyExpEvery=*/0, VtType::kFP16>;
// FP16 V^T, 192-key blocks: S 96 + O 64 + P 48 registers in the consumers' 240; 2 stages
// (Q 32 + K 48 + V 96 KiB). O through shared memory and the TMA at every length: measured
// faster than the register epilogue at 1k and 8k (docs/kernel.md, "FP16 P from FP16 V^T"). The
// first block skipped or trimmed as the E4M3 causal kernel's. l from the tensor core: the row sums
// of the FP16 P in the last 8 columns of an m64n136k16 P V against FP16 V^T halves followed by 8
// rows of ones (one FADD per score fewer). Both masks (docs/kernel.md, "Configurations and
// dispatch"); the key loop split into a masked and an unmasked loop (Config::kSplitMaskLoop).
using KernelFP16VtBlock192RowSum =
    Config<PPrecision::kFP16, false, 192, 2, /*kTcRowSum=*/true, /*kPolyExpEvery=*/0, VtType::kFP16,
           /*kTmaStoreO=*/true, FirstBlock::kTrim, /*kFusedRowSum=*/true>;
static_assert(!KernelFP16VtBlock192RowSum::kTurnAfterMax,
              "Config::kTurnAfterMax: measured slower in the accurate mode");
static_assert(KernelFP16VtBlock192RowSum::kSplitMaskLoop,
              "Config::kSplitMaskLoop: measured faster in the accurate mode");

// FP16 V^T with three consumer warpgroups (192-row tiles, a ring of turns), 128-key blocks, P
// through shared memory into an SS P V (Config::kPSmem), the row sums fused as the 192-key
// kernel's, O through P's buffer and the TMA; 2 stages (Q 48 + K 32 + V 68 + P 48 KiB).
using KernelFP16VtTrioBlock128 =
    Config<PPrecision::kFP16, false, 128, 2, /*kTcRowSum=*/true, /*kPolyExpEvery=*/0, VtType::kFP16,
           /*kTmaStoreO=*/true, FirstBlock::kWhole, /*kFusedRowSum=*/true, /*kExactSoftmax=*/false,
           /*kConsumerWarpgroups=*/3>;
static_assert(KernelFP16VtTrioBlock128::kBlockM == kThreeWarpgroupTileRows,
              "select.h counts this kernel's tiles in its rows");

extern template fp8attn_status launch<KernelE4M3Block192Trim>(const fp8attn_fwd_params&, const DeviceInfo&,
                                                              const LaunchOptions&, cudaStream_t);
extern template fp8attn_status launch<KernelE4M3ExactBlock192Trim>(const fp8attn_fwd_params&,
                                                                   const DeviceInfo&, const LaunchOptions&,
                                                                   cudaStream_t);
extern template fp8attn_status launch<KernelE4M3Block128>(const fp8attn_fwd_params&, const DeviceInfo&,
                                                          const LaunchOptions&, cudaStream_t);
extern template fp8attn_status launch<KernelE4M3HiLoTwoLevel>(const fp8attn_fwd_params&,
                                                              const DeviceInfo&, const LaunchOptions&,
                                                              cudaStream_t);
extern template fp8attn_status launch<KernelFP16Block128>(const fp8attn_fwd_params&, const DeviceInfo&,
                                                          const LaunchOptions&, cudaStream_t);
extern template fp8attn_status launch<KernelFP16VtBlock128>(const fp8attn_fwd_params&,
                                                            const DeviceInfo&, const LaunchOptions&,
                                                            cudaStream_t);
extern template fp8attn_status launch<KernelFP16VtBlock192RowSum>(const fp8attn_fwd_params&,
                                                                  const DeviceInfo&, const LaunchOptions&,
                                                                  cudaStream_t);

extern template fp8attn_status launch<KernelFP16VtTrioBlock128>(const fp8attn_fwd_params&,
                                                                const DeviceInfo&, const LaunchOptions&,
                                                                cudaStream_t);

}  // namespace fp8attn::attn
