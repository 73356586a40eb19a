// The GPU pre-pass (src/quant/) against its CPU mirror (model/prepass.cc): every output byte and
// every FP32 scale, mean and lse_bias bit-identical, on fresh random data (seed printed) over
// shapes that are not multiples of 32 / 128, GQA, strided inputs and every option, and on the
// captured fixture when it is present. Outputs are poisoned (0xFF: E4M3 NaN, FP32 NaN) first so
// a value the GPU forgot to write cannot match. The API's host-side checks (bad arguments, the
// defaults, the composed kernel parameters): tests/gpu/test_quant_api.cu.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/attention.h"  // fp8attn_fwd_params_from_quant; includes quant.h
#include "model/codecs.h"
#include "model/prepass.h"
#include "tests/common/fixtures.h"
#include "tests/common/seed.h"
#include "tests/common/sm90.cuh"
#include "model/safetensors.h"

namespace fm = fp8attn::model;

namespace {

constexpr int kD = 128;


#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(x)

struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n, int poison = 0xFF) : bytes(n) {
    if (cudaMalloc(&p, n) != cudaSuccess) p = nullptr;
    if (p) cudaMemset(p, poison, n);
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

template <typename T>
std::vector<T> to_host(const void* d, size_t count) {
  std::vector<T> h(count);
  if (cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess) {
    ADD_FAILURE() << "cudaMemcpy to host failed";
  }
  return h;
}

// "(i0, i1, ...)" of flat index i in a row-major array of extents dims.
std::string multi_index(size_t i, const std::vector<int>& dims) {
  std::string out;
  for (size_t d = dims.size(); d-- > 0;) {
    out = std::to_string(i % dims[d]) + (out.empty() ? "" : ", ") + out;
    i /= dims[d];
  }
  return "(" + out + ")";
}

// Bitwise comparison (so NaN never matches, and -0 differs from +0); reports the first mismatch
// with its index in `dims` (named in `what`).
template <typename T>
void expect_same_bits(const std::vector<T>& gpu, const std::vector<T>& cpu, const char* what,
                      const std::vector<int>& dims) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (std::memcmp(&gpu[i], &cpu[i], sizeof(T)) != 0) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad) {
    double g, c;
    if constexpr (sizeof(T) == 1) {
      g = fm::e4m3_to_float(gpu[first]), c = fm::e4m3_to_float(cpu[first]);
    } else {
      g = gpu[first], c = cpu[first];
    }
    ADD_FAILURE() << what << ": " << bad << " of " << gpu.size() << " differ; first at "
                  << multi_index(first, dims) << ": gpu " << g << " cpu " << c;
  }
}

using fp8attn::test::fresh_seed;

// N(bias_c, 1) with 0.1% N(0, 100) outliers, as BF16 codes.
void fill_random(std::mt19937_64& rng, uint16_t* out, size_t n, float bias_std,
                 bool outliers = true) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::bernoulli_distribution outlier(0.001);
  std::vector<float> bias(kD);
  for (float& x : bias) x = bias_std * n01(rng);
  for (size_t i = 0; i < n; ++i) {
    float x = bias[i % kD] + n01(rng);
    if (outlier(rng) && outliers) x += 10.0f * n01(rng);
    out[i] = fm::float_to_bf16(x);
  }
}

