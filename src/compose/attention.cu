// End-to-end attention on BF16 tensors (include/fp8attn/attention.h): the pre-pass into a
// reusable workspace, then fp8attn_attention_fwd on the parameters the composition builds from
// the pre-pass's outputs (compose/kernel_params.h). Both stages report on the library's one
// error channel (common/status.h) and share one device cache (common/device.h).
#include <cmath>
#include <cstdint>
#include <new>
#include <string>

#include <cuda_runtime.h>

#include "attn/extent.h"
#include "common/status.h"
#include "compose/kernel_params.h"
#include "fp8attn/attention.h"
#include "fp8attn/rope.h"

struct fp8attn_workspace {
  void* data = nullptr;
  size_t bytes = 0;
};

namespace {

using fp8attn::compose::apply_call_args;
using fp8attn::compose::kernel_params;

fp8attn_status fail(fp8attn_status s, const std::string& what) {
  return fp8attn::set_error(s, "fp8attn attention: " + what);
}

// The workspace holds, in order: the KV cache, the quantized Q, the pre-pass scratch. Each
// piece's size is a multiple of 256 bytes, so every piece stays 256-byte aligned.
struct Pieces {
  size_t cache, q, scratch;
  size_t total() const { return cache + q + scratch; }
};

// The end-to-end call's V^T form, a function of its P precision: FP16 P gets an FP16 V^T (V
// is then never rounded to E4M3, and the kernel loads it with no conversion), the others E4M3.
int32_t vt_dtype_for(int32_t p_precision) {
  return p_precision == FP8ATTN_P_FP16 ? FP8ATTN_VT_FP16 : FP8ATTN_VT_E4M3;
}

Pieces pieces(int batch, int seqlen_q, int seqlen_k, int heads, int heads_kv, int head_dim,
              int32_t vt_dtype) {
  return {fp8attn_kv_cache_bytes_vt(batch, seqlen_k, heads_kv, head_dim, 0, vt_dtype),
          fp8attn_q_quant_bytes(batch, seqlen_q, heads, head_dim),
          fp8attn_quantize_kv_workspace_bytes(batch, seqlen_k, heads_kv)};
}

// The bytes [lo, hi) a BF16 tensor may touch (head_dim 128).
fp8attn::attn::Extent extent_of(const fp8attn_bf16_tensor& t) {
  return fp8attn::attn::extent_of(
      t.data, {{t.batch, t.stride_b}, {t.seqlen, t.stride_s}, {t.heads, t.stride_h}, {128, 1}}, 2);
}

// The KV cache and the quantized Q laid out in the workspace's first two pieces from `base`
// (host only: carves pointers, no device work).
fp8attn_status lay_out(char* base, const Pieces& p, const fp8attn_attention_args& a,
                       fp8attn_kv_cache* cache, fp8attn_q_quant* qq) {
  fp8attn_status s = fp8attn_kv_cache_init_vt(cache, base, p.cache, a.k.batch, a.k.seqlen,
                                              a.k.heads, a.k.head_dim, 0,
                                              vt_dtype_for(a.p_precision));
  if (s == FP8ATTN_SUCCESS) {
    s = fp8attn_q_quant_init(qq, base + p.cache, p.q, a.q.batch, a.q.seqlen, a.q.heads, a.q.head_dim);
  }
  return s;
}

// The kernel's parameters for the call, from the pre-pass's outputs in the workspace.
fp8attn_fwd_params call_params(const fp8attn_attention_args& a, const fp8attn_q_quant& qq,
                               const fp8attn_kv_cache& cache) {
  fp8attn_fwd_params params = kernel_params(qq, cache, a.o, a.lse);
  apply_call_args(a, &params);
  return params;
}

// Checks the kernel's arguments as fp8attn_attention_fwd will get them, built the same way as
// the launch's (call_params) from a quantized Q and cache that stand in at the workspace's
// start (their placement cannot make a valid call invalid), then that O and LSE meet none of
// q, k, v and not the workspace. No device work.
fp8attn_status check_before_launch(const fp8attn_attention_args* a, const fp8attn_workspace* ws,
                                   const Pieces& p, float scale) {
  if (!std::isfinite(scale) || !(scale > 0.0f)) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "softmax_scale = " + std::to_string(a->softmax_scale) + ": must be finite and > 0 (0: 1/sqrt(128))");
  }
  // The stand-in workspace starts at an aligned address no allocation can have (page 0), so
  // that only the caller's pointers and arguments decide; the real workspace is checked against
  // the outputs below.
  fp8attn_kv_cache cache;
  fp8attn_q_quant qq;
  if (lay_out(reinterpret_cast<char*>(uintptr_t{256}), p, *a, &cache, &qq) != FP8ATTN_SUCCESS) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, fp8attn_last_error());
  }
  cache.options = a->quant;  // what the pre-pass records in the cache
  qq.softmax_scale = scale;  // and in the quantized Q
  const fp8attn_fwd_params params = call_params(*a, qq, cache);
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

