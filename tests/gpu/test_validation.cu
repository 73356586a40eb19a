// Every entry point (kernel alone, pre-pass, end to end) validates all of its arguments before
// any device work: a bad call returns FP8ATTN_ERROR_INVALID_ARGUMENT, names the argument in its
// message, and launches nothing. "Nothing" is measured: the call is made while its stream is
// being captured (relaxed mode), and the captured graph must have no node; the outputs keep
// their poison and the end-to-end workspace does not grow.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fp8attn/attention.h"
#include "tests/common/attention_args.h"
#include "fp8attn/fp8attn.h"
#include "fp8attn/quant.h"
#include "tests/common/sm90.cuh"

namespace {

constexpr int kD = 128;

struct Buf {
  void* p = nullptr;
  explicit Buf(size_t n, int fill = 0) {
    if (cudaMalloc(&p, n) == cudaSuccess) cudaMemset(p, fill, n);
  }
  ~Buf() { cudaFree(p); }
  template <class T = void>
  T* as(size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(p) + byte_offset);
  }
};

// Runs `call` while `st` is being captured; returns its status and the number of captured nodes.
std::pair<fp8attn_status, size_t> captured(const std::function<fp8attn_status(cudaStream_t)>& call) {
  cudaStream_t st;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed);
  const fp8attn_status s = call(st);
  cudaGraph_t g = nullptr;
  size_t nodes = ~size_t{0};
  if (cudaStreamEndCapture(st, &g) == cudaSuccess && g) {
    cudaGraphGetNodes(g, nullptr, &nodes);
    cudaGraphDestroy(g);
  }
  cudaStreamDestroy(st);
  return {s, nodes};
}

// A valid kernel-alone call: b 2, sq 300, sk 517, h 4, h_kv 2, contiguous, outputs in one buffer
// each; the inputs' contents do not matter (nothing runs).
struct KernelCall {
  Buf q{2 * 300 * 4 * kD}, k{2 * 517 * 2 * kD}, vt{2 * 2 * kD * 544}, o{2 * 300 * 4 * kD * 2 * 2, 0xFF},
      lse{2 * 4 * 300 * 4 * 2, 0xFF};
  fp8attn_fwd_params p;
  KernelCall() {
    fp8attn_fwd_params_init(&p, 2, 300, 517, 4, 2, kD);
    p.q = q.p, p.k = k.p, p.vt = vt.p, p.o = o.p, p.lse = lse.as<float>();
  }
};

struct BadKernelCase {
  const char* name;
  std::function<void(KernelCall&)> edit;
  const char* message;  // a word the message must contain
};

TEST(Validation, KernelAloneRefusesBeforeAnyLaunch) {
  FP8ATTN_REQUIRE_SM90();
  const std::vector<BadKernelCase> cases = {
      {"causal 2", [](KernelCall& c) { c.p.causal = 2; }, "causal"},
      {"p_precision 7", [](KernelCall& c) { c.p.p_precision = 7; }, "p_precision"},
      {"NaN scale", [](KernelCall& c) { c.p.softmax_scale = NAN; }, "softmax_scale"},
      {"o_stride_h < 128", [](KernelCall& c) { c.p.o_stride_h = 64, c.p.o_stride_s = 4 * 64; }, "o_stride_h"},
      {"O rows overlap", [](KernelCall& c) { c.p.o_stride_s = 256; }, "overlap"},
      {"O over LSE", [](KernelCall& c) { c.p.lse = c.o.as<float>(1024); }, "lse"},
      {"O over Q", [](KernelCall& c) { c.p.o = c.q.p; }, "q"},
      {"LSE over K", [](KernelCall& c) { c.p.lse = c.k.as<float>(); }, "k"},
      {"O over V^T", [](KernelCall& c) { c.p.o = c.vt.p; }, "vt"},
      {"null q", [](KernelCall& c) { c.p.q = nullptr; }, "q"},
      {"head_dim 64", [](KernelCall& c) { c.p.head_dim = 64; }, "head_dim"},
      {"q_stride_s 8", [](KernelCall& c) { c.p.q_stride_s = 8; }, "q_stride_s"},
  };
  for (const auto& bc : cases) {
    KernelCall c;
    bc.edit(c);
    const auto [s, nodes] = captured([&](cudaStream_t st) { return fp8attn_attention_fwd(&c.p, st); });
    const std::string msg = fp8attn_last_error();
    EXPECT_EQ(s, FP8ATTN_ERROR_INVALID_ARGUMENT) << bc.name;
    EXPECT_EQ(nodes, 0u) << bc.name << ": work was captured before the error";
    EXPECT_NE(msg.find(bc.message), std::string::npos) << bc.name << ": message '" << msg << "'";
  }
  // And a valid call does capture its launch (the detector can see work).
  KernelCall good;
  const auto [s, nodes] = captured([&](cudaStream_t st) { return fp8attn_attention_fwd(&good.p, st); });
  EXPECT_EQ(s, FP8ATTN_SUCCESS) << fp8attn_last_error();
  EXPECT_GE(nodes, 1u);
}

