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

// The K scale granularity filled what was padding before hadamard_seed: the struct keeps its
// size and the seed its offset (bench/bench_prepass.py mirrors the layout and checks it).
// centre came after it (size 32 -> 40).
static_assert(sizeof(fp8attn_quant_options) == 40 &&
              offsetof(fp8attn_quant_options, k_scale) == 20 &&
              offsetof(fp8attn_quant_options, hadamard_seed) == 24 &&
              offsetof(fp8attn_quant_options, centre) == 32);
// The cache's vt_dtype filled the padding before k: every other offset is unchanged.
static_assert(offsetof(fp8attn_kv_cache, vt_dtype) == 20 && offsetof(fp8attn_kv_cache, k) == 24);

namespace fp8attn::quant {
namespace {

fp8attn_status fail(fp8attn_status status, const std::string& what) {
  return set_error(status, "fp8attn pre-pass: " + what);
}

fp8attn_status cuda_fail(cudaError_t e, const char* where) {
  return fail(FP8ATTN_ERROR_CUDA, std::string(where) + ": " + cudaGetErrorString(e));
}

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
int ceil_div(int a, int b) { return (a + b - 1) / b; }
int default_vt_pad(int seqlen_k) { return ceil_div(seqlen_k, FP8ATTN_VT_PAD) * FP8ATTN_VT_PAD; }

// Carves consecutive 256-byte aligned pieces out of a buffer (or just counts with base null).
class Carver {
 public:
  explicit Carver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(size_t count) {
    T* p = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += align_up(count * sizeof(T));
    return p;
  }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

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

// The library's one device cache (common/device.h): an sm_90 or a message.
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

struct KvWorkspace {
  float *k_part_sum, *k_part_max, *k_part_min, *v_part_sum, *v_part_max, *v_part_min;
  float *v_inv, *k_inv;
  // FP8ATTN_CENTRE_SAMPLE (kv_one_pass.cu)
  float *k_bound, *v_bound, *k_inv_again, *v_inv_again;
  uint32_t *k_true, *v_true;
  uint8_t* again;
};
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

bool vt_dtype_ok(int32_t d) { return d == FP8ATTN_VT_E4M3 || d == FP8ATTN_VT_FP16; }

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

bool shape_ok(int batch, int seqlen, int heads, int head_dim) {
  return batch > 0 && seqlen > 0 && heads > 0 && head_dim == kHeadDim;
}


// What the entry points check and the launch arguments they build, shared by
// fp8attn_quantize_kv, fp8attn_quantize_q and fp8attn_quantize_qkv (which checks everything
// before it launches anything).
struct KvPlan {
  KvStatsArgs stats;
  RowQuantArgs rows;  // K
  VtQuantArgs vt;
  bool one_pass;      // FP8ATTN_CENTRE_SAMPLE: sample, fused pass, regroup, fused pass again
  KvOnePassArgs sample;
  RowQuantArgs rows_again;
  VtQuantArgs vt_again;
};

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

// Q against a cache made (or about to be made) with `options`.
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
fp8attn_status launch_stats(const KvPlan& plan, cudaStream_t st) {
  const cudaError_t e =
      plan.one_pass ? launch_kv_sample(plan.sample, st) : launch_kv_stats(plan.stats, st);
  if (e != cudaSuccess) return cuda_fail(e, plan.one_pass ? "kv sample" : "kv stats");
  return FP8ATTN_SUCCESS;
}

// FP8ATTN_CENTRE_SAMPLE, after the fused pass: the groups over their bound, then their heads'
// tiles again (a CTA of another head returns at once).
fp8attn_status launch_regroup(const KvPlan& plan, cudaStream_t st) {
  if (!plan.one_pass) return FP8ATTN_SUCCESS;
  if (cudaError_t e = launch_kv_regroup(plan.sample, st); e != cudaSuccess) {
    return cuda_fail(e, "kv regroup");
  }
  RowQuantArgs rows = plan.rows_again;
  rows.reverse_order = true;
  DeviceInfo info;
  if (fp8attn_status s = fp8attn::check_device(&info); s != FP8ATTN_SUCCESS) return s;
  if (cudaError_t e = launch_quantize_kv(rows, plan.vt_again, st, plan.sample.again, info.num_sms);
      e != cudaSuccess) {
    return cuda_fail(e, "quantize k, v again");
  }
  return FP8ATTN_SUCCESS;
}

fp8attn_status launch_fused_kv(KvPlan plan, cudaStream_t st) {
  plan.rows.reverse_order = true;  // the reduction always reads V (and K): start where it ended
  if (cudaError_t e = launch_quantize_kv(plan.rows, plan.vt, st); e != cudaSuccess) {
    return cuda_fail(e, "quantize k, v");
  }
  return FP8ATTN_SUCCESS;
}

fp8attn_status launch_fused_q(const RowQuantArgs& rows, cudaStream_t st) {
  const cudaError_t e = launch_quantize_q(rows, st);
  if (e != cudaSuccess) return cuda_fail(e, "quantize q");
  return FP8ATTN_SUCCESS;
}

}  // namespace
}  // namespace fp8attn::quant

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
  if (fp8attn_status s = check_device(); s != FP8ATTN_SUCCESS) return s;
  cache->options = *options;
  q_out->softmax_scale = softmax_scale;
  const auto st = static_cast<cudaStream_t>(stream);
  if (fp8attn_status s = launch_stats(plan, st); s != FP8ATTN_SUCCESS) return s;
  // The K/V launch, then Q's: Q's tiles inside the K/V launch measured slower on the H200.
  if (fp8attn_status s = launch_fused_kv(plan, st); s != FP8ATTN_SUCCESS) return s;
  // Q before the regroup: Q reads only the centre, which the regroup leaves.
  if (fp8attn_status s = launch_fused_q(qrows, st); s != FP8ATTN_SUCCESS) return s;
  return launch_regroup(plan, st);
}

}  // extern "C"