// fp8attn_attention and fp8attn_attention_rope (rope non-null: its tables checked with the
// others, the rope entry as the pre-pass).
fp8attn_status attention(const fp8attn_attention_args* a, const fp8attn_rope_tables* rope,
                         fp8attn_workspace* ws, void* stream) {
  if (!a || !ws) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "args or workspace is null");
  if (!a->o) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "o is null");
  const int B = a->q.batch, SQ = a->q.seqlen, SK = a->k.seqlen, H = a->q.heads;
  const int HKV = a->k.heads;
  // An unknown p_precision gets the E4M3 form here and is refused by the kernel's check below.
  const Pieces p = pieces(B, SQ, SK, H, HKV, a->q.head_dim, vt_dtype_for(a->p_precision));
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
  if (rope != nullptr) {
    if (fp8attn_status s = fp8attn_check_rope_tables(rope, SQ, SK); s != FP8ATTN_SUCCESS) return s;
  }
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
  fp8attn_status s = lay_out(base, p, *a, &cache, &qq);
  if (s == FP8ATTN_SUCCESS) {
    s = rope != nullptr
            ? fp8attn_quantize_qkv_rope(&a->q, &a->k, &a->v, rope, &a->quant, scale, &cache, &qq,
                                        base + p.cache + p.q, p.scratch, stream)
            : fp8attn_quantize_qkv(&a->q, &a->k, &a->v, &a->quant, scale, &cache, &qq,
                                   base + p.cache + p.q, p.scratch, stream);
  }
  if (s != FP8ATTN_SUCCESS) return s;  // the pre-pass's message is on the one channel
  const fp8attn_fwd_params params = call_params(*a, qq, cache);
  return fp8attn_attention_fwd(&params, stream);  // and so is the kernel's
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
  fp8attn::clear_error();
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
  // Enough for every P precision: the FP16 V^T form (FP8ATTN_P_FP16) is the largest.
  const Pieces p = pieces(batch, seqlen_q, seqlen_k, heads, heads_kv, head_dim, FP8ATTN_VT_FP16);
  if (p.cache == 0 || p.q == 0 || p.scratch == 0) return 0;  // invalid shape
  return p.total();
}

void fp8attn_attention_args_init(fp8attn_attention_args* a) {
  *a = fp8attn_attention_args{};
  fp8attn_quant_options_init(&a->quant);
}

fp8attn_status fp8attn_attention(const fp8attn_attention_args* a, fp8attn_workspace* ws,
                                 void* stream) {
  fp8attn::clear_error();
  return attention(a, nullptr, ws, stream);
}

fp8attn_status fp8attn_attention_rope(const fp8attn_attention_args* a,
                                      const fp8attn_rope_tables* rope, fp8attn_workspace* ws,
                                      void* stream) {
  fp8attn::clear_error();
  if (rope == nullptr) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "rope tables are null");
  return attention(a, rope, ws, stream);
}

}  // extern "C"
