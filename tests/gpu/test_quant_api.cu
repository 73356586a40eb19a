// The pre-pass API's host side (include/fp8attn/quant.h, src/quant/quant_api.cu): bad arguments
// refused with a clear message before any device work (and the cache's record of its options
// left untouched), the option defaults the numerics study decided, and the kernel parameters
// composed from a quantized Q and a KV cache carrying the K scale granularity. Host-only (buffers
// never dereferenced): these run, and must pass, without a GPU. The GPU pre-pass's bytes against
// the CPU mirror: tests/gpu/test_quant.cu.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "fp8attn/attention.h"  // fp8attn_fwd_params_from_quant; includes quant.h

namespace {

// Argument checks run before any device work, so these run without a GPU too.
TEST(QuantApi, RefusesBadArgumentsWithAClearMessage) {
  alignas(256) static unsigned char fake[256];  // never dereferenced: validation fails first
  void* buf = fake;
  fp8attn_kv_cache cache{};
  EXPECT_EQ(fp8attn_kv_cache_init(&cache, buf, 1, 1, 64, 2, 128, 0),
            FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("bytes"), std::string::npos)
      << fp8attn_quant_last_error();
  EXPECT_EQ(fp8attn_kv_cache_init(&cache, buf, size_t(1) << 40, 1, 64, 2, 128, 40),
            FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("vt_seqlen_pad"), std::string::npos);
  ASSERT_EQ(fp8attn_kv_cache_init(&cache, buf, size_t(1) << 40, 1, 64, 2, 128, 0),
            FP8ATTN_SUCCESS) << fp8attn_quant_last_error();

  fp8attn_bf16_tensor k{buf, 1, 64, 2, 64, 64 * 2 * 64, 2 * 64, 64};
  fp8attn_quant_options opt;
  fp8attn_quant_options_init(&opt);
  EXPECT_EQ(fp8attn_quantize_kv(&k, &k, &opt, &cache, buf, size_t(1) << 40, nullptr),
            FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("head_dim"), std::string::npos)
      << fp8attn_quant_last_error();

  fp8attn_bf16_tensor misaligned{static_cast<char*>(buf) + 2, 1, 64, 2, 128, 64 * 2 * 128,
                                 2 * 128, 128};
  EXPECT_EQ(fp8attn_quantize_kv(&misaligned, &misaligned, &opt, &cache, buf, size_t(1) << 40,
                                nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("aligned"), std::string::npos);

  fp8attn_bf16_tensor ok{buf, 1, 64, 2, 128, 64 * 2 * 128, 2 * 128, 128};
  EXPECT_EQ(fp8attn_quantize_kv(&ok, &ok, &opt, &cache, buf, 16, nullptr),
            FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("workspace"), std::string::npos);
  // One bad option at a time: refused with a message naming it.
  auto refused_naming = [&](const char* option) {
    EXPECT_EQ(fp8attn_quantize_kv(&ok, &ok, &opt, &cache, buf, size_t(1) << 40, nullptr),
              FP8ATTN_ERROR_INVALID_ARGUMENT) << option;
    EXPECT_NE(std::string(fp8attn_quant_last_error()).find(option), std::string::npos) << option;
  };
  opt.v_scale = 7;
  refused_naming("v_scale");
  opt.v_scale = FP8ATTN_V_SCALE_CHANNEL;
  opt.k_scale = 7;
  refused_naming("k_scale");
  opt.k_scale = FP8ATTN_K_SCALE_HEAD;
  opt.centre = 2;
  refused_naming("centre");
  opt.centre = FP8ATTN_CENTRE_SAMPLE;
  opt.reserved = 1;
  refused_naming("reserved");
  opt.reserved = 0;

  fp8attn_q_quant qq{};
  ASSERT_EQ(fp8attn_q_quant_init(&qq, buf, size_t(1) << 40, 1, 64, 3, 128), FP8ATTN_SUCCESS);
  fp8attn_bf16_tensor q3{buf, 1, 64, 3, 128, 64 * 3 * 128, 3 * 128, 128};
  EXPECT_EQ(fp8attn_quantize_q(&q3, &cache, 0, 0.1f, &qq, nullptr),
            FP8ATTN_ERROR_INVALID_ARGUMENT);  // 3 heads over 2 kv heads
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("heads"), std::string::npos);

  // fp8attn_quantize_qkv checks Q as well before it launches anything, and leaves the cache's
  // record of its options untouched when it refuses.
  fp8attn_quant_options_init(&opt);
  cache.options.hadamard_seed = 42;
  EXPECT_EQ(fp8attn_quantize_qkv(&q3, &ok, &ok, &opt, 0.1f, &cache, &qq, buf, size_t(1) << 40,
                                 nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("heads"), std::string::npos)
      << fp8attn_quant_last_error();
  EXPECT_EQ(cache.options.hadamard_seed, 42u);
  fp8attn_q_quant qq2{};
  ASSERT_EQ(fp8attn_q_quant_init(&qq2, buf, size_t(1) << 40, 1, 64, 2, 128), FP8ATTN_SUCCESS);
  opt.q_scale = 9;
  EXPECT_EQ(fp8attn_quantize_qkv(&ok, &ok, &ok, &opt, 0.1f, &cache, &qq2, buf, size_t(1) << 40,
                                 nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("q_scale"), std::string::npos)
      << fp8attn_quant_last_error();
  opt.q_scale = FP8ATTN_Q_SCALE_TOKEN;
  EXPECT_EQ(fp8attn_quantize_qkv(&ok, &misaligned, &ok, &opt, 0.1f, &cache, &qq2, buf,
                                 size_t(1) << 40, nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("aligned"), std::string::npos);
  EXPECT_EQ(fp8attn_quantize_qkv(&ok, &ok, &ok, &opt, 0.1f, &cache, nullptr, buf, size_t(1) << 40,
                                 nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_quant_last_error()).find("q_quant"), std::string::npos);
  EXPECT_EQ(cache.options.hadamard_seed, 42u);
}

// The defaults are the numerics study's decision (docs/numerics-report.md): smoothing on,
// Hadamard on, Q per token, K per head, V per channel. Runs without a GPU.
TEST(QuantApi, DefaultsAreTheNumericsDecision) {
  fp8attn_quant_options o;
  std::memset(&o, 0x5A, sizeof o);
  fp8attn_quant_options_init(&o);
  EXPECT_EQ(o.smooth_k, 1);
  EXPECT_EQ(o.smooth_v, 1);
  EXPECT_EQ(o.hadamard_qk, 1);
  EXPECT_EQ(o.q_scale, FP8ATTN_Q_SCALE_TOKEN);
  EXPECT_EQ(o.k_scale, FP8ATTN_K_SCALE_HEAD);
  EXPECT_EQ(o.v_scale, FP8ATTN_V_SCALE_CHANNEL);
  EXPECT_NE(o.hadamard_seed, 0u);
  EXPECT_EQ(o.centre, FP8ATTN_CENTRE_MEAN);
  EXPECT_EQ(o.reserved, 0);
  EXPECT_EQ(sizeof(fp8attn_quant_options), 40u);  // python/fp8attn/capi.py mirrors the layout
  const fp8attn::QuantOptions cpp = fp8attn::default_quant_options();
  EXPECT_EQ(std::memcmp(&cpp, &o, sizeof o), 0);
  EXPECT_STREQ(fp8attn_quant_variant(), "v2");
}

// fp8attn_fwd_params_from_quant: per-head K descales go with kd_stride_blk = 0 (so the kernel
// runs its 192-key blocks), per-block ones with 1; both pass the kernel's validation. Host-only
// (never dereferenced), runs without a GPU.
TEST(QuantApi, ParamsCarryTheKScaleGranularity) {
  alignas(256) static unsigned char fake[256];
  fp8attn_kv_cache cache{};
  ASSERT_EQ(fp8attn_kv_cache_init(&cache, fake, size_t(1) << 40, 2, 300, 2, 128, 0),
            FP8ATTN_SUCCESS) << fp8attn_quant_last_error();
  fp8attn_q_quant qq{};
  ASSERT_EQ(fp8attn_q_quant_init(&qq, fake, size_t(1) << 40, 2, 77, 4, 128), FP8ATTN_SUCCESS);
  qq.softmax_scale = 0.1f;
  for (const int k_scale : {FP8ATTN_K_SCALE_HEAD, FP8ATTN_K_SCALE_BLOCK128}) {
    cache.options.k_scale = k_scale;
    fp8attn_fwd_params p{};
    // O far from the fake buffer the cache and Q claim (the layout check rejects an O that
    // overlaps an input).
    void* o = reinterpret_cast<void*>(uintptr_t{1} << 44);
    ASSERT_EQ(fp8attn_fwd_params_from_quant(&p, &qq, &cache, o, nullptr), FP8ATTN_SUCCESS)
        << fp8attn_quant_last_error();
    EXPECT_EQ(p.kd_stride_blk, k_scale == FP8ATTN_K_SCALE_HEAD ? 0 : 1);
    EXPECT_EQ(p.kd_stride_h, 3);  // ceil(300 / 128) entries per head either way
    EXPECT_EQ(p.kd_stride_b, 6);
    EXPECT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_SUCCESS) << fp8attn_last_error();
  }
}

}  // namespace
