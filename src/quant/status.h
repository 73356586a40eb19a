// The pre-pass's error channel (fp8attn_quant_last_error), shared by quant_api.cu and the
// end-to-end src/attention.cu.
#pragma once

#include <string>

#include "fp8attn/fp8attn.h"

namespace fp8attn::quant {

// Records `what` as this thread's fp8attn_quant_last_error() and returns `status`.
fp8attn_status set_error(fp8attn_status status, const std::string& what);

}  // namespace fp8attn::quant
