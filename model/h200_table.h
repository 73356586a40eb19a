// The figures real kernels measured on an H200 (b=2, s=8192, h=32, d=128; relative RMSE of O
// against exact FP32 attention; ../shared/docs/NUMERICS.md), and the model's reproduction of them
// on the same synthetic distributions (fresh seeds, a subset of heads).
#ifndef FP8ATTN_MODEL_H200_TABLE_H_
#define FP8ATTN_MODEL_H200_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace fp8attn::model {

struct H200Figure {
  const char* dataset;  // synthetic kind
  bool causal;
  const char* method;   // the H200 kernel
  const char* scheme;   // the model scheme that emulates it
  double rel_rmse;      // measured on the H200
};

inline constexpr H200Figure kH200Figures[] = {
    {"gaussian", false, "FA3-BF16", "bf16-flash", 2.29e-3},
    {"gaussian", false, "FA3-FP8", "fa3-fp8", 5.34e-2},
    {"gaussian", false, "FA3-FP8 + rotation", "fa3-fp8-rot", 5.34e-2},
    {"gaussian", true, "FA3-BF16", "bf16-flash", 2.08e-3},
    {"gaussian", true, "FA3-FP8", "fa3-fp8", 4.83e-2},
    {"gaussian", true, "FA3-FP8 + rotation", "fa3-fp8-rot", 4.83e-2},
    {"outlier", false, "FA3-BF16", "bf16-flash", 1.44e-3},
    {"outlier", false, "FA3-FP8", "fa3-fp8", 1.04e-1},
    {"outlier", false, "FA3-FP8 + rotation", "fa3-fp8-rot", 4.10e-2},
    {"outlier", true, "FA3-BF16", "bf16-flash", 1.49e-3},
    {"outlier", true, "FA3-FP8", "fa3-fp8", 9.40e-2},
    {"outlier", true, "FA3-FP8 + rotation", "fa3-fp8-rot", 4.39e-2},
};

inline constexpr int kH200Batch = 2, kH200Seqlen = 8192, kH200Heads = 32, kH200HeadDim = 128;
inline constexpr double kH200Tolerance = 0.10;  // the model must land within +-10%

struct ReproRow {
  H200Figure h200;
  double model_rel_rmse = 0.0;
  double model_max_abs = 0.0;
  double ratio() const { return model_rel_rmse / h200.rel_rmse; }
  bool within() const;
};

// Runs the model on `heads` of the 32 heads (evenly spaced) of `batches` batch entries.
std::vector<ReproRow> reproduce_h200_table(int heads, int batches, uint64_t seed, bool verbose);
std::string format_h200_table(const std::vector<ReproRow>& rows);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_H200_TABLE_H_
