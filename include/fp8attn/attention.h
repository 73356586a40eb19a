// fp8attn end to end: attention on BF16 tensors = the quantization pre-pass (fp8attn/quant.h,
// fp8attn_quantize_qkv) + the FP8 kernel (fp8attn/fp8attn.h), with a reusable device workspace.
//
//   fp8attn::Workspace ws;                       // grows on first use, then reused
//   fp8attn::attention(q, k, v, o, lse, {}, ws);  // BF16 in, BF16 O + FP32 LSE out
//
// Users who keep an FP8 KV cache across calls use fp8attn_quantize_kv once and
// fp8attn_quantize_q + fp8attn_fwd_params_from_quant + fp8attn_attention_fwd per call instead:
// fp8attn_fwd_params_from_quant (below) is where the pre-pass's outputs meet the kernel's
// parameters (the pre-pass itself knows nothing of fp8attn_fwd_params).
//
// Errors: the library has one error channel per thread; fp8attn_last_error() and
// fp8attn_quant_last_error() return the same message, whichever stage set it.
#ifndef FP8ATTN_ATTENTION_H_
#define FP8ATTN_ATTENTION_H_

#include <stddef.h>
#include <stdint.h>

#include "fp8attn.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

// Device memory reused across calls: the FP8 KV cache, the quantized Q and the pre-pass scratch.
typedef struct fp8attn_workspace fp8attn_workspace;
fp8attn_workspace* fp8attn_workspace_create(void);
void fp8attn_workspace_destroy(fp8attn_workspace* ws);  // NULL is fine
// Grows the workspace to at least `bytes` (cudaFree + cudaMalloc: synchronizes the device, so
// reserve up front rather than inside a timed or captured region). Never shrinks.
fp8attn_status fp8attn_workspace_reserve(fp8attn_workspace* ws, size_t bytes);
size_t fp8attn_workspace_size(const fp8attn_workspace* ws);

// Bytes one call with these shapes needs (head_dim 128), whatever its P precision: with
// FP8ATTN_P_FP16 the call's KV cache holds V^T in FP16 (FP8ATTN_VT_FP16, twice V's E4M3 bytes),
// the largest form; the other precisions use the E4M3 form and leave the rest unused.
size_t fp8attn_attention_workspace_bytes(int32_t batch, int32_t seqlen_q, int32_t seqlen_k,
                                         int32_t heads, int32_t heads_kv, int32_t head_dim);

typedef struct fp8attn_attention_args {
  fp8attn_bf16_tensor q;  // (batch, seqlen_q, heads, 128)
  fp8attn_bf16_tensor k;  // (batch, seqlen_k, heads_kv, 128)
  fp8attn_bf16_tensor v;  // (batch, seqlen_k, heads_kv, 128)
  void* o;                // BF16 (batch, seqlen_q, heads, 128)
  int64_t o_stride_b, o_stride_s, o_stride_h;  // all 0: contiguous
  float* lse;             // FP32 (batch, heads, seqlen_q), natural log, or NULL
  float softmax_scale;    // 0: 1/sqrt(128)
  int32_t causal;         // bottom-right aligned, as fp8attn_attention_fwd
  int32_t p_precision;    // fp8attn_p_precision; FP8ATTN_P_FP16 (the accurate mode) writes V^T
                          // in FP16 (not rounded to E4M3) and runs the FP16 V^T kernel
  fp8attn_quant_options quant;
} fp8attn_attention_args;

// Fills the kernel's parameters from a quantized Q and a KV cache: shapes, strides, vt_dtype (the
// cache's), every descale (K's with kd_stride_blk = 0 when the cache has one scale per head), lse_bias (when K
// was smoothed), o_bias (when V was smoothed), and q's softmax_scale. o is BF16
// (batch, seqlen_q, heads, 128) contiguous; lse may be NULL. causal is left at its init value (0);
// p_precision too (FP8ATTN_P_E4M3), except for a cache with an FP16 V^T: FP8ATTN_P_FP16, the only
// precision that reads it. FP8ATTN_ERROR_INVALID_ARGUMENT when a pointer is NULL or q and the
// cache disagree (batch; heads_kv must divide heads). Host only: no device work.
fp8attn_status fp8attn_fwd_params_from_quant(fp8attn_fwd_params* params, const fp8attn_q_quant* q,
                                             const fp8attn_kv_cache* cache, void* o, float* lse);

// Zeroes everything, then the quantization defaults (fp8attn_quant_options_init).
void fp8attn_attention_args_init(fp8attn_attention_args* args);

// Pre-pass (K/V, then Q) and kernel on `stream`, all asynchronous once the workspace is large
// enough (grown here if not; inside a graph capture it cannot grow: reserve it first). Every
// argument, the kernel's included, is validated before any device work. Errors: the one
// channel (fp8attn_last_error() == fp8attn_quant_last_error()), whichever stage failed.
// Non-finite inputs: an Inf or a NaN makes the outputs it reaches NaN (no status: the call does
// not read data back). With K/V smoothing (the channel mean over all keys) one bad K value makes
// every row of its (batch, KV head) NaN, one bad V value that channel (docs/reliability.md).
fp8attn_status fp8attn_attention(const fp8attn_attention_args* args, fp8attn_workspace* ws,
                                 void* stream);

#ifdef __cplusplus
}  // extern "C"

namespace fp8attn {

class Workspace {
 public:
  Workspace() : ws_(fp8attn_workspace_create()) {
    if (!ws_) throw Error(FP8ATTN_ERROR_CUDA, "fp8attn: cannot create a workspace");
  }
  ~Workspace() { fp8attn_workspace_destroy(ws_); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  Workspace(Workspace&& o) noexcept : ws_(o.ws_) { o.ws_ = nullptr; }
  Workspace& operator=(Workspace&& o) noexcept {
    if (this != &o) fp8attn_workspace_destroy(ws_), ws_ = o.ws_, o.ws_ = nullptr;
    return *this;
  }
  void reserve(size_t bytes) { check_quant(fp8attn_workspace_reserve(ws_, bytes)); }
  size_t size() const { return fp8attn_workspace_size(ws_); }
  fp8attn_workspace* get() const { return ws_; }

 private:
  fp8attn_workspace* ws_;
};

struct AttentionOptions {
  float softmax_scale = 0.0f;  // 0: 1/sqrt(128)
  bool causal = false;
  fp8attn_p_precision p_precision = FP8ATTN_P_E4M3;
  QuantOptions quant = default_quant_options();
};

// O (BF16, contiguous (b, sq, h, 128)) and LSE (FP32 (b, h, sq), or nullptr) from BF16 q, k, v.
// Throws fp8attn::Error on any failure.
inline void attention(const Bf16Tensor& q, const Bf16Tensor& k, const Bf16Tensor& v, void* o,
                      float* lse, const AttentionOptions& opt, Workspace& ws,
                      void* stream = nullptr) {
  fp8attn_attention_args a;
  fp8attn_attention_args_init(&a);
  a.q = q, a.k = k, a.v = v, a.o = o, a.lse = lse;
  a.softmax_scale = opt.softmax_scale;
  a.causal = opt.causal ? 1 : 0;
  a.p_precision = opt.p_precision;
  a.quant = opt.quant;
  check_quant(fp8attn_attention(&a, ws.get(), stream));
}

}  // namespace fp8attn
#endif  // __cplusplus

#endif  // FP8ATTN_ATTENTION_H_
