// The attention API's argument checks and kernel selection, on the CPU: validate() makes no CUDA
// call, so every rejection is tested here without a GPU (tests/CMakeLists.txt compiles
// src/attn/validate.cc and status.cc into this test).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "attn/select.h"
#include "attn/validate.h"
#include "fp8attn/fp8attn.h"

namespace {
using fp8attn::attn::KernelId;
using fp8attn::attn::select_kernel;
using fp8attn::attn::validate;

// A valid call's parameters with fake (aligned, never dereferenced) device pointers, 4 GiB apart
// so that no tensor's span meets another's (the layout check rejects overlapping outputs).
fp8attn_fwd_params valid_params(std::mt19937& rng) {
  std::uniform_int_distribution<int> len(1, 5000), hkv(1, 8), group(1, 4);
  const int heads_kv = hkv(rng);
  fp8attn_fwd_params p;
  fp8attn_fwd_params_init(&p, 1 + len(rng) % 4, len(rng), len(rng), heads_kv * group(rng), heads_kv, 128);
  p.q = reinterpret_cast<void*>(uintptr_t{1} << 32);
  p.k = reinterpret_cast<void*>(uintptr_t{2} << 32);
  p.vt = reinterpret_cast<void*>(uintptr_t{3} << 32);
  p.o = reinterpret_cast<void*>(uintptr_t{4} << 32);
  return p;
}

// valid_params with these lengths and mask (the selection tests' rows).
fp8attn_fwd_params with_lengths(std::mt19937& rng, int sq, int sk, int causal) {
  fp8attn_fwd_params p = valid_params(rng);
  p.seqlen_q = sq;
  p.seqlen_k = sk;
  p.causal = causal;
  return p;
}

void expect_rejected(const fp8attn_fwd_params& p, const std::string& names) {
  EXPECT_EQ(validate(&p), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_last_error()).find(names), std::string::npos)
      << "message: " << fp8attn_last_error();
  EXPECT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_ERROR_INVALID_ARGUMENT);
}

TEST(AttentionValidate, AcceptsValidParams) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 20; ++i) {
    fp8attn_fwd_params p = valid_params(rng);
    p.causal = static_cast<int32_t>(rng() % 2);
    p.p_precision = static_cast<int32_t>(rng() % 3);
    EXPECT_EQ(validate(&p), FP8ATTN_SUCCESS) << fp8attn_last_error();
  }
}

TEST(AttentionValidate, UnknownPPrecisionNamesIt) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 20; ++i) {
    fp8attn_fwd_params p = valid_params(rng);
    do p.p_precision = static_cast<int32_t>(rng()); while (p.p_precision >= 0 && p.p_precision <= 3);
    expect_rejected(p, "p_precision");
    EXPECT_EQ(select_kernel(p), KernelId::kInvalid);
  }
}

// FP8ATTN_P_E4M3_EXACT runs 192-key blocks only: a per-block K descale is refused by name, one
// per head (stride 0 along blocks, or no K descale) accepted.
TEST(AttentionValidate, ExactSoftmaxTakesOneKDescalePerHead) {
  std::mt19937 rng(std::random_device{}());
  static float kd[4];
  for (int i = 0; i < 20; ++i) {
    fp8attn_fwd_params p = valid_params(rng);
    p.p_precision = FP8ATTN_P_E4M3_EXACT;
    EXPECT_EQ(validate(&p), FP8ATTN_SUCCESS) << fp8attn_last_error();
    p.k_descale = kd;
    p.kd_stride_h = 0, p.kd_stride_b = 0, p.kd_stride_blk = 0;
    EXPECT_EQ(validate(&p), FP8ATTN_SUCCESS) << fp8attn_last_error();
    p.kd_stride_blk = 1 + rng() % 7;
    expect_rejected(p, "FP8ATTN_P_E4M3_EXACT");
    EXPECT_EQ(select_kernel(p), KernelId::kInvalid);
  }
}

