// The attention kernel's messages on the library's one error channel (common/status.h).
#pragma once
#include <string>

#include "common/status.h"

namespace fp8attn::attn {

// Records "fp8attn: <msg>" as this thread's last error and returns `s`.
inline fp8attn_status fail(fp8attn_status s, const std::string& msg) {
  return set_error(s, "fp8attn: " + msg);
}

}  // namespace fp8attn::attn
