// Error figures of an output against a reference, over the whole (b, s, h, d) tensor:
// RMSE = sqrt(mean((O - Ref)^2)), max |O - Ref| and where, relative RMSE = RMSE / RMS(Ref), and
// the cosine similarity of the flattened tensors.
#ifndef FP8ATTN_MODEL_METRICS_H_
#define FP8ATTN_MODEL_METRICS_H_

#include <array>

#include "model/tensor.h"

namespace fp8attn::model {

struct ErrorStats {
  double rmse = 0.0, max_abs = 0.0, rel_rmse = 0.0, cosine = 1.0;
  std::array<int, 4> max_at{0, 0, 0, 0};  // (b, s, h, d) of the largest |error|
  bool finite = true;                     // no NaN or Inf in the output
};

ErrorStats compare(const Tensor& out, const TensorD& ref);
ErrorStats compare(const TensorD& out, const TensorD& ref);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_METRICS_H_
