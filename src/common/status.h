// The library's one error channel: one message per thread, shared by every stage (the attention
// kernel, the pre-pass, the end-to-end composition). fp8attn_last_error() and
// fp8attn_quant_last_error() both return it. Each stage prefixes its messages with its name
// (attn/status.h "fp8attn: ", the pre-pass "fp8attn pre-pass: ", the composition
// "fp8attn attention: "), so a message says which stage refused the call.
#pragma once
#include <string>

#include "fp8attn/fp8attn.h"

namespace fp8attn {

// Records `message` as this thread's last error and returns `status`.
fp8attn_status set_error(fp8attn_status status, std::string message);
// Clears this thread's message (every public entry point that can fail starts with it, so that
// the message is "" after a call that succeeded).
void clear_error();

}  // namespace fp8attn
