// The pre-pass entries' shared host side (quant/plan.h): checks, layouts, plans, launches.
#include "quant/plan.h"

#include <cmath>

#include "common/device.h"
#include "common/status.h"
#include "quant/quant_common.cuh"

namespace fp8attn::quant {

fp8attn_status fail(fp8attn_status status, const std::string& what) {
  return set_error(status, "fp8attn pre-pass: " + what);
}

fp8attn_status cuda_fail(cudaError_t e, const char* where) {
  return fail(FP8ATTN_ERROR_CUDA, std::string(where) + ": " + cudaGetErrorString(e));
}



fp8attn_status check_tensor(const fp8attn_bf16_tensor* t, const char* name) {
  if (t == nullptr || t->data == nullptr) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                                                      std::string(name) + " is null");
  if (t->head_dim != kHeadDim) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, std::string(name) + ".head_dim must be 128, got " +
                                                    std::to_string(t->head_dim));
  }
  if (t->batch <= 0 || t->seqlen <= 0 || t->heads <= 0) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                std::string(name) + ": batch, seqlen and heads must be > 0");
  }
  if (!aligned16(t->data) || t->stride_b % 8 || t->stride_s % 8 || t->stride_h % 8) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                std::string(name) + ": data and strides must be 16-byte aligned (strides "
                                    "multiples of 8 elements)");
  }
  return FP8ATTN_SUCCESS;
}

Bf16Input input_of(const fp8attn_bf16_tensor& t) {
  return {static_cast<const uint16_t*>(t.data), t.stride_b, t.stride_s, t.stride_h,
          t.batch,  t.seqlen, t.heads};
}

fp8attn_status check_device() {
  DeviceInfo info;
  return fp8attn::check_device(&info);
}

void hadamard_bits(uint64_t seed, uint32_t (&bits)[4]) {
  for (int w = 0; w < 4; ++w) bits[w] = 0;
  for (int c = 0; c < kHeadDim; ++c) {
    if (fp8attn_hadamard_sign_negative(seed, c)) bits[c / 32] |= 1u << (c % 32);
  }
}

constexpr int kStatsGroupKeys = FP8ATTN_QUANT_STATS_CHUNK * FP8ATTN_QUANT_STATS_GROUP;

KvWorkspace carve_kv_workspace(Carver& c, int batch, int seqlen_k, int heads_kv) {
  const size_t parts = static_cast<size_t>(batch) * heads_kv *
                       ceil_div(seqlen_k, kStatsGroupKeys) * kHeadDim;
  KvWorkspace w;
  w.k_part_sum = c.take<float>(parts);
  w.k_part_max = c.take<float>(parts);
  w.k_part_min = c.take<float>(parts);
  w.v_part_sum = c.take<float>(parts);
  w.v_part_max = c.take<float>(parts);
  w.v_part_min = c.take<float>(parts);
  w.v_inv = c.take<float>(static_cast<size_t>(batch) * heads_kv * kHeadDim);
  w.k_inv = c.take<float>(static_cast<size_t>(batch) * heads_kv);
  const size_t bh = static_cast<size_t>(batch) * heads_kv;
  w.k_bound = c.take<float>(bh);
  w.v_bound = c.take<float>(bh * kHeadDim);
  w.k_inv_again = c.take<float>(bh);
  w.v_inv_again = c.take<float>(bh * kHeadDim);
  w.k_true = c.take<uint32_t>(bh);
  w.v_true = c.take<uint32_t>(bh * kHeadDim);
  w.again = c.take<uint8_t>(bh);
  return w;
}


void carve_kv_cache(Carver& c, fp8attn_kv_cache* cache, int batch, int seqlen_k, int heads_kv,
                    int vt_pad, int32_t vt_dtype) {
  const size_t bh = static_cast<size_t>(batch) * heads_kv;
  const size_t vt_elem = vt_dtype == FP8ATTN_VT_FP16 ? 2 : 1;
  cache->k = c.take<uint8_t>(bh * seqlen_k * kHeadDim);
  cache->vt = c.take<uint8_t>(bh * kHeadDim * vt_pad * vt_elem);
  cache->k_descale = c.take<float>(bh * ceil_div(seqlen_k, FP8ATTN_K_SCALE_BLOCK));
  cache->v_descale = c.take<float>(bh * kHeadDim);
  cache->k_mean = c.take<float>(bh * kHeadDim);
  cache->v_mean = c.take<float>(bh * kHeadDim);
}

