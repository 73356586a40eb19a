// The composition on the CPU: the kernel's parameters from a quantized Q and an FP8 KV cache
// (fp8attn_fwd_params_from_quant, src/compose/kernel_params.cc) and what an end-to-end call's
// arguments change in them. No CUDA call: tests/CMakeLists.txt compiles kernel_params.cc,
// attn/validate.cc and common/status.cc into this test. Every expected address is computed from
// the layouts the headers document (quant.h: the cache and Q buffers; fp8attn.h: the kernel's
// tensors), at random elements, on random shapes and options; the parameters start poisoned.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "attn/select.h"
#include "compose/kernel_params.h"
#include "fp8attn/attention.h"
#include "tests/common/seed.h"

namespace {
using fp8attn::attn::KernelId;
using fp8attn::attn::select_kernel;

struct Case {
  fp8attn_kv_cache cache;
  fp8attn_q_quant qq;
  void* o;
  float* lse;
  int nblk;
};

// Fake device pointers (aligned, never dereferenced), 4 GiB apart so that no tensor's span meets
// another's (validation rejects outputs that overlap an input).
template <class T>
T* fake(int slot) {
  return reinterpret_cast<T*>(uintptr_t{static_cast<uintptr_t>(slot)} << 32);
}

Case random_case(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> len(1, 5000), hkv(1, 8), group(1, 4), batch(1, 4);
  Case c{};
  fp8attn_kv_cache& k = c.cache;
  k.batch = batch(rng), k.seqlen_k = len(rng), k.heads_kv = hkv(rng), k.head_dim = 128;
  const int min_pad = (k.seqlen_k + 31) / 32 * 32;
  k.vt_seqlen_pad = min_pad + 32 * static_cast<int>(rng() % 3);  // any valid pad, not just the least
  k.k = fake<void>(1), k.vt = fake<void>(2), k.k_descale = fake<float>(3);
  k.v_descale = fake<float>(4), k.k_mean = fake<float>(5), k.v_mean = fake<float>(6);
  k.options = fp8attn_quant_options{};  // (fp8attn_quant_options_init is in a CUDA file)
  k.options.hadamard_qk = static_cast<int32_t>(rng() % 2);
  k.options.smooth_k = static_cast<int32_t>(rng() % 2);
  k.options.smooth_v = static_cast<int32_t>(rng() % 2);
  k.options.k_scale = rng() % 2 ? FP8ATTN_K_SCALE_HEAD : FP8ATTN_K_SCALE_BLOCK128;
  fp8attn_q_quant& q = c.qq;
  q.batch = k.batch, q.seqlen_q = len(rng), q.heads = k.heads_kv * group(rng), q.head_dim = 128;
  q.q = fake<void>(7), q.q_descale = fake<float>(8), q.lse_bias = fake<float>(9);
  q.softmax_scale = std::uniform_real_distribution<float>(0.01f, 1.0f)(rng);
  c.o = fake<void>(10);
  c.lse = rng() % 2 ? fake<float>(11) : nullptr;
  c.nblk = (k.seqlen_k + 127) / 128;
  return c;
}

fp8attn_fwd_params poisoned() {
  fp8attn_fwd_params p;
  std::memset(&p, 0xA5, sizeof p);
  return p;
}

// Byte offset of element `index` of a tensor whose strides (in elements of `bytes`) are given.
int64_t at(std::initializer_list<std::pair<int64_t, int64_t>> index_stride, int bytes) {
  int64_t off = 0;
  for (const auto& [i, s] : index_stride) off += i * s;
  return off * bytes;
}
int64_t addr(const void* p) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)); }

