// Host side of programmatic dependent launch (ptx/griddep.cuh): the pre-pass kernels after the
// first of an API call start while the previous one drains, instead of after a full drain and
// a launch gap. The launched kernel must call ptx::wait_for_previous_grid() before it touches
// that grid's outputs (and before its own writes).
#pragma once

#include <utility>

#include <cuda_runtime.h>

namespace fp8attn::quant {

template <typename... Params, typename... Args>
cudaError_t launch_after(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                         Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace fp8attn::quant
