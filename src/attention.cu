// End-to-end attention on BF16 tensors (include/fp8attn/attention.h): the pre-pass into a
// reusable workspace, then fp8attn_attention_fwd.
#include <cmath>
#include <cstdint>
#include <new>
#include <string>

#include <cuda_runtime.h>

#include "attn/extent.h"
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

// What the call's arguments change in the kernel's parameters.
void apply_call_args(const fp8attn_attention_args* a, fp8attn_fwd_params* params) {
  if (a->o_stride_b || a->o_stride_s || a->o_stride_h) {
    params->o_stride_b = a->o_stride_b, params->o_stride_s = a->o_stride_s;
    params->o_stride_h = a->o_stride_h;
  }
  params->causal = a->causal;
  params->p_precision = a->p_precision;
}

// The bytes [lo, hi) a BF16 tensor may touch (head_dim 128).
fp8attn::attn::Extent extent_of(const fp8attn_bf16_tensor& t) {
  return fp8attn::attn::extent_of(
      t.data, {{t.batch, t.stride_b}, {t.seqlen, t.stride_s}, {t.heads, t.stride_h}, {128, 1}}, 2);
}

// Checks the kernel's arguments as fp8attn_attention_fwd will get them (the quantized Q and
// cache stand in at the workspace's start: their placement cannot make a valid call invalid),
// then that O and LSE meet none of q, k, v and not the workspace. No device work.
fp8attn_status check_before_launch(const fp8attn_attention_args* a, const fp8attn_workspace* ws,
                                   const Pieces& p, float scale) {
  if (!std::isfinite(scale) || !(scale > 0.0f)) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "softmax_scale = " + std::to_string(a->softmax_scale) + ": must be finite and > 0 (0: 1/sqrt(128))");
  }
  fp8attn_fwd_params params;
  fp8attn_fwd_params_init(&params, a->q.batch, a->q.seqlen, a->k.seqlen, a->q.heads, a->k.heads, 128);
  // Stand-ins for the quantized Q, K, V^T: an aligned address no allocation can have (page 0),
  // so that only the caller's pointers and arguments decide; the real ones lie in the workspace,
  // which is checked against the outputs below.
  const void* stand_in = reinterpret_cast<const void*>(uintptr_t{256});
  params.q = params.k = params.vt = stand_in;
  params.o = a->o;
  params.lse = a->lse;
  params.softmax_scale = scale;
  apply_call_args(a, &params);
  if (fp8attn_check_fwd_params(&params) != FP8ATTN_SUCCESS) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, fp8attn_last_error());
  }
  using fp8attn::attn::Extent;
  const Extent o = fp8attn::attn::extent_of(
      a->o, {{params.batch, params.o_stride_b}, {params.seqlen_q, params.o_stride_s},
             {params.heads, params.o_stride_h}, {128, 1}}, 2);
  const Extent lse = fp8attn::attn::extent_of(
      a->lse, {{int64_t{params.batch} * params.heads * params.seqlen_q, 1}}, 4);
  const uintptr_t ws0 = reinterpret_cast<uintptr_t>(ws->data);
  // The workspace as it will be: grown (a new allocation, which no output can meet) or as is.
  const Extent work = p.total() > ws->bytes ? Extent{} : Extent{ws0, ws0 + p.total()};
  const struct {
    const char* name;
    Extent e;
  } others[] = {{"q", extent_of(a->q)}, {"k", extent_of(a->k)}, {"v", extent_of(a->v)}, {"the workspace", work}};
  for (const auto& x : others) {
    if (o.meets(x.e)) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, std::string("o overlaps ") + x.name);
    if (lse.meets(x.e)) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, std::string("lse overlaps ") + x.name);
  }
  return FP8ATTN_SUCCESS;
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
  if (fp8attn_status s = fp8attn_check_quant_options(&a->quant); s != FP8ATTN_SUCCESS) return s;
  const float scale = a->softmax_scale != 0.0f ? a->softmax_scale : 1.0f / std::sqrt(128.0f);
  // Everything is validated before any device work (and before the workspace grows): the
  // kernel's own arguments on a stand-in of the parameters it will get, then where the outputs lie.
  if (fp8attn_status s = check_before_launch(a, ws, p, scale); s != FP8ATTN_SUCCESS) return s;
  if (p.total() > ws->bytes) {
    // cudaMalloc synchronizes: not inside a graph capture (reserve the workspace beforehand).
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &cap) != cudaSuccess ||
        cap != cudaStreamCaptureStatusNone) {
      return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                  "the workspace (" + std::to_string(ws->bytes) + " bytes) is smaller than the " +
                      std::to_string(p.total()) + " this call needs, and it cannot grow while the "
                      "stream is being captured: fp8attn_workspace_reserve it before the capture");
    }
  }
  if (fp8attn_status s = fp8attn_workspace_reserve(ws, p.total()); s != FP8ATTN_SUCCESS) return s;

  char* base = static_cast<char*>(ws->data);
  fp8attn_kv_cache cache;
  fp8attn_q_quant qq;
  fp8attn_status s = fp8attn_kv_cache_init(&cache, base, p.cache, B, SK, HKV, a->k.head_dim, 0);
  if (s == FP8ATTN_SUCCESS) {
    s = fp8attn_q_quant_init(&qq, base + p.cache, p.q, B, SQ, H, a->q.head_dim);
  }
  if (s == FP8ATTN_SUCCESS) {
    s = fp8attn_quantize_qkv(&a->q, &a->k, &a->v, &a->quant, scale, &cache, &qq,
                             base + p.cache + p.q, p.scratch, stream);
  }
  if (s != FP8ATTN_SUCCESS) return s;  // the pre-pass has set the message

  fp8attn_fwd_params params;
  if (s = fp8attn_fwd_params_from_quant(&params, &qq, &cache, a->o, a->lse); s != FP8ATTN_SUCCESS) {
    return s;
  }
  apply_call_args(a, &params);
  if (s = fp8attn_attention_fwd(&params, stream); s != FP8ATTN_SUCCESS) {
    return set_error(s, fp8attn_last_error());
  }
  return FP8ATTN_SUCCESS;
}

}  // extern "C"