// End to end: b 1, sq 256, sk 300, h 4, h_kv 2.
struct E2ECall {
  static constexpr int B = 1, SQ = 256, SK = 300, H = 4, HKV = 2;
  Buf q{size_t(B) * SQ * H * kD * 2}, k{size_t(B) * SK * HKV * kD * 2}, v{size_t(B) * SK * HKV * kD * 2},
      o{size_t(B) * SQ * H * kD * 2, 0xFF}, lse{size_t(B) * H * SQ * 4, 0xFF};
  fp8attn_attention_args a =
      fp8attn::test::contiguous_attention_args(q.p, k.p, v.p, o.p, lse.as<float>(), B, SQ, SK, H, HKV);
};

struct BadE2ECase {
  const char* name;
  std::function<void(E2ECall&)> edit;
  const char* message;
};

TEST(Validation, EndToEndRefusesBeforeThePrePass) {
  FP8ATTN_REQUIRE_SM90();
  const std::vector<BadE2ECase> cases = {
      {"causal 3", [](E2ECall& c) { c.a.causal = 3; }, "causal"},
      {"p_precision -1", [](E2ECall& c) { c.a.p_precision = -1; }, "p_precision"},
      {"NaN scale", [](E2ECall& c) { c.a.softmax_scale = NAN; }, "softmax_scale"},
      {"negative scale", [](E2ECall& c) { c.a.softmax_scale = -1.f; }, "softmax_scale"},
      {"o_stride_h 64", [](E2ECall& c) { c.a.o_stride_b = 1 << 20, c.a.o_stride_s = 512, c.a.o_stride_h = 64; }, "o_stride_h"},
      {"O rows overlap", [](E2ECall& c) { c.a.o_stride_b = 1 << 20, c.a.o_stride_s = 128, c.a.o_stride_h = 128; }, "overlap"},
      {"O over Q", [](E2ECall& c) { c.a.o = c.q.p; }, "q"},
      {"LSE over V", [](E2ECall& c) { c.a.lse = c.v.as<float>(); }, "v"},
      {"O over LSE", [](E2ECall& c) { c.a.lse = static_cast<float*>(c.a.o); }, "lse"},
      {"bad v_scale", [](E2ECall& c) { c.a.quant.v_scale = 99; }, "v_scale"},
  };
  for (const auto& bc : cases) {
    E2ECall c;
    bc.edit(c);
    fp8attn_workspace* ws = fp8attn_workspace_create();
    const auto [s, nodes] = captured([&](cudaStream_t st) { return fp8attn_attention(&c.a, ws, st); });
    const std::string msg = fp8attn_quant_last_error();
    EXPECT_EQ(s, FP8ATTN_ERROR_INVALID_ARGUMENT) << bc.name;
    EXPECT_EQ(nodes, 0u) << bc.name << ": work was captured before the error";
    EXPECT_NE(msg.find(bc.message), std::string::npos) << bc.name << ": message '" << msg << "'";
    EXPECT_EQ(fp8attn_workspace_size(ws), 0u) << bc.name << ": the workspace grew";
    fp8attn_workspace_destroy(ws);
  }
}