TEST(AttentionValidate, UnknownCausalNamesIt) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 20; ++i) {
    fp8attn_fwd_params p = valid_params(rng);
    do p.causal = static_cast<int32_t>(rng()); while (p.causal == 0 || p.causal == 1);
    expect_rejected(p, "causal");
  }
}

TEST(AttentionValidate, OtherArgumentsNamed) {
  std::mt19937 rng(std::random_device{}());
  fp8attn_fwd_params p = valid_params(rng);
  p.head_dim = 64;
  expect_rejected(p, "head_dim");
  p = valid_params(rng);
  p.kd_stride_blk = -1 - static_cast<int64_t>(rng() % 100);
  expect_rejected(p, "kd_stride_blk");
  p = valid_params(rng);
  p.softmax_scale = -1.f;
  expect_rejected(p, "softmax_scale");
  p = valid_params(rng);
  p.heads = p.heads_kv * 2 + 1;
  if (p.heads % p.heads_kv == 0) p.heads_kv = 2, p.heads = 3;
  expect_rejected(p, "heads");
  EXPECT_EQ(validate(nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
}

// E4M3 P with one K descale per head: every call, causal or not, takes the TMA-store kernel with
// the fused row sums, at any length; the exact softmax (FP8ATTN_P_E4M3_EXACT) its own TMA-store
// kernel, both masks.
TEST(AttentionSelect, DefaultAndExactTmaStoreBothMasks) {
  std::mt19937 rng(std::random_device{}());
  const struct {
    int sq, sk, causal;
  } cases[] = {{1024, 1024, 1}, {1024, 1024, 0}, {2048, 2048, 0},  {2048, 2048, 1},  {2049, 2049, 1},
               {4096, 4096, 1}, {4096, 4096, 0}, {8192, 8192, 1},  {8192, 8192, 0},  {2048, 16384, 1},
               {16384, 2048, 1}, {1, 1024, 0},   {1, 1025, 0},     {1, 1025, 1},     {1, 2049, 0},
               {1, 65536, 1},   {1, 1, 0},       {1, 1, 1},        {300, 77, 0},     {77, 300, 1}};
  for (const auto& c : cases) {
    fp8attn_fwd_params p = with_lengths(rng, c.sq, c.sk, c.causal);
    p.p_precision = FP8ATTN_P_E4M3;
    EXPECT_EQ(select_kernel(p), KernelId::kE4M3Block192Trim)
        << "sq " << c.sq << " sk " << c.sk << " causal " << c.causal;
    p.p_precision = FP8ATTN_P_E4M3_EXACT;
    EXPECT_EQ(select_kernel(p), KernelId::kE4M3ExactBlock192Trim)
        << "exact: sq " << c.sq << " sk " << c.sk << " causal " << c.causal;
  }
}

// Causal L2 sections balanced exactly where tiles visit more than kBalancedSectionKeys keys on
// average (bottom-right causal), whatever the mask and the kernel.
TEST(AttentionSelect, BalancedSectionsBeyondShortestTiles) {
  std::mt19937 rng(std::random_device{}());
  const struct {
    int sq, sk, causal;
    bool balanced;
  } cases[] = {{1024, 1024, 1, false}, {2048, 2048, 1, false}, {2049, 2049, 1, false},
               {2050, 2050, 1, true},  {4096, 4096, 1, true},  {2048, 16384, 1, true},
               {8192, 8192, 1, true},  {16384, 2048, 1, false}, {1, 1025, 1, false},
               {1, 1026, 1, true},     {1024, 1024, 0, false}, {1, 1025, 0, true}};
  for (const auto& c : cases) {
    const fp8attn_fwd_params p = with_lengths(rng, c.sq, c.sk, c.causal);
    EXPECT_EQ(fp8attn::attn::balanced_sections(p), c.balanced)
        << "sq " << c.sq << " sk " << c.sk << " causal " << c.causal;
  }
}

// The selection is what the library shipped before it became a function: E4M3 P one-level with
// 192-key blocks, 128 with a per-block K descale; hi+lo two-level; FP16 one configuration.
TEST(AttentionSelect, FollowsPrecisionAndKScaleGranularity) {
  std::mt19937 rng(std::random_device{}());
  static float kd[4];
  for (int i = 0; i < 20; ++i) {
    fp8attn_fwd_params p = valid_params(rng);
    p.p_precision = FP8ATTN_P_E4M3;
    // The mask rule itself is pinned by CausalTmaStoreNonCausalRegisterEpilogue.
    const KernelId e4m3 = fp8attn::attn::e4m3_head_scale_kernel(p);
    EXPECT_EQ(select_kernel(p), e4m3);
    p.k_descale = kd;  // one per head: stride 0 along blocks
    EXPECT_EQ(select_kernel(p), e4m3);
    p.kd_stride_blk = 1 + rng() % 7;
    EXPECT_EQ(select_kernel(p), KernelId::kE4M3Block128);
    p.p_precision = FP8ATTN_P_E4M3_HILO;
    EXPECT_EQ(select_kernel(p), KernelId::kE4M3HiLoTwoLevel);
    p.kd_stride_blk = 0;
    EXPECT_EQ(select_kernel(p), KernelId::kE4M3HiLoTwoLevel);
    p.p_precision = FP8ATTN_P_FP16;
    EXPECT_EQ(select_kernel(p), KernelId::kFP16Block128);
    p.kd_stride_blk = 1 + rng() % 7;
    EXPECT_EQ(select_kernel(p), KernelId::kFP16Block128);
    // FP16 V^T: the TMA-loaded kernel, 128-key blocks for a per-block K descale, 192 for one
    // per head (l from the tensor core), either mask; with any E4M3 P, none.
    p.vt_dtype = FP8ATTN_VT_FP16;
    EXPECT_EQ(select_kernel(p), KernelId::kFP16VtBlock128);
    p.kd_stride_blk = 0;
    EXPECT_EQ(select_kernel(p), KernelId::kFP16VtBlock192RowSum);
    p.k_descale = nullptr;  // no K descale: one (of 1) per head
    EXPECT_EQ(select_kernel(p), KernelId::kFP16VtBlock192RowSum);
    p.causal = 1 - p.causal;
    EXPECT_EQ(select_kernel(p), KernelId::kFP16VtBlock192RowSum);
    {
      // Long non-causal calls with many 192-row tiles: the three-warpgroup form; causal, fewer
      // keys or fewer tiles: the 192-key kernel.
      fp8attn_fwd_params l = p;
      l.causal = 0, l.seqlen_k = 8192 + static_cast<int>(rng() % 8192), l.batch = 1, l.heads = 64;
      l.seqlen_q = 192 * 16;  // 16 tiles x 64 heads = 1024
      EXPECT_EQ(select_kernel(l), KernelId::kFP16VtTrioBlock128);
      l.seqlen_q -= 192;  // 960 tiles
      EXPECT_EQ(select_kernel(l), KernelId::kFP16VtBlock192RowSum);
      l.seqlen_q += 192, l.seqlen_k = 8191;
      EXPECT_EQ(select_kernel(l), KernelId::kFP16VtBlock192RowSum);
      l.seqlen_k = 8192, l.causal = 1;
      EXPECT_EQ(select_kernel(l), KernelId::kFP16VtBlock192RowSum);
    }
    p.k_descale = kd;
    p.p_precision = rng() % 2 ? FP8ATTN_P_E4M3 : FP8ATTN_P_E4M3_HILO;
    EXPECT_EQ(select_kernel(p), KernelId::kInvalid);
    p.vt_dtype = 2 + static_cast<int>(rng() % 100);
    p.p_precision = FP8ATTN_P_FP16;
    EXPECT_EQ(select_kernel(p), KernelId::kInvalid);
    p.vt_dtype = FP8ATTN_VT_E4M3;
  }
}

}  // namespace
