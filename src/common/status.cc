#include "common/status.h"

#include <utility>

#include "fp8attn/quant.h"

namespace fp8attn {
namespace {
thread_local std::string g_last_error;
}  // namespace

fp8attn_status set_error(fp8attn_status status, std::string message) {
  g_last_error = std::move(message);
  return status;
}
void clear_error() { g_last_error.clear(); }

}  // namespace fp8attn

// Both getters read the one channel (include/fp8attn/fp8attn.h, quant.h).
extern "C" const char* fp8attn_last_error(void) { return fp8attn::g_last_error.c_str(); }
extern "C" const char* fp8attn_quant_last_error(void) { return fp8attn::g_last_error.c_str(); }
