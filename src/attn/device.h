// The device state the attention launch needs, cached per device: its attributes (read once,
// so launches never pay for cudaGetDeviceProperties). The persistent tile counters are
// attn/tile_counters.h's.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "fp8attn/fp8attn.h"

namespace fp8attn::attn {

// What a launch needs to know of the current device, read once per device with
// cudaDeviceGetAttribute (cheap) and cached: launches must not pay for cudaGetDeviceProperties.
struct DeviceInfo {
  int num_sms = 0;
  int l2_bytes = 0;
  int major = 0, minor = 0;
  std::string name;
  cudaError_t error = cudaSuccess;
};

// The current device's DeviceInfo, or FP8ATTN_ERROR_UNSUPPORTED_DEVICE unless it is an sm_90.
fp8attn_status check_device(DeviceInfo* out);

}  // namespace fp8attn::attn
