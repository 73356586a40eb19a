// Validation of fp8attn_fwd_params: everything about the arguments that can be checked without
// the device, before any CUDA call (so it runs, and is tested, on machines with no GPU), and the
// C entry points that need nothing else: fp8attn_fwd_params_init, fp8attn_check_fwd_params.
#include "attn/validate.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn/extent.h"
#include "attn/select.h"
#include "attn/status.h"

// vt_dtype filled the struct's tail padding: its size and every other offset are unchanged.
static_assert(offsetof(fp8attn_fwd_params, vt_dtype) == offsetof(fp8attn_fwd_params, p_precision) + 4 &&
              sizeof(fp8attn_fwd_params) == offsetof(fp8attn_fwd_params, vt_dtype) + 4);

namespace fp8attn::attn {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Where the tensors lie: O's rows of one head are head_dim contiguous BF16 that no other element
// of O shares, and neither output (O, LSE) meets the other or any input. Two launches writing
// the same bytes, or a kernel writing what it reads, would give results that depend on timing.
fp8attn_status check_layout(const fp8attn_fwd_params* p) {
  const fp8attn_status bad = FP8ATTN_ERROR_INVALID_ARGUMENT;
  const int64_t B = p->batch, SQ = p->seqlen_q, SK = p->seqlen_k, H = p->heads, HKV = p->heads_kv;
  if (p->o_stride_h < 128)
    return fail(bad, "o_stride_h = " + str(p->o_stride_h) + ": must be >= head_dim (128)");
  if (!strides_disjoint({{B, p->o_stride_b}, {SQ, p->o_stride_s}, {H, p->o_stride_h}, {128, 1}}))
    return fail(bad, "o strides (o_stride_b " + str(p->o_stride_b) + ", o_stride_s " + str(p->o_stride_s) +
                         ", o_stride_h " + str(p->o_stride_h) + ") make elements of o overlap");
  const Extent o = extent_of(p->o, {{B, p->o_stride_b}, {SQ, p->o_stride_s}, {H, p->o_stride_h}, {128, 1}}, 2);
  const Extent lse = extent_of(p->lse, {{B * H * SQ, 1}}, 4);
  if (o.meets(lse)) return fail(bad, "o and lse overlap");
  const int64_t kblk = (SK + FP8ATTN_K_SCALE_BLOCK - 1) / FP8ATTN_K_SCALE_BLOCK;
  const struct {
    const char* name;
    Extent e;
  } inputs[] = {
      {"q", extent_of(p->q, {{B, p->q_stride_b}, {SQ, p->q_stride_s}, {H, p->q_stride_h}, {128, 1}}, 1)},
      {"k", extent_of(p->k, {{B, p->k_stride_b}, {SK, p->k_stride_s}, {HKV, p->k_stride_h}, {128, 1}}, 1)},
      {"vt", extent_of(p->vt, {{B, p->vt_stride_b}, {HKV, p->vt_stride_h}, {128, p->vt_stride_d},
                               {p->vt_seqlen_pad, 1}}, p->vt_dtype == FP8ATTN_VT_FP16 ? 2 : 1)},
      {"q_descale", extent_of(p->q_descale, {{B, p->qd_stride_b}, {H, p->qd_stride_h}, {SQ, p->qd_stride_s}}, 4)},
      {"k_descale", extent_of(p->k_descale, {{B, p->kd_stride_b}, {HKV, p->kd_stride_h}, {kblk, p->kd_stride_blk}}, 4)},
      {"v_descale", extent_of(p->v_descale, {{B, p->vd_stride_b}, {HKV, p->vd_stride_h}, {128, p->vd_stride_d}}, 4)},
      {"lse_bias", extent_of(p->lse_bias, {{B * H * SQ, 1}}, 4)},
      {"o_bias", extent_of(p->o_bias, {{B, p->ob_stride_b}, {HKV, p->ob_stride_h}, {128, 1}}, 4)},
  };
  for (const auto& in : inputs) {
    if (o.meets(in.e)) return fail(bad, std::string("o overlaps the input ") + in.name);
    if (lse.meets(in.e)) return fail(bad, std::string("lse overlaps the input ") + in.name);
  }
  return FP8ATTN_SUCCESS;
}

}  // namespace

