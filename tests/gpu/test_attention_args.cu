// Invalid arguments to fp8attn_attention_fwd: each gives FP8ATTN_ERROR_INVALID_ARGUMENT, the same
// status from fp8attn_check_fwd_params, a message that names what is wrong, and no device work
// (the poisoned output stays poisoned). Valid edge cases (empty batch or seqlen_q) succeed
// without writing. Validation needs no device, so these run on any machine; the launches that
// must succeed need an sm_90 device. (Valid unusual layouts: test_attention.cu, Layouts.)
#include <cctype>
#include <functional>

#include "attention_device_run.cuh"

namespace fp8attn::test {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Fake, well-aligned device-looking pointers: validation must reject before dereferencing.
fp8attn_fwd_params valid_params(int b = 2, int sq = 100, int sk = 300, int h = 4, int h_kv = 2) {
  // Fake device pointers (never dereferenced), 4 GiB apart so that no tensor's span meets
  // another's: the layout check rejects overlapping tensors.
  fp8attn_fwd_params p;
  fp8attn_fwd_params_init(&p, b, sq, sk, h, h_kv, 128);
  p.q = reinterpret_cast<void*>(uintptr_t{1} << 32);
  p.k = reinterpret_cast<void*>(uintptr_t{2} << 32);
  p.vt = reinterpret_cast<void*>(uintptr_t{3} << 32);
  p.o = reinterpret_cast<void*>(uintptr_t{4} << 32);
  return p;
}

struct BadCase {
  const char* name;
  std::function<void(fp8attn_fwd_params&)> mutate;
  std::vector<const char*> message_mentions;  // any of these (case-insensitive)
};

std::vector<BadCase> bad_cases() {
  return {
      {"head_dim_64", [](auto& p) { p.head_dim = 64; }, {"head_dim", "head dim"}},
      {"head_dim_256", [](auto& p) { p.head_dim = 256; }, {"head_dim", "head dim"}},
      {"heads_not_multiple_of_heads_kv", [](auto& p) { p.heads = 5, p.heads_kv = 2; }, {"heads"}},
      {"heads_kv_zero", [](auto& p) { p.heads_kv = 0; }, {"heads"}},
      {"negative_batch", [](auto& p) { p.batch = -1; }, {"batch", "negative"}},
      {"negative_seqlen_q", [](auto& p) { p.seqlen_q = -3; }, {"seqlen", "negative"}},
      {"seqlen_k_zero", [](auto& p) { p.seqlen_k = 0, p.vt_seqlen_pad = 0; }, {"seqlen_k"}},
      {"q_null", [](auto& p) { p.q = nullptr; }, {"null"}},
      {"k_null", [](auto& p) { p.k = nullptr; }, {"null"}},
      {"vt_null", [](auto& p) { p.vt = nullptr; }, {"null"}},
      {"o_null", [](auto& p) { p.o = nullptr; }, {"null"}},
      {"q_misaligned", [](auto& p) { p.q = static_cast<const uint8_t*>(p.q) + 1; }, {"align"}},
      {"k_misaligned", [](auto& p) { p.k = static_cast<const uint8_t*>(p.k) + 8; }, {"align"}},
      {"vt_misaligned", [](auto& p) { p.vt = static_cast<const uint8_t*>(p.vt) + 4; }, {"align"}},
      {"o_misaligned", [](auto& p) { p.o = static_cast<uint8_t*>(p.o) + 2; }, {"align"}},
      {"lse_misaligned", [](auto& p) { p.lse = reinterpret_cast<float*>(static_cast<uint8_t*>(p.o) + 2); }, {"align"}},
      {"q_stride_s_not_16", [](auto& p) { p.q_stride_s += 1; }, {"q_stride_s", "stride"}},
      {"q_stride_h_overlaps", [](auto& p) { p.q_stride_h = 64; }, {"q_stride_h", "stride"}},
      {"k_stride_b_zero", [](auto& p) { p.k_stride_b = 0; }, {"k_stride_b", "stride"}},
      {"k_stride_s_negative", [](auto& p) { p.k_stride_s = -512; }, {"k_stride_s", "stride"}},
      {"vt_stride_d_below_pad", [](auto& p) { p.vt_stride_d = p.vt_seqlen_pad - 32; }, {"vt_stride_d", "stride"}},
      {"vt_pad_not_multiple_of_32", [](auto& p) { p.vt_seqlen_pad = 310; }, {"vt_seqlen_pad"}},
      {"vt_pad_below_seqlen_k", [](auto& p) { p.vt_seqlen_pad = 288; }, {"vt_seqlen_pad"}},
      {"o_stride_s_not_8", [](auto& p) { p.o_stride_s += 4; }, {"o_stride_s", "stride"}},
      {"negative_descale_stride", [](auto& p) { p.qd_stride_s = -1; }, {"qd_stride_s", "stride"}},
      {"softmax_scale_zero", [](auto& p) { p.softmax_scale = 0.f; }, {"softmax_scale"}},
      {"softmax_scale_nan", [](auto& p) { p.softmax_scale = NAN; }, {"softmax_scale"}},
      {"causal_2", [](auto& p) { p.causal = 2; }, {"causal"}},
      {"p_precision_7", [](auto& p) { p.p_precision = 7; }, {"p_precision"}},
  };
}

class InvalidArgument : public ::testing::TestWithParam<BadCase> {};

TEST_P(InvalidArgument, IsRejectedWithAMessage) {
  fp8attn_fwd_params p = valid_params();
  ASSERT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_SUCCESS) << fp8attn_last_error();
  GetParam().mutate(p);
  EXPECT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_ERROR_INVALID_ARGUMENT);
  const std::string checked = fp8attn_last_error();
  // The pointers are fake: if validation let this through, the launch would fault. That is the
  // point: validation must come first.
  EXPECT_EQ(fp8attn_attention_fwd(&p, nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  const std::string msg = fp8attn_last_error();
  EXPECT_EQ(msg, checked) << "check and call must give the same reason";
  bool mentions = false;
  for (const char* word : GetParam().message_mentions) mentions |= lower(msg).find(word) != std::string::npos;
  EXPECT_TRUE(mentions) << "message does not name the problem (" << GetParam().message_mentions[0]
                        << "): \"" << msg << "\"";
  std::printf("    %s -> \"%s\"\n", GetParam().name, msg.c_str());
}

INSTANTIATE_TEST_SUITE_P(Params, InvalidArgument, ::testing::ValuesIn(bad_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(InvalidArgument, NullParams) {
  EXPECT_EQ(fp8attn_check_fwd_params(nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fp8attn_attention_fwd(nullptr, nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_last_error()), "");
}

TEST(InvalidArgument, CppWrapperThrowsWithStatus) {
  fp8attn_fwd_params p = valid_params();
  p.head_dim = 96;
  try {
    fp8attn::attention_fwd(p);
    FAIL() << "no exception";
  } catch (const fp8attn::Error& e) {
    EXPECT_EQ(e.status, FP8ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("head_dim"), std::string::npos) << e.what();
  }
}

// Empty outputs are valid and write nothing (documented in src/api.cu: nothing to do).
TEST(EmptyTensors, BatchOrSeqlenQZeroSucceedWithoutWriting) {
  FP8ATTN_REQUIRE_SM90();
  for (auto [b, sq] : {std::pair{0, 100}, std::pair{2, 0}}) {
    const Shape s{1, 8, 64, 2, 1, false};
    const Problem prob = make_problem(s, 3);
    DeviceRun run(prob);
    fp8attn_fwd_params p = run.params();
    p.batch = b, p.seqlen_q = sq;
    EXPECT_EQ(fp8attn_attention_fwd(&p, nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Output out;
    std::string why;
    EXPECT_TRUE(run.download(out, why)) << why;
    for (uint16_t x : out.o_bits) ASSERT_EQ(x, 0xFFFF) << "an empty call wrote O";
  }
}

}  // namespace
}  // namespace fp8attn::test
