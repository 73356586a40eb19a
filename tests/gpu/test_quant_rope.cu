// The rope entry (include/fp8attn/rope.h) on the GPU against its CPU mirror (model/prepass.cc
// with RopeHost): every output byte, scale, mean and lse_bias bit-identical on fresh random data
// and real rotary tables (Llama's inv_freq) at nonzero offsets, GQA, shapes that are not
// multiples of 32 / 128, every centre and scale option; outputs poisoned (0xFF) first.
// fp8attn_rope_bf16 == BF16(RNE) of the mirror's FP32 rotation. A NaN in a table row reaches the
// rows that use it. Bad tables are refused before any launch (those run without a GPU).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/rope.h"
#include "model/codecs.h"
#include "model/prepass.h"
#include "tests/common/seed.h"
#include "tests/common/sm90.cuh"

namespace fm = fp8attn::model;

namespace {

constexpr int kD = 128, kHalf = 64;
using fp8attn::test::fresh_seed;

struct Dev {
  void* p = nullptr;
  explicit Dev(size_t n, int poison = 0xFF) {
    if (cudaMalloc(&p, n) == cudaSuccess) cudaMemset(p, poison, n); else p = nullptr;
  }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
};

template <typename T>
std::vector<T> to_host(const void* d, size_t n) {
  std::vector<T> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}
template <typename T>
void upload(void* d, const std::vector<T>& h) {
  ASSERT_EQ(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
}

template <typename T>
void expect_same_bits(const std::vector<T>& gpu, const std::vector<T>& cpu, const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  size_t bad = 0, first = 0;
  // Bitwise, except that two NaNs match (the payloads of a NaN differ between the GPU's
  // canonical NaN and the CPU's propagated one; a NaN against a number never matches).
  auto is_nan = [](T x) {
    if constexpr (sizeof(T) == 1) return (x & 0x7F) == 0x7F;  // E4M3 NaN codes
    else if constexpr (sizeof(T) == 4) return std::isnan(x);
    else return false;
  };
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (is_nan(gpu[i]) && is_nan(cpu[i])) continue;
    if (std::memcmp(&gpu[i], &cpu[i], sizeof(T)) != 0 && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << gpu.size() << " differ, first at " << first;
}

std::vector<uint16_t> random_codes(std::mt19937_64& rng, size_t n, float bias_std) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::bernoulli_distribution outlier(0.001);
  std::vector<float> bias(kD);
  for (float& x : bias) x = bias_std * n01(rng);
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    float x = bias[i % kD] + n01(rng);
    if (outlier(rng)) x += 10.0f * n01(rng);
    out[i] = fm::float_to_bf16(x);
  }
  return out;
}

// Llama's tables: angle p * base^(-i / 64).
void real_tables(int max_positions, double base, std::vector<float>& c, std::vector<float>& s) {
  c.resize(size_t(max_positions) * kHalf), s.resize(c.size());
  for (int p = 0; p < max_positions; ++p) {
    for (int i = 0; i < kHalf; ++i) {
      const double a = p * std::pow(base, -double(i) / kHalf);
      c[size_t(p) * kHalf + i] = float(std::cos(a)), s[size_t(p) * kHalf + i] = float(std::sin(a));
    }
  }
}

fp8attn_bf16_tensor tensor_of(const void* d, int b, int s, int h) {
  return {d, b, s, h, kD, int64_t(s) * h * kD, int64_t(h) * kD, kD};
}

struct Case {
  int b, sq, sk, h, h_kv, q_pos0, k_pos0;
  int which;  // option set
};

fp8attn_quant_options options_of(int which) {
  fp8attn_quant_options o;
  fp8attn_quant_options_init(&o);
  if (which == 1) o.centre = FP8ATTN_CENTRE_SAMPLE;
  if (which == 2) o.hadamard_qk = 0;
  if (which == 3) o.k_scale = FP8ATTN_K_SCALE_BLOCK128, o.q_scale = FP8ATTN_Q_SCALE_BLOCK128;
  if (which == 4) o.smooth_k = 0, o.smooth_v = 0, o.v_scale = FP8ATTN_V_SCALE_HEAD;
  if (which == 5) o.centre = FP8ATTN_CENTRE_SAMPLE, o.k_scale = FP8ATTN_K_SCALE_BLOCK128;
  return o;
}

// Runs the rope entry on the GPU and the mirror on the CPU; `poison_table_row` >= 0 writes a
// NaN into that row of cos (both sides).
void run_case(const Case& t, uint64_t seed, int poison_table_row = -1) {
  std::mt19937_64 rng(seed);
  const auto q = random_codes(rng, size_t(t.b) * t.sq * t.h * kD, 0.5f);
  const auto k = random_codes(rng, size_t(t.b) * t.sk * t.h_kv * kD, 6.0f);
  const auto v = random_codes(rng, size_t(t.b) * t.sk * t.h_kv * kD, 2.0f);
  const int max_pos = std::max(t.q_pos0 + t.sq, t.k_pos0 + t.sk) + 3;
  std::vector<float> cs, sn;
  real_tables(max_pos, 10000.0, cs, sn);
  if (poison_table_row >= 0) cs[size_t(poison_table_row) * kHalf + 5] = std::nanf("");
  const fp8attn_quant_options o = options_of(t.which);
  const float scale = 1.0f / std::sqrt(128.0f);

  Dev dq(q.size() * 2, 0), dk(k.size() * 2, 0), dv(v.size() * 2, 0);
  Dev dc(cs.size() * 4, 0), ds(sn.size() * 4, 0);
  upload(dq.p, q), upload(dk.p, k), upload(dv.p, v), upload(dc.p, cs), upload(ds.p, sn);
  const size_t cache_bytes = fp8attn_kv_cache_bytes(t.b, t.sk, t.h_kv, kD, 0);
  const size_t q_bytes = fp8attn_q_quant_bytes(t.b, t.sq, t.h, kD);
  const size_t ws_bytes = fp8attn_quantize_kv_workspace_bytes(t.b, t.sk, t.h_kv);
  Dev dcache(cache_bytes), dqq(q_bytes), dws(ws_bytes);
  fp8attn_kv_cache cache;
  fp8attn_q_quant qq;
  ASSERT_EQ(fp8attn_kv_cache_init(&cache, dcache.p, cache_bytes, t.b, t.sk, t.h_kv, kD, 0), FP8ATTN_SUCCESS);
  ASSERT_EQ(fp8attn_q_quant_init(&qq, dqq.p, q_bytes, t.b, t.sq, t.h, kD), FP8ATTN_SUCCESS);
  const fp8attn_bf16_tensor tq = tensor_of(dq.p, t.b, t.sq, t.h), tk = tensor_of(dk.p, t.b, t.sk, t.h_kv),
                            tv = tensor_of(dv.p, t.b, t.sk, t.h_kv);
  fp8attn_rope_tables r;
  fp8attn_rope_tables_init(&r);
  r.cos = static_cast<const float*>(dc.p), r.sin = static_cast<const float*>(ds.p);
  r.max_positions = max_pos, r.q_pos0 = t.q_pos0, r.k_pos0 = t.k_pos0;
  ASSERT_EQ(fp8attn_quantize_qkv_rope(&tq, &tk, &tv, &r, &o, scale, &cache, &qq, dws.p, ws_bytes,
                                      nullptr), FP8ATTN_SUCCESS) << fp8attn_quant_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const fm::RopeHost kr{cs.data(), sn.data(), max_pos, t.k_pos0}, qr{cs.data(), sn.data(), max_pos, t.q_pos0};
  const fm::KvCacheHost mk = fm::prepass_kv(fm::contiguous_view(k, t.b, t.sk, t.h_kv, kD),
                                            fm::contiguous_view(v, t.b, t.sk, t.h_kv, kD), o, 0,
                                            FP8ATTN_VT_E4M3, {}, &kr);
  const fm::QQuantHost mq = fm::prepass_q(fm::contiguous_view(q, t.b, t.sq, t.h, kD), mk,
                                          static_cast<fp8attn_q_scale>(o.q_scale), scale, &qr);
  const size_t bh = size_t(t.b) * t.h_kv, nblk = (t.sk + 127) / 128;
  expect_same_bits(to_host<uint8_t>(cache.k, mk.k.size()), mk.k, "k");
  expect_same_bits(to_host<uint8_t>(cache.vt, mk.vt.size()), mk.vt, "vt");
  expect_same_bits(to_host<float>(cache.k_descale, bh * nblk), mk.k_descale, "k_descale");
  expect_same_bits(to_host<float>(cache.v_descale, bh * kD), mk.v_descale, "v_descale");
  expect_same_bits(to_host<float>(cache.k_mean, bh * kD), mk.k_mean, "k_mean");
  expect_same_bits(to_host<float>(cache.v_mean, bh * kD), mk.v_mean, "v_mean");
  expect_same_bits(to_host<uint8_t>(qq.q, mq.q.size()), mq.q, "q");
  expect_same_bits(to_host<float>(qq.q_descale, mq.q_descale.size()), mq.q_descale, "q_descale");
  expect_same_bits(to_host<float>(qq.lse_bias, mq.lse_bias.size()), mq.lse_bias, "lse_bias");
  if (poison_table_row >= 0) {
    // The query row that uses the poisoned table row carries the NaN into attention: its
    // descale is NaN, or (the row's amax skips NaN, as the no-rope pass does) its E4M3 codes
    // include NaN (0x7F / 0xFF), in every head. The GPU bytes equal these (above).
    const int s = poison_table_row - t.q_pos0;
    ASSERT_TRUE(s >= 0 && s < t.sq);
    for (int hh = 0; hh < t.h; ++hh) {
      bool nan_code = false;
      for (int c = 0; c < kD; ++c) {
        const uint8_t code = mq.q[((size_t(s) * t.h) + hh) * kD + c];
        nan_code |= (code & 0x7F) == 0x7F;
      }
      EXPECT_TRUE(nan_code || std::isnan(mq.q_descale[size_t(hh) * t.sq + s]))
          << "the NaN table row does not reach query row " << s << " of head " << hh;
    }
  }
}

class QuantRope : public ::testing::TestWithParam<Case> {};

TEST_P(QuantRope, GpuBytesEqualTheMirror) {
  FP8ATTN_REQUIRE_SM90();
  run_case(GetParam(), fresh_seed("QuantRope"));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, QuantRope,
    ::testing::Values(Case{1, 128, 128, 2, 2, 0, 0, 0}, Case{2, 77, 1000, 8, 2, 923, 0, 0},
                      Case{1, 300, 1100, 4, 4, 800, 0, 1}, Case{2, 129, 257, 4, 1, 128, 3, 2},
                      Case{1, 200, 700, 6, 2, 500, 0, 3}, Case{2, 65, 333, 4, 2, 268, 1, 4},
                      Case{1, 1, 4500, 2, 1, 4499, 0, 5}, Case{1, 513, 513, 2, 2, 7, 7, 0}));

TEST(QuantRopeNaN, ATableNaNReachesTheRowsThatUseIt) {
  FP8ATTN_REQUIRE_SM90();
  // Query 10 uses table row 40 + 10 (k_pos0 = 0: keys 0 .. 99 include that row too).
  run_case(Case{1, 64, 100, 2, 1, 40, 0, 0}, fresh_seed("QuantRopeNaN"), 50);
}

TEST(QuantRopeBf16, InPlaceRotationEqualsTheMirrorRoundedToBf16) {
  FP8ATTN_REQUIRE_SM90();
  const uint64_t seed = fresh_seed("QuantRopeBf16");
  std::mt19937_64 rng(seed);
  const int B = 2, S = 130, H = 3, pos0 = 17;
  const auto x = random_codes(rng, size_t(B) * S * H * kD, 1.0f);
  std::vector<float> cs, sn;
  real_tables(pos0 + S, 500000.0, cs, sn);
  Dev dx(x.size() * 2, 0), dc(cs.size() * 4, 0), ds(sn.size() * 4, 0);
  upload(dx.p, x), upload(dc.p, cs), upload(ds.p, sn);
  const fp8attn_bf16_tensor t = tensor_of(dx.p, B, S, H);
  fp8attn_rope_tables r;
  fp8attn_rope_tables_init(&r);
  r.cos = static_cast<const float*>(dc.p), r.sin = static_cast<const float*>(ds.p);
  r.max_positions = pos0 + S;
  ASSERT_EQ(fp8attn_rope_bf16(&t, &r, pos0, nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
  const auto got = to_host<uint16_t>(dx.p, x.size());
  std::vector<uint16_t> want(x.size());
  for (int b = 0; b < B; ++b) {
    for (int s = 0; s < S; ++s) {
      for (int h = 0; h < H; ++h) {
        const size_t row = ((size_t(b) * S + s) * H + h) * kD;
        float f[kD];
        for (int c = 0; c < kD; ++c) f[c] = fm::bf16_to_float(x[row + c]);
        fm::rope_rotate_128(f, &cs[size_t(pos0 + s) * kHalf], &sn[size_t(pos0 + s) * kHalf]);
        for (int c = 0; c < kD; ++c) want[row + c] = fm::float_to_bf16(f[c]);
      }
    }
  }
  expect_same_bits(got, want, "rope_bf16");
}

// Refusals: no GPU needed (every check runs before the device is touched).
TEST(QuantRopeValidation, BadTablesAreRefusedWithAClearMessage) {
  alignas(16) static float table[4 * kHalf] = {};
  fp8attn_rope_tables r;
  fp8attn_rope_tables_init(&r);
  r.cos = table, r.sin = table, r.max_positions = 4;
  EXPECT_EQ(fp8attn_check_rope_tables(&r, 4, 4), FP8ATTN_SUCCESS) << fp8attn_last_error();
  struct Bad {
    const char* what;
    fp8attn_rope_tables r;
    int sq, sk;
  };
  std::vector<Bad> bad;
  auto with = [&](auto f) { fp8attn_rope_tables x = r; f(x); return x; };
  bad.push_back({"style", with([](auto& x) { x.style = FP8ATTN_ROPE_GPTJ; }), 4, 4});
  bad.push_back({"null", with([](auto& x) { x.sin = nullptr; }), 4, 4});
  bad.push_back({"aligned", with([](auto& x) { x.cos = table + 1; }), 4, 4});
  bad.push_back({"max_positions", with([](auto& x) { x.max_positions = 0; }), 4, 4});
  bad.push_back({"q_pos0", with([](auto& x) { x.q_pos0 = 1; }), 4, 4});
  bad.push_back({"q_pos0", with([](auto& x) { x.q_pos0 = -1; }), 1, 4});
  bad.push_back({"k_pos0", with([](auto& x) { x.k_pos0 = 2; }), 4, 3});
  bad.push_back({"seqlen", r, 0, 4});
  for (const Bad& b : bad) {
    EXPECT_EQ(fp8attn_check_rope_tables(&b.r, b.sq, b.sk), FP8ATTN_ERROR_INVALID_ARGUMENT) << b.what;
    EXPECT_NE(std::string(fp8attn_last_error()).find(b.what), std::string::npos)
        << b.what << ": " << fp8attn_last_error();
  }
  EXPECT_EQ(fp8attn_check_rope_tables(nullptr, 4, 4), FP8ATTN_ERROR_INVALID_ARGUMENT);
  // The entry refuses the tables before it touches the device (the pointers here are host
  // stand-ins that a launch would fault on).
  fp8attn_quant_options o;
  fp8attn_quant_options_init(&o);
  alignas(256) static unsigned char buf[1 << 16];
  fp8attn_kv_cache cache;
  fp8attn_q_quant qq;
  ASSERT_EQ(fp8attn_kv_cache_init(&cache, buf, sizeof buf / 2, 1, 8, 1, kD, 0), FP8ATTN_SUCCESS);
  ASSERT_EQ(fp8attn_q_quant_init(&qq, buf + sizeof buf / 2, sizeof buf / 4, 1, 8, 1, kD),
            FP8ATTN_SUCCESS);
  const fp8attn_bf16_tensor t = tensor_of(buf, 1, 8, 1);
  const fp8attn_rope_tables short_table = with([](auto& x) { x.k_pos0 = 0; });  // 4 rows < 8
  EXPECT_EQ(fp8attn_quantize_qkv_rope(&t, &t, &t, &short_table, &o, 0.1f, &cache, &qq,
                                      buf + 3 * sizeof buf / 4, sizeof buf / 4, nullptr),
            FP8ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fp8attn_last_error()).find("q_pos0"), std::string::npos)
      << fp8attn_last_error();
  EXPECT_EQ(fp8attn_rope_bf16(&t, &short_table, 0, nullptr), FP8ATTN_ERROR_INVALID_ARGUMENT);
}

}  // namespace
