// GPU tests of fp8attn_attention_fwd: against the CPU model's kernel mirror (small shapes,
// element by element) and against exact FP64 attention on the dequantized inputs (seqlens 1, 127,
// 1000, 8191; b=3, h=5; GQA 32/8; causal and not; sq != sk; K descales per 128-key block and per
// head, which select the kernel's 128- and 192-key blocks; against the mirror also Q, K codes
// whose scores are exact in any order and width, which isolate the sums of P V and of P), with
// poisoned outputs and guard bands. Every test prints its seed; FP8ATTN_TEST_SEED overrides it.
// The tolerances and their derivation: attention_checks.cuh.
#include "attention_checks.cuh"

namespace fp8attn::test {
namespace {

// ---- element-wise against the model's kernel mirror, small shapes ---------------------------

class AgainstModelMirror : public ::testing::TestWithParam<Shape> {};

TEST_P(AgainstModelMirror, ElementWise) {
  REQUIRE_DEVICE_OR_MIRROR();
  const Shape s = GetParam();
  const uint64_t seed = test_seed(0x5EED0000u + s.sq * 131 + s.sk * 7 + s.h);
  std::printf("    %s seed %llu, mirror: %s\n", s.name().c_str(), (unsigned long long)seed,
#ifdef FP8ATTN_HAVE_MODEL_MIRROR
              "model::kernel_mirror_forward"
#else
              "host mirror in test_attention_util.cuh (model mirror absent)"
#endif
  );
  const Problem p = make_problem(s, seed);
  Output out;
  ASSERT_TRUE(run_kernel(p, out));
  const Result ref = reference_f64(p);
  const Verdict v = check_against_mirror(s, out, model_mirror(p), ref);
  EXPECT_TRUE(v.ok) << v.msg;
}

INSTANTIATE_TEST_SUITE_P(
    Small, AgainstModelMirror,
    ::testing::Values(Shape{2, 200, 200, 4, 2, false}, Shape{2, 200, 200, 4, 2, true},
                      Shape{1, 257, 129, 2, 1, false}, Shape{1, 129, 257, 2, 1, true},
                      Shape{1, 64, 384, 3, 3, true, FP8ATTN_P_E4M3, true},
                      Shape{2, 150, 300, 4, 1, false, FP8ATTN_P_E4M3_HILO},
                      Shape{2, 200, 300, 4, 2, true, FP8ATTN_P_E4M3, false, true},
                      // One K descale per head: the kernel's 192-key blocks (the default).
                      Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_E4M3, false, false, true},
                      Shape{1, 257, 450, 2, 1, false, FP8ATTN_P_E4M3, true, false, true},
                      Shape{2, 200, 300, 4, 2, true, FP8ATTN_P_E4M3, false, true, true},
                      // Exact scores: only the sums of P V and of P (l) differ.
                      Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_E4M3, false, false, false, true},
                      Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_E4M3, false, false, true, true},
                      Shape{2, 150, 300, 4, 1, false, FP8ATTN_P_E4M3_HILO, false, false, false, true},
                      // FP16 P (one-level, 128-key blocks whatever the K descale; not yet run on
                      // a GPU when added, branch wip/fp16-p).
                      Shape{2, 200, 300, 4, 2, true, FP8ATTN_P_FP16},
                      Shape{1, 257, 450, 2, 1, false, FP8ATTN_P_FP16, true, false, true},
                      Shape{1, 129, 257, 2, 1, true, FP8ATTN_P_FP16},
                      Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_FP16, false, false, false, true},
                      // FP16 V^T (the TMA-loaded kernel), the same checks
                      Shape{2, 200, 300, 4, 2, true, FP8ATTN_P_FP16, false, false, false, false, true},
                      Shape{1, 257, 450, 2, 1, false, FP8ATTN_P_FP16, true, false, true, false, true},
                      Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_FP16, false, false, false, true, true},
                      // FP16 V^T with one K descale per head: its 192-key blocks
                      Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_FP16, false, false, true, false, true},
                      Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_FP16, false, false, true, true, true},
                      Shape{1, 450, 450, 2, 1, false, FP8ATTN_P_FP16, false, true, true, false, true},
                      // The exact softmax (FP8ATTN_P_E4M3_EXACT: one K descale per head)
                      Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_E4M3_EXACT, false, false, true},
                      Shape{1, 257, 450, 2, 1, false, FP8ATTN_P_E4M3_EXACT, true, false, true},
                      Shape{2, 200, 500, 4, 2, true, FP8ATTN_P_E4M3_EXACT, false, false, true, true}),
    [](const auto& info) { return info.param.name(); });

