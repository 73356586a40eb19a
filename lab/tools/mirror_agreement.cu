// How far the kernel may drift from the model mirror (tests/gpu/attention_checks.cuh, the RMS rule
// of check_against_mirror), predicted on the CPU: the model mirror with the Hopper FP8 accumulator
// model on both products (the kernel's tensor core; model::Accumulator::kAligned, the measured
// adder rule) against the same mirror in FP32 (what the test compares with), as a ratio to the
// FP32 mirror's own RMSE against exact FP64 attention, on the GPU test's own problems
// (make_problem) over several seeds, for the default numerics and for FP8ATTN_P_E4M3_EXACT.
// Host only (nvcc for the test header's CUDA includes); built and run by hand:
//   nvcc -std=c++20 -O2 lab/tools/mirror_agreement.cu -I. -Iinclude -DFP8ATTN_HAVE_MODEL_MIRROR \
//     -c -o /tmp/ma.o && g++ /tmp/ma.o build-stage/model/libfp8attn_model.a build-stage/src/libfp8attn.so \
//     -Wl,-rpath,$PWD/build-stage/src -fopenmp -lgtest -lopenblas \
//     -L/usr/local/cuda/lib64 -lcudart -o /tmp/mirror_agreement && /tmp/mirror_agreement [SEEDS]
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tests/gpu/attention_checks.cuh"

using namespace fp8attn;
using namespace fp8attn::test;

namespace {

std::vector<float> mirror_o(const Problem& p, model::Accumulator acc) {
  const Output out = model_mirror(p, acc);
  std::vector<float> o(out.o_bits.size());
  for (size_t i = 0; i < o.size(); ++i) o[i] = out.o(int64_t(i));
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const int kSeeds = argc > 1 ? std::atoi(argv[1]) : 8;
  struct Case {
    Shape s;
    const char* what;
  } cases[] = {{Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_E4M3, false, false, true}, "default causal"},
               {Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_E4M3_EXACT, false, false, true}, "exact causal"},
               {Shape{1, 257, 450, 2, 1, false, FP8ATTN_P_E4M3, true, false, true}, "default full bias"},
               {Shape{1, 257, 450, 2, 1, false, FP8ATTN_P_E4M3_EXACT, true, false, true}, "exact full bias"}};
  std::printf("# RMSE(mirror, Hopper accumulator model - mirror, FP32) / RMSE(mirror, FP32 - FP64), %d seeds\n",
              kSeeds);
  for (const auto& c : cases) {
    double lo = 1e9, hi = 0, sum = 0;
    for (int i = 0; i < kSeeds; ++i) {
      const Problem p = make_problem(c.s, 1592620040ull + 7919ull * i);
      const Result ref = reference_f64(p);
      const std::vector<float> f32 = mirror_o(p, model::Accumulator::kFP32);
      const std::vector<float> hop = mirror_o(p, model::Accumulator::kAligned);
      double se_k = 0, se_m = 0;
      for (size_t j = 0; j < f32.size(); ++j) {
        se_k += double(hop[j] - f32[j]) * (hop[j] - f32[j]);
        se_m += (double(f32[j]) - ref.o[j]) * (double(f32[j]) - ref.o[j]);
      }
      const double r = std::sqrt(se_k / se_m);
      lo = std::min(lo, r), hi = std::max(hi, r), sum += r;
    }
    std::printf("%-20s %s  ratio mean %.3f range %.3f-%.3f\n", c.what, c.s.name().c_str(), sum / kSeeds, lo, hi);
  }
  return 0;
}
