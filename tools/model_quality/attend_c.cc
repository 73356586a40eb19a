// A C entry point into the CPU numerics model for tools/model_quality (ctypes): one scheme's
// attention on FP32 arrays holding BF16 values, so a NumPy forward pass can run every layer's
// attention through a scheme's emulation.
#include <cstring>
#include <exception>
#include <string>

#include "model/evaluate.h"
#include "model/scheme.h"

namespace {
thread_local std::string g_error;
}

extern "C" {

// q (s, h, d), k and v (s, h_kv, d), row-major FP32; o (s, h, d) receives the scheme's output as
// floats (its output format's values). Causal masks bottom-right. softmax_scale 0: 1/sqrt(d).
// Returns 0, or -1 with the message in fp8attn_model_last_error().
int fp8attn_model_attention(const char* scheme, int seqlen, int heads, int heads_kv, int head_dim,
                            const float* q, const float* k, const float* v, float softmax_scale,
                            int causal, float* o) {
  using namespace fp8attn::model;
  try {
    if (!scheme || !q || !k || !v || !o || seqlen <= 0 || heads <= 0 || heads_kv <= 0 ||
        head_dim <= 0 || heads % heads_kv != 0) {
      g_error = "fp8attn_model_attention: bad arguments";
      return -1;
    }
    const Scheme s = scheme_by_name(scheme);
    Tensor tq(1, seqlen, heads, head_dim), tk(1, seqlen, heads_kv, head_dim), tv(1, seqlen, heads_kv, head_dim);
    std::memcpy(tq.data.data(), q, tq.data.size() * sizeof(float));
    std::memcpy(tk.data.data(), k, tk.data.size() * sizeof(float));
    std::memcpy(tv.data.data(), v, tv.data.size() * sizeof(float));
    const SchemeRun run = run_scheme(s, tq, tk, tv, causal != 0, softmax_scale);
    std::memcpy(o, run.o.data.data(), run.o.data.size() * sizeof(float));
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  }
}

// The scheme's one-line summary (every option spelled out), or null with the message in
// fp8attn_model_last_error(): what a checkpoint was made with (tools/model_quality/cache_guard.py).
const char* fp8attn_model_scheme_summary(const char* scheme) {
  thread_local std::string summary;
  try {
    summary = fp8attn::model::scheme_by_name(scheme ? scheme : "").summary();
    return summary.c_str();
  } catch (const std::exception& e) {
    g_error = e.what();
    return nullptr;
  }
}

const char* fp8attn_model_last_error() { return g_error.c_str(); }

}  // extern "C"