void carve_q_quant(Carver& c, fp8attn_q_quant* out, int batch, int seqlen_q, int heads) {
  const size_t bh = static_cast<size_t>(batch) * heads;
  out->q = c.take<uint8_t>(bh * seqlen_q * kHeadDim);
  out->q_descale = c.take<float>(bh * seqlen_q);
  out->lse_bias = c.take<float>(bh * seqlen_q);
}




fp8attn_status plan_kv(const fp8attn_bf16_tensor* k, const fp8attn_bf16_tensor* v,
                       const fp8attn_quant_options* options, const fp8attn_kv_cache* cache,
                       void* workspace, size_t workspace_bytes, KvPlan& plan) {
  if (fp8attn_status s = check_tensor(k, "k"); s != FP8ATTN_SUCCESS) return s;
  if (fp8attn_status s = check_tensor(v, "v"); s != FP8ATTN_SUCCESS) return s;
  if (options == nullptr || cache == nullptr) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "options or cache is null");
  }
  if (k->batch != v->batch || k->seqlen != v->seqlen || k->heads != v->heads) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "k and v shapes differ");
  }
  if (cache->k == nullptr || cache->batch != k->batch || cache->seqlen_k != k->seqlen ||
      cache->heads_kv != k->heads || !vt_dtype_ok(cache->vt_dtype)) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "cache not initialized for this shape (fp8attn_kv_cache_init with k's batch, "
                "seqlen, heads)");
  }
  if (fp8attn_status s = fp8attn_check_quant_options(options); s != FP8ATTN_SUCCESS) return s;
  const size_t need = fp8attn_quantize_kv_workspace_bytes(k->batch, k->seqlen, k->heads);
  if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % kAlign ||
      workspace_bytes < need) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "workspace must be 256-byte aligned and hold " + std::to_string(need) +
                    " bytes, got " + std::to_string(workspace_bytes));
  }
  Carver c(workspace);
  const KvWorkspace ws = carve_kv_workspace(c, k->batch, k->seqlen, k->heads);

  const bool rotate = options->hadamard_qk != 0;
  const bool k_head = options->k_scale == FP8ATTN_K_SCALE_HEAD;
  const int nblk = ceil_div(k->seqlen, FP8ATTN_K_SCALE_BLOCK);
  KvStatsArgs& stats = plan.stats;
  stats = KvStatsArgs{};
  stats.k = input_of(*k);
  stats.v = input_of(*v);
  stats.smooth_k = options->smooth_k != 0;
  stats.smooth_v = options->smooth_v != 0;
  stats.k_stats = stats.smooth_k || k_head;
  stats.v_scale_per_head = options->v_scale == FP8ATTN_V_SCALE_HEAD;
  stats.k_scale_per_head = k_head;
  stats.rotate = rotate;
  hadamard_bits(options->hadamard_seed, stats.negate_bits);
  stats.ngroups = ceil_div(k->seqlen, kStatsGroupKeys);
  stats.nblk = nblk;
  stats.k_descale_factor = rotate ? kHadamardDescale : 1.0f;
  stats.k_part_sum = ws.k_part_sum, stats.k_part_max = ws.k_part_max;
  stats.k_part_min = ws.k_part_min;
  stats.v_part_sum = ws.v_part_sum, stats.v_part_max = ws.v_part_max;
  stats.v_part_min = ws.v_part_min;
  stats.k_mean = cache->k_mean, stats.v_mean = cache->v_mean;
  stats.v_descale = cache->v_descale, stats.v_inv = ws.v_inv;
  stats.k_descale = cache->k_descale, stats.k_inv = ws.k_inv;

  RowQuantArgs& rows = plan.rows;
  rows = RowQuantArgs{};
  rows.x = input_of(*k);
  rows.out = static_cast<uint8_t*>(cache->k);
  rows.group_rows = k_head ? 0 : FP8ATTN_K_SCALE_BLOCK;
  rows.descale = cache->k_descale;
  rows.descale_per_row = false;
  rows.scale_inv = ws.k_inv;
  rows.rotate = rotate;
  hadamard_bits(options->hadamard_seed, rows.negate_bits);
  rows.descale_factor = rotate ? kHadamardDescale : 1.0f;
  rows.mean = options->smooth_k ? cache->k_mean : nullptr;
  // The fused passes run last to first after the reduction (its last reads are in L2).
  rows.reverse_order = stats.k_stats;

  VtQuantArgs& vt = plan.vt;
  vt = VtQuantArgs{};
  vt.v = input_of(*v);
  vt.v_mean = options->smooth_v ? cache->v_mean : nullptr;
  vt.v_inv = ws.v_inv;
  vt.vt = static_cast<uint8_t*>(cache->vt);
  vt.vt_pad = cache->vt_seqlen_pad;
  vt.vt_f16 = cache->vt_dtype == FP8ATTN_VT_FP16;  // the second quantization too (vt_again)

  plan.one_pass = options->centre == FP8ATTN_CENTRE_SAMPLE;
  if (plan.one_pass) {
    KvOnePassArgs& one = plan.sample;
    one.s = stats;
    one.headroom = FP8ATTN_QUANT_SAMPLE_HEADROOM;
    one.k_bound = ws.k_bound, one.v_bound = ws.v_bound;
    one.k_true = ws.k_true, one.v_true = ws.v_true;
    one.k_inv_again = ws.k_inv_again, one.v_inv_again = ws.v_inv_again;
    one.again = ws.again;
    plan.rows_again = rows;
    plan.rows_again.scale_inv = ws.k_inv_again;
    plan.vt_again = vt;
    plan.vt_again.v_inv = ws.v_inv_again;
    rows.true_amax = k_head ? ws.k_true : nullptr;
    vt.true_amax = ws.v_true;
  }
  return FP8ATTN_SUCCESS;
}

