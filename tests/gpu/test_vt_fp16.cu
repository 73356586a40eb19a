// The FP16 V^T kernel (FP8ATTN_P_FP16 with FP8ATTN_VT_FP16: the TMA loads V^T in FP16 straight
// into the P V wgmma's operand) against
//   - the converter kernel (FP8ATTN_VT_E4M3) on the same values: V^T's E4M3 values are exact in
//     FP16, so both kernels feed identical operands to identical products in the same order and
//     must write the same bits;
//   - the model's kernel mirror (model::kernel_mirror_forward with v_f16) on V values that use
//     FP16's full precision (not E4M3-representable): the layout of every FP16 element matters;
//   - the argument checks that refuse a V^T dtype the call cannot use, before any launch.
// Fresh seeds per run (printed); outputs poisoned with guard bands (DeviceRun).
#include "tests/gpu/test_attention_util.cuh"

#include "tests/common/seed.h"

namespace fp8attn::test {
namespace {

// Runs the kernel on p with V^T as given (E4M3 permuted or FP16 natural), O and LSE into `out`.
::testing::AssertionResult run_with_vt(const Problem& p, bool vt_fp16,
                                       const std::vector<uint16_t>* vt16_values, Output& out) {
  Problem q = p;
  q.s.vt_fp16 = vt_fp16 && vt16_values == nullptr;
  DeviceRun run(q);
  fp8attn_fwd_params a = run.params();
  if (vt16_values) {
    a.vt = run.upload(*vt16_values);
    a.vt_dtype = FP8ATTN_VT_FP16;
  }
  const fp8attn_status st = fp8attn_attention_fwd(&a, nullptr);
  if (st != FP8ATTN_SUCCESS)
    return ::testing::AssertionFailure() << "status " << st << ": " << fp8attn_last_error();
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return ::testing::AssertionFailure() << "kernel: " << cudaGetErrorString(e);
  std::string why;
  if (!run.download(out, why)) return ::testing::AssertionFailure() << why;
  return ::testing::AssertionSuccess();
}

class VtFp16 : public ::testing::TestWithParam<Shape> {};

TEST_P(VtFp16, SameBitsAsTheConverterKernel) {
  FP8ATTN_REQUIRE_SM90();
  Shape s = GetParam();
  const uint64_t seed = fresh_seed(s.name().c_str());
  const Problem p = make_problem(s, seed);
  Output conv, tma;
  ASSERT_TRUE(run_with_vt(p, false, nullptr, conv));
  ASSERT_TRUE(run_with_vt(p, true, nullptr, tma));
  int64_t o_diff = 0, lse_diff = 0, nan = 0;
  for (size_t i = 0; i < conv.o_bits.size(); ++i) {
    o_diff += conv.o_bits[i] != tma.o_bits[i];
    nan += std::isnan(tma.o(i)) ? 1 : 0;
  }
  for (size_t i = 0; i < conv.lse.size(); ++i)
    lse_diff += std::memcmp(&conv.lse[i], &tma.lse[i], 4) != 0;
  std::printf("    O elements that differ: %lld of %zu, LSE: %lld of %zu, NaN in O: %lld\n",
              (long long)o_diff, conv.o_bits.size(), (long long)lse_diff, conv.lse.size(),
              (long long)nan);
  EXPECT_EQ(nan, 0) << "the problems have no NaN input";
  EXPECT_EQ(o_diff, 0);
  EXPECT_EQ(lse_diff, 0);
}

// V with FP16's full precision: per channel, v = e4m3 value * (1 + u), u uniform in [-1/16, 1/16]
// then rounded to FP16 (|v| <= 448 * 17/16, inside FP16's range), so most values are not E4M3's.
TEST_P(VtFp16, FullPrecisionValuesAgainstTheModelMirror) {
  FP8ATTN_REQUIRE_SM90();
  const Shape s = GetParam();
  const uint64_t seed = fresh_seed(s.name().c_str());
  const Problem p = make_problem(s, seed);
  std::mt19937_64 rng(seed ^ 0xF16F16F16ull);
  std::uniform_real_distribution<float> jitter(-1.0f / 16, 1.0f / 16);
  std::vector<uint16_t> v16(p.v8.size());  // (b, sk, h_kv, d)
  int64_t not_e4m3 = 0;
  for (size_t i = 0; i < v16.size(); ++i) {
    v16[i] = model::float_to_fp16(model::e4m3_to_float(p.v8[i]) * (1.0f + jitter(rng)));
    const float f = model::fp16_to_float(v16[i]);
    not_e4m3 += model::round_e4m3(f) != f;
  }
  const int pad = s.sk_pad();
  std::vector<uint16_t> vt16(size_t(s.b) * s.h_kv * kD * pad, 0);
  for (int b = 0; b < s.b; ++b)
    for (int h = 0; h < s.h_kv; ++h)
      for (int c = 0; c < kD; ++c)
        for (int key = 0; key < s.sk; ++key)
          vt16[((int64_t(b) * s.h_kv + h) * kD + c) * pad + key] = v16[p.ki(b, key, h, c)];
  Output out;
  ASSERT_TRUE(run_with_vt(p, true, &vt16, out));

  model::KernelMirrorInputs in;
  in.batch = s.b, in.seqlen_q = s.sq, in.seqlen_k = s.sk, in.heads = s.h, in.heads_kv = s.h_kv;
  in.q = p.q8.data(), in.k = p.k8.data(), in.v_f16 = v16.data();
  in.q_descale = p.q_descale.data(), in.k_descale = p.k_descale.data();
  in.v_descale = p.v_descale.data();
  in.lse_bias = p.lse_bias.empty() ? nullptr : p.lse_bias.data();
  in.o_bias = p.o_bias.empty() ? nullptr : p.o_bias.data();
  in.softmax_scale = p.softmax_scale, in.causal = s.causal, in.p_precision = FP8ATTN_P_FP16;
  in.k_descale_per_block = !s.k_head;
  const model::KernelMirrorOutputs m = model::kernel_mirror_forward(in);

  // The mirror sums P V in FP32 in another order than the tensor core: BF16 outputs agree but
  // for rare 1-ulp flips (kernel_mirror.h). Allowed: |kernel - mirror| <= 1 BF16 ulp of the
  // mirror's value (2^-7 relative, plus 2^-7 of the largest |O| for values near zero), and at
  // least 95% of the elements bitwise equal. NaN never passes.
  double omax = 0;
  for (float x : m.o.data) omax = std::max(omax, double(std::fabs(x)));
  int64_t equal = 0, bad = 0, first_bad = -1;
  for (size_t i = 0; i < out.o_bits.size(); ++i) {
    const double k = out.o(i), r = m.o.data[i];
    equal += out.o_bits[i] == m.o_bf16[i];
    const bool ok = std::isfinite(k) && std::fabs(k - r) <= std::ldexp(std::fabs(r), -7) + std::ldexp(omax, -14);
    if (!ok && bad++ == 0) first_bad = static_cast<int64_t>(i);
  }
  int64_t lse_bad = 0;
  for (size_t i = 0; i < out.lse.size(); ++i) {
    const double k = out.lse[i], r = m.lse[i];
    if (std::isinf(r) && k == r) continue;  // a row that sees no key
    lse_bad += !(std::fabs(k - r) <= 1e-5 * std::max(1.0, std::fabs(r)));
  }
  const double frac = double(equal) / double(out.o_bits.size());
  std::printf("    V values not E4M3-representable: %lld of %zu; O bitwise equal %.4f, beyond 1 ulp %lld "
              "(first at %lld); LSE beyond 1e-5: %lld\n",
              (long long)not_e4m3, v16.size(), frac, (long long)bad, (long long)first_bad,
              (long long)lse_bad);
  EXPECT_GT(not_e4m3, int64_t(v16.size() / 2)) << "the test must use FP16's precision";
  EXPECT_EQ(bad, 0);
  EXPECT_GE(frac, 0.95);
  EXPECT_EQ(lse_bad, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, VtFp16,
    ::testing::Values(Shape{1, 128, 128, 2, 2, false, FP8ATTN_P_FP16},
                      Shape{2, 200, 300, 4, 2, true, FP8ATTN_P_FP16},
                      Shape{1, 257, 450, 2, 1, false, FP8ATTN_P_FP16, true, false, true},
                      Shape{1, 1000, 1000, 8, 2, true, FP8ATTN_P_FP16, false, false, true},
                      Shape{2, 100, 1, 2, 1, false, FP8ATTN_P_FP16},   // one key, 31 zero pads
                      Shape{1, 4096, 4096, 4, 4, false, FP8ATTN_P_FP16, false, true}),
    [](const ::testing::TestParamInfo<Shape>& i) { return i.param.name(); });

// Refused before any launch, with the reason (no device needed: validation is host-only).
TEST(VtFp16Checks, RefusesDtypeMismatches) {
  fp8attn_fwd_params p;
  fp8attn_fwd_params_init(&p, 1, 128, 128, 2, 2, kD);
  EXPECT_EQ(p.vt_dtype, FP8ATTN_VT_E4M3);
  alignas(16) static uint8_t dummy[1 << 20];
  p.q = dummy, p.k = dummy + 65536, p.vt = dummy + 131072, p.o = dummy + 262144;
  p.p_precision = FP8ATTN_P_E4M3;
  p.vt_dtype = FP8ATTN_VT_FP16;
  EXPECT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_last_error()).find("vt_dtype"), std::string::npos) << fp8attn_last_error();
  p.vt_dtype = 7;
  p.p_precision = FP8ATTN_P_FP16;
  EXPECT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_last_error()).find("unknown vt_dtype"), std::string::npos);
  p.vt_dtype = FP8ATTN_VT_FP16;
  EXPECT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_SUCCESS) << fp8attn_last_error();
}

}  // namespace
}  // namespace fp8attn::test
