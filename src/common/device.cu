#include "common/device.h"

#include <mutex>

#include "common/status.h"

namespace fp8attn {
namespace {
fp8attn_status fail(fp8attn_status s, const std::string& msg) {
  return set_error(s, "fp8attn: " + msg);
}
}  // namespace

fp8attn_status check_device(DeviceInfo* out) {
  constexpr int kMaxDevices = 64;
  static std::once_flag once[kMaxDevices];
  static DeviceInfo info[kMaxDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return fail(FP8ATTN_ERROR_UNSUPPORTED_DEVICE, "no CUDA device");
  }
  if (dev < 0 || dev >= kMaxDevices) return fail(FP8ATTN_ERROR_CUDA, "device index >= 64");
  std::call_once(once[dev], [dev] {
    DeviceInfo& d = info[dev];
    cudaError_t e = cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d.num_sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d.l2_bytes, cudaDevAttrL2CacheSize, dev);
    cudaDeviceProp prop;
    if (e == cudaSuccess && !(d.major == 9 && d.minor == 0) &&
        cudaGetDeviceProperties(&prop, dev) == cudaSuccess)  // only for the error message
      d.name = prop.name;
    d.error = e;
  });
  const DeviceInfo& d = info[dev];
  if (d.error != cudaSuccess)
    return fail(FP8ATTN_ERROR_CUDA, std::string("cudaDeviceGetAttribute: ") + cudaGetErrorString(d.error));
  if (d.major != 9 || d.minor != 0)
    return fail(FP8ATTN_ERROR_UNSUPPORTED_DEVICE,
                std::string("needs an sm_90 (Hopper) device; device ") + std::to_string(dev) +
                    " is " + d.name + " (sm_" + std::to_string(d.major) + std::to_string(d.minor) + ")");
  *out = d;
  return FP8ATTN_SUCCESS;
}

}  // namespace fp8attn