struct Inputs {
  int b, sq, sk, h, h_kv;
  std::vector<uint16_t> q;   // (b, sq, h, 128)
  std::vector<uint16_t> kv;  // (b, sk, 2, h_kv, 128) when packed, else k then v contiguous
  bool packed;
  fm::Bf16View q_view() const { return view(q.data(), sq, h, int64_t(sq) * h * kD, h * kD); }
  fm::Bf16View k_view() const {
    return packed ? view(kv.data(), sk, h_kv, int64_t(sk) * 2 * h_kv * kD, 2 * h_kv * kD)
                  : view(kv.data(), sk, h_kv, int64_t(sk) * h_kv * kD, h_kv * kD);
  }
  fm::Bf16View v_view() const {
    return packed ? view(kv.data() + h_kv * kD, sk, h_kv, int64_t(sk) * 2 * h_kv * kD,
                         2 * h_kv * kD)
                  : view(kv.data() + size_t(b) * sk * h_kv * kD, sk, h_kv,
                         int64_t(sk) * h_kv * kD, h_kv * kD);
  }
  fm::Bf16View view(const uint16_t* p, int s, int heads, int64_t sb, int64_t ss) const {
    fm::Bf16View v;
    v.data = p, v.batch = b, v.seqlen = s, v.heads = heads, v.head_dim = kD;
    v.stride_b = sb, v.stride_s = ss, v.stride_h = kD;
    return v;
  }
};

Inputs random_inputs(uint64_t seed, int b, int sq, int sk, int h, int h_kv, bool packed,
                     bool outliers = true) {
  std::mt19937_64 rng(seed);
  Inputs in{b, sq, sk, h, h_kv, {}, {}, packed};
  in.q.resize(size_t(b) * sq * h * kD);
  in.kv.resize(size_t(b) * sk * 2 * h_kv * kD);
  fill_random(rng, in.q.data(), in.q.size(), 0.5f);
  fill_random(rng, in.kv.data(), in.kv.size(), 6.0f, outliers);
  return in;
}

// A device view with the same strides as the host view, over `base` (the device copy of the
// host array that starts at `host_base`).
fp8attn_bf16_tensor device_tensor(const fm::Bf16View& v, const uint16_t* host_base,
                                  const void* base) {
  fp8attn_bf16_tensor t{};
  t.data = static_cast<const uint16_t*>(base) + (v.data - host_base);
  t.batch = v.batch, t.seqlen = v.seqlen, t.heads = v.heads, t.head_dim = v.head_dim;
  t.stride_b = v.stride_b, t.stride_s = v.stride_s, t.stride_h = v.stride_h;
  return t;
}

// The two ways to run the pre-pass: the KV-cache call then the Q call, or the end-to-end call's
// fp8attn_quantize_qkv (with the defaults, Q's tiles in the K/V launch).
enum class Entry { kSplit, kQkv };

