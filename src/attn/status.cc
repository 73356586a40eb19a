#include "attn/status.h"

namespace fp8attn::attn {
namespace {
thread_local std::string g_last_error;
}  // namespace

fp8attn_status fail(fp8attn_status s, const std::string& msg) {
  g_last_error = "fp8attn: " + msg;
  return s;
}
void clear_error() { g_last_error.clear(); }

}  // namespace fp8attn::attn

extern "C" const char* fp8attn_last_error(void) {
  return fp8attn::attn::g_last_error.c_str();
}
