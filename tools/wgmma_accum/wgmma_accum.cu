// Pins down how the H200's FP8 tensor core sums: wgmma.m64n8k32.f32.e4m3.e4m3 on crafted operands.
//
// Every test is one dot product d = C + sum_k a_k b_k over k = 0..31 (one wgmma, or two chained
// wgmmas for the promotion tests): all 64 rows of A are the same vector a, all 8 columns of B the
// same vector b, so the 512 outputs of the tile must agree (checked). Products of two E4M3 values
// are exact in FP32, so every deviation from the exact sum is the adder's doing. Measured:
//   - layout self-check: one-hot a against 32 distinct b values (A's register fragment and B's
//     shared-memory layout agree on which k is which) and exact small-integer sums;
//   - fraction bits kept: big product 2^8 at position i, small 2^(8-j) at position s: the largest
//     j that survives, for every (i, s): equal for all pairs = one alignment group of 32;
//     more bits when i and s sit in different groups = smaller groups, summed wider;
//   - the accumulator C: C = 2^8 and one product 2^(8-j) (does C join the alignment?), and a small
//     C under a big product; chained (two wgmmas): the second one's product against the first's sum;
//   - rounding: small = +-{1/4, 1/2, 3/4} of the unit at the cut (truncation toward zero, toward
//     -inf, or to nearest);
//   - many small products: 31 products next to the big one, after it and before it (summed before
//     or after the cut: the group size), and cancellation: 2^8 - 2^8 + small.
// Writes one JSON document (stdout or --out FILE): every test's operands and result, and the rule
// derived from them. Exit status 0 only when the self-checks pass. Runs in well under a second.
//
//   nvcc -std=c++20 -O2 -gencode=arch=compute_90a,code=sm_90a -I src -o wgmma_accum \
//        tools/wgmma_accum/wgmma_accum.cu && ./wgmma_accum --out wgmma-accum.json
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ptx/warpgroup.cuh"
#include "ptx/wgmma_fp8.cuh"

namespace {

constexpr int kK = 32;       // one wgmma's K
constexpr int kMaxInstr = 2;  // chained wgmmas per test

struct Test {
  std::string kind;
  int n_instr = 1;
  float c = 0.0f;
  float a[kMaxInstr][kK] = {};
  float b[kMaxInstr][kK] = {};
  double expect_exact = 0.0;  // C + sum a b in FP64
  int i = -1, s = -1, j = 0;  // big position, small position, exponent gap (where used)
  double frac = 0.0;          // rounding tests: the small term in units at the cut
};

struct DevTest {
  float c;
  int n_instr;
  uint8_t a[kMaxInstr][kK];
  uint8_t b[kMaxInstr][kK];
};

uint8_t to_e4m3(float x) {
  const __nv_fp8_e4m3 v(x);
  if (static_cast<float>(v) != x) {
    std::fprintf(stderr, "wgmma_accum: %g is not an E4M3 value\n", x);
    std::exit(2);
  }
  return v.__x;
}

// One test per block of 128 threads (one warpgroup). out: (tests, 512) all outputs.
__global__ void __launch_bounds__(128) dot_kernel(const DevTest* tests, float* out) {
  // B (n8 x k32) in the kernel's K-major 128-byte swizzled layout: row n at n * 128 bytes, its
  // 16-byte chunk c stored at chunk c ^ (n % 8). One 1024-byte atom per chained wgmma.
  __shared__ __align__(1024) uint8_t b_smem[kMaxInstr][1024];
  const DevTest& t = tests[blockIdx.x];
  const int tid = threadIdx.x;
  for (int idx = tid; idx < kMaxInstr * 1024; idx += 128) {
    const int ins = idx / 1024, off = idx % 1024, n = off / 128, byte = off % 128;
    const int chunk = (byte / 16) ^ (n % 8), k = chunk * 16 + byte % 16;
    b_smem[ins][off] = k < kK ? t.b[ins][k] : 0;
  }
  fp8attn::ptx::fence_proxy_async_shared();
  __syncthreads();
  // A's register fragment (rows identical, so only k matters): register r holds k =
  // (r / 2) * 16 + (lane % 4) * 4 + byte.
  const int lane = tid % 32;
  float d[4] = {t.c, t.c, t.c, t.c};
  for (int ins = 0; ins < t.n_instr; ++ins) {
    uint32_t a[4];
    for (int r = 0; r < 4; ++r) {
      uint32_t w = 0;
      for (int byte = 0; byte < 4; ++byte) {
        w |= static_cast<uint32_t>(t.a[ins][(r / 2) * 16 + (lane % 4) * 4 + byte]) << (8 * byte);
      }
      a[r] = w;
    }
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(&b_smem[ins][0]));
    for (float& x : d) fp8attn::ptx::fence_operand(x);
    fp8attn::ptx::wgmma_fence();
    fp8attn::ptx::wgmma_rs(d, a, fp8attn::ptx::make_desc_kmajor<128>(addr), 1);
    fp8attn::ptx::wgmma_commit();
    fp8attn::ptx::wgmma_wait<0>();
    for (float& x : d) fp8attn::ptx::fence_operand(x);
  }
  for (int r = 0; r < 4; ++r) out[static_cast<size_t>(blockIdx.x) * 512 + tid * 4 + r] = d[r];
}

