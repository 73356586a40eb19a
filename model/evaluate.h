// Running a scheme on a dataset and measuring it against the three references:
//   end_to_end   exact FP64 attention on the BF16 data as given (what the user wanted);
//   kernel_only  exact attention on the scheme's dequantized (and transformed) operands,
//                with the same exact corrections (Q-smoothing bias, inverse V rotation, V mean):
//                what the attention arithmetic (S, P, accumulation, output rounding) costs;
//   floor        the kernel_only reference itself measured against end_to_end: the error of the
//                rounded inputs alone, which no kernel working on them can go below.
// For schemes whose products see the BF16 data unchanged (bf16-flash), kernel_only equals
// end_to_end and the floor is zero. end_to_end is computed in FP64. kernel_only is computed in FP32
// by default: its own error (~1e-6 relative) is three orders below the smallest kernel-only error
// a scheme with BF16 output can have (the output rounding alone, ~1e-3), and it halves the cost of
// evaluating a scheme; EvalOptions::kernel_only_fp64 computes it in FP64.
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
  double seconds = 0.0;      // operand stage + attention emulation, wall clock
  double cpu_seconds = 0.0;  // the same, CPU time of all threads
};

SchemeRun run_scheme(const Scheme& s, const Tensor& q, const Tensor& k, const Tensor& v,
                     bool causal, float softmax_scale = 0.0f);

// Exact attention on the run's dequantized operands, corrections applied exactly (FP64 products
// and sums with fp64, else FP32).
TensorD kernel_only_reference(const SchemeRun& run, bool causal, float softmax_scale = 0.0f,
                              bool fp64 = true);

struct EvalRecord {
  std::string dataset, scheme, reference;  // reference: end_to_end | kernel_only | floor
  bool causal = false;
  int batch = 0, seqlen = 0, heads = 0, heads_kv = 0, head_dim = 0;
  ErrorStats err;
  double lse_max_abs = -1.0;    // end_to_end only: max |LSE - exact LSE| over rows that see keys
  double seconds = 0.0;         // the scheme's emulation time (floor: its kernel_only reference's)
  double cpu_seconds = 0.0;     // the same in CPU time of all threads
  double reference_seconds = 0.0;  // the exact end_to_end reference of this dataset and mask
  double rmse_ratio = -1.0;     // to bf16-flash on the same dataset, mask and reference; -1: none
  double max_ratio = -1.0;
};

struct EvalOptions {
  bool kernel_only = true;  // also the kernel_only and floor records
  bool kernel_only_fp64 = false;
  float softmax_scale = 0.0f;
  bool verbose = false;     // progress on stderr
};

// Every scheme on one dataset and mask. bf16-flash is added when missing (the ratios need it).
std::vector<EvalRecord> evaluate(const Dataset& data, bool causal, std::vector<Scheme> schemes,
                                 const EvalOptions& opt, double* reference_seconds = nullptr);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_EVALUATE_H_