fp8attn_status validate(const fp8attn_fwd_params* p) {
  using S = fp8attn_status;
  const S bad = FP8ATTN_ERROR_INVALID_ARGUMENT;
  if (!p) return fail(bad, "params is NULL");
  if (p->head_dim != 128) return fail(bad, "head_dim must be 128, got " + str(p->head_dim));
  if (p->batch < 0 || p->seqlen_q < 0 || p->seqlen_k < 0)
    return fail(bad, "negative batch/seqlen: batch=" + str(p->batch) + " seqlen_q=" +
                         str(p->seqlen_q) + " seqlen_k=" + str(p->seqlen_k));
  if (p->heads <= 0 || p->heads_kv <= 0)
    return fail(bad, "heads and heads_kv must be positive, got " + str(p->heads) + ", " +
                         str(p->heads_kv));
  if (p->heads % p->heads_kv != 0)
    return fail(bad, "heads (" + str(p->heads) + ") must be a multiple of heads_kv (" +
                         str(p->heads_kv) + ")");
  if (p->batch == 0 || p->seqlen_q == 0) return FP8ATTN_SUCCESS;  // empty output: nothing to do
  if (p->seqlen_q > (1 << 30) || p->seqlen_k > (1 << 30))
    return fail(bad, "seqlen_q and seqlen_k must be <= 2^30");
  if (p->seqlen_k == 0)
    return fail(bad, "seqlen_k is 0: attention over no keys is undefined (seqlen_q=" +
                         str(p->seqlen_q) + ")");
  if (!p->q || !p->k || !p->vt || !p->o) return fail(bad, "q, k, vt and o must not be NULL");
  if (!aligned16(p->q) || !aligned16(p->k) || !aligned16(p->vt) || !aligned16(p->o))
    return fail(bad, "q, k, vt and o must be 16-byte aligned");
  if (!(std::isfinite(p->softmax_scale) && p->softmax_scale > 0.f))
    return fail(bad, "softmax_scale must be finite and > 0");
  if (p->causal != 0 && p->causal != 1) return fail(bad, "causal must be 0 or 1");
  if (p->p_precision != FP8ATTN_P_E4M3 && p->p_precision != FP8ATTN_P_E4M3_HILO &&
      p->p_precision != FP8ATTN_P_FP16 && p->p_precision != FP8ATTN_P_E4M3_EXACT)
    return fail(bad, "unknown p_precision " + str(p->p_precision));
  if (p->p_precision == FP8ATTN_P_E4M3_EXACT && k_scale_per_block(*p))
    return fail(bad, "p_precision FP8ATTN_P_E4M3_EXACT takes one K descale per head (kd_stride_blk 0, "
                     "got " + str(p->kd_stride_blk) + "): its 192-key blocks span two 128-key K scale blocks");
  if (p->vt_dtype != FP8ATTN_VT_E4M3 && p->vt_dtype != FP8ATTN_VT_FP16)
    return fail(bad, "unknown vt_dtype " + str(p->vt_dtype) + " (FP8ATTN_VT_E4M3 0, FP8ATTN_VT_FP16 1)");
  if (p->vt_dtype == FP8ATTN_VT_FP16 && p->p_precision != FP8ATTN_P_FP16)
    return fail(bad, "vt_dtype FP8ATTN_VT_FP16 needs p_precision FP8ATTN_P_FP16 (got " +
                         str(p->p_precision) + "): an FP16 V feeds only the FP16 P V product");
  // TMA: every stride but the innermost a positive multiple of 16 bytes (E4M3: 16 elements;
  // FP16 V^T: 8).
  const int64_t vt_elems16 = p->vt_dtype == FP8ATTN_VT_FP16 ? 8 : 16;
  const struct {
    const char* name;
    int64_t v, elems16;
  } tma_strides[] = {{"q_stride_b", p->q_stride_b, 16},   {"q_stride_s", p->q_stride_s, 16},
                     {"q_stride_h", p->q_stride_h, 16},   {"k_stride_b", p->k_stride_b, 16},
                     {"k_stride_s", p->k_stride_s, 16},   {"k_stride_h", p->k_stride_h, 16},
                     {"vt_stride_b", p->vt_stride_b, vt_elems16},
                     {"vt_stride_h", p->vt_stride_h, vt_elems16},
                     {"vt_stride_d", p->vt_stride_d, vt_elems16}};
  for (const auto& s : tma_strides)
    if (s.v <= 0 || s.v % s.elems16 != 0 || s.v * (16 / s.elems16) >= (int64_t{1} << 40))
      return fail(bad, std::string(s.name) + " = " + str(s.v) + ": must be a positive multiple of " +
                           str(s.elems16) + " elements (16 bytes, TMA)");
  if (p->q_stride_h < 128 || p->k_stride_h < 128)
    return fail(bad, "q_stride_h and k_stride_h must be >= head_dim (128)");
  const int64_t pad_min = (int64_t{p->seqlen_k} + FP8ATTN_VT_PAD - 1) / FP8ATTN_VT_PAD * FP8ATTN_VT_PAD;
  if (p->vt_seqlen_pad < pad_min || p->vt_seqlen_pad % FP8ATTN_VT_PAD != 0)
    return fail(bad, "vt_seqlen_pad = " + str(p->vt_seqlen_pad) + ": must be a multiple of " +
                         str(FP8ATTN_VT_PAD) + " and >= " + str(pad_min));
  if (p->vt_stride_d < p->vt_seqlen_pad)
    return fail(bad, "vt_stride_d must be >= vt_seqlen_pad");
  if (p->vt_stride_h < 128 * p->vt_stride_d)
    return fail(bad, "vt_stride_h must be >= head_dim * vt_stride_d");
  const struct {
    const char* name;
    int64_t v;
  } o_strides[] = {{"o_stride_b", p->o_stride_b}, {"o_stride_s", p->o_stride_s},
                   {"o_stride_h", p->o_stride_h}};
  for (const auto& s : o_strides)
    if (s.v <= 0 || s.v % 8 != 0)
      return fail(bad, std::string(s.name) + " = " + str(s.v) +
                           ": must be a positive multiple of 8 elements (16 bytes of BF16)");
  const struct {
    const char* name;
    int64_t v;
  } scale_strides[] = {{"qd_stride_b", p->qd_stride_b},     {"qd_stride_h", p->qd_stride_h},
                       {"qd_stride_s", p->qd_stride_s},     {"kd_stride_b", p->kd_stride_b},
                       {"kd_stride_h", p->kd_stride_h},     {"kd_stride_blk", p->kd_stride_blk},
                       {"vd_stride_b", p->vd_stride_b},     {"vd_stride_h", p->vd_stride_h},
                       {"vd_stride_d", p->vd_stride_d},     {"ob_stride_b", p->ob_stride_b},
                       {"ob_stride_h", p->ob_stride_h}};
  for (const auto& s : scale_strides)
    if (s.v < 0) return fail(bad, std::string(s.name) + " must be >= 0 (0 broadcasts)");
  const void* fptrs[] = {p->q_descale, p->k_descale, p->v_descale, p->lse, p->lse_bias, p->o_bias};
  for (const void* f : fptrs)
    if (f && (reinterpret_cast<uintptr_t>(f) & 3))
      return fail(bad, "float arrays (descales, lse, lse_bias, o_bias) must be 4-byte aligned");
  return check_layout(p);
}

}  // namespace fp8attn::attn