double exact(const Test& t) {
  double s = t.c;
  for (int ins = 0; ins < t.n_instr; ++ins)
    for (int k = 0; k < kK; ++k) s += static_cast<double>(t.a[ins][k]) * t.b[ins][k];
  return s;
}

// x = 2^e as a product a * b of two E4M3 values (e in [-18, 16]).
void pow2_product(int e, float& a, float& b) {
  const int ea = e / 2, eb = e - ea;
  a = std::ldexp(1.0f, ea);
  b = std::ldexp(1.0f, eb);
}

std::vector<Test> make_tests() {
  std::vector<Test> v;
  auto add = [&](Test t) { t.expect_exact = exact(t); v.push_back(t); };
  // 1. Layout: one-hot a at i against b_k = (1 + (k % 8) / 8) 2^(k / 8): d must be b_i.
  for (int i = 0; i < kK; ++i) {
    Test t;
    t.kind = "layout";
    t.i = i;
    t.a[0][i] = 1.0f;
    for (int k = 0; k < kK; ++k) t.b[0][k] = (1.0f + (k % 8) / 8.0f) * std::ldexp(1.0f, k / 8);
    add(t);
  }
  // 2. Exact sums of small integers (every order and width gives the same result).
  for (int rep = 0; rep < 4; ++rep) {
    Test t;
    t.kind = "exact";
    t.c = static_cast<float>(rep * 3);
    for (int k = 0; k < kK; ++k) {
      t.a[0][k] = static_cast<float>((k * 7 + rep) % 9) - 4.0f;
      t.b[0][k] = static_cast<float>((k * 5 + 3 * rep) % 7) - 3.0f;
    }
    add(t);
  }
  // 3. Fraction bits: big 2^8 at i, small 2^(8 - j) at s.
  for (int i : {0, 31}) {
    for (int s = 0; s < kK; ++s) {
      if (s == i) continue;
      for (int j = 1; j <= 26; ++j) {
        Test t;
        t.kind = "bits";
        t.i = i; t.s = s; t.j = j;
        pow2_product(8, t.a[0][i], t.b[0][i]);
        pow2_product(8 - j, t.a[0][s], t.b[0][s]);
        add(t);
      }
    }
  }
  // 4. The accumulator: C = 2^8 with a product 2^(8 - j) at 0; C = 2^(8 - j) under a product 2^8;
  //    chained: 2^8 in the first wgmma, 2^(8 - j) in the second.
  for (int j = 1; j <= 26; ++j) {
    Test t;
    t.kind = "c_big";
    t.j = j; t.s = 0;
    t.c = 256.0f;
    pow2_product(8 - j, t.a[0][0], t.b[0][0]);
    add(t);
    Test u;
    u.kind = "c_small";
    u.j = j; u.i = 0;
    u.c = std::ldexp(1.0f, 8 - j);
    pow2_product(8, u.a[0][0], u.b[0][0]);
    add(u);
    Test w;
    w.kind = "chained";
    w.n_instr = 2; w.j = j;
    pow2_product(8, w.a[0][0], w.b[0][0]);
    pow2_product(8 - j, w.a[1][0], w.b[1][0]);
    add(w);
  }
  // 5. Rounding: big 2^8 at 0, small +-f 2^(8 - j) at 1 with f in {1/4, 1/2, 3/4}: against the
  //    cut found in 3, this tells truncation toward zero, toward -inf, or to nearest.
  for (int j = 8; j <= 20; ++j) {
    for (double f : {0.25, 0.5, 0.75, -0.25, -0.5, -0.75}) {
      Test t;
      t.kind = "round";
      t.j = j; t.frac = f; t.i = 0; t.s = 1;
      pow2_product(8, t.a[0][0], t.b[0][0]);
      float a, b;
      pow2_product(8 - j - 2, a, b);  // 2^(8 - j) / 4
      t.a[0][1] = a * static_cast<float>(std::fabs(f) * 4.0) * (f < 0 ? -1.0f : 1.0f);
      t.b[0][1] = b;
      add(t);
    }
  }
  // 6. Many small products: 2^8 at 0 and 31 products of 2^(8 - j) each; and the same 31 products
  //    with no big one (their own sum is exact).
  for (int j = 8; j <= 20; ++j) {
    for (int with_big : {1, 0}) {
      Test t;
      t.kind = with_big ? "many_small" : "many_small_alone";
      t.j = j;
      if (with_big) pow2_product(8, t.a[0][0], t.b[0][0]);
      for (int k = 1; k < kK; ++k) pow2_product(8 - j, t.a[0][k], t.b[0][k]);
      add(t);
    }
  }
  // 6b. Small products before the big one: 2^(8 - j) at 0..30, 2^8 at 31. With smaller alignment
  //     groups the smalls of the earlier groups are summed before the big one arrives; this is
  //     what tells the group size when the running sum joins the alignment.
  for (int j = 8; j <= 20; ++j) {
    Test t;
    t.kind = "smalls_then_big";
    t.j = j;
    for (int k = 0; k < kK - 1; ++k) pow2_product(8 - j, t.a[0][k], t.b[0][k]);
    pow2_product(8, t.a[0][kK - 1], t.b[0][kK - 1]);
    add(t);
  }
  // 7. Cancellation: 2^8 at 0, -2^8 at 1, 2^(8 - j) at s.
  for (int s : {2, 31}) {
    for (int j = 1; j <= 26; ++j) {
      Test t;
      t.kind = "cancel";
      t.j = j; t.s = s;
      pow2_product(8, t.a[0][0], t.b[0][0]);
      pow2_product(8, t.a[0][1], t.b[0][1]);
      t.a[0][1] = -t.a[0][1];
      pow2_product(8 - j, t.a[0][s], t.b[0][s]);
      add(t);
    }
  }
  return v;
}

