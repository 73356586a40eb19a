// The FP8 tensor core's adder as a parameterised rule (Accumulator::kAligned), so the model can
// follow whatever tools/wgmma_accum measures on the GPU (tools/wgmma_accum/rule.py turns its JSON
// into the scheme keys acc_bits, acc_group, acc_round, acc_c_aligned).
//
// For each output element, the K products of one MMA are taken in groups of `group` consecutive
// k. Within a group every term (each product, and the running sum C when c_aligned) is cut to a
// multiple of 2^(e - fraction_bits), e the exponent of the group's largest term (its leading
// bit), with the given rounding; the cut terms are summed exactly and the result is stored as
// FP32 (round to nearest). With c_aligned false, the group's cut sum is added to C in FP32.
// The products of two E4M3 values are exact in FP32, so nothing is lost before the cut.
#ifndef FP8ATTN_MODEL_ACCUMULATOR_H_
#define FP8ATTN_MODEL_ACCUMULATOR_H_

#include <cstdint>

namespace fp8attn::model {

enum class AccRounding { kTowardZero, kDown, kNearest };
const char* acc_rounding_name(AccRounding r);

struct AlignedRule {
  int fraction_bits = 13;   // bits kept below the leading bit of a group's largest term
  int group = 32;           // products aligned together (one FP8 wgmma k-step is 32)
  bool c_aligned = true;    // the running sum joins each group's alignment
  AccRounding rounding = AccRounding::kTowardZero;
};

// acc (rows x cols, ld_acc) += A (rows x k, lda) * B (k x cols, ldb) under the rule.
void aligned_gemm_acc(const AlignedRule& rule, int rows, int cols, int k, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float* acc, int64_t ld_acc);

// One dot product under the rule: c + sum_k a[k] b[k] (the microbenchmark's test shape).
float aligned_dot(const AlignedRule& rule, float c, const float* a, const float* b, int k);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_ACCUMULATOR_H_