extern "C" {

void fp8attn_fwd_params_init(fp8attn_fwd_params* p, int32_t batch, int32_t seqlen_q,
                             int32_t seqlen_k, int32_t heads, int32_t heads_kv, int32_t head_dim) {
  *p = fp8attn_fwd_params{};
  p->batch = batch;
  p->seqlen_q = seqlen_q;
  p->seqlen_k = seqlen_k;
  p->heads = heads;
  p->heads_kv = heads_kv;
  p->head_dim = head_dim;
  p->q_stride_h = head_dim;
  p->q_stride_s = int64_t{heads} * head_dim;
  p->q_stride_b = p->q_stride_s * seqlen_q;
  p->k_stride_h = head_dim;
  p->k_stride_s = int64_t{heads_kv} * head_dim;
  p->k_stride_b = p->k_stride_s * seqlen_k;
  p->vt_seqlen_pad = (seqlen_k + FP8ATTN_VT_PAD - 1) / FP8ATTN_VT_PAD * FP8ATTN_VT_PAD;
  p->vt_stride_d = p->vt_seqlen_pad;
  p->vt_stride_h = int64_t{head_dim} * p->vt_stride_d;
  p->vt_stride_b = int64_t{heads_kv} * p->vt_stride_h;
  p->o_stride_h = head_dim;
  p->o_stride_s = int64_t{heads} * head_dim;
  p->o_stride_b = p->o_stride_s * seqlen_q;
  p->softmax_scale = head_dim > 0 ? 1.f / std::sqrt(static_cast<float>(head_dim)) : 1.f;
  p->p_precision = FP8ATTN_P_E4M3;
  p->vt_dtype = FP8ATTN_VT_E4M3;
}

fp8attn_status fp8attn_check_fwd_params(const fp8attn_fwd_params* params) {
  fp8attn::clear_error();
  return fp8attn::attn::validate(params);
}

}  // extern "C"
