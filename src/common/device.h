// The device state both stages need, cached per device: its attributes, read once per device
// (launches never pay for cudaGetDeviceProperties). One cache for the pre-pass and the attention
// kernel; the kernel's persistent tile counters are attn/tile_counters.h's.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "fp8attn/fp8attn.h"

namespace fp8attn {

// What a launch needs to know of the current device, read once per device with
// cudaDeviceGetAttribute (cheap) and cached.
struct DeviceInfo {
  int num_sms = 0;
  int l2_bytes = 0;
  int major = 0, minor = 0;
  std::string name;
  cudaError_t error = cudaSuccess;
};

// The current device's DeviceInfo, or FP8ATTN_ERROR_UNSUPPORTED_DEVICE (no device, or not an
// sm_90) / FP8ATTN_ERROR_CUDA with the message on the error channel (common/status.h).
fp8attn_status check_device(DeviceInfo* out);

}  // namespace fp8attn
