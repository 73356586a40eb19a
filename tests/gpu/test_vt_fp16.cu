// The FP16 V^T kernel (FP8ATTN_P_FP16 with FP8ATTN_VT_FP16: the TMA loads V^T in FP16 straight
// into the P V wgmma's operand) against
//   - the converter kernel (FP8ATTN_VT_E4M3) on the same values, K descales per 128-key block:
//     V^T's E4M3 values are exact in FP16, so both kernels feed identical operands to identical
//     products in the same order and must write the same bits;
//   - the model's kernel mirror (model::kernel_mirror_forward with v_f16) on V values that use
//     FP16's full precision (not E4M3-representable): the layout of every FP16 element matters;
//   - the argument checks that refuse a V^T dtype the call cannot use, before any launch.
// Fresh seeds per run (printed); outputs poisoned with guard bands (DeviceRun).
#include "tests/gpu/attention_device_run.cuh"

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
  return launch_and_download(run, a, out);
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

// V with FP16's full precision against exact FP64 attention: test_attention.cu,
// AgainstFp64.Fp16VtFullPrecisionValues (the same derived bounds as every other shape).

INSTANTIATE_TEST_SUITE_P(
    Shapes, VtFp16,
    // K descales per 128-key block: both kernels then run 128-key blocks. With one per head the
    // FP16 V^T kernel runs 192-key blocks (select.h), a different order of operations: those
    // shapes are checked against the model's mirror and FP64 in test_attention.cu.
    ::testing::Values(Shape{1, 128, 128, 2, 2, false, FP8ATTN_P_FP16},
                      Shape{2, 200, 300, 4, 2, true, FP8ATTN_P_FP16},
                      Shape{1, 257, 450, 2, 1, false, FP8ATTN_P_FP16, true},
                      Shape{1, 1000, 1000, 8, 2, true, FP8ATTN_P_FP16},
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