#define CUDA_OK(x)                                                                       \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "wgmma_accum: %s: %s\n", #x, cudaGetErrorString(e_));         \
      std::exit(3);                                                                      \
    }                                                                                    \
  } while (0)

// The largest j in [1, 26] for which the small term survived (all j up to it survived too).
int bits_kept(const std::vector<Test>& tests, const std::vector<double>& got, const std::string& kind,
              int i, int s) {
  int kept = 0;
  for (size_t n = 0; n < tests.size(); ++n) {
    const Test& t = tests[n];
    if (t.kind != kind || t.i != i || t.s != s) continue;
    if (got[n] == t.expect_exact && t.j == kept + 1) kept = t.j;
  }
  return kept;
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9) {
    std::fprintf(stderr, "wgmma_accum: needs an sm_90 GPU, found sm_%d%d\n", prop.major, prop.minor);
    return 3;
  }
  const std::vector<Test> tests = make_tests();
  std::vector<DevTest> dev(tests.size());
  for (size_t n = 0; n < tests.size(); ++n) {
    dev[n].c = tests[n].c;
    dev[n].n_instr = tests[n].n_instr;
    for (int ins = 0; ins < kMaxInstr; ++ins)
      for (int k = 0; k < kK; ++k) {
        dev[n].a[ins][k] = to_e4m3(tests[n].a[ins][k]);
        dev[n].b[ins][k] = to_e4m3(tests[n].b[ins][k]);
      }
  }
  DevTest* d_tests;
  float* d_out;
  CUDA_OK(cudaMalloc(&d_tests, dev.size() * sizeof(DevTest)));
  CUDA_OK(cudaMalloc(&d_out, dev.size() * 512 * sizeof(float)));
  CUDA_OK(cudaMemcpy(d_tests, dev.data(), dev.size() * sizeof(DevTest), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d_out, 0xFF, dev.size() * 512 * sizeof(float)));  // NaN: a missed write shows
  dot_kernel<<<static_cast<unsigned>(dev.size()), 128>>>(d_tests, d_out);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> out(dev.size() * 512);
  CUDA_OK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost));

  // Self-checks: the 512 outputs of a test agree; layout and exact tests give the exact sum.
  std::vector<double> got(tests.size());
  int uniform_fail = 0, layout_fail = 0, exact_fail = 0;
  for (size_t n = 0; n < tests.size(); ++n) {
    const float* o = &out[n * 512];
    for (int e = 1; e < 512; ++e) uniform_fail += std::memcmp(&o[e], &o[0], 4) != 0;
    got[n] = o[0];
    if (tests[n].kind == "layout") layout_fail += got[n] != tests[n].expect_exact;
    if (tests[n].kind == "exact") exact_fail += got[n] != tests[n].expect_exact;
  }
  const bool ok = uniform_fail == 0 && layout_fail == 0 && exact_fail == 0;

  // Derived rule.
  int bits_min = 99, bits_max = -1;
  std::string bits_rows;
  for (int i : {0, 31}) {
    for (int s = 0; s < kK; ++s) {
      if (s == i) continue;
      const int b = bits_kept(tests, got, "bits", i, s);
      bits_min = std::min(bits_min, b);
      bits_max = std::max(bits_max, b);
      bits_rows += (bits_rows.empty() ? "" : ", ") + std::string("[") + std::to_string(i) + ", " +
                   std::to_string(s) + ", " + std::to_string(b) + "]";
    }
  }
  const int c_big = bits_kept(tests, got, "c_big", -1, 0);
  const int c_small = bits_kept(tests, got, "c_small", 0, -1);
  const int chained = bits_kept(tests, got, "chained", -1, -1);

  FILE* f = out_path ? std::fopen(out_path, "w") : stdout;
  if (!f) {
    std::fprintf(stderr, "wgmma_accum: cannot write %s\n", out_path);
    return 3;
  }
  std::fprintf(f, "{\n \"device\": \"%s\", \"sm\": \"%d%d\",\n", prop.name, prop.major,
               prop.minor);
  std::fprintf(f, " \"instruction\": \"wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 (A from "
                  "registers, B from shared memory)\",\n");
  std::fprintf(f, " \"self_check\": {\"ok\": %s, \"non_uniform_outputs\": %d, \"layout_failures\": %d, "
                  "\"exact_sum_failures\": %d},\n", ok ? "true" : "false", uniform_fail, layout_fail,
               exact_fail);
  std::fprintf(f, " \"derived\": {\"fraction_bits_min\": %d, \"fraction_bits_max\": %d, "
                  "\"c_big_bits\": %d, \"c_small_bits\": %d, \"chained_bits\": %d,\n"
                  "  \"bits_by_position\": [%s],\n"
                  "  \"note\": \"bits: the largest j with 2^8 + 2^(8-j) exact; [i, s, bits] for the big "
                  "product at i and the small at s; c_big: C = 2^8 and a product 2^(8-j); c_small: "
                  "C = 2^(8-j) under a product 2^8; chained: 2^8 in a first wgmma, 2^(8-j) in a "
                  "second\"},\n", bits_min, bits_max, c_big, c_small, chained, bits_rows.c_str());
  std::fprintf(f, " \"tests\": [\n");
  for (size_t n = 0; n < tests.size(); ++n) {
    const Test& t = tests[n];
    std::fprintf(f, "  {\"kind\": \"%s\", \"i\": %d, \"s\": %d, \"j\": %d, \"frac\": %g, \"c\": %.9g, "
                    "\"n_instr\": %d, \"exact\": %.17g, \"got\": %.17g", t.kind.c_str(), t.i, t.s, t.j,
                 t.frac, t.c, t.n_instr, t.expect_exact, got[n]);
    if (t.kind == "layout" || t.kind == "exact" || t.kind == "many_small" ||
        t.kind == "many_small_alone") {
      std::fprintf(f, ", \"a\": [");
      for (int k = 0; k < kK; ++k) std::fprintf(f, "%s%g", k ? ", " : "", t.a[0][k]);
      std::fprintf(f, "], \"b\": [");
      for (int k = 0; k < kK; ++k) std::fprintf(f, "%s%g", k ? ", " : "", t.b[0][k]);
      std::fprintf(f, "]");
    }
    std::fprintf(f, "}%s\n", n + 1 < tests.size() ? "," : "");
  }
  std::fprintf(f, " ]\n}\n");
  if (out_path) std::fclose(f);
  std::fprintf(stderr, "wgmma_accum: %zu tests, self-check %s; fraction bits %d..%d, C big %d, "
                       "C small %d, chained %d\n", tests.size(), ok ? "passed" : "FAILED", bits_min,
               bits_max, c_big, c_small, chained);
  CUDA_OK(cudaFree(d_tests));
  CUDA_OK(cudaFree(d_out));
  return ok ? 0 : 1;
}
