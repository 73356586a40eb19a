// The kernel's parameters from the pre-pass's outputs (kernel_params.h), and the public
// fp8attn_fwd_params_from_quant (include/fp8attn/attention.h).
#include "compose/kernel_params.h"

#include <string>

#include "common/status.h"

namespace fp8attn::compose {

fp8attn_fwd_params kernel_params(const fp8attn_q_quant& q, const fp8attn_kv_cache& cache, void* o,
                                 float* lse) {
  constexpr int D = 128;
  const int B = q.batch, SQ = q.seqlen_q, SK = cache.seqlen_k, H = q.heads;
  const int HKV = cache.heads_kv, PAD = cache.vt_seqlen_pad;
  fp8attn_fwd_params p;
  fp8attn_fwd_params_init(&p, B, SQ, SK, H, HKV, D);  // contiguous Q, K and O strides
  p.q = q.q;
  p.k = cache.k;
  p.vt = cache.vt;
  p.vt_seqlen_pad = PAD;
  p.vt_dtype = cache.vt_dtype;
  // An FP16 V^T feeds only the FP16 P V product: the one precision these parameters can run.
  if (cache.vt_dtype == FP8ATTN_VT_FP16) p.p_precision = FP8ATTN_P_FP16;
  p.vt_stride_d = PAD;
  p.vt_stride_h = int64_t{D} * PAD;
  p.vt_stride_b = int64_t{HKV} * D * PAD;
  p.o = o;
  p.lse = lse;
  p.q_descale = q.q_descale;
  p.qd_stride_s = 1, p.qd_stride_h = SQ, p.qd_stride_b = int64_t{H} * SQ;
  const int nblk = (SK + FP8ATTN_K_SCALE_BLOCK - 1) / FP8ATTN_K_SCALE_BLOCK;
  p.k_descale = cache.k_descale;
  p.kd_stride_h = nblk, p.kd_stride_b = int64_t{HKV} * nblk;
  // Per head every block of a head holds the same value: stride 0 along blocks says so.
  p.kd_stride_blk = cache.options.k_scale == FP8ATTN_K_SCALE_HEAD ? 0 : 1;
  p.v_descale = cache.v_descale;
  p.vd_stride_d = 1, p.vd_stride_h = D, p.vd_stride_b = int64_t{HKV} * D;
  p.lse_bias = cache.options.smooth_k ? q.lse_bias : nullptr;
  p.o_bias = cache.options.smooth_v ? cache.v_mean : nullptr;
  p.ob_stride_h = D, p.ob_stride_b = int64_t{HKV} * D;
  p.softmax_scale = q.softmax_scale;
  return p;
}

void apply_call_args(const fp8attn_attention_args& a, fp8attn_fwd_params* p) {
  if (a.o_stride_b || a.o_stride_s || a.o_stride_h) {
    p->o_stride_b = a.o_stride_b, p->o_stride_s = a.o_stride_s, p->o_stride_h = a.o_stride_h;
  }
  p->causal = a.causal;
  p->p_precision = a.p_precision;
}

}  // namespace fp8attn::compose

extern "C" fp8attn_status fp8attn_fwd_params_from_quant(fp8attn_fwd_params* p,
                                                        const fp8attn_q_quant* q,
                                                        const fp8attn_kv_cache* cache, void* o,
                                                        float* lse) {
  fp8attn::clear_error();
  auto fail = [](const std::string& what) {
    return fp8attn::set_error(FP8ATTN_ERROR_INVALID_ARGUMENT, "fp8attn attention: " + what);
  };
  if (p == nullptr || q == nullptr || cache == nullptr || q->q == nullptr || cache->k == nullptr) {
    return fail("params, q_quant or cache is null (or not initialized)");
  }
  if (q->batch != cache->batch || cache->heads_kv <= 0 || q->heads % cache->heads_kv) {
    return fail("q_quant and cache disagree: batch must match and heads_kv divide heads (q batch " +
                std::to_string(q->batch) + ", heads " + std::to_string(q->heads) +
                "; cache batch " + std::to_string(cache->batch) + ", heads_kv " +
                std::to_string(cache->heads_kv) + ")");
  }
  *p = fp8attn::compose::kernel_params(*q, *cache, o, lse);
  return FP8ATTN_SUCCESS;
}
