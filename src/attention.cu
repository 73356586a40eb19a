// End-to-end attention on BF16 tensors (include/fp8attn/attention.h): the pre-pass into a
// reusable workspace, then fp8attn_attention_fwd.
#include <cmath>
#include <new>
#include <string>

#include <cuda_runtime.h>

#include "fp8attn/attention.h"
#include "quant/status.h"

struct fp8attn_workspace {
  void* data = nullptr;
  size_t bytes = 0;
};

namespace {

using fp8attn::quant::set_error;

fp8attn_status fail(fp8attn_status s, const std::string& what) {
  return set_error(s, "fp8attn attention: " + what);
}

// The workspace holds, in order: the KV cache, the quantized Q, the pre-pass scratch. Each
// piece's size is a multiple of 256 bytes, so every piece stays 256-byte aligned.
struct Pieces {
  size_t cache, q, scratch;
  size_t total() const { return cache + q + scratch; }
};

Pieces pieces(int batch, int seqlen_q, int seqlen_k, int heads, int heads_kv, int head_dim) {
  return {fp8attn_kv_cache_bytes(batch, seqlen_k, heads_kv, head_dim, 0),
          fp8attn_q_quant_bytes(batch, seqlen_q, heads, head_dim),
          fp8attn_quantize_kv_workspace_bytes(batch, seqlen_k, heads_kv)};
}

}  // namespace

extern "C" {

fp8attn_workspace* fp8attn_workspace_create(void) { return new (std::nothrow) fp8attn_workspace; }

void fp8attn_workspace_destroy(fp8attn_workspace* ws) {
  if (!ws) return;
  cudaFree(ws->data);
  delete ws;
}

size_t fp8attn_workspace_size(const fp8attn_workspace* ws) { return ws ? ws->bytes : 0; }

fp8attn_status fp8attn_workspace_reserve(fp8attn_workspace* ws, size_t bytes) {
  if (!ws) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "workspace is null");
  if (ws->bytes >= bytes) return FP8ATTN_SUCCESS;
  if (ws->data) cudaFree(ws->data);
  ws->data = nullptr, ws->bytes = 0;
  if (cudaError_t e = cudaMalloc(&ws->data, bytes); e != cudaSuccess) {
    ws->data = nullptr;
    return fail(FP8ATTN_ERROR_CUDA, "cudaMalloc of " + std::to_string(bytes) +
                                        " bytes for the workspace: " + cudaGetErrorString(e));
  }
  ws->bytes = bytes;
  return FP8ATTN_SUCCESS;
}

size_t fp8attn_attention_workspace_bytes(int32_t batch, int32_t seqlen_q, int32_t seqlen_k,
                                         int32_t heads, int32_t heads_kv, int32_t head_dim) {
  const Pieces p = pieces(batch, seqlen_q, seqlen_k, heads, heads_kv, head_dim);
  if (p.cache == 0 || p.q == 0 || p.scratch == 0) return 0;  // invalid shape
  return p.total();
}

void fp8attn_attention_args_init(fp8attn_attention_args* a) {
  *a = fp8attn_attention_args{};
  fp8attn_quant_options_init(&a->quant);
}

fp8attn_status fp8attn_attention(const fp8attn_attention_args* a, fp8attn_workspace* ws,
                                 void* stream) {
  if (!a || !ws) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "args or workspace is null");
  if (!a->o) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "o is null");
  const int B = a->q.batch, SQ = a->q.seqlen, SK = a->k.seqlen, H = a->q.heads;
  const int HKV = a->k.heads;
  const Pieces p = pieces(B, SQ, SK, H, HKV, a->q.head_dim);
  if (p.cache == 0 || p.q == 0 || p.scratch == 0 || a->k.head_dim != a->q.head_dim) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "shapes: batch, seqlens and heads must be > 0 and head_dim 128 (q head_dim " +
                    std::to_string(a->q.head_dim) + ", k head_dim " +
                    std::to_string(a->k.head_dim) + ")");
  }
  if (a->k.batch != B) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "q and k batch differ");
  if (H % HKV) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "heads (" + std::to_string(H) +
                                                    ") must be a multiple of heads_kv (" +
                                                    std::to_string(HKV) + ")");
  }
  if (fp8attn_status s = fp8attn_workspace_reserve(ws, p.total()); s != FP8ATTN_SUCCESS) return s;

  char* base = static_cast<char*>(ws->data);
  fp8attn_kv_cache cache;
  fp8attn_q_quant qq;
  fp8attn_status s = fp8attn_kv_cache_init(&cache, base, p.cache, B, SK, HKV, a->k.head_dim, 0);
  if (s == FP8ATTN_SUCCESS) {
    s = fp8attn_q_quant_init(&qq, base + p.cache, p.q, B, SQ, H, a->q.head_dim);
  }
  const float scale = a->softmax_scale != 0.0f ? a->softmax_scale : 1.0f / std::sqrt(128.0f);
  if (s == FP8ATTN_SUCCESS) {
    s = fp8attn_quantize_qkv(&a->q, &a->k, &a->v, &a->quant, scale, &cache, &qq,
                             base + p.cache + p.q, p.scratch, stream);
  }
  if (s != FP8ATTN_SUCCESS) return s;  // the pre-pass has set the message

  fp8attn_fwd_params params;
  if (s = fp8attn_fwd_params_from_quant(&params, &qq, &cache, a->o, a->lse); s != FP8ATTN_SUCCESS) {
    return s;
  }
  if (a->o_stride_b || a->o_stride_s || a->o_stride_h) {
    params.o_stride_b = a->o_stride_b, params.o_stride_s = a->o_stride_s;
    params.o_stride_h = a->o_stride_h;
  }
  params.causal = a->causal;
  params.p_precision = a->p_precision;
  if (s = fp8attn_attention_fwd(&params, stream); s != FP8ATTN_SUCCESS) {
    return set_error(s, fp8attn_last_error());
  }
  return FP8ATTN_SUCCESS;
}

}  // extern "C"