// The GPU pre-pass on `in` through one entry, every output against the mirror's.
void compare_entry(const Inputs& in, const fp8attn_quant_options& opt, int vt_pad,
                     const fm::KvCacheHost& cpu_kv, const fm::QQuantHost& cpu_q,
                     float softmax_scale, Entry entry) {
  DeviceBuffer d_q(in.q.size() * 2, 0), d_kv(in.kv.size() * 2, 0);
  CUDA_OK(cudaMemcpy(d_q.p, in.q.data(), d_q.bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_kv.p, in.kv.data(), d_kv.bytes, cudaMemcpyHostToDevice));
  const fp8attn_bf16_tensor q = device_tensor(in.q_view(), in.q.data(), d_q.p);
  const fp8attn_bf16_tensor k = device_tensor(in.k_view(), in.kv.data(), d_kv.p);
  const fp8attn_bf16_tensor v = device_tensor(in.v_view(), in.kv.data(), d_kv.p);

  const int vt_dtype = cpu_kv.vt_dtype;
  DeviceBuffer cache_buf(fp8attn_kv_cache_bytes_vt(in.b, in.sk, in.h_kv, kD, vt_pad, vt_dtype));
  DeviceBuffer ws(fp8attn_quantize_kv_workspace_bytes(in.b, in.sk, in.h_kv));
  DeviceBuffer q_buf(fp8attn_q_quant_bytes(in.b, in.sq, in.h, kD));
  ASSERT_TRUE(cache_buf.p && ws.p && q_buf.p);
  fp8attn_kv_cache cache{};
  fp8attn_q_quant qq{};
  ASSERT_EQ(fp8attn_kv_cache_init_vt(&cache, cache_buf.p, cache_buf.bytes, in.b, in.sk, in.h_kv,
                                     kD, vt_pad, vt_dtype), FP8ATTN_SUCCESS)
      << fp8attn_quant_last_error();
  ASSERT_EQ(cache.vt_dtype, vt_dtype);
  ASSERT_EQ(fp8attn_q_quant_init(&qq, q_buf.p, q_buf.bytes, in.b, in.sq, in.h, kD),
            FP8ATTN_SUCCESS) << fp8attn_quant_last_error();
  if (entry == Entry::kSplit) {
    ASSERT_EQ(fp8attn_quantize_kv(&k, &v, &opt, &cache, ws.p, ws.bytes, nullptr), FP8ATTN_SUCCESS)
        << fp8attn_quant_last_error();
    ASSERT_EQ(fp8attn_quantize_q(&q, &cache, opt.q_scale, softmax_scale, &qq, nullptr),
              FP8ATTN_SUCCESS) << fp8attn_quant_last_error();
  } else {
    ASSERT_EQ(fp8attn_quantize_qkv(&q, &k, &v, &opt, softmax_scale, &cache, &qq, ws.p, ws.bytes,
                                   nullptr), FP8ATTN_SUCCESS) << fp8attn_quant_last_error();
    EXPECT_EQ(qq.softmax_scale, softmax_scale);
    EXPECT_EQ(std::memcmp(&cache.options, &opt, sizeof(opt)), 0) << "the cache records its options";
  }
  CUDA_OK(cudaDeviceSynchronize());

  const int nblk = (in.sk + 127) / 128, pad = cpu_kv.vt_seqlen_pad;
  const std::vector<int> kv_c = {in.b, in.h_kv, kD}, q_s = {in.b, in.h, in.sq};
  expect_same_bits(to_host<uint8_t>(cache.k, cpu_kv.k.size()), cpu_kv.k, "k (b, s, h_kv, c)",
                   {in.b, in.sk, in.h_kv, kD});
  if (vt_dtype == FP8ATTN_VT_FP16) {
    ASSERT_EQ(cpu_kv.vt16.size(), size_t(in.b) * in.h_kv * kD * pad);
    expect_same_bits(to_host<uint16_t>(cache.vt, cpu_kv.vt16.size()), cpu_kv.vt16,
                     "vt FP16 (b, h_kv, c, key)", {in.b, in.h_kv, kD, pad});
  } else {
    expect_same_bits(to_host<uint8_t>(cache.vt, cpu_kv.vt.size()), cpu_kv.vt,
                     "vt (b, h_kv, c, pos)", {in.b, in.h_kv, kD, pad});
  }
  expect_same_bits(to_host<float>(cache.k_descale, cpu_kv.k_descale.size()), cpu_kv.k_descale,
                   "k_descale (b, h_kv, blk)", {in.b, in.h_kv, nblk});
  expect_same_bits(to_host<float>(cache.v_descale, cpu_kv.v_descale.size()), cpu_kv.v_descale,
                   "v_descale (b, h_kv, c)", kv_c);
  expect_same_bits(to_host<float>(cache.k_mean, cpu_kv.k_mean.size()), cpu_kv.k_mean,
                   "k_mean (b, h_kv, c)", kv_c);
  expect_same_bits(to_host<float>(cache.v_mean, cpu_kv.v_mean.size()), cpu_kv.v_mean,
                   "v_mean (b, h_kv, c)", kv_c);
  expect_same_bits(to_host<uint8_t>(qq.q, cpu_q.q.size()), cpu_q.q, "q (b, s, h, c)",
                   {in.b, in.sq, in.h, kD});
  expect_same_bits(to_host<float>(qq.q_descale, cpu_q.q_descale.size()), cpu_q.q_descale,
                   "q_descale (b, h, s)", q_s);
  expect_same_bits(to_host<float>(qq.lse_bias, cpu_q.lse_bias.size()), cpu_q.lse_bias,
                   "lse_bias (b, h, s)", q_s);

  // The parameters handed to the kernel pass its own validation.
  fp8attn_fwd_params p{};
  DeviceBuffer o(size_t(in.b) * in.sq * in.h * kD * 2);
  ASSERT_EQ(fp8attn_fwd_params_from_quant(&p, &qq, &cache, o.p, nullptr), FP8ATTN_SUCCESS)
      << fp8attn_quant_last_error();
  EXPECT_EQ(fp8attn_check_fwd_params(&p), FP8ATTN_SUCCESS) << fp8attn_last_error();
  EXPECT_EQ(p.lse_bias != nullptr, opt.smooth_k != 0);
  EXPECT_EQ(p.o_bias != nullptr, opt.smooth_v != 0);
  // Per head: stride 0 along blocks (the kernel's 192-key blocks); per block: stride 1.
  EXPECT_EQ(p.kd_stride_blk, opt.k_scale == FP8ATTN_K_SCALE_HEAD ? 0 : 1);
}


