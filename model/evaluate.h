// Running a scheme on a dataset and measuring it against the three references:
//   end_to_end   exact FP64 attention on the BF16 data as given (what the user wanted);
//   kernel_only  exact FP64 attention on the scheme's dequantized (and transformed) operands,
//                with the same exact corrections (Q-smoothing bias, inverse V rotation, V mean):
//                what the attention arithmetic (S, P, accumulation, output rounding) costs;
//   floor        the kernel_only reference itself measured against end_to_end: the error of the
//                rounded inputs alone, which no kernel working on them can go below.
// For schemes whose products see the BF16 data unchanged (bf16-flash), kernel_only equals
// end_to_end and the floor is zero.
#ifndef FP8ATTN_MODEL_EVALUATE_H_
#define FP8ATTN_MODEL_EVALUATE_H_

#include <string>
#include <vector>

#include "model/metrics.h"
#include "model/prepare.h"
#include "model/reference.h"
#include "model/scheme.h"
#include "model/synthetic.h"

namespace fp8attn::model {

struct SchemeRun {
  Tensor o;       // the scheme's output (rounded to its output format)
  Tensor o_acc;   // before the output rounding
  std::vector<float> lse;
  Prepared prepared;
  double seconds = 0.0;  // operand stage + attention emulation
};

SchemeRun run_scheme(const Scheme& s, const Tensor& q, const Tensor& k, const Tensor& v,
                     bool causal, float softmax_scale = 0.0f);

// Exact FP64 attention on the run's dequantized operands, corrections applied exactly.
TensorD kernel_only_reference(const SchemeRun& run, bool causal, float softmax_scale = 0.0f);

struct EvalRecord {
  std::string dataset, scheme, reference;  // reference: end_to_end | kernel_only | floor
  bool causal = false;
  int batch = 0, seqlen = 0, heads = 0, heads_kv = 0, head_dim = 0;
  ErrorStats err;
  double lse_max_abs = -1.0;    // end_to_end only: max |LSE - exact LSE| over rows that see keys
  double seconds = 0.0;         // the scheme's emulation time (floor: its kernel_only reference's)
  double reference_seconds = 0.0;  // the exact end_to_end reference of this dataset and mask
  double rmse_ratio = -1.0;     // to bf16-flash on the same dataset, mask and reference; -1: none
  double max_ratio = -1.0;
};

struct EvalOptions {
  bool kernel_only = true;  // also the kernel_only and floor records
  float softmax_scale = 0.0f;
  bool verbose = false;     // progress on stderr
};

// Every scheme on one dataset and mask. bf16-flash is added when missing (the ratios need it).
std::vector<EvalRecord> evaluate(const Dataset& data, bool causal, std::vector<Scheme> schemes,
                                 const EvalOptions& opt, double* reference_seconds = nullptr);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_EVALUATE_H_
