// The pre-pass entries' shared host side (quant_api.cu, rope_api.cu): argument checks, buffer
// layouts, the launch plan of a call and its launches. Implemented in plan.cu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "fp8attn/quant.h"
#include "fp8attn/rope.h"
#include "quant/lanes.h"
#include "quant/launch.h"

namespace fp8attn::quant {

fp8attn_status fail(fp8attn_status status, const std::string& what);
fp8attn_status cuda_fail(cudaError_t e, const char* where);

inline constexpr size_t kAlign = 256;
inline size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
inline int default_vt_pad(int seqlen_k) { return ceil_div(seqlen_k, FP8ATTN_VT_PAD) * FP8ATTN_VT_PAD; }

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

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

inline bool vt_dtype_ok(int32_t d) { return d == FP8ATTN_VT_E4M3 || d == FP8ATTN_VT_FP16; }

inline bool shape_ok(int batch, int seqlen, int heads, int head_dim) {
  return batch > 0 && seqlen > 0 && heads > 0 && head_dim == kHeadDim;
}

fp8attn_status check_tensor(const fp8attn_bf16_tensor* t, const char* name);
Bf16Input input_of(const fp8attn_bf16_tensor& t);
// The library's one device cache (common/device.h): an sm_90 or a message.
fp8attn_status check_device();
void hadamard_bits(uint64_t seed, uint32_t (&bits)[4]);

struct KvWorkspace {
  float *k_part_sum, *k_part_max, *k_part_min, *v_part_sum, *v_part_max, *v_part_min;
  float *v_inv, *k_inv;
  // FP8ATTN_CENTRE_SAMPLE (kv_one_pass.cu)
  float *k_bound, *v_bound, *k_inv_again, *v_inv_again;
  uint32_t *k_true, *v_true;
  uint8_t* again;
};
KvWorkspace carve_kv_workspace(Carver& c, int batch, int seqlen_k, int heads_kv);
void carve_kv_cache(Carver& c, fp8attn_kv_cache* cache, int batch, int seqlen_k, int heads_kv,
                    int vt_pad, int32_t vt_dtype);
void carve_q_quant(Carver& c, fp8attn_q_quant* out, int batch, int seqlen_q, int heads);

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
                       void* workspace, size_t workspace_bytes, KvPlan& plan);
// Q against a cache made (or about to be made) with `options`.
fp8attn_status plan_q(const fp8attn_bf16_tensor* q, const fp8attn_kv_cache& cache,
                      const fp8attn_quant_options& options, int32_t q_scale, float softmax_scale,
                      const fp8attn_q_quant* out, RowQuantArgs& rows);

// The launches of a planned call, in this order: statistics (or sample), fused K/V, Q, regroup
// (FP8ATTN_CENTRE_SAMPLE only). k_rope / q_rope non-null: the rope entry's rotary embedding of
// K's / Q's rows (every pass that reads K rotates it).
fp8attn_status launch_stats(const KvPlan& plan, cudaStream_t st, const RopeRows* k_rope = nullptr);
fp8attn_status launch_fused_kv(KvPlan plan, cudaStream_t st, const RopeRows* k_rope = nullptr);
fp8attn_status launch_fused_q(const RowQuantArgs& rows, cudaStream_t st,
                              const RopeRows* q_rope = nullptr);
fp8attn_status launch_regroup(const KvPlan& plan, cudaStream_t st,
                              const RopeRows* k_rope = nullptr);

// The whole pre-pass of one end-to-end call (fp8attn_quantize_qkv and, with `rope`,
// fp8attn_quantize_qkv_rope): plans and checks (the tables' too, when given) before any launch,
// then the four launches in order.
fp8attn_status quantize_qkv(const fp8attn_bf16_tensor* q, const fp8attn_bf16_tensor* k,
                            const fp8attn_bf16_tensor* v, const fp8attn_quant_options* options,
                            float softmax_scale, fp8attn_kv_cache* cache, fp8attn_q_quant* q_out,
                            void* workspace, size_t workspace_bytes, cudaStream_t st,
                            const fp8attn_rope_tables* rope);

}  // namespace fp8attn::quant