TEST(KernelParams, EveryTensorAtItsDocumentedLayout) {
  std::mt19937_64 rng(fp8attn::test::fresh_seed("KernelParams.EveryTensorAtItsDocumentedLayout"));
  for (int iter = 0; iter < 200; ++iter) {
    const Case c = random_case(rng);
    fp8attn_kv_cache k = c.cache;
    // Every other case a cache with an FP16 V^T: the parameters then ask for FP16 P, the one
    // precision that reads it (the kernel's validation refuses any other).
    if (iter % 2) k.vt_dtype = FP8ATTN_VT_FP16;
    const fp8attn_q_quant& q = c.qq;
    fp8attn_fwd_params p = poisoned();
    ASSERT_EQ(fp8attn_fwd_params_from_quant(&p, &q, &k, c.o, c.lse), FP8ATTN_SUCCESS)
        << fp8attn_last_error();
    EXPECT_STREQ(fp8attn_last_error(), "");
    EXPECT_EQ(p.batch, q.batch);
    EXPECT_EQ(p.seqlen_q, q.seqlen_q);
    EXPECT_EQ(p.seqlen_k, k.seqlen_k);
    EXPECT_EQ(p.heads, q.heads);
    EXPECT_EQ(p.heads_kv, k.heads_kv);
    EXPECT_EQ(p.head_dim, 128);
    EXPECT_EQ(p.vt_seqlen_pad, k.vt_seqlen_pad);
    EXPECT_EQ(p.o, c.o);
    EXPECT_EQ(p.lse, c.lse);
    EXPECT_EQ(p.softmax_scale, q.softmax_scale);
    EXPECT_EQ(p.causal, 0);
    EXPECT_EQ(p.vt_dtype, k.vt_dtype);
    EXPECT_EQ(p.p_precision, k.vt_dtype == FP8ATTN_VT_FP16 ? FP8ATTN_P_FP16 : FP8ATTN_P_E4M3);
    EXPECT_EQ(p.lse_bias, k.options.smooth_k ? q.lse_bias : nullptr);
    EXPECT_EQ(p.o_bias, k.options.smooth_v ? k.v_mean : nullptr);

    // Random elements: the kernel's view (params) must address the byte the pre-pass wrote.
    const int64_t B = q.batch, SQ = q.seqlen_q, SK = k.seqlen_k, H = q.heads, HKV = k.heads_kv;
    const int64_t PAD = k.vt_seqlen_pad;
    for (int e = 0; e < 20; ++e) {
      const int64_t b = rng() % B, s = rng() % SQ, j = rng() % SK, h = rng() % H, g = rng() % HKV;
      const int64_t d = rng() % 128, pos = rng() % PAD, blk = rng() % c.nblk;
      // Q: E4M3 (b, sq, h, 128); q_descale (b, h, sq).
      EXPECT_EQ(at({{b, p.q_stride_b}, {s, p.q_stride_s}, {h, p.q_stride_h}, {d, 1}}, 1),
                (((b * SQ + s) * H + h) * 128 + d));
      EXPECT_EQ(at({{b, p.qd_stride_b}, {h, p.qd_stride_h}, {s, p.qd_stride_s}}, 4),
                ((b * H + h) * SQ + s) * 4);
      // K: E4M3 (b, sk, h_kv, 128); V^T: (b, h_kv, 128, pad).
      EXPECT_EQ(at({{b, p.k_stride_b}, {j, p.k_stride_s}, {g, p.k_stride_h}, {d, 1}}, 1),
                ((b * SK + j) * HKV + g) * 128 + d);
      EXPECT_EQ(at({{b, p.vt_stride_b}, {g, p.vt_stride_h}, {d, p.vt_stride_d}, {pos, 1}}, 1),
                ((b * HKV + g) * 128 + d) * PAD + pos);
      // k_descale (b, h_kv, nblk): per head every block reads the head's value (block 0's).
      const int64_t read_blk = k.options.k_scale == FP8ATTN_K_SCALE_HEAD ? 0 : blk;
      EXPECT_EQ(at({{b, p.kd_stride_b}, {g, p.kd_stride_h}, {blk, p.kd_stride_blk}}, 4),
                ((b * HKV + g) * c.nblk + read_blk) * 4);
      // v_descale and o_bias (the V mean): (b, h_kv, 128).
      EXPECT_EQ(at({{b, p.vd_stride_b}, {g, p.vd_stride_h}, {d, p.vd_stride_d}}, 4),
                ((b * HKV + g) * 128 + d) * 4);
      EXPECT_EQ(at({{b, p.ob_stride_b}, {g, p.ob_stride_h}, {d, 1}}, 4), ((b * HKV + g) * 128 + d) * 4);
      // O: BF16 (b, sq, h, 128) contiguous.
      EXPECT_EQ(at({{b, p.o_stride_b}, {s, p.o_stride_s}, {h, p.o_stride_h}, {d, 1}}, 2),
                (((b * SQ + s) * H + h) * 128 + d) * 2);
    }
    EXPECT_EQ(addr(p.q), addr(q.q));
    EXPECT_EQ(addr(p.k), addr(k.k));
    EXPECT_EQ(addr(p.vt), addr(k.vt));
    EXPECT_EQ(addr(p.q_descale), addr(q.q_descale));
    EXPECT_EQ(addr(p.k_descale), addr(k.k_descale));
    EXPECT_EQ(addr(p.v_descale), addr(k.v_descale));

    // The kernel accepts what the composition builds, and runs the blocks the K scale allows.
    EXPECT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_SUCCESS) << fp8attn_last_error();
    const KernelId e4m3 = k.options.k_scale != FP8ATTN_K_SCALE_HEAD
                              ? KernelId::kE4M3Block128
                              : fp8attn::attn::e4m3_head_scale_kernel(p);
    const KernelId fp16_vt =
        k.options.k_scale != FP8ATTN_K_SCALE_HEAD ? KernelId::kFP16VtBlock128
        : fp8attn::attn::fp16_vt_three_warpgroups(p.causal != 0, p.seqlen_q, p.seqlen_k, p.batch, p.heads)
            ? KernelId::kFP16VtTrioBlock128
            : KernelId::kFP16VtBlock192RowSum;
    EXPECT_EQ(select_kernel(p), k.vt_dtype == FP8ATTN_VT_FP16 ? fp16_vt : e4m3);
    if (testing::Test::HasFailure()) break;
  }
}

