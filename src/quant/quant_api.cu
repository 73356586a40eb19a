// The pre-pass C ABI (include/fp8attn/quant.h): argument checks, buffer layouts, launches.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <string>

#include <cuda_runtime.h>

#include "common/device.h"
#include "common/status.h"
#include "fp8attn/quant.h"
#include "quant/launch.h"
#include "quant/quant_common.cuh"
#include "quant/plan.h"

// The K scale granularity filled what was padding before hadamard_seed: the struct keeps its
// size and the seed its offset (bench/bench_prepass.py mirrors the layout and checks it).
// centre came after it (size 32 -> 40).
static_assert(sizeof(fp8attn_quant_options) == 40 &&
              offsetof(fp8attn_quant_options, k_scale) == 20 &&
              offsetof(fp8attn_quant_options, hadamard_seed) == 24 &&
              offsetof(fp8attn_quant_options, centre) == 32);
// The cache's vt_dtype filled the padding before k: every other offset is unchanged.
static_assert(offsetof(fp8attn_kv_cache, vt_dtype) == 20 && offsetof(fp8attn_kv_cache, k) == 24);

using namespace fp8attn::quant;


extern "C" {

const char* fp8attn_quant_variant(void) { return "v2"; }

fp8attn_status fp8attn_check_quant_options(const fp8attn_quant_options* o) {
  fp8attn::clear_error();
  if (o == nullptr) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "options is null");
  if (o->q_scale != FP8ATTN_Q_SCALE_TOKEN && o->q_scale != FP8ATTN_Q_SCALE_BLOCK128)
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "unknown q_scale " + std::to_string(o->q_scale));
  if (o->v_scale != FP8ATTN_V_SCALE_CHANNEL && o->v_scale != FP8ATTN_V_SCALE_HEAD)
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "unknown v_scale " + std::to_string(o->v_scale));
  if (o->k_scale != FP8ATTN_K_SCALE_HEAD && o->k_scale != FP8ATTN_K_SCALE_BLOCK128)
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "unknown k_scale " + std::to_string(o->k_scale));
  if (o->centre != FP8ATTN_CENTRE_MEAN && o->centre != FP8ATTN_CENTRE_SAMPLE)
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "unknown centre " + std::to_string(o->centre));
  if (o->reserved != 0)
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "options.reserved must be 0");
  return FP8ATTN_SUCCESS;
}

void fp8attn_quant_options_init(fp8attn_quant_options* o) {
  *o = fp8attn_quant_options{};
  o->smooth_k = 1;
  o->smooth_v = 1;
  o->hadamard_qk = 1;  // the numerics study's default (docs/numerics-report.md)
  o->q_scale = FP8ATTN_Q_SCALE_TOKEN;
  o->v_scale = FP8ATTN_V_SCALE_CHANNEL;
  o->k_scale = FP8ATTN_K_SCALE_HEAD;  // the kernel then runs its faster 192-key blocks
  o->hadamard_seed = 0x5EED5EED5EED5EEDull;
}

size_t fp8attn_kv_cache_bytes(int32_t batch, int32_t seqlen_k, int32_t heads_kv, int32_t head_dim,
                              int32_t vt_seqlen_pad) {
  return fp8attn_kv_cache_bytes_vt(batch, seqlen_k, heads_kv, head_dim, vt_seqlen_pad,
                                   FP8ATTN_VT_E4M3);
}

size_t fp8attn_kv_cache_bytes_vt(int32_t batch, int32_t seqlen_k, int32_t heads_kv,
                                 int32_t head_dim, int32_t vt_seqlen_pad, int32_t vt_dtype) {
  if (!shape_ok(batch, seqlen_k, heads_kv, head_dim) || !vt_dtype_ok(vt_dtype)) return 0;
  if (vt_seqlen_pad == 0) vt_seqlen_pad = default_vt_pad(seqlen_k);
  Carver c(nullptr);
  fp8attn_kv_cache tmp{};
  carve_kv_cache(c, &tmp, batch, seqlen_k, heads_kv, vt_seqlen_pad, vt_dtype);
  return c.used();
}

fp8attn_status fp8attn_kv_cache_init(fp8attn_kv_cache* cache, void* buffer, size_t bytes,
                                     int32_t batch, int32_t seqlen_k, int32_t heads_kv,
                                     int32_t head_dim, int32_t vt_seqlen_pad) {
  return fp8attn_kv_cache_init_vt(cache, buffer, bytes, batch, seqlen_k, heads_kv, head_dim,
                                  vt_seqlen_pad, FP8ATTN_VT_E4M3);
}

