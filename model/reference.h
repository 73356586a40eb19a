// Exact attention: the references every error figure is measured against.
//
// O[b, i, h, :] = sum_j softmax_j(scale * q_i . k_j) v_j over the keys j that query i may see,
// with GQA (query head h uses kv head h / (heads / heads_kv)) and, when causal, FlashAttention's
// bottom-right alignment: query i sees keys j <= i + (sk - sq). A query that sees no key (causal,
// sq > sk) gets O = 0 and LSE = -inf (log of an empty sum; the kernel returns the same).
// LSE[b, h, i] = log(sum_j exp(scale * q_i . k_j)) (natural log), shape (b, h, sq).
#ifndef FP8ATTN_MODEL_REFERENCE_H_
#define FP8ATTN_MODEL_REFERENCE_H_

#include <vector>

#include "model/tensor.h"

namespace fp8attn::model {

struct AttnConfig {
  bool causal = false;
  double softmax_scale = 0.0;  // 0: 1/sqrt(d)
  // Optional (b, h, sk) term added to every score scale * q_i . k_j (natural-log units): the
  // correction of Q smoothing, (scale * mean(Q) . k_j), which the kernel-only reference needs.
  const float* score_bias = nullptr;
  double scale_for(int d) const;
};

// First key that query i must NOT see (keys [0, key_end) are visible); sk when not causal.
int causal_key_end(int i, int sq, int sk, bool causal);

// Checks q (b, sq, h, d), k and v (b, sk, h_kv, d), h % h_kv == 0; throws std::invalid_argument.
void check_attention_shapes(const Tensor& q, const Tensor& k, const Tensor& v);

struct ExactF64 {
  TensorD o;                // (b, sq, h, d)
  std::vector<double> lse;  // (b, h, sq)
};
struct ExactF32 {
  Tensor o;
  std::vector<float> lse;
};

// Every product, sum and exponential in FP64 (inputs are exact in FP64).
ExactF64 attention_exact_f64(const Tensor& q, const Tensor& k, const Tensor& v, const AttnConfig& cfg);
// The same in FP32 (FP32 GEMMs, FP32 softmax): a cheaper reference where FP32 suffices.
ExactF32 attention_exact_f32(const Tensor& q, const Tensor& k, const Tensor& v, const AttnConfig& cfg);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_REFERENCE_H_
