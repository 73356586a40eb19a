// Validation of the attention kernel's arguments (validate.cc).
#pragma once
#include "fp8attn/fp8attn.h"

namespace fp8attn::attn {

// FP8ATTN_SUCCESS, or FP8ATTN_ERROR_INVALID_ARGUMENT with a message naming the argument
// (fp8attn_last_error). Makes no CUDA call. An empty problem (batch or seqlen_q 0) is valid.
fp8attn_status validate(const fp8attn_fwd_params* p);

}  // namespace fp8attn::attn