// Runs the GPU pre-pass (both entries) and the CPU mirror on the same inputs and compares every
// output.
void compare_with_mirror(const Inputs& in, const fp8attn_quant_options& opt, int vt_pad) {
  SCOPED_TRACE("b=" + std::to_string(in.b) + " sq=" + std::to_string(in.sq) + " sk=" +
               std::to_string(in.sk) + " h=" + std::to_string(in.h) + "/" +
               std::to_string(in.h_kv) + " smooth_k=" + std::to_string(opt.smooth_k) +
               " smooth_v=" + std::to_string(opt.smooth_v) + " hadamard=" +
               std::to_string(opt.hadamard_qk) + " q_scale=" + std::to_string(opt.q_scale) +
               " k_scale=" + std::to_string(opt.k_scale) + " v_scale=" +
               std::to_string(opt.v_scale) + " centre=" + std::to_string(opt.centre) +
               " pad=" + std::to_string(vt_pad) + " packed=" + std::to_string(in.packed));
  const float softmax_scale = 1.0f / std::sqrt(128.0f);
  // Both V^T forms: E4M3 (permuted) and FP16 (natural order, FP8ATTN_P_FP16's cache).
  for (const int vt_dtype : {FP8ATTN_VT_E4M3, FP8ATTN_VT_FP16}) {
  SCOPED_TRACE(vt_dtype == FP8ATTN_VT_FP16 ? "vt_dtype FP16" : "vt_dtype E4M3");
  const fm::KvCacheHost cpu_kv = fm::prepass_kv(in.k_view(), in.v_view(), opt, vt_pad, vt_dtype);
  const fm::QQuantHost cpu_q = fm::prepass_q(in.q_view(), cpu_kv,
                                             static_cast<fp8attn_q_scale>(opt.q_scale),
                                             softmax_scale);
  for (const Entry entry : {Entry::kSplit, Entry::kQkv}) {
    SCOPED_TRACE(entry == Entry::kSplit ? "fp8attn_quantize_kv + fp8attn_quantize_q"
                                        : "fp8attn_quantize_qkv");
    compare_entry(in, opt, vt_pad, cpu_kv, cpu_q, softmax_scale, entry);
    if (::testing::Test::HasFatalFailure()) return;
  }
  }
}

fp8attn_quant_options options(bool smooth_k, bool smooth_v, bool hadamard, int q_scale,
                              int k_scale, int v_scale, uint64_t seed,
                              int centre = FP8ATTN_CENTRE_MEAN) {
  fp8attn_quant_options o;
  fp8attn_quant_options_init(&o);
  o.smooth_k = smooth_k, o.smooth_v = smooth_v, o.hadamard_qk = hadamard;
  o.q_scale = q_scale, o.k_scale = k_scale, o.v_scale = v_scale, o.hadamard_seed = seed;
  o.centre = centre;
  return o;
}

