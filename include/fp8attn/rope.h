// fp8attn rope + quantize: the pre-pass of fp8attn/quant.h on pre-rotary Q and K. A model that
// applies rotary embeddings to Q and K right before attention calls fp8attn_quantize_qkv_rope
// (or the end-to-end fp8attn_attention_rope) on the BF16 Q, K, V as they leave the QKV
// projection, with its cos / sin tables: the rotation happens in registers where the pre-pass
// loads Q and K, and the outputs are those of fp8attn_quantize_qkv on the Q and K rotated in FP32
// (never rounded to BF16 in between). The separate BF16 rotary kernel's read and write of Q and K
// disappear. docs/prepass.md ("Rope") gives the order of operations; model/prepass.cc repeats it.
#ifndef FP8ATTN_ROPE_H_
#define FP8ATTN_ROPE_H_

#include <stddef.h>
#include <stdint.h>

#include "attention.h"  // same folder
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

// The rotary convention. Only NeoX / Llama / Qwen "rotate_half" (channel i < 64 pairs with
// i + 64): x'_i = x_i cos_i - x_{i+64} sin_i, x'_{i+64} = x_{i+64} cos_i + x_i sin_i, computed
// as fma(x_i, cos_i, -(x_{i+64} sin_i)) and fma(x_{i+64}, cos_i, x_i sin_i) in FP32. The GPT-J
// interleaved convention (pairs 2i, 2i + 1) is refused (FP8ATTN_ERROR_INVALID_ARGUMENT). The
// rotation covers all 128 channels (no partial rotary dimension).
typedef enum fp8attn_rope_style {
  FP8ATTN_ROPE_NEOX = 0,
  FP8ATTN_ROPE_GPTJ = 1,  // named so that a caller gets a clear refusal, not a silent misuse
} fp8attn_rope_style;

typedef struct fp8attn_rope_tables {
  const float* cos;       // device FP32 (max_positions, 64), row p: cos(p * inv_freq_i); 16-byte
  const float* sin;       //   aligned, rows contiguous (64 floats apart); sin likewise
  int32_t max_positions;  // rows of each table
  int32_t q_pos0;         // query row i of the call uses table row q_pos0 + i
  int32_t k_pos0;         // key row j uses table row k_pos0 + j (the same for V: never rotated)
  int32_t style;          // fp8attn_rope_style: FP8ATTN_ROPE_NEOX
} fp8attn_rope_tables;

// Zeroes everything: style FP8ATTN_ROPE_NEOX, positions from 0; the caller sets the tables.
void fp8attn_rope_tables_init(fp8attn_rope_tables* rope);

// FP8ATTN_SUCCESS when the tables can serve seqlen_q queries and seqlen_k keys: both pointers
// non-null and 16-byte aligned, style NEOX, max_positions > 0, 0 <= q_pos0 and q_pos0 + seqlen_q
// <= max_positions, the same for k_pos0 and seqlen_k. Otherwise FP8ATTN_ERROR_INVALID_ARGUMENT
// with a message naming the field. No device work (the tables' values are not read: a NaN or
// Inf in a row reaches the outputs of the rows that use it, as a NaN input does).
fp8attn_status fp8attn_check_rope_tables(const fp8attn_rope_tables* rope, int32_t seqlen_q,
                                         int32_t seqlen_k);

// fp8attn_quantize_qkv on the rotated Q and K: the same arguments plus `rope`, the same outputs
// (cache, q_out) and launches, with the rotation applied by every pass that reads Q or K (the
// statistics pass or the sample, the fused K/V pass, its second run for regrouped heads, the Q
// pass). head_dim 128. Everything is checked before anything is launched.
fp8attn_status fp8attn_quantize_qkv_rope(const fp8attn_bf16_tensor* q, const fp8attn_bf16_tensor* k,
                                         const fp8attn_bf16_tensor* v,
                                         const fp8attn_rope_tables* rope,
                                         const fp8attn_quant_options* options, float softmax_scale,
                                         fp8attn_kv_cache* cache, fp8attn_q_quant* q_out,
                                         void* workspace, size_t workspace_bytes, void* stream);

// fp8attn_attention with the rope entry as its pre-pass: args->q and args->k are pre-rotary.
// Same workspace, same checks (the tables' before any device work), same outputs as
// fp8attn_attention on the Q and K rotated in FP32.
fp8attn_status fp8attn_attention_rope(const fp8attn_attention_args* args,
                                      const fp8attn_rope_tables* rope, fp8attn_workspace* ws,
                                      void* stream);

// The rotary embedding alone, in place on a BF16 tensor x (batch, seqlen, heads, 128): row s
// uses table row pos0 + s, the same FP32 operations as the rope entry, rounded once to BF16
// (RNE). For callers that rotate without quantizing (a BF16 attention after it; the harness's
// FA3 BF16 pair). Reads and writes each element once (16-byte accesses). x's data and strides
// as fp8attn_bf16_tensor requires (16-byte aligned, strides multiples of 8 elements).
fp8attn_status fp8attn_rope_bf16(const fp8attn_bf16_tensor* x, const fp8attn_rope_tables* rope,
                                 int32_t pos0, void* stream);

#ifdef __cplusplus
}  // extern "C"

namespace fp8attn {

using RopeTables = fp8attn_rope_tables;

inline void quantize_qkv_rope(const Bf16Tensor& q, const Bf16Tensor& k, const Bf16Tensor& v,
                              const RopeTables& rope, const QuantOptions& options,
                              float softmax_scale, KvCache& cache, QQuant& q_out, void* workspace,
                              size_t workspace_bytes, void* stream = nullptr) {
  check_quant(fp8attn_quantize_qkv_rope(&q, &k, &v, &rope, &options, softmax_scale, &cache, &q_out,
                                        workspace, workspace_bytes, stream));
}

}  // namespace fp8attn
#endif  // __cplusplus

#endif  // FP8ATTN_ROPE_H_