// ---- against exact FP64 attention -------------------------------------------------------------

class AgainstFp64 : public ::testing::TestWithParam<Shape> {};

TEST_P(AgainstFp64, BoundAndRmse) {
  REQUIRE_DEVICE_OR_MIRROR();
  const Shape s = GetParam();
  const uint64_t seed = test_seed(0xF64000u + s.sq * 17 + s.sk + s.h * 3 + s.causal);
  std::printf("    %s seed %llu\n", s.name().c_str(), (unsigned long long)seed);
  const Problem p = make_problem(s, seed);
  Output out;
  ASSERT_TRUE(run_kernel(p, out));
  const Result ref = reference_f64(p);
  const Verdict v = check_against_reference(s, out, mirror_kernel(p), ref);
  EXPECT_TRUE(v.ok) << v.msg;
}

// FP16 V^T holding values with FP16's precision (most not E4M3 values): the FP16 V^T kernel
// against exact FP64 attention on those values, with the same derived bounds as every shape.
TEST(AgainstFp64, Fp16VtFullPrecisionValues) {
  REQUIRE_DEVICE_OR_MIRROR();
  for (Shape s : {Shape{1, 128, 128, 2, 2, false, FP8ATTN_P_FP16}, Shape{2, 200, 300, 4, 2, true, FP8ATTN_P_FP16},
                  Shape{1, 257, 450, 2, 1, false, FP8ATTN_P_FP16, true, false, true},
                  Shape{1, 1000, 1000, 8, 2, true, FP8ATTN_P_FP16, false, false, true},
                  Shape{2, 100, 1, 2, 1, false, FP8ATTN_P_FP16}}) {
    s.vt_fp16 = true;
    const uint64_t seed = test_seed(0xF16F64u + s.sq * 17 + s.sk + s.h * 3 + s.causal);
    std::printf("    %s seed %llu\n", s.name().c_str(), (unsigned long long)seed);
    const Problem p = with_fp16_values(make_problem(s, seed), seed);
    int64_t not_e4m3 = 0;
    for (float x : p.v_raw) not_e4m3 += model::round_e4m3(x) != x;
    EXPECT_GT(not_e4m3, int64_t(p.v_raw.size() / 2)) << "the test must use FP16's precision";
    Output out;
    ASSERT_TRUE(run_kernel(p, out));
    const Result ref = reference_f64(p);
    const Verdict v = check_against_reference(s, out, mirror_kernel(p), ref);
    EXPECT_TRUE(v.ok) << s.name() << ": " << v.msg;
  }
}

std::vector<Shape> fp64_shapes() {
  std::vector<Shape> v;
  for (bool causal : {false, true}) {
    for (int s : {1, 127, 1000}) v.push_back({3, s, s, 5, 5, causal});
    v.push_back({1, 8191, 8191, 2, 1, causal});   // long: few heads keep the FP64 reference short
    v.push_back({1, 1000, 1000, 32, 8, causal});  // GQA 32/8
    v.push_back({2, 300, 1000, 4, 2, causal});    // sq < sk
    v.push_back({2, 1000, 300, 4, 2, causal});    // sq > sk: causal rows 0..699 see no key
    v.push_back({3, 127, 1000, 5, 5, causal, FP8ATTN_P_E4M3_HILO});
    v.push_back({3, 1000, 1000, 5, 5, causal, FP8ATTN_P_E4M3, false, true});  // diffuse
    // One K descale per head: the kernel's 192-key blocks (the default).
    v.push_back({3, 127, 127, 5, 5, causal, FP8ATTN_P_E4M3, false, false, true});
    v.push_back({3, 1000, 1000, 5, 5, causal, FP8ATTN_P_E4M3, false, false, true});
    // FP16 P (not yet run on a GPU when added, branch wip/fp16-p).
    v.push_back({3, 127, 1000, 5, 5, causal, FP8ATTN_P_FP16});
    v.push_back({3, 1000, 1000, 5, 5, causal, FP8ATTN_P_FP16, false, false, true});
    v.push_back({2, 1000, 300, 4, 2, causal, FP8ATTN_P_FP16});  // causal: rows with no key
    // The exact softmax (one K descale per head).
    v.push_back({3, 1000, 1000, 5, 5, causal, FP8ATTN_P_E4M3_EXACT, false, false, true});
    v.push_back({2, 1000, 300, 4, 2, causal, FP8ATTN_P_E4M3_EXACT, false, false, true});
    v.push_back({1, 1000, 1000, 32, 8, causal, FP8ATTN_P_E4M3_EXACT, true, false, true});  // GQA, biases
  }
  v.push_back({1, 8191, 8191, 2, 1, true, FP8ATTN_P_E4M3_EXACT, false, false, true});
  v.push_back({1, 8191, 8191, 2, 1, false, FP8ATTN_P_E4M3_EXACT, false, true, true});  // long, diffuse
  v.push_back({1, 8191, 8191, 2, 1, true, FP8ATTN_P_FP16, false, false, true});
  v.push_back({1, 8191, 8191, 2, 1, false, FP8ATTN_P_FP16, false, true});  // long and diffuse
  v.push_back({1, 8191, 8191, 2, 1, true, FP8ATTN_P_FP16, false, false, true, false, true});  // FP16 V^T
  // FP16 V^T, non-causal (the causal one above runs the same 192-key kernel: l from the tensor core)
  v.push_back({1, 8191, 8191, 2, 1, false, FP8ATTN_P_FP16, false, false, true, false, true});
  v.push_back({2, 1000, 300, 4, 2, true, FP8ATTN_P_FP16, false, false, false, false, true});
  v.push_back({1, 8191, 8191, 2, 1, true, FP8ATTN_P_E4M3, false, false, true});
  v.push_back({1, 8191, 8191, 2, 1, false, FP8ATTN_P_E4M3, false, true});  // long and diffuse
  v.push_back({2, 333, 555, 4, 2, true, FP8ATTN_P_E4M3, true});  // lse_bias and o_bias
  return v;
}