// Option sets: the defaults first, then per-head and per-block K with and without the rotation
// and smoothing (the last one needs no K statistics at all), Q and V scale granularities.
struct OptionSet {
  bool smooth_k, smooth_v, hadamard;
  int q_scale, k_scale, v_scale;
  bool extra_pad;
  int centre = FP8ATTN_CENTRE_MEAN;
};
constexpr int kSample = FP8ATTN_CENTRE_SAMPLE;
constexpr int kQTok = FP8ATTN_Q_SCALE_TOKEN, kQBlk = FP8ATTN_Q_SCALE_BLOCK128;
constexpr int kKHead = FP8ATTN_K_SCALE_HEAD, kKBlk = FP8ATTN_K_SCALE_BLOCK128;
constexpr int kVCh = FP8ATTN_V_SCALE_CHANNEL, kVHead = FP8ATTN_V_SCALE_HEAD;
const OptionSet kOptionSets[] = {
    {true, true, true, kQTok, kKHead, kVCh, false},     // the defaults
    {true, true, true, kQTok, kKBlk, kVCh, false},
    {true, true, false, kQBlk, kKHead, kVHead, false},
    {false, true, true, kQBlk, kKBlk, kVHead, true},
    {false, false, false, kQTok, kKHead, kVCh, false},
    {false, false, false, kQTok, kKBlk, kVCh, true},
    // The one-pass pre-pass (the sample's centre and bounds) with the same granularities.
    {true, true, true, kQTok, kKHead, kVCh, false, kSample},
    {true, true, true, kQTok, kKBlk, kVCh, false, kSample},
    {true, true, false, kQBlk, kKHead, kVHead, false, kSample},
    {false, true, true, kQBlk, kKBlk, kVHead, true, kSample},
    {false, false, false, kQTok, kKHead, kVCh, false, kSample},
};

TEST(QuantGpu, MatchesCpuMirrorOnRandomData) {
  FP8ATTN_REQUIRE_SM90();
  struct Shape { int b, sq, sk, h, h_kv; bool packed; };
  const Shape shapes[] = {{2, 77, 300, 4, 2, false},   {1, 128, 128, 2, 2, true},
                          {1, 1, 31, 8, 1, false},     {3, 200, 1000, 6, 3, true},
                          {1, 129, 4097, 4, 4, false}, {2, 1024, 2048, 8, 2, false},
                          // past 8192 keys: a one-pass sample above 1024 keys (2062), in rounds
                          // beyond the old cap's, the last one part masked
                          {1, 64, 16500, 2, 1, false}};
  for (const Shape& s : shapes) {
    const uint64_t seed = fresh_seed("random case");
    const Inputs in = random_inputs(seed, s.b, s.sq, s.sk, s.h, s.h_kv, s.packed);
    for (const OptionSet& o : kOptionSets) {
      const fp8attn_quant_options opt = options(o.smooth_k, o.smooth_v, o.hadamard, o.q_scale,
                                                o.k_scale, o.v_scale, seed, o.centre);
      const int pad = o.extra_pad ? (s.sk + 31) / 32 * 32 + 160 : 0;
      compare_with_mirror(in, opt, pad);
      if (HasFatalFailure()) return;
    }
  }
}

