#include "model/h200_table.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "model/evaluate.h"

namespace fp8attn::model {

bool ReproRow::within() const { return std::fabs(ratio() - 1.0) <= kH200Tolerance; }

std::vector<ReproRow> reproduce_h200_table(int heads, int batches, uint64_t seed, bool verbose) {
  std::vector<ReproRow> rows;
  for (const char* kind : {"gaussian", "outlier"}) {
    const Dataset data = make_synthetic(kind, batches, kH200Seqlen, kH200Heads, kH200Heads,
                                        kH200HeadDim, seed, head_subset(kH200Heads, heads));
    for (bool causal : {false, true}) {
      std::vector<Scheme> schemes;
      for (const char* s : {"bf16-flash", "fa3-fp8", "fa3-fp8-rot"}) schemes.push_back(scheme_by_name(s));
      EvalOptions opt;
      opt.kernel_only = false;
      opt.verbose = verbose;
      const std::vector<EvalRecord> recs = evaluate(data, causal, schemes, opt);
      for (const H200Figure& f : kH200Figures) {
        if (std::string(f.dataset) != kind || f.causal != causal) continue;
        for (const EvalRecord& r : recs) {
          if (r.scheme == f.scheme && r.reference == "end_to_end") {
            rows.push_back(ReproRow{f, r.err.rel_rmse, r.err.max_abs});
          }
        }
      }
    }
  }
  return rows;
}

std::string format_h200_table(const std::vector<ReproRow>& rows) {
  std::string s = "| data     | causal | method              | H200 rel RMSE | model rel RMSE | "
                  "model/H200 | within +-10% | model max |err| |\n"
                  "|----------|--------|---------------------|--------------:|---------------:|"
                  "-----------:|:------------:|----------------:|\n";
  char line[256];
  for (const ReproRow& r : rows) {
    std::snprintf(line, sizeof line, "| %-8s | %-6s | %-19s | %13.3e | %14.3e | %10.3f | %12s | %15.3g |\n",
                  r.h200.dataset, r.h200.causal ? "yes" : "no", r.h200.method, r.h200.rel_rmse,
                  r.model_rel_rmse, r.ratio(), r.within() ? "yes" : "NO", r.model_max_abs);
    s += line;
  }
  return s;
}

}  // namespace fp8attn::model
