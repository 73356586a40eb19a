// The constants table of include/fp8attn/constants.h. Built from the headers' own macros, enums
// and structs (sizeof / offsetof), so it cannot disagree with them; the head dim and buffer
// alignment are the values the library's argument checks enforce (fp8attn_check_fwd_params,
// fp8attn_kv_cache_init and friends), which the Python tests exercise against this table.
#include <cstddef>
#include <cstring>

#include "fp8attn/attention.h"
#include "fp8attn/constants.h"
#include "fp8attn/fp8attn.h"
#include "fp8attn/quant.h"
#include "fp8attn/rope.h"

namespace {

// The one head dim every entry point accepts (fp8attn_check_fwd_params rejects any other).
constexpr int kHeadDim = 128;
// fp8attn_kv_cache_init / fp8attn_q_quant_init / fp8attn_quantize_kv check this alignment
// (src/quant/quant_api.cu, kAlign).
constexpr int kBufferAlign = 256;

struct Entry {
  const char* name;
  double value;
};

#define FP8ATTN_VALUE(x) {#x, static_cast<double>(x)}
#define FP8ATTN_SIZEOF(T) {"sizeof(" #T ")", static_cast<double>(sizeof(T))}
#define FP8ATTN_OFFSETOF(T, f) {"offsetof(" #T ", " #f ")", static_cast<double>(offsetof(T, f))}

const Entry kTable[] = {
    {"FP8ATTN_HEAD_DIM", kHeadDim},
    {"FP8ATTN_BUFFER_ALIGN", kBufferAlign},
    FP8ATTN_VALUE(FP8ATTN_VT_KEY_GROUP),
    FP8ATTN_VALUE(FP8ATTN_VT_PAD),
    FP8ATTN_VALUE(FP8ATTN_K_SCALE_BLOCK),
    FP8ATTN_VALUE(FP8ATTN_P_OFFSET_LOG2),
    FP8ATTN_VALUE(FP8ATTN_RESCALE_SLACK_LOG2),
    FP8ATTN_VALUE(FP8ATTN_P_EXACT_OFFSET_LOG2),
    FP8ATTN_VALUE(FP8ATTN_QUANT_STATS_CHUNK),
    FP8ATTN_VALUE(FP8ATTN_QUANT_STATS_GROUP),
    // fp8attn_status
    FP8ATTN_VALUE(FP8ATTN_SUCCESS),
    FP8ATTN_VALUE(FP8ATTN_ERROR_INVALID_ARGUMENT),
    FP8ATTN_VALUE(FP8ATTN_ERROR_UNSUPPORTED_DEVICE),
    FP8ATTN_VALUE(FP8ATTN_ERROR_CUDA),
    // fp8attn_p_precision, fp8attn_vt_dtype, fp8attn_q_scale, fp8attn_v_scale, fp8attn_k_scale
    FP8ATTN_VALUE(FP8ATTN_P_E4M3),
    FP8ATTN_VALUE(FP8ATTN_P_E4M3_HILO),
    FP8ATTN_VALUE(FP8ATTN_P_FP16),
    FP8ATTN_VALUE(FP8ATTN_P_E4M3_EXACT),
    FP8ATTN_VALUE(FP8ATTN_VT_E4M3),
    FP8ATTN_VALUE(FP8ATTN_VT_FP16),
    FP8ATTN_VALUE(FP8ATTN_Q_SCALE_TOKEN),
    FP8ATTN_VALUE(FP8ATTN_Q_SCALE_BLOCK128),
    FP8ATTN_VALUE(FP8ATTN_V_SCALE_CHANNEL),
    FP8ATTN_VALUE(FP8ATTN_V_SCALE_HEAD),
    FP8ATTN_VALUE(FP8ATTN_K_SCALE_HEAD),
    FP8ATTN_VALUE(FP8ATTN_K_SCALE_BLOCK128),
    FP8ATTN_VALUE(FP8ATTN_CENTRE_MEAN),
    FP8ATTN_VALUE(FP8ATTN_CENTRE_SAMPLE),
    FP8ATTN_VALUE(FP8ATTN_QUANT_SAMPLE_FRACTION),
    FP8ATTN_VALUE(FP8ATTN_QUANT_SAMPLE_ROWS_MIN),
    FP8ATTN_VALUE(FP8ATTN_QUANT_SAMPLE_ROWS_MAX),
    FP8ATTN_VALUE(FP8ATTN_QUANT_SAMPLE_SKIP),
    FP8ATTN_VALUE(FP8ATTN_QUANT_SAMPLE_HEADROOM),
    // fp8attn_fwd_params (fp8attn.h)
    FP8ATTN_SIZEOF(fp8attn_fwd_params),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, batch),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, seqlen_q),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, seqlen_k),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, heads),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, heads_kv),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, head_dim),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, q),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, q_stride_b),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, q_stride_s),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, q_stride_h),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, k),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, k_stride_b),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, k_stride_s),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, k_stride_h),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, vt),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, vt_stride_b),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, vt_stride_h),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, vt_stride_d),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, vt_seqlen_pad),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, o),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, o_stride_b),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, o_stride_s),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, o_stride_h),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, lse),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, q_descale),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, qd_stride_b),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, qd_stride_h),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, qd_stride_s),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, k_descale),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, kd_stride_b),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, kd_stride_h),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, kd_stride_blk),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, v_descale),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, vd_stride_b),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, vd_stride_h),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, vd_stride_d),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, lse_bias),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, o_bias),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, ob_stride_b),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, ob_stride_h),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, softmax_scale),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, causal),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, p_precision),
    FP8ATTN_OFFSETOF(fp8attn_fwd_params, vt_dtype),
    // fp8attn_quant_options, fp8attn_bf16_tensor, fp8attn_kv_cache, fp8attn_q_quant (quant.h)
    FP8ATTN_SIZEOF(fp8attn_quant_options),
    FP8ATTN_OFFSETOF(fp8attn_quant_options, smooth_k),
    FP8ATTN_OFFSETOF(fp8attn_quant_options, smooth_v),
    FP8ATTN_OFFSETOF(fp8attn_quant_options, hadamard_qk),
    FP8ATTN_OFFSETOF(fp8attn_quant_options, q_scale),
    FP8ATTN_OFFSETOF(fp8attn_quant_options, v_scale),
    FP8ATTN_OFFSETOF(fp8attn_quant_options, k_scale),
    FP8ATTN_OFFSETOF(fp8attn_quant_options, hadamard_seed),
    FP8ATTN_OFFSETOF(fp8attn_quant_options, centre),
    FP8ATTN_OFFSETOF(fp8attn_quant_options, reserved),
    FP8ATTN_SIZEOF(fp8attn_bf16_tensor),
    FP8ATTN_OFFSETOF(fp8attn_bf16_tensor, data),
    FP8ATTN_OFFSETOF(fp8attn_bf16_tensor, batch),
    FP8ATTN_OFFSETOF(fp8attn_bf16_tensor, seqlen),
    FP8ATTN_OFFSETOF(fp8attn_bf16_tensor, heads),
    FP8ATTN_OFFSETOF(fp8attn_bf16_tensor, head_dim),
    FP8ATTN_OFFSETOF(fp8attn_bf16_tensor, stride_b),
    FP8ATTN_OFFSETOF(fp8attn_bf16_tensor, stride_s),
    FP8ATTN_OFFSETOF(fp8attn_bf16_tensor, stride_h),
    FP8ATTN_SIZEOF(fp8attn_kv_cache),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, batch),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, seqlen_k),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, heads_kv),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, head_dim),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, vt_seqlen_pad),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, vt_dtype),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, k),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, vt),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, k_descale),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, v_descale),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, k_mean),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, v_mean),
    FP8ATTN_OFFSETOF(fp8attn_kv_cache, options),
    FP8ATTN_SIZEOF(fp8attn_q_quant),
    FP8ATTN_OFFSETOF(fp8attn_q_quant, batch),
    FP8ATTN_OFFSETOF(fp8attn_q_quant, seqlen_q),
    FP8ATTN_OFFSETOF(fp8attn_q_quant, heads),
    FP8ATTN_OFFSETOF(fp8attn_q_quant, head_dim),
    FP8ATTN_OFFSETOF(fp8attn_q_quant, q),
    FP8ATTN_OFFSETOF(fp8attn_q_quant, q_descale),
    FP8ATTN_OFFSETOF(fp8attn_q_quant, lse_bias),
    FP8ATTN_OFFSETOF(fp8attn_q_quant, softmax_scale),
    // fp8attn_rope_tables (rope.h)
    FP8ATTN_SIZEOF(fp8attn_rope_tables),
    FP8ATTN_OFFSETOF(fp8attn_rope_tables, cos),
    FP8ATTN_OFFSETOF(fp8attn_rope_tables, sin),
    FP8ATTN_OFFSETOF(fp8attn_rope_tables, max_positions),
    FP8ATTN_OFFSETOF(fp8attn_rope_tables, q_pos0),
    FP8ATTN_OFFSETOF(fp8attn_rope_tables, k_pos0),
    FP8ATTN_OFFSETOF(fp8attn_rope_tables, style),
    FP8ATTN_VALUE(FP8ATTN_ROPE_NEOX),
    FP8ATTN_VALUE(FP8ATTN_ROPE_GPTJ),
    // fp8attn_attention_args (attention.h)
    FP8ATTN_SIZEOF(fp8attn_attention_args),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, q),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, k),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, v),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, o),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, o_stride_b),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, o_stride_s),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, o_stride_h),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, lse),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, softmax_scale),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, causal),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, p_precision),
    FP8ATTN_OFFSETOF(fp8attn_attention_args, quant),
};

#undef FP8ATTN_VALUE
#undef FP8ATTN_SIZEOF
#undef FP8ATTN_OFFSETOF

constexpr int32_t kCount = static_cast<int32_t>(sizeof(kTable) / sizeof(kTable[0]));

}  // namespace

extern "C" {

int32_t fp8attn_constant_count(void) { return kCount; }

const char* fp8attn_constant_name(int32_t i) {
  return i >= 0 && i < kCount ? kTable[i].name : nullptr;
}

fp8attn_status fp8attn_constant(const char* name, double* value) {
  if (name == nullptr || value == nullptr) return FP8ATTN_ERROR_INVALID_ARGUMENT;
  for (const Entry& e : kTable) {
    if (std::strcmp(e.name, name) == 0) {
      *value = e.value;
      return FP8ATTN_SUCCESS;
    }
  }
  return FP8ATTN_ERROR_INVALID_ARGUMENT;
}

int32_t fp8attn_vt_key_index(int32_t p) {
  return p >= 0 && p < FP8ATTN_VT_KEY_GROUP ? fp8attn_vt_key_at(p) : -1;
}

}  // extern "C"