TEST(Validation, PrePassRefusesBeforeAnyLaunch) {
  FP8ATTN_REQUIRE_SM90();
  const int B = 1, SK = 300, HKV = 2, SQ = 64, H = 4;
  Buf k(size_t(B) * SK * HKV * kD * 2), v(size_t(B) * SK * HKV * kD * 2), q(size_t(B) * SQ * H * kD * 2);
  const size_t cache_bytes = fp8attn_kv_cache_bytes(B, SK, HKV, kD, 0);
  const size_t work_bytes = fp8attn_quantize_kv_workspace_bytes(B, SK, HKV);
  const size_t qq_bytes = fp8attn_q_quant_bytes(B, SQ, H, kD);
  Buf cache_buf(cache_bytes), work(work_bytes), qq_buf(qq_bytes);
  fp8attn_kv_cache cache;
  ASSERT_EQ(fp8attn_kv_cache_init(&cache, cache_buf.p, cache_bytes, B, SK, HKV, kD, 0), FP8ATTN_SUCCESS);
  fp8attn_q_quant qq;
  ASSERT_EQ(fp8attn_q_quant_init(&qq, qq_buf.p, qq_bytes, B, SQ, H, kD), FP8ATTN_SUCCESS);
  fp8attn_bf16_tensor tk{k.p, B, SK, HKV, kD, int64_t(SK) * HKV * kD, int64_t(HKV) * kD, kD};
  fp8attn_bf16_tensor tv{v.p, B, SK, HKV, kD, int64_t(SK) * HKV * kD, int64_t(HKV) * kD, kD};
  fp8attn_bf16_tensor tq{q.p, B, SQ, H, kD, int64_t(SQ) * H * kD, int64_t(H) * kD, kD};
  fp8attn_quant_options opt;
  fp8attn_quant_options_init(&opt);
  struct Case {
    const char* name;
    std::function<fp8attn_status(cudaStream_t)> call;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"kv: workspace too small",
       [&](cudaStream_t st) { return fp8attn_quantize_kv(&tk, &tv, &opt, &cache, work.p, work_bytes / 2, st); },
       "workspace"},
      {"kv: v shape differs",
       [&](cudaStream_t st) {
         fp8attn_bf16_tensor bad = tv;
         bad.seqlen = SK - 1;
         return fp8attn_quantize_kv(&tk, &bad, &opt, &cache, work.p, work_bytes, st);
       },
       "differ"},
      {"kv: unknown k_scale",
       [&](cudaStream_t st) {
         fp8attn_quant_options bad = opt;
         bad.k_scale = 42;
         return fp8attn_quantize_kv(&tk, &tv, &bad, &cache, work.p, work_bytes, st);
       },
       "k_scale"},
      {"q: NaN softmax_scale",
       [&](cudaStream_t st) { return fp8attn_quantize_q(&tq, &cache, FP8ATTN_Q_SCALE_TOKEN, NAN, &qq, st); },
       "softmax_scale"},
      {"q: unknown q_scale",
       [&](cudaStream_t st) { return fp8attn_quantize_q(&tq, &cache, 9, 0.1f, &qq, st); }, "q_scale"},
      {"qkv: q stride not a multiple of 8",
       [&](cudaStream_t st) {
         fp8attn_bf16_tensor bad = tq;
         bad.stride_s = 3;
         return fp8attn_quantize_qkv(&bad, &tk, &tv, &opt, 0.1f, &cache, &qq, work.p, work_bytes, st);
       },
       "strides"},
  };
  for (const auto& c : cases) {
    const auto [s, nodes] = captured(c.call);
    const std::string msg = fp8attn_quant_last_error();
    EXPECT_EQ(s, FP8ATTN_ERROR_INVALID_ARGUMENT) << c.name;
    EXPECT_EQ(nodes, 0u) << c.name << ": work was captured before the error";
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": message '" << msg << "'";
  }
}

}  // namespace
