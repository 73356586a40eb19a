#include "model/synthetic.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "model/codecs.h"
#include "model/safetensors.h"

namespace fp8attn::model {
namespace {

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A portable stream (no std:: distributions, whose output differs between standard libraries).
struct Rng {
  uint64_t state;
  bool has_spare = false;
  double spare = 0.0;
  Rng(uint64_t seed, uint64_t tensor, uint64_t b, uint64_t h) {
    state = seed;
    for (uint64_t x : {tensor, b, h}) {
      state ^= x + 0x632BE59BD9B4E019ull;
      splitmix64(state);
    }
  }
  double uniform() { return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53; }
  double normal() {  // Box-Muller
    if (has_spare) {
      has_spare = false;
      return spare;
    }
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare = r * std::sin(2.0 * M_PI * u2);
    has_spare = true;
    return r * std::cos(2.0 * M_PI * u2);
  }
};

enum class Kind { kGaussian, kOutlier, kKBias };

Kind parse_kind(const std::string& k) {
  if (k == "gaussian") return Kind::kGaussian;
  if (k == "outlier") return Kind::kOutlier;
  if (k == "kbias") return Kind::kKBias;
  throw std::invalid_argument("synthetic data: unknown kind '" + k + "' (gaussian, outlier, kbias)");
}

// Fills heads `heads` (original indices) of one tensor; t is (b, s, heads.size(), d).
void fill(Tensor& t, Kind kind, int tensor_id, uint64_t seed, const std::vector<int>& heads,
          bool k_bias) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < t.b; ++b) {
    for (int hi = 0; hi < t.h; ++hi) {
      Rng rng(seed, tensor_id, b, heads[hi]);
      std::vector<double> beta(t.d, 0.0);
      if (k_bias) {
        Rng brng(seed, 100 + tensor_id, b, heads[hi]);
        for (double& x : beta) x = kKBiasStd * brng.normal();
      }
      for (int s = 0; s < t.s; ++s) {
        float* row = t.row(b, s, hi);
        for (int c = 0; c < t.d; ++c) {
          double x = rng.normal() + beta[c];
          if (kind == Kind::kOutlier && rng.uniform() < 0.001) x += 10.0 * rng.normal();
          row[c] = round_bf16(static_cast<float>(x));
        }
      }
    }
  }
}

std::vector<int> all_heads(int n) {
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = i;
  return h;
}

}  // namespace

std::vector<int> head_subset(int heads, int n) {
  if (n <= 0 || n >= heads) return all_heads(heads);
  if (heads % n != 0) {
    throw std::invalid_argument("heads subset: " + std::to_string(n) + " does not divide " +
                                std::to_string(heads) + " heads");
  }
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = i * (heads / n);
  return h;
}

std::vector<int> kv_heads_of(const std::vector<int>& q_heads, int heads, int heads_kv) {
  std::vector<int> kv;
  for (int h : q_heads) {
    const int k = h / (heads / heads_kv);
    if (kv.empty() || kv.back() != k) kv.push_back(k);
  }
  if (q_heads.size() % kv.size() != 0) throw std::invalid_argument("heads subset breaks GQA groups");
  return kv;
}

Dataset make_synthetic(const std::string& kind_name, int batch, int seqlen, int heads, int heads_kv,
                       int head_dim, uint64_t seed, const std::vector<int>& subset) {
  const Kind kind = parse_kind(kind_name);
  if (heads_kv <= 0 || heads % heads_kv != 0) throw std::invalid_argument("heads % heads_kv != 0");
  const std::vector<int> qh = subset.empty() ? all_heads(heads) : subset;
  const std::vector<int> kh = kv_heads_of(qh, heads, heads_kv);
  Dataset d;
  d.name = kind_name;
  d.q = Tensor(batch, seqlen, static_cast<int>(qh.size()), head_dim);
  d.k = Tensor(batch, seqlen, static_cast<int>(kh.size()), head_dim);
  d.v = Tensor(batch, seqlen, static_cast<int>(kh.size()), head_dim);
  fill(d.q, kind, 0, seed, qh, false);
  fill(d.k, kind, 1, seed, kh, kind == Kind::kKBias);
  fill(d.v, kind, 2, seed, kh, false);
  return d;
}

Dataset load_dataset(const std::string& path, int heads_subset, int batches) {
  const SafeTensors st = read_safetensors(path);
  auto get = [&](const char* name) -> const StTensor& {
    const StTensor& t = st.at(name);
    if (t.shape.size() != 4) {
      throw std::runtime_error(path + ": tensor '" + name + "' must be (b, s, h, d)");
    }
    return t;
  };
  const StTensor &q = get("q"), &k = get("k"), &v = get("v");
  if (k.shape != v.shape || q.shape[0] != k.shape[0] || q.shape[3] != k.shape[3] ||
      k.shape[2] == 0 || q.shape[2] % k.shape[2] != 0) {
    throw std::runtime_error(path + ": need q (b, sq, h, d), k = v (b, sk, h_kv, d), h % h_kv == 0");
  }
  const int B = static_cast<int>(q.shape[0]), H = static_cast<int>(q.shape[2]);
  const int HK = static_cast<int>(k.shape[2]);
  const int nb = batches > 0 ? std::min(batches, B) : B;
  const std::vector<int> qh = head_subset(H, heads_subset);
  const std::vector<int> kh = kv_heads_of(qh, H, HK);
  auto take = [&](const StTensor& t, const std::vector<int>& hs) {
    const std::vector<float> all = t.to_floats();
    const int S = static_cast<int>(t.shape[1]), Hs = static_cast<int>(t.shape[2]);
    const int D = static_cast<int>(t.shape[3]);
    Tensor out(nb, S, static_cast<int>(hs.size()), D);
    for (int b = 0; b < nb; ++b)
      for (int s = 0; s < S; ++s)
        for (size_t i = 0; i < hs.size(); ++i)
          std::copy_n(&all[((static_cast<size_t>(b) * S + s) * Hs + hs[i]) * D], D,
                      out.row(b, s, static_cast<int>(i)));
    return out;
  };
  Dataset d;
  d.name = std::filesystem::path(path).stem().string();
  d.q = take(q, qh);
  d.k = take(k, kh);
  d.v = take(v, kh);
  return d;
}

}  // namespace fp8attn::model