fp8attn_status fp8attn_kv_cache_init_vt(fp8attn_kv_cache* cache, void* buffer, size_t bytes,
                                        int32_t batch, int32_t seqlen_k, int32_t heads_kv,
                                        int32_t head_dim, int32_t vt_seqlen_pad, int32_t vt_dtype) {
  fp8attn::clear_error();
  if (cache == nullptr) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "cache is null");
  if (!vt_dtype_ok(vt_dtype)) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "unknown vt_dtype " + std::to_string(vt_dtype) +
                    " (FP8ATTN_VT_E4M3 0, FP8ATTN_VT_FP16 1)");
  }
  if (!shape_ok(batch, seqlen_k, heads_kv, head_dim)) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "kv cache: batch, seqlen_k, heads_kv must be > 0 and head_dim 128");
  }
  if (vt_seqlen_pad == 0) vt_seqlen_pad = default_vt_pad(seqlen_k);
  if (vt_seqlen_pad < default_vt_pad(seqlen_k) || vt_seqlen_pad % FP8ATTN_VT_PAD) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "vt_seqlen_pad must be a multiple of 32 and >= seqlen_k rounded up to 32, got " +
                    std::to_string(vt_seqlen_pad));
  }
  const size_t need =
      fp8attn_kv_cache_bytes_vt(batch, seqlen_k, heads_kv, head_dim, vt_seqlen_pad, vt_dtype);
  if (buffer == nullptr || reinterpret_cast<uintptr_t>(buffer) % kAlign || bytes < need) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "kv cache buffer must be 256-byte aligned and hold " + std::to_string(need) +
                    " bytes, got " + std::to_string(bytes));
  }
  *cache = fp8attn_kv_cache{};
  cache->batch = batch, cache->seqlen_k = seqlen_k, cache->heads_kv = heads_kv;
  cache->head_dim = head_dim, cache->vt_seqlen_pad = vt_seqlen_pad, cache->vt_dtype = vt_dtype;
  Carver c(buffer);
  carve_kv_cache(c, cache, batch, seqlen_k, heads_kv, vt_seqlen_pad, vt_dtype);
  fp8attn_quant_options_init(&cache->options);
  return FP8ATTN_SUCCESS;
}

size_t fp8attn_quantize_kv_workspace_bytes(int32_t batch, int32_t seqlen_k, int32_t heads_kv) {
  if (!shape_ok(batch, seqlen_k, heads_kv, kHeadDim)) return 0;
  Carver c(nullptr);
  carve_kv_workspace(c, batch, seqlen_k, heads_kv);
  return c.used();
}

fp8attn_status fp8attn_quantize_kv(const fp8attn_bf16_tensor* k, const fp8attn_bf16_tensor* v,
                                   const fp8attn_quant_options* options, fp8attn_kv_cache* cache,
                                   void* workspace, size_t workspace_bytes, void* stream) {
  fp8attn::clear_error();
  KvPlan plan;
  if (fp8attn_status s = plan_kv(k, v, options, cache, workspace, workspace_bytes, plan);
      s != FP8ATTN_SUCCESS) {
    return s;
  }
  if (fp8attn_status s = check_device(); s != FP8ATTN_SUCCESS) return s;
  cache->options = *options;
  const auto st = static_cast<cudaStream_t>(stream);
  if (fp8attn_status s = launch_stats(plan, st); s != FP8ATTN_SUCCESS) return s;
  if (fp8attn_status s = launch_fused_kv(plan, st); s != FP8ATTN_SUCCESS) return s;
  return launch_regroup(plan, st);
}

size_t fp8attn_q_quant_bytes(int32_t batch, int32_t seqlen_q, int32_t heads, int32_t head_dim) {
  if (!shape_ok(batch, seqlen_q, heads, head_dim)) return 0;
  Carver c(nullptr);
  fp8attn_q_quant tmp{};
  carve_q_quant(c, &tmp, batch, seqlen_q, heads);
  return c.used();
}

fp8attn_status fp8attn_q_quant_init(fp8attn_q_quant* out, void* buffer, size_t bytes,
                                    int32_t batch, int32_t seqlen_q, int32_t heads,
                                    int32_t head_dim) {
  fp8attn::clear_error();
  if (out == nullptr) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "q_quant is null");
  if (!shape_ok(batch, seqlen_q, heads, head_dim)) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "q quant: batch, seqlen_q, heads must be > 0 and head_dim 128");
  }
  const size_t need = fp8attn_q_quant_bytes(batch, seqlen_q, heads, head_dim);
  if (buffer == nullptr || reinterpret_cast<uintptr_t>(buffer) % kAlign || bytes < need) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "q buffer must be 256-byte aligned and hold " + std::to_string(need) +
                    " bytes, got " + std::to_string(bytes));
  }
  *out = fp8attn_q_quant{};
  out->batch = batch, out->seqlen_q = seqlen_q, out->heads = heads, out->head_dim = head_dim;
  Carver c(buffer);
  carve_q_quant(c, out, batch, seqlen_q, heads);
  return FP8ATTN_SUCCESS;
}

fp8attn_status fp8attn_quantize_q(const fp8attn_bf16_tensor* q, const fp8attn_kv_cache* cache,
                                  int32_t q_scale, float softmax_scale, fp8attn_q_quant* out,
                                  void* stream) {
  fp8attn::clear_error();
  if (cache == nullptr) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "cache is null");
  RowQuantArgs rows;
  if (fp8attn_status s = plan_q(q, *cache, cache->options, q_scale, softmax_scale, out, rows);
      s != FP8ATTN_SUCCESS) {
    return s;
  }
  if (fp8attn_status s = check_device(); s != FP8ATTN_SUCCESS) return s;
  out->softmax_scale = softmax_scale;
  return launch_fused_q(rows, static_cast<cudaStream_t>(stream));
}

fp8attn_status fp8attn_quantize_qkv(const fp8attn_bf16_tensor* q, const fp8attn_bf16_tensor* k,
                                    const fp8attn_bf16_tensor* v,
                                    const fp8attn_quant_options* options, float softmax_scale,
                                    fp8attn_kv_cache* cache, fp8attn_q_quant* q_out,
                                    void* workspace, size_t workspace_bytes, void* stream) {
  fp8attn::clear_error();
  return quantize_qkv(q, k, v, options, softmax_scale, cache, q_out, workspace, workspace_bytes,
                      static_cast<cudaStream_t>(stream), nullptr);
}

}  // extern "C"
