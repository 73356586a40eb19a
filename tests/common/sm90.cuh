// GPU tests run only on an sm_90 device; elsewhere they report SKIPPED (CTest counts them as
// skipped, not passed).
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

namespace fp8attn::test {

// Empty when device 0 is an sm_90 GPU; otherwise why the GPU tests cannot run.
inline std::string sm90_missing_reason() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return "no CUDA device";
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "cudaGetDeviceProperties failed";
  if (prop.major != 9 || prop.minor != 0) return std::string("needs sm_90, device 0 is ") + prop.name;
  return "";
}

}  // namespace fp8attn::test

// Skips the calling test unless an sm_90 device is present.
#define FP8ATTN_REQUIRE_SM90()                                               \
  do {                                                                       \
    const std::string why = ::fp8attn::test::sm90_missing_reason();          \
    if (!why.empty()) GTEST_SKIP() << why;                                   \
  } while (0)
