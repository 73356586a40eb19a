// The operand stage of a scheme: smoothing, rotation and quantization of BF16 Q, K, V into what
// the products see, plus the dequantized operands the kernel-only reference is computed from.
#ifndef FP8ATTN_MODEL_PREPARE_H_
#define FP8ATTN_MODEL_PREPARE_H_

#include <cstdint>
#include <vector>

#include "model/scheme.h"
#include "model/tensor.h"

namespace fp8attn::model {

struct Prepared {
  // What the products see: code values with factorable scales, or dequantized values (scales
  // empty) where the scale cannot be taken out of the product (Q or K per channel, K per token,
  // V per token or block, hi+lo).
  Tensor q, k, v;
  std::vector<float> q_scale;   // (b, h, sq) or empty
  std::vector<float> k_scale;   // (b, h_kv, ceil(sk / 128)) or empty
  std::vector<float> v_scale;   // (b, h_kv, d) or empty
  std::vector<float> key_bias;  // (b, h, sk) log2 units (Q smoothing correction) or empty
  std::vector<float> lse_bias;  // (b, h, sq) (K smoothing) or empty
  std::vector<float> o_bias;    // (b, h_kv, d): the V mean, or empty
  bool rotate_v = false;        // O must be rotated back (before o_bias and the output rounding)
  uint64_t seed = 0;

  // The dequantized operands (in the transformed space): exact attention on these, with
  // score_bias, then the inverse rotation and o_bias, is the kernel-only reference.
  Tensor q_deq, k_deq, v_deq;
  std::vector<float> score_bias;  // (b, h, sk) natural-log units, or empty
};

Prepared prepare_operands(const Scheme& s, const Tensor& q, const Tensor& k, const Tensor& v,
                          float softmax_scale);

// Orthonormal random-sign Hadamard along the last dimension (a power of two): x <- H D x / sqrt(d),
// D = diag(+-1) from fp8attn_hadamard_sign_negative(seed, c) (the pre-pass's signs). inverse:
// x <- D H x / sqrt(d).
template <typename T>
void hadamard_rows(T* x, int64_t rows, int d, uint64_t seed, bool inverse);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_PREPARE_H_
