// The attention API's error channel (fp8attn_last_error): one message per thread, set by the
// first check that fails.
#pragma once
#include <string>

#include "fp8attn/fp8attn.h"

namespace fp8attn::attn {

// Records "fp8attn: <msg>" as this thread's fp8attn_last_error() and returns `s`.
fp8attn_status fail(fp8attn_status s, const std::string& msg);
// Clears this thread's message (every public entry point starts with it).
void clear_error();

}  // namespace fp8attn::attn