TEST(KernelParams, CallArgumentsApplied) {
  std::mt19937_64 rng(fp8attn::test::fresh_seed("KernelParams.CallArgumentsApplied"));
  for (int iter = 0; iter < 100; ++iter) {
    const Case c = random_case(rng);
    fp8attn_fwd_params p = poisoned();
    ASSERT_EQ(fp8attn_fwd_params_from_quant(&p, &c.qq, &c.cache, c.o, c.lse), FP8ATTN_SUCCESS);
    const fp8attn_fwd_params before = p;
    fp8attn_attention_args a{};  // (fp8attn_attention_args_init is in a CUDA file)
    a.causal = static_cast<int32_t>(rng() % 2);
    a.p_precision = static_cast<int32_t>(rng() % 3);
    const bool strided = rng() % 2;
    if (strided) {  // O inside a wider row: (b, sq, h, 128) with padded rows and heads
      a.o_stride_h = 128 + 8 * static_cast<int64_t>(rng() % 4);
      a.o_stride_s = a.o_stride_h * c.qq.heads + 8 * static_cast<int64_t>(rng() % 4);
      a.o_stride_b = a.o_stride_s * c.qq.seqlen_q;
    }
    fp8attn::compose::apply_call_args(a, &p);
    EXPECT_EQ(p.causal, a.causal);
    EXPECT_EQ(p.p_precision, a.p_precision);
    EXPECT_EQ(p.o_stride_b, strided ? a.o_stride_b : before.o_stride_b);
    EXPECT_EQ(p.o_stride_s, strided ? a.o_stride_s : before.o_stride_s);
    EXPECT_EQ(p.o_stride_h, strided ? a.o_stride_h : before.o_stride_h);
    // Nothing else moves.
    fp8attn_fwd_params rest = p;
    rest.causal = before.causal, rest.p_precision = before.p_precision;
    rest.o_stride_b = before.o_stride_b, rest.o_stride_s = before.o_stride_s;
    rest.o_stride_h = before.o_stride_h;
    EXPECT_EQ(std::memcmp(&rest, &before, sizeof rest), 0);
    EXPECT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_SUCCESS) << fp8attn_last_error();
    if (testing::Test::HasFailure()) break;
  }
}

// A refused call names the problem on the one error channel (both getters), leaves the
// parameters as they were, and the next successful call clears the message.
void expect_refused(const fp8attn_q_quant* q, const fp8attn_kv_cache* k, const std::string& words,
                    bool null_params = false) {
  fp8attn_fwd_params p = poisoned();
  const fp8attn_fwd_params before = p;
  EXPECT_EQ(fp8attn_fwd_params_from_quant(null_params ? nullptr : &p, q, k, fake<void>(10), nullptr),
            FP8ATTN_ERROR_INVALID_ARGUMENT);
  const std::string msg = fp8attn_last_error();
  EXPECT_NE(msg.find(words), std::string::npos) << "message: " << msg;
  EXPECT_EQ(msg, fp8attn_quant_last_error());
  EXPECT_EQ(std::memcmp(&p, &before, sizeof p), 0);
}

TEST(KernelParams, BadArgumentsRefusedOnTheOneChannel) {
  std::mt19937_64 rng(fp8attn::test::fresh_seed("KernelParams.BadArgumentsRefusedOnTheOneChannel"));
  const Case c = random_case(rng);
  expect_refused(&c.qq, &c.cache, "null", /*null_params=*/true);
  expect_refused(nullptr, &c.cache, "null");
  expect_refused(&c.qq, nullptr, "null");
  Case x = c;
  x.qq.q = nullptr;
  expect_refused(&x.qq, &x.cache, "null");
  x = c;
  x.cache.k = nullptr;
  expect_refused(&x.qq, &x.cache, "null");
  x = c;
  x.cache.batch = c.qq.batch + 1 + static_cast<int>(rng() % 3);
  expect_refused(&x.qq, &x.cache, "batch");
  x = c;
  x.cache.heads_kv = 0;
  expect_refused(&x.qq, &x.cache, "heads_kv");
  x = c;
  x.qq.heads = c.cache.heads_kv * 2 + 1, x.cache.heads_kv = 2;  // odd heads over 2 KV heads
  expect_refused(&x.qq, &x.cache, "heads_kv");

  fp8attn_fwd_params p;
  ASSERT_EQ(fp8attn_fwd_params_from_quant(&p, &c.qq, &c.cache, c.o, c.lse), FP8ATTN_SUCCESS);
  EXPECT_STREQ(fp8attn_last_error(), "");
  EXPECT_STREQ(fp8attn_quant_last_error(), "");
}

}  // namespace