fp8attn_status plan_q(const fp8attn_bf16_tensor* q, const fp8attn_kv_cache& cache,
                      const fp8attn_quant_options& options, int32_t q_scale, float softmax_scale,
                      const fp8attn_q_quant* out, RowQuantArgs& rows) {
  if (fp8attn_status s = check_tensor(q, "q"); s != FP8ATTN_SUCCESS) return s;
  if (out == nullptr || out->q == nullptr) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "q_quant is null / not initialized");
  }
  if (out->batch != q->batch || out->seqlen_q != q->seqlen || out->heads != q->heads) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "q_quant was initialized for another shape");
  }
  if (cache.batch != q->batch || cache.heads_kv <= 0 || q->heads % cache.heads_kv) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "q and the KV cache disagree: batch must match and heads_kv divide heads (q "
                "heads " + std::to_string(q->heads) + ", cache heads_kv " +
                    std::to_string(cache.heads_kv) + ")");
  }
  if (q_scale != FP8ATTN_Q_SCALE_TOKEN && q_scale != FP8ATTN_Q_SCALE_BLOCK128) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "unknown q_scale " + std::to_string(q_scale));
  }
  // The scale enters lse_bias (K smoothing) and the kernel's parameters: a NaN, Inf or
  // non-positive one would reach every row, so it is refused here, before any launch.
  if (!(std::isfinite(softmax_scale) && softmax_scale > 0.0f)) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "softmax_scale = " + std::to_string(softmax_scale) + ": must be finite and > 0");
  }
  rows = RowQuantArgs{};
  rows.x = input_of(*q);
  rows.out = static_cast<uint8_t*>(out->q);
  rows.descale = out->q_descale;
  rows.descale_per_row = true;
  rows.group_rows = q_scale == FP8ATTN_Q_SCALE_TOKEN ? 1 : 128;
  rows.rotate = options.hadamard_qk != 0;
  hadamard_bits(options.hadamard_seed, rows.negate_bits);
  rows.descale_factor = 1.0f;
  rows.mean = nullptr;
  rows.lse_bias = out->lse_bias;
  rows.k_mean = options.smooth_k ? cache.k_mean : nullptr;
  rows.heads_per_kv = q->heads / cache.heads_kv;
  rows.softmax_scale = softmax_scale;
  return FP8ATTN_SUCCESS;
}

// The exact mean: the statistics pass. The sample's centre: the sample (K and V read once).
fp8attn_status launch_stats(const KvPlan& plan, cudaStream_t st, const RopeRows* k_rope) {
  const cudaError_t e = plan.one_pass ? launch_kv_sample(plan.sample, st, k_rope)
                                      : launch_kv_stats(plan.stats, st, k_rope);
  if (e != cudaSuccess) return cuda_fail(e, plan.one_pass ? "kv sample" : "kv stats");
  return FP8ATTN_SUCCESS;
}

