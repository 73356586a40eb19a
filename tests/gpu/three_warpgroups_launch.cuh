// The accurate mode's three-warpgroup kernel launched directly, whatever the dispatch would pick
// for the shape (test_fp16_vt_three_warpgroups.cu, test_sanitize_targets.cu): the C ABI's
// validation and device check, then the library's launch of that configuration.
#pragma once
#include "attn/launch.h"
#include "attn/validate.h"
#include "common/device.h"
#include "tests/gpu/attention_device_run.cuh"

namespace fp8attn::test {

inline ::testing::AssertionResult launch_three_warpgroups(const Problem& p, Output& out) {
  DeviceRun run(p);
  const fp8attn_fwd_params a = run.params();
  fp8attn_status st = attn::validate(&a);
  DeviceInfo dev;
  if (st == FP8ATTN_SUCCESS) st = check_device(&dev);
  if (st == FP8ATTN_SUCCESS) st = attn::launch<attn::KernelFP16VtTrioBlock128>(a, dev, attn::LaunchOptions{}, nullptr);
  return wait_and_download(run, st, out);
}

}  // namespace fp8attn::test
