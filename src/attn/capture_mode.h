// Set-up calls (cudaMalloc, cudaFuncSetAttribute) made while a CUDA graph is being captured:
// in the global capture mode they would invalidate the capture; in the relaxed mode they are
// legal and capture nothing. This guard puts the calling thread in the relaxed mode for its
// scope and restores the mode it found.
#pragma once
#include <cuda_runtime.h>

namespace fp8attn::attn {

class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace fp8attn::attn
