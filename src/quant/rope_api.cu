// The rope entry's C ABI (include/fp8attn/rope.h): the tables' checks, then the launches of
// fp8attn_quantize_qkv (quant/plan.h) with the rotation flag of every pass that reads Q or K.
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "common/status.h"
#include "fp8attn/rope.h"
#include "quant/plan.h"

using namespace fp8attn::quant;

namespace {

// 0 <= pos0 and pos0 + rows <= max_positions, in 64 bits.
fp8attn_status check_range(const fp8attn_rope_tables& r, int32_t pos0, int32_t rows,
                           const char* pos_name, const char* rows_name) {
  if (pos0 < 0 || int64_t{pos0} + rows > r.max_positions) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                std::string("rope: ") + pos_name + " = " + std::to_string(pos0) + " with " +
                    rows_name + " = " + std::to_string(rows) + " needs table rows up to " +
                    std::to_string(int64_t{pos0} + rows) + ", max_positions is " +
                    std::to_string(r.max_positions));
  }
  return FP8ATTN_SUCCESS;
}

}  // namespace

extern "C" {

void fp8attn_rope_tables_init(fp8attn_rope_tables* rope) {
  if (rope != nullptr) *rope = fp8attn_rope_tables{};
}

fp8attn_status fp8attn_check_rope_tables(const fp8attn_rope_tables* r, int32_t seqlen_q,
                                         int32_t seqlen_k) {
  fp8attn::clear_error();
  if (r == nullptr) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "rope: tables struct is null");
  if (r->style != FP8ATTN_ROPE_NEOX) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "rope: style " + std::to_string(r->style) +
                    " is not supported: only FP8ATTN_ROPE_NEOX (rotate_half, channel i with i + "
                    "64); GPT-J interleaved pairs are not");
  }
  if (r->cos == nullptr || r->sin == nullptr) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "rope: cos or sin table is null");
  }
  if (!aligned16(r->cos) || !aligned16(r->sin)) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "rope: cos and sin must be 16-byte aligned");
  }
  if (r->max_positions <= 0) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT,
                "rope: max_positions must be > 0, got " + std::to_string(r->max_positions));
  }
  if (seqlen_q <= 0 || seqlen_k <= 0) {
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "rope: seqlen_q and seqlen_k must be > 0");
  }
  if (fp8attn_status s = check_range(*r, r->q_pos0, seqlen_q, "q_pos0", "seqlen_q");
      s != FP8ATTN_SUCCESS) {
    return s;
  }
  return check_range(*r, r->k_pos0, seqlen_k, "k_pos0", "seqlen_k");
}

fp8attn_status fp8attn_quantize_qkv_rope(const fp8attn_bf16_tensor* q, const fp8attn_bf16_tensor* k,
                                         const fp8attn_bf16_tensor* v,
                                         const fp8attn_rope_tables* rope,
                                         const fp8attn_quant_options* options, float softmax_scale,
                                         fp8attn_kv_cache* cache, fp8attn_q_quant* q_out,
                                         void* workspace, size_t workspace_bytes, void* stream) {
  fp8attn::clear_error();
  if (rope == nullptr) return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "rope: tables struct is null");
  return quantize_qkv(q, k, v, options, softmax_scale, cache, q_out, workspace, workspace_bytes,
                      static_cast<cudaStream_t>(stream), rope);
}

}  // extern "C"
