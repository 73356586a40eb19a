// The launches scripts/gpu/sanitize.sh runs under compute-sanitizer (memcheck, racecheck,
// initcheck, synccheck), one per test so that each tool sees one target at a time:
//   Sanitize.DefaultCausal / DefaultFull: the shipped default (E4M3 P, one K descale per head:
//     192-key blocks) at a persistent shape, 144 tiles of 128 rows > 132 SMs (b 1, h 18, s 1024):
//     both masks, the kernel with O through shared memory and the TMA (attn/select.h,
//     e4m3_head_scale_kernel), which trims a tile's first block to the keys its warpgroup sees
//   Sanitize.DefaultLongTiles: the default with long tiles (b 1, h 5, s 4096, not causal: 160
//     tiles)
//   Sanitize.ExactCausal / ExactFull: FP8ATTN_P_E4M3_EXACT's kernel, both masks, at the first shape
//   Sanitize.HiLo / Fp16 / Fp16Vt: the other precision modes at the same shape (causal), FP16 P
//     from E4M3 V^T (converter warps) and from FP16 V^T (TMA-loaded), K descales per 128-key block
//   Sanitize.Fp16VtHead / Fp16VtHeadFull: FP16 V^T with one K descale per head (192-key blocks,
//     l from the tensor core, O through the TMA: the end-to-end accurate call's kernel), causal
//     and not
//   Sanitize.Fp16VtThreeWarpgroups: the accurate mode's three-warpgroup kernel (which the
//     dispatch takes only for long non-causal calls with many tiles), launched directly at the
//     first shape non-causal: 6 tiles of 192 rows x 18 heads = 108 tiles
//   Sanitize.PrePass: the end-to-end call (pre-pass with default options + kernel) at that shape
// Each also checks its output: every O and LSE element written and finite.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "fp8attn/attention.h"
#include "tests/common/attention_args.h"
#include "fp8attn/fp8attn.h"
#include "tests/gpu/attention_device_run.cuh"
#include "tests/gpu/three_warpgroups_launch.cuh"

namespace fp8attn::test {
namespace {

constexpr int kB = 1, kS = 1024, kH = 18, kHkv = 2;  // 8 query blocks x 18 heads = 144 tiles

void expect_written(const Output& out) {
  int64_t bad_o = 0, bad_lse = 0;
  for (size_t i = 0; i < out.o_bits.size(); ++i) bad_o += !std::isfinite(out.o(int64_t(i)));
  for (float l : out.lse) bad_lse += !std::isfinite(l);
  EXPECT_EQ(bad_o, 0) << "O elements not finite (unwritten poison or NaN)";
  EXPECT_EQ(bad_lse, 0) << "LSE elements not finite";
}

void run_kernel(Shape s) {
  FP8ATTN_REQUIRE_SM90();
  const Problem prob = make_problem(s, 0x5a717e);
  DeviceRun run(prob);
  fp8attn_fwd_params p = run.params();
  ASSERT_EQ(fp8attn_attention_fwd(&p, nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Output out;
  std::string why;
  ASSERT_TRUE(run.download(out, why)) << why;
  expect_written(out);
}

Shape shape(bool causal, int pp, bool k_head) {
  Shape s{kB, kS, kS, kH, kHkv, causal, pp};
  s.k_head = k_head;
  return s;
}

TEST(Sanitize, DefaultCausal) { run_kernel(shape(true, FP8ATTN_P_E4M3, true)); }
TEST(Sanitize, DefaultFull) { run_kernel(shape(false, FP8ATTN_P_E4M3, true)); }
TEST(Sanitize, ExactCausal) { run_kernel(shape(true, FP8ATTN_P_E4M3_EXACT, true)); }
TEST(Sanitize, ExactFull) { run_kernel(shape(false, FP8ATTN_P_E4M3_EXACT, true)); }
TEST(Sanitize, DefaultLongTiles) {
  Shape s{1, 4096, 4096, 5, 1, false, FP8ATTN_P_E4M3};
  s.k_head = true;
  run_kernel(s);
}
TEST(Sanitize, Fp16Vt) {
  Shape s = shape(true, FP8ATTN_P_FP16, false);
  s.vt_fp16 = true;
  run_kernel(s);
}
TEST(Sanitize, Fp16VtHead) {
  Shape s = shape(true, FP8ATTN_P_FP16, true);
  s.vt_fp16 = true;
  run_kernel(s);
}
// The same kernel non-causal (every block full width; the row sums in its P V, FP16 ones after each half).
TEST(Sanitize, Fp16VtHeadFull) {
  Shape s = shape(false, FP8ATTN_P_FP16, true);
  s.vt_fp16 = true;
  run_kernel(s);
}
TEST(Sanitize, Fp16VtThreeWarpgroups) {
  FP8ATTN_REQUIRE_SM90();
  Shape s = shape(false, FP8ATTN_P_FP16, true);
  s.vt_fp16 = true;
  const Problem prob = make_problem(s, 0x5a717e);
  Output out;
  ASSERT_TRUE(launch_three_warpgroups(prob, out));
  expect_written(out);
}

TEST(Sanitize, HiLo) { run_kernel(shape(true, FP8ATTN_P_E4M3_HILO, false)); }
TEST(Sanitize, Fp16) { run_kernel(shape(true, FP8ATTN_P_FP16, false)); }

TEST(Sanitize, PrePass) {
  FP8ATTN_REQUIRE_SM90();
  std::mt19937_64 rng(0x5a717f);
  std::normal_distribution<float> n01(0.f, 1.f);
  const size_t nq = size_t(kB) * kS * kH * kD, nk = size_t(kB) * kS * kHkv * kD;
  std::vector<uint16_t> hq(nq), hk(nk), hv(nk);
  for (auto* v : {&hq, &hk, &hv})
    for (auto& x : *v) x = model::float_to_bf16(n01(rng));
  void *q, *k, *v, *o, *lse;
  ASSERT_EQ(cudaMalloc(&q, nq * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&k, nk * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&v, nk * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&o, nq * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&lse, size_t(kB) * kH * kS * 4), cudaSuccess);
  cudaMemcpy(q, hq.data(), nq * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(k, hk.data(), nk * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(v, hv.data(), nk * 2, cudaMemcpyHostToDevice);
  cudaMemset(o, 0xFF, nq * 2);
  cudaMemset(lse, 0xFF, size_t(kB) * kH * kS * 4);
  fp8attn_attention_args a =
      contiguous_attention_args(q, k, v, o, static_cast<float*>(lse), kB, kS, kS, kH, kHkv);
  a.causal = 1;
  fp8attn_workspace* ws = fp8attn_workspace_create();
  ASSERT_EQ(fp8attn_attention(&a, ws, nullptr), FP8ATTN_SUCCESS) << fp8attn_quant_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Output out;
  out.o_bits.resize(nq);
  out.lse.resize(size_t(kB) * kH * kS);
  cudaMemcpy(out.o_bits.data(), o, nq * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(out.lse.data(), lse, out.lse.size() * 4, cudaMemcpyDeviceToHost);
  expect_written(out);
  fp8attn_workspace_destroy(ws);
  for (void* ptr : {q, k, v, o, lse}) cudaFree(ptr);
}

}  // namespace
}  // namespace fp8attn::test
