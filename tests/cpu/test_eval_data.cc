// Captured-data input of fp8attn-eval: q, k, v (b, s, h, d) BF16 from safetensors, GQA kv heads
// following a subset of query heads, and malformed inputs rejected with the file named.
#include <gtest/gtest.h>

#include <cstdio>

#include "model/codecs.h"
#include "model/evaluate.h"
#include "model/safetensors.h"
#include "model/synthetic.h"

namespace fm = fp8attn::model;

namespace {

std::string write_qkv(const fm::Dataset& d, const std::string& name, bool drop_v = false) {
  fm::SafeTensors st;
  auto put = [&](const char* n, const fm::Tensor& t) {
    st.tensors[n] = fm::StTensor::from_floats(t.data.data(), {t.b, t.s, t.h, t.d}, fm::DType::BF16);
  };
  put("q", d.q);
  put("k", d.k);
  if (!drop_v) put("v", d.v);
  st.metadata["source"] = "synthetic";
  const std::string path = ::testing::TempDir() + name;
  fm::write_safetensors(path, st);
  return path;
}

}  // namespace

TEST(EvalData, LoadsWithHeadSubsetAndGQA) {
  const fm::Dataset d = fm::make_synthetic("outlier", 2, 64, 8, 2, 128, 3);  // 4 query heads per kv head
  const std::string path = write_qkv(d, "qkv.safetensors");
  const fm::Dataset all = fm::load_dataset(path);
  EXPECT_EQ(all.name, "qkv");
  EXPECT_EQ(all.q.data, d.q.data);
  EXPECT_EQ(all.k.data, d.k.data);
  EXPECT_EQ(all.v.data, d.v.data);
  // 2 of 8 heads: heads 0 and 4, which use kv heads 0 and 1; the subset keeps h / h_kv = 1.
  const fm::Dataset sub = fm::load_dataset(path, 2, 1);
  ASSERT_EQ(sub.q.h, 2);
  ASSERT_EQ(sub.k.h, 2);
  ASSERT_EQ(sub.q.b, 1);
  for (int s = 0; s < 64; ++s)
    for (int c = 0; c < 128; ++c) {
      ASSERT_EQ(sub.q(0, s, 1, c), d.q(0, s, 4, c));
      ASSERT_EQ(sub.k(0, s, 1, c), d.k(0, s, 1, c));
      ASSERT_EQ(sub.v(0, s, 0, c), d.v(0, s, 0, c));
    }
  // 4 of 8: heads 0, 2, 4, 6 on kv heads 0, 0, 1, 1.
  const fm::Dataset sub4 = fm::load_dataset(path, 4);
  EXPECT_EQ(sub4.q.h, 4);
  EXPECT_EQ(sub4.k.h, 2);
  // The synthetic generator gives a subset the same data as the full set.
  const fm::Dataset gen = fm::make_synthetic("outlier", 2, 64, 8, 2, 128, 3, fm::head_subset(8, 4));
  EXPECT_EQ(gen.q.data, sub4.q.data);
  EXPECT_EQ(gen.k.data, sub4.k.data);
  // And the evaluation runs on it.
  const auto recs = fm::evaluate(sub4, true, {fm::scheme_by_name("fp8attn-kernel")}, fm::EvalOptions{});
  EXPECT_EQ(recs.size(), 6u);
  std::remove(path.c_str());
}

TEST(EvalData, RejectsMissingOrMisshapenTensors) {
  const fm::Dataset d = fm::make_synthetic("gaussian", 1, 16, 2, 1, 128, 3);
  const std::string no_v = write_qkv(d, "no_v.safetensors", true);
  EXPECT_THROW(fm::load_dataset(no_v), std::runtime_error);
  fm::Dataset bad = d;
  bad.k = fm::Tensor(1, 16, 3, 128);  // 2 query heads on 3 kv heads
  bad.v = bad.k;
  const std::string gqa = write_qkv(bad, "bad_gqa.safetensors");
  try {
    fm::load_dataset(gqa);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad_gqa.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fm::load_dataset(gqa.substr(0, gqa.size() - 3) + "missing"), std::runtime_error);
  std::remove(no_v.c_str());
  std::remove(gqa.c_str());
}
