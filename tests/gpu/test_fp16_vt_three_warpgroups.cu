// The accurate mode's three-warpgroup kernel (KernelFP16VtTrioBlock128: FP16 P on an FP16 V^T,
// one K descale per head, 192-row tiles, 128-key blocks, P through shared memory) at small
// shapes. The dispatch sends it only long non-causal calls with many tiles (src/attn/select.h,
// fp16_vt_three_warpgroups), which the mirror cannot afford in full (test_fuzz checks one such
// call on sampled rows), so these tests launch it directly through the library's own launch
// (attn::launch<KernelFP16VtTrioBlock128>, after the same validation as the C ABI): against the
// host mirror at its 128-key blocks and exact FP64 attention, both masks (the kernel is correct
// causal too, only slower than the 192-key kernel there), GQA, partial tiles and blocks,
// biases, rows with no key, and persistent grids (more tiles than SMs: P's buffer reused, tile
// after tile, as the O staging). Sanitize.Fp16VtThreeWarpgroups (test_sanitize_targets.cu) runs
// one of these launches under compute-sanitizer.
// Fresh seeds per run (printed); outputs poisoned with guard bands (DeviceRun).
#include "tests/gpu/three_warpgroups_launch.cuh"

#include "tests/common/seed.h"
#include "tests/gpu/attention_checks.cuh"

namespace fp8attn::test {
namespace {

class ThreeWarpgroups : public ::testing::TestWithParam<Shape> {};

TEST_P(ThreeWarpgroups, AgainstMirrorAndFp64) {
  FP8ATTN_REQUIRE_SM90();
  const Shape s = GetParam();
  const uint64_t seed = fresh_seed(s.name().c_str());
  const Problem p = make_problem(s, seed);
  Output out;
  ASSERT_TRUE(launch_three_warpgroups(p, out));
  KernelChoice kc = kernel_choice(s);
  kc.block_n = 128;  // the three-warpgroup kernel's blocks (l from the tensor core, as kc says)
  ASSERT_TRUE(kc.l_rounded && kc.p_fp16);
  const Output mirror = mirror_kernel(p, nullptr, &kc);
  const Result ref = reference_f64(p);
  const Verdict vr = check_against_reference(s, out, mirror, ref);
  EXPECT_TRUE(vr.ok) << vr.msg;
  const Verdict vm = check_against_mirror(s, out, mirror, ref);
  EXPECT_TRUE(vm.ok) << vm.msg;
}

// Shape{b, sq, sk, h, h_kv, causal, p_precision, biases, diffuse, k_head, exact_scores, vt_fp16}
Shape fp16_vt(Shape s) {
  s.p_precision = FP8ATTN_P_FP16, s.k_head = true, s.vt_fp16 = true;
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ThreeWarpgroups,
    ::testing::Values(fp16_vt({1, 192, 300, 3, 1, false}),          // one tile, a partial key block
                      fp16_vt({2, 200, 500, 4, 2, true}),           // a tile of 8 rows: two warpgroups idle
                      fp16_vt({1, 450, 450, 2, 1, false, 0, false, true}),   // diffuse
                      fp16_vt({1, 1000, 1000, 8, 2, false, 0, true}),        // biases
                      fp16_vt({2, 1000, 300, 4, 2, true}),          // causal: rows with no key
                      fp16_vt({2, 129, 1, 2, 1, false}),            // one key
                      fp16_vt({2, 2000, 1000, 16, 4, false}),       // 352 tiles: persistent
                      fp16_vt({2, 2000, 2000, 8, 2, true})),        // 176 tiles, causal
    [](const ::testing::TestParamInfo<Shape>& i) { return i.param.name(); });

}  // namespace
}  // namespace fp8attn::test
