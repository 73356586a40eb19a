// The committed captured-activation fixtures (data/fixtures/*.safetensors, cut by
// tools/capture/fixture.py from the full captures of real models): read with the model's
// safetensors reader, checked against their metadata and data/captures.json, and their causal
// attention recomputed with the C++ FP64 reference, which must match the FP64 figures that NumPy
// computed from the same BF16 values and wrote into the metadata.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/reference.h"
#include "model/safetensors.h"
#include "model/tensor.h"
#include "tests/common/fixtures.h"

namespace fm = fp8attn::model;
namespace fs = std::filesystem;

namespace {

nlohmann::json load_manifest() {
  std::ifstream f(fp8attn::test::repo_root() / "data" / "captures.json");
  if (!f) throw std::runtime_error("cannot open data/captures.json");
  return nlohmann::json::parse(f);
}

std::vector<fs::path> fixture_files() {
  std::vector<fs::path> files;
  const fs::path dir = fp8attn::test::repo_root() / "data" / "fixtures";
  if (fs::is_directory(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".safetensors") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

double meta_number(const fm::SafeTensors& st, const std::string& key) {
  auto it = st.metadata.find(key);
  if (it == st.metadata.end()) throw std::runtime_error("metadata lacks " + key);
  return std::stod(it->second);
}

fm::Tensor to_tensor(const fm::StTensor& t) {
  fm::Tensor out(int(t.shape[0]), int(t.shape[1]), int(t.shape[2]), int(t.shape[3]));
  out.data = t.to_floats();
  return out;
}

double rel_diff(double got, double want) { return std::abs(got - want) / std::max(std::abs(want), 1e-300); }

}  // namespace

TEST(CapturesFixture, ManifestListsEveryFixtureAndValidationPassed) {
  const nlohmann::json m = load_manifest();
  ASSERT_TRUE(m.contains("fixtures")) << "data/captures.json has no fixtures list";
  std::set<std::string> listed, present;
  for (const auto& f : m["fixtures"]) listed.insert(f["file"].get<std::string>());
  for (const auto& p : fixture_files()) present.insert(fs::relative(p, fp8attn::test::repo_root()).string());
  ASSERT_FALSE(present.empty()) << "no fixture under data/fixtures";
  EXPECT_EQ(listed, present);

  ASSERT_FALSE(m["models"].empty());
  for (const auto& model : m["models"]) {
    SCOPED_TRACE(model["slug"].get<std::string>());
    const double ppl = model["perplexity"].get<double>();
    EXPECT_TRUE(std::isfinite(ppl) && ppl > 1.0) << ppl;
    ASSERT_FALSE(model["layers"].empty());
    for (const auto& layer : model["layers"]) {
      // 128, or 64 for a model run zero-padded to 128 (SmolLM2; docs/captures.md).
      const int hd = layer["head_dim"].get<int>();
      EXPECT_TRUE(hd == 128 || hd == 64) << hd;
      EXPECT_LE(layer["attn_reproduction_rel_err"].get<double>(), 1e-2) << "layer " << layer["layer"];
    }
  }
}

TEST(CapturesFixture, TensorsMatchTheirMetadata) {
  const nlohmann::json m = load_manifest();
  const auto files = fixture_files();
  ASSERT_FALSE(files.empty());
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    const fm::SafeTensors st = fm::read_safetensors(path.string());
    EXPECT_EQ(st.metadata.at("text_sha256"), m["text_sha256"].get<std::string>());
    const int64_t tokens = std::stoll(st.metadata.at("tokens"));
    const int64_t hq = std::stoll(st.metadata.at("q_heads"));
    const int64_t hkv = std::stoll(st.metadata.at("kv_heads"));
    const int64_t d = std::stoll(st.metadata.at("head_dim"));
    EXPECT_TRUE(d == 128 || d == 64) << d;
    for (const char* name : {"q", "k", "v"}) {
      const fm::StTensor& t = st.at(name);
      EXPECT_EQ(t.dtype, fm::DType::BF16) << name;
      const std::vector<int64_t> want = {1, tokens, name[0] == 'q' ? hq : hkv, d};
      EXPECT_EQ(t.shape, want) << name;
      const std::vector<float> x = t.to_floats();
      EXPECT_TRUE(std::all_of(x.begin(), x.end(), [](float v) { return std::isfinite(v); })) << name;
      // Real activations: never all zero, and not a constant.
      const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
      EXPECT_LT(*lo, *hi) << name;
    }
  }
}

// The C++ FP64 reference against NumPy's FP64 on the same BF16 values: mean entropy, mean mass on
// token 0 and output RMS of causal attention agree to ~1e-12; 1e-9 leaves room for summation order.
TEST(CapturesFixture, Fp64AttentionMatchesTheNumpyFigures) {
  const auto files = fixture_files();
  ASSERT_FALSE(files.empty());
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    const fm::SafeTensors st = fm::read_safetensors(path.string());
    const fm::Tensor q = to_tensor(st.at("q")), k = to_tensor(st.at("k")), v = to_tensor(st.at("v"));
    fm::AttnConfig cfg;
    cfg.causal = true;
    const fm::ExactF64 out = fm::attention_exact_f64(q, k, v, cfg);
    // Entropy of row i: H = lse - sum_j p_j s_j, and sum_j p_j s_j = scale * q_i . (sum_j p_j k_j),
    // i.e. attention with V := K.
    const fm::ExactF64 out_k = fm::attention_exact_f64(q, k, k, cfg);
    const double scale = cfg.scale_for(q.d);
    const int s = q.s, d = q.d;
    double entropy = 0.0, sink = 0.0, sq_sum = 0.0;
    for (int h = 0; h < q.h; ++h) {
      const int kh = h / (q.h / k.h);
      for (int i = 0; i < s; ++i) {
        const double lse = out.lse[static_cast<size_t>(h) * s + i];
        double qk0 = 0.0, q_ok = 0.0;
        for (int c = 0; c < d; ++c) {
          qk0 += double(q(0, i, h, c)) * double(k(0, 0, kh, c));
          q_ok += double(q(0, i, h, c)) * out_k.o(0, i, h, c);
        }
        sink += std::exp(scale * qk0 - lse);
        entropy += lse - scale * q_ok;
      }
    }
    for (double x : out.o.data) sq_sum += x * x;
    const double rows = double(s) * q.h;
    EXPECT_LT(rel_diff(entropy / rows, meta_number(st, "ref_mean_entropy_nats")), 1e-9);
    EXPECT_LT(rel_diff(sink / rows, meta_number(st, "ref_mean_mass_on_token0")), 1e-9);
    EXPECT_LT(rel_diff(std::sqrt(sq_sum / double(out.o.data.size())), meta_number(st, "ref_out_rms")), 1e-9);
  }
}

TEST(CapturesFixture, TruncatedFixtureIsRejectedWithItsName) {
  const auto files = fixture_files();
  ASSERT_FALSE(files.empty());
  std::ifstream in(files.front(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = ::testing::TempDir() + "fp8attn_truncated_fixture.safetensors";
  std::ofstream(cut, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() / 2));
  try {
    fm::read_safetensors(cut);
    FAIL() << "a truncated file was read without error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
  }
}
