// The C ABI of the attention kernel: validate every argument (attn/validate.cc), select the
// kernel from the arguments (attn/select.h), launch (attn/launch.cuh). Validation runs before any
// device work, so bad input never reaches the kernel.
#include <cuda_runtime.h>

#include "attn/launch.h"
#include "attn/select.h"
#include "attn/status.h"
#include "attn/validate.h"
#include "common/device.h"
#include "fp8attn/fp8attn.h"

extern "C" {

fp8attn_status fp8attn_attention_fwd(const fp8attn_fwd_params* params, void* stream) {
  using namespace fp8attn;
  using namespace fp8attn::attn;
  clear_error();
  fp8attn_status s = validate(params);
  if (s != FP8ATTN_SUCCESS) return s;
  if (params->batch == 0 || params->seqlen_q == 0) return FP8ATTN_SUCCESS;
  DeviceInfo dev_info;
  s = check_device(&dev_info);
  if (s != FP8ATTN_SUCCESS) return s;
  const auto st = static_cast<cudaStream_t>(stream);
  const LaunchOptions opts;
  switch (select_kernel(*params)) {
    case KernelId::kE4M3Block192Trim: return launch<KernelE4M3Block192Trim>(*params, dev_info, opts, st);
    case KernelId::kE4M3ExactBlock192Trim:
      return launch<KernelE4M3ExactBlock192Trim>(*params, dev_info, opts, st);
    case KernelId::kE4M3Block128: return launch<KernelE4M3Block128>(*params, dev_info, opts, st);
    case KernelId::kE4M3HiLoTwoLevel: return launch<KernelE4M3HiLoTwoLevel>(*params, dev_info, opts, st);
    case KernelId::kFP16Block128: return launch<KernelFP16Block128>(*params, dev_info, opts, st);
    case KernelId::kFP16VtBlock128: return launch<KernelFP16VtBlock128>(*params, dev_info, opts, st);
    case KernelId::kFP16VtBlock192RowSum:
      return launch<KernelFP16VtBlock192RowSum>(*params, dev_info, opts, st);
    case KernelId::kFP16VtTrioBlock128: return launch<KernelFP16VtTrioBlock128>(*params, dev_info, opts, st);
    default: return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "no kernel for these arguments");
  }
}

}  // extern "C"