// The captured fixture (data/fixtures/*.safetensors with BF16 q, k, v (1, s, h, 128)).
TEST(QuantGpu, MatchesCpuMirrorOnCapturedFixture) {
  FP8ATTN_REQUIRE_SM90();
  const std::vector<std::filesystem::path> files = fp8attn::test::captured_fixture_files();
  if (files.empty()) GTEST_SKIP() << "no captured fixture under data/fixtures";
  int used = 0;
  for (const auto& f : files) {
    const fm::SafeTensors st = fm::read_safetensors(f.string());
    if (!st.contains("q") || !st.contains("k") || !st.contains("v")) continue;
    const fm::StTensor &q = st.at("q"), &k = st.at("k"), &v = st.at("v");
    if (q.dtype != fm::DType::BF16 || q.shape.size() != 4 || q.shape[3] != kD) continue;
    SCOPED_TRACE(f.string());
    Inputs in{int(q.shape[0]), int(q.shape[1]), int(k.shape[1]), int(q.shape[2]),
              int(k.shape[2]), {}, {}, false};
    in.q.resize(q.numel());
    std::memcpy(in.q.data(), q.data.data(), q.data.size());
    in.kv.resize(k.numel() + v.numel());
    std::memcpy(in.kv.data(), k.data.data(), k.data.size());
    std::memcpy(in.kv.data() + k.numel(), v.data.data(), v.data.size());
    for (int rotate = 0; rotate < 2; ++rotate) {  // the defaults; the previous defaults
      compare_with_mirror(in, options(true, true, rotate == 1, kQTok, rotate ? kKHead : kKBlk,
                                      kVCh, 1234 + rotate), 0);
    }
    compare_with_mirror(in, options(true, true, true, kQTok, kKHead, kVCh, 1236, kSample), 0);
    ++used;
  }
  std::printf("[ info ] compared %d captured file(s) from data/fixtures\n", used);
  EXPECT_GT(used, 0) << "fixture files found but none holds BF16 q, k, v (1, s, h, 128)";
}

// FP8ATTN_CENTRE_SAMPLE when the sample misses a group's largest values: keys outside the
// sample (fp8attn_sample_key) made 1000x larger in one V channel and in K, in some heads only, so
// that the regroup and the second quantization run for those heads and not for the others; the
// bytes still equal the mirror's, and the mirror says the case is the one meant.
TEST(QuantGpu, OnePassRegroupsOverBoundGroups) {
  const uint64_t seed = fresh_seed("one-pass regroup case");
  for (const int sk : {1000, 4097}) {
    // No random outliers in K, V: one of 10 sigma outside the sample may exceed a bound on its
    // own (a legitimate regroup), and the heads meant to be left alone must stay so.
    Inputs in = random_inputs(seed, 2, 130, sk, 4, 2, false, false);
    std::vector<bool> sampled(sk, false);
    for (int i = 0; i < fp8attn_sample_rows(sk); ++i) sampled[fp8attn_sample_key(sk, i)] = true;
    const int key = sampled[sk / 2 + 1] ? sk / 2 + 2 : sk / 2 + 1;  // not a sampled key
    ASSERT_FALSE(sampled[key]);
    // At least 1000 in magnitude (1000 (x + 1) could land near 0, inside the bound, for x near -1).
    auto grow = [&](std::vector<uint16_t>& x, size_t i) {
      x[i] = fm::float_to_bf16(1000.0f * (std::fabs(fm::bf16_to_float(x[i])) + 1.0f));
    };
    const size_t k_row = (size_t(1) * sk + key) * 2 + 1;  // batch 1, head 1 of K
    for (int c = 0; c < kD; c += 5) grow(in.kv, k_row * kD + c);
    const size_t v_base = size_t(2) * sk * 2 * kD;        // V after K (not packed)
    grow(in.kv, v_base + ((size_t(0) * sk + key) * 2 + 0) * kD + 17);  // batch 0, head 0, ch 17
    for (const OptionSet& o : kOptionSets) {
      if (o.centre != kSample) continue;
      const fp8attn_quant_options opt = options(o.smooth_k, o.smooth_v, o.hadamard, o.q_scale,
                                                o.k_scale, o.v_scale, seed, o.centre);
      const fm::KvCacheHost cpu = fm::prepass_kv(in.k_view(), in.v_view(), opt, 0);
      EXPECT_EQ(cpu.resampled[0] & 2, 2) << "V of (0, 0) should be over its bound";
      if (o.k_scale == kKHead) EXPECT_EQ(cpu.resampled[3] & 1, 1) << "K of (1, 1)";
      EXPECT_EQ(cpu.resampled[1] | cpu.resampled[2], 0) << "heads left alone stay so";
      FP8ATTN_REQUIRE_SM90();  // the case is checked above on the CPU alone
      compare_with_mirror(in, opt, 0);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