// FP8ATTN_CENTRE_SAMPLE, after the fused pass: the groups over their bound, then their heads'
// tiles again (a CTA of another head returns at once).
fp8attn_status launch_regroup(const KvPlan& plan, cudaStream_t st, const RopeRows* k_rope) {
  if (!plan.one_pass) return FP8ATTN_SUCCESS;
  if (cudaError_t e = launch_kv_regroup(plan.sample, st); e != cudaSuccess) {
    return cuda_fail(e, "kv regroup");
  }
  RowQuantArgs rows = plan.rows_again;
  rows.reverse_order = true;
  DeviceInfo info;
  if (fp8attn_status s = fp8attn::check_device(&info); s != FP8ATTN_SUCCESS) return s;
  if (cudaError_t e = launch_quantize_kv(rows, plan.vt_again, st, plan.sample.again, info.num_sms,
                                         k_rope);
      e != cudaSuccess) {
    return cuda_fail(e, "quantize k, v again");
  }
  return FP8ATTN_SUCCESS;
}

fp8attn_status launch_fused_kv(KvPlan plan, cudaStream_t st, const RopeRows* k_rope) {
  plan.rows.reverse_order = true;  // the reduction always reads V (and K): start where it ended
  if (cudaError_t e = launch_quantize_kv(plan.rows, plan.vt, st, nullptr, 0, k_rope);
      e != cudaSuccess) {
    return cuda_fail(e, "quantize k, v");
  }
  return FP8ATTN_SUCCESS;
}

fp8attn_status launch_fused_q(const RowQuantArgs& rows, cudaStream_t st, const RopeRows* q_rope) {
  const cudaError_t e = launch_quantize_q(rows, st, q_rope);
  if (e != cudaSuccess) return cuda_fail(e, "quantize q");
  return FP8ATTN_SUCCESS;
}

fp8attn_status quantize_qkv(const fp8attn_bf16_tensor* q, const fp8attn_bf16_tensor* k,
                            const fp8attn_bf16_tensor* v, const fp8attn_quant_options* options,
                            float softmax_scale, fp8attn_kv_cache* cache, fp8attn_q_quant* q_out,
                            void* workspace, size_t workspace_bytes, cudaStream_t st,
                            const fp8attn_rope_tables* rope) {
  KvPlan plan;
  if (fp8attn_status s = plan_kv(k, v, options, cache, workspace, workspace_bytes, plan);
      s != FP8ATTN_SUCCESS) {
    return s;
  }
  RowQuantArgs qrows;
  if (fp8attn_status s = plan_q(q, *cache, *options, options->q_scale, softmax_scale, q_out, qrows);
      s != FP8ATTN_SUCCESS) {
    return s;
  }
  if (rope != nullptr) {
    if (fp8attn_status s = fp8attn_check_rope_tables(rope, q->seqlen, k->seqlen); s != FP8ATTN_SUCCESS)
      return s;
  }
  if (fp8attn_status s = check_device(); s != FP8ATTN_SUCCESS) return s;
  cache->options = *options;
  q_out->softmax_scale = softmax_scale;
  // With rope, every pass that reads K or Q rotates its rows.
  RopeRows k_rows{}, q_rows{};
  if (rope != nullptr) {
    k_rows = {rope->cos, rope->sin, rope->k_pos0};
    q_rows = {rope->cos, rope->sin, rope->q_pos0};
  }
  const RopeRows* kr = rope != nullptr ? &k_rows : nullptr;
  const RopeRows* qr = rope != nullptr ? &q_rows : nullptr;
  if (fp8attn_status s = launch_stats(plan, st, kr); s != FP8ATTN_SUCCESS) return s;
  // The K/V launch, then Q's: Q's tiles inside the K/V launch measured slower on the H200.
  if (fp8attn_status s = launch_fused_kv(plan, st, kr); s != FP8ATTN_SUCCESS) return s;
  // Q before the regroup: Q reads only the centre, which the regroup leaves.
  if (fp8attn_status s = launch_fused_q(qrows, st, qr); s != FP8ATTN_SUCCESS) return s;
  return launch_regroup(plan, st, kr);
}

}  // namespace fp8attn::quant