INSTANTIATE_TEST_SUITE_P(Seqlens, AgainstFp64, ::testing::ValuesIn(fp64_shapes()),
                         [](const auto& info) { return info.param.name(); });

// ---- valid but unusual layouts: padded strides, broadcast (stride 0) descales ------------------

TEST(Layouts, PaddedStridesAndBroadcastDescales) {
  FP8ATTN_REQUIRE_SM90();
  // k_head: K quantized with one descale per (b, h_kv), which kd_stride_blk = 0 passes.
  const Shape s{2, 130, 260, 4, 2, true, FP8ATTN_P_E4M3, false, false, true};
  const uint64_t seed = test_seed(21);
  std::printf("    %s seed %llu\n", s.name().c_str(), (unsigned long long)seed);
  Problem prob = make_problem(s, seed);
  DeviceRun run(prob);
  fp8attn_fwd_params a = run.params();
  // Broadcast: one descale per (b, h) for Q and per (b, h_kv) for K and V. The device arrays keep
  // the per-token values; with stride 0 the kernel reads the first of each group, so the host
  // problem takes that value everywhere.
  a.qd_stride_s = 0, a.kd_stride_blk = 0, a.vd_stride_d = 0;
  for (int b = 0; b < s.b; ++b) {
    for (int h = 0; h < s.h; ++h)
      for (int t = 0; t < s.sq; ++t)
        prob.q_descale[(b * s.h + h) * s.sq + t] = prob.q_descale[(b * s.h + h) * s.sq];
    for (int h = 0; h < s.h_kv; ++h) {
      for (int k = 0; k < s.k_blocks(); ++k)
        prob.k_descale[(b * s.h_kv + h) * s.k_blocks() + k] = prob.k_descale[(b * s.h_kv + h) * s.k_blocks()];
      for (int c = 0; c < kD; ++c)
        prob.v_descale[(b * s.h_kv + h) * kD + c] = prob.v_descale[(b * s.h_kv + h) * kD];
    }
  }
  prob.finish();
  // Q with 64 padding elements after each token's heads, holding E4M3 NaN: read them and O is NaN.
  const int64_t q_row = int64_t(s.h) * kD + 64, o_row = int64_t(s.h) * kD + 64;
  std::vector<uint8_t> q_pad(size_t(s.b) * s.sq * q_row, 0x7F);
  for (int b = 0; b < s.b; ++b)
    for (int t = 0; t < s.sq; ++t)
      std::memcpy(&q_pad[(int64_t(b) * s.sq + t) * q_row], &prob.q8[prob.qi(b, t, 0, 0)], size_t(s.h) * kD);
  a.q = run.upload(q_pad);
  a.q_stride_s = q_row, a.q_stride_b = s.sq * q_row;
  // O with 64 padding elements per token: they must keep the poison.
  const size_t o_bytes = size_t(s.b) * s.sq * o_row * 2;
  uint8_t* o_dev = run.poisoned(o_bytes);
  a.o = o_dev;
  a.o_stride_s = o_row, a.o_stride_b = s.sq * o_row;
  ASSERT_EQ(fp8attn_attention_fwd(&a, nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<uint8_t> o_raw = DeviceRun::fetch(o_dev - DeviceRun::kGuard, o_bytes + 2 * DeviceRun::kGuard);
  ASSERT_EQ(o_raw.size(), o_bytes + 2 * DeviceRun::kGuard);
  Output out;
  out.o_bits.resize(size_t(s.b) * s.sq * s.h * kD);
  for (size_t i = 0; i < o_raw.size(); ++i) {
    const size_t off = i - DeviceRun::kGuard;  // wraps for the leading guard: >= o_bytes
    const bool payload = i >= DeviceRun::kGuard && off < o_bytes && off % (o_row * 2) < size_t(s.h) * kD * 2;
    if (!payload) ASSERT_EQ(o_raw[i], 0xFF) << "padding or guard byte " << i << " of O was written";
  }
  for (int b = 0; b < s.b; ++b)
    for (int t = 0; t < s.sq; ++t)
      std::memcpy(&out.o_bits[prob.qi(b, t, 0, 0)], &o_raw[DeviceRun::kGuard + (int64_t(b) * s.sq + t) * o_row * 2],
                  size_t(s.h) * kD * 2);
  const std::vector<uint8_t> lse_raw = DeviceRun::fetch(a.lse, size_t(s.b) * s.h * s.sq * 4);
  ASSERT_FALSE(lse_raw.empty());
  out.lse.resize(lse_raw.size() / 4);
  std::memcpy(out.lse.data(), lse_raw.data(), lse_raw.size());
  // Broadcast K descales select the kernel's 192-key blocks (src/api.cu), as k_head tells the
  // mirrors.
  const Result ref = reference_f64(prob);
  const Verdict v = check_against_reference(s, out, mirror_kernel(prob), ref);
  EXPECT_TRUE(v.ok) << v.msg;
  const Verdict vm = check_against_mirror(s, out, model_mirror(prob), ref);
  EXPECT_TRUE(vm.ok) << vm.msg;
}

// ---- one V descale per head (vd_stride_d = 0), or none: the epilogue's broadcast path
// (EpilogueOperands::vd_bcast in attn/epilogue.cuh), here beside rows that see no key (their O
// must be 0, not o_bias) and o_bias; the layouts test above has neither ------------------------

class BroadcastVDescale : public ::testing::TestWithParam<std::tuple<Shape, bool>> {};

TEST_P(BroadcastVDescale, AgainstFp64AndMirror) {
  FP8ATTN_REQUIRE_SM90();
  const auto& [s, none] = GetParam();
  const uint64_t seed = test_seed(23);
  std::printf("    %s %s seed %llu\n", s.name().c_str(), none ? "v_descale null" : "v_descale per head",
              (unsigned long long)seed);
  Problem prob = make_problem(s, seed);
  // One value per (b, h_kv) (the first channel's), or 1 for a null v_descale; uploaded that way.
  for (int b = 0; b < s.b; ++b)
    for (int h = 0; h < s.h_kv; ++h)
      for (int c = kD - 1; c >= 0; --c)
        prob.v_descale[(b * s.h_kv + h) * kD + c] = none ? 1.f : prob.v_descale[(b * s.h_kv + h) * kD];
  prob.finish();
  DeviceRun run(prob);
  fp8attn_fwd_params a = run.params();
  a.vd_stride_d = 0;
  if (none) a.v_descale = nullptr;
  Output out;
  ASSERT_TRUE(launch_and_download(run, a, out));
  const Result ref = reference_f64(prob);
  const Verdict v = check_against_reference(s, out, mirror_kernel(prob), ref);
  EXPECT_TRUE(v.ok) << v.msg;
  const Verdict vm = check_against_mirror(s, out, model_mirror(prob), ref);
  EXPECT_TRUE(vm.ok) << vm.msg;
}

// Rows with no visible key (causal, sq > sk) beside full ones, with and without o_bias, in the
// E4M3, exact-softmax and FP16 V^T kernels.
INSTANTIATE_TEST_SUITE_P(
    EmptyRowsAndBiases, BroadcastVDescale,
    ::testing::Combine(
        ::testing::Values(Shape{2, 1000, 300, 4, 2, true, FP8ATTN_P_E4M3, true, false, true},
                          Shape{2, 333, 555, 4, 2, false, FP8ATTN_P_E4M3, true, false, true},
                          Shape{2, 1000, 300, 4, 2, true, FP8ATTN_P_E4M3_EXACT, false, false, true},
                          Shape{2, 1000, 300, 4, 2, true, FP8ATTN_P_FP16, true, false, true, false, true},
                          Shape{2, 333, 555, 4, 2, false, FP8ATTN_P_FP16, false, false, true, false, true}),
        ::testing::Bool()),
    [](const auto& info) {
      return std::get<0>(info.param).name() + (std::get<1>(info.param) ? "_vd_null" : "_vd_head");
    });

// ---- the checks themselves must be able to fail ----------------------------------------------

TEST(Checks, NaNNeverPasses) {
  const Shape s{1, 40, 40, 2, 1, false};
  const Problem p = make_problem(s, test_seed(7));
  const Result ref = reference_f64(p);
  const Output mirror = mirror_kernel(p);
  ASSERT_TRUE(check_against_reference(s, mirror, mirror, ref).ok);
  ASSERT_TRUE(check_against_mirror(s, mirror, mirror, ref).ok);
  Output bad = mirror;
  bad.o_bits[1234] = 0x7FC0;  // BF16 NaN
  EXPECT_FALSE(check_against_reference(s, bad, mirror, ref).ok);
  EXPECT_FALSE(check_against_mirror(s, bad, mirror, ref).ok);
  bad = mirror;
  bad.lse[3] = NAN;
  EXPECT_FALSE(check_against_reference(s, bad, mirror, ref).ok);
  EXPECT_FALSE(check_against_mirror(s, bad, mirror, ref).ok);
  bad = mirror;
  bad.o_bits[77] = 0xFFFF;  // the poison pattern: an element the kernel did not write
  EXPECT_FALSE(check_against_mirror(s, bad, mirror, ref).ok);
}

TEST(Checks, WrongValuesFail) {
  // A V^T layout mistake (keys of a group swapped) must fail both checks.
  const Shape s{1, 64, 256, 2, 1, false};
  const Problem p = make_problem(s, test_seed(11));
  const Result ref = reference_f64(p);
  const Output mirror = mirror_kernel(p);
  Problem swapped = p;
  for (int64_t i = 0; i < int64_t(swapped.v8.size()) / kD; i += 2)
    for (int c = 0; c < kD; ++c) std::swap(swapped.v_raw[i * kD + c], swapped.v_raw[(i + 1) * kD + c]);
  const Output wrong = mirror_kernel(swapped);
  EXPECT_FALSE(check_against_mirror(s, wrong, mirror, ref).ok);
  EXPECT_FALSE(check_against_reference(s, wrong, mirror, ref).ok);
  // So must skipping P's rounding error bound the other way: O off by 1% everywhere.
  Output off = mirror;
  for (auto& b : off.o_bits) b = model::float_to_bf16(model::bf16_to_float(b) * 1.01f + 1e-3f);
  EXPECT_FALSE(check_against_mirror(s, off, mirror, ref).ok);
}

TEST(Checks, LseTolerancesHaveTeeth) {
  // The E4M3 kernel's l sums the rounded P. An l from the FP32 p instead (LSE off by up to ~1e-2
  // on short rows) must fail against the mirror, and so must every LSE shifted by 0.03 (inside
  // the FP64 worst case of ~0.06): against the mirror, and against FP64 through the RMS rule.
  const Shape s{1, 200, 200, 2, 1, true};
  ASSERT_TRUE(kernel_choice(s).l_rounded);
  const Problem p = make_problem(s, test_seed(17));
  const Result ref = reference_f64(p);
  const Output mirror = mirror_kernel(p);
  ASSERT_TRUE(check_against_mirror(s, mirror, model_mirror(p), ref).ok);
  ASSERT_TRUE(check_against_reference(s, mirror, mirror, ref).ok);
  KernelChoice fp32_l = kernel_choice(s);
  fp32_l.l_rounded = false;
  EXPECT_FALSE(check_against_mirror(s, mirror_kernel(p, nullptr, &fp32_l), model_mirror(p), ref).ok);
  Output shifted = mirror;
  for (float& x : shifted.lse) x += 0.03f;
  EXPECT_FALSE(check_against_mirror(s, shifted, mirror, ref).ok);
  EXPECT_FALSE(check_against_reference(s, shifted, mirror, ref).ok);
}

#ifdef FP8ATTN_HAVE_MODEL_MIRROR
TEST(Checks, HostMirrorMatchesModelMirror) {
  // The host mirror (used for the FP64 tests' RMSE yardstick) and the model's agree.
  const Shape s{2, 150, 300, 4, 2, true};
  const Problem p = make_problem(s, test_seed(13));
  const Result ref = reference_f64(p);
  const Verdict v = check_against_mirror(s, mirror_kernel(p), model_mirror(p), ref);
  EXPECT_TRUE(v.ok) << v.msg;
}
#endif

}  // namespace
}  // namespace fp8attn::test
