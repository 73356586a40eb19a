// kernel_probe: the kernel developer's quick check. Random Q, K, V -> E4M3 (per-tensor scales),
// the kernel, then (1) kernel-only error of sampled rows against FP64 attention on the
// dequantized inputs, (2) TFLOP/s (CUDA events, median of `iters` runs after warm-up).
// Usage: kernel_probe b sq sk h h_kv causal iters [check_rows [p_precision]]
// The full GPU tests and the harness (bench/) are the authority; this prints one line per run.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "model/codecs.h"
#include "study_kernels.h"

#define CHECK_CUDA(x)                                                              \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(2);                                                                \
    }                                                                              \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: %s b sq sk h h_kv causal iters [check_rows]\n", argv[0]);
    return 2;
  }
  const int b = std::atoi(argv[1]), sq = std::atoi(argv[2]), sk = std::atoi(argv[3]),
            h = std::atoi(argv[4]), hkv = std::atoi(argv[5]), causal = std::atoi(argv[6]),
            iters = std::atoi(argv[7]);
  const int check_rows = argc > 8 ? std::atoi(argv[8]) : 64;
  const int p_precision = argc > 9 ? std::atoi(argv[9]) : FP8ATTN_P_E4M3;
  const int d = 128;
  fp8attn_fwd_params p;
  fp8attn_fwd_params_init(&p, b, sq, sk, h, hkv, d);
  p.causal = causal;
  p.p_precision = p_precision;

  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  const size_t nq = size_t(b) * sq * h * d, nk = size_t(b) * sk * hkv * d;
  const size_t nvt = size_t(b) * hkv * d * p.vt_seqlen_pad;
  // Gaussian data, per-tensor amax/448 scales (FA3's simplest scheme).
  std::vector<float> q(nq), k(nk), v(nk);
  for (auto& x : q) x = nd(rng);
  for (auto& x : k) x = nd(rng);
  for (auto& x : v) x = nd(rng);
  auto quant = [](const std::vector<float>& x, std::vector<uint8_t>& c, float& descale) {
    float amax = 0.f;
    for (float f : x) amax = std::max(amax, std::fabs(f));
    descale = amax / 448.f;
    c.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) c[i] = fp8attn::model::float_to_e4m3(x[i] / descale);
  };
  std::vector<uint8_t> qc, kc, vc;
  float qd, kd, vd;
  quant(q, qc, qd);
  quant(k, kc, kd);
  quant(v, vc, vd);
  std::vector<uint8_t> vtc(nvt, 0);  // (b, hkv, d, pad), keys permuted within 32-groups
  for (int bi = 0; bi < b; ++bi)
    for (int hi = 0; hi < hkv; ++hi)
      for (int c = 0; c < d; ++c)
        for (int pos = 0; pos < p.vt_seqlen_pad; ++pos) {
          const int key = (pos / 32) * 32 + fp8attn_vt_key_at(pos % 32);
          if (key < sk)
            vtc[((size_t(bi) * hkv + hi) * d + c) * p.vt_seqlen_pad + pos] =
                vc[((size_t(bi) * sk + key) * hkv + hi) * d + c];
        }

  uint8_t *dq, *dk, *dvt;
  __nv_bfloat16* dout;
  float *dlse, *dscale;
  CHECK_CUDA(cudaMalloc(&dq, nq));
  CHECK_CUDA(cudaMalloc(&dk, nk));
  CHECK_CUDA(cudaMalloc(&dvt, nvt));
  CHECK_CUDA(cudaMalloc(&dout, nq * 2));
  CHECK_CUDA(cudaMalloc(&dlse, size_t(b) * h * sq * 4));
  CHECK_CUDA(cudaMalloc(&dscale, 3 * 4));
  CHECK_CUDA(cudaMemcpy(dq, qc.data(), nq, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dk, kc.data(), nk, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dvt, vtc.data(), nvt, cudaMemcpyHostToDevice));
  const float scales[3] = {qd, kd, vd};
  CHECK_CUDA(cudaMemcpy(dscale, scales, 12, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dout, 0xFF, nq * 2));  // poison: NaN in BF16
  CHECK_CUDA(cudaMemset(dlse, 0xFF, size_t(b) * h * sq * 4));
  p.q = dq;
  p.k = dk;
  p.vt = dvt;
  p.o = dout;
  p.lse = dlse;
  p.q_descale = dscale;  // strides 0: broadcast
  p.k_descale = dscale + 1;
  p.v_descale = dscale + 2;

  if (fp8attn_probe_attention_fwd(&p, nullptr) != FP8ATTN_SUCCESS) {
    std::fprintf(stderr, "fp8attn: %s\n", fp8attn_last_error());
    return 1;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<__nv_bfloat16> out(nq);
  std::vector<float> lse(size_t(b) * h * sq);
  CHECK_CUDA(cudaMemcpy(out.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(lse.data(), dlse, lse.size() * 4, cudaMemcpyDeviceToHost));

  // Kernel-only reference on sampled rows: FP64 attention on the dequantized E4M3 inputs.
  double se = 0, sr = 0, maxe = 0, lse_maxe = 0;
  size_t nan_count = 0, count = 0;
  for (size_t i = 0; i < out.size(); ++i) nan_count += !std::isfinite(__bfloat162float(out[i]));
  std::uniform_int_distribution<int> ub(0, b - 1), uh(0, h - 1), us(0, sq - 1);
  const int shift = sk - sq;
  for (int t = 0; t < check_rows; ++t) {
    const int bi = ub(rng), hi = uh(rng), row = (t == 0) ? sq - 1 : (t == 1 ? 0 : us(rng));
    const int kh = hi / (h / hkv);
    const int kend = causal ? std::min(sk, row + shift + 1) : sk;
    std::vector<double> sc(std::max(kend, 0));
    double mx = -1e300;
    for (int j = 0; j < kend; ++j) {
      double acc = 0;
      for (int c = 0; c < d; ++c)
        acc += double(fp8attn::model::e4m3_to_float(qc[((size_t(bi) * sq + row) * h + hi) * d + c])) *
               fp8attn::model::e4m3_to_float(kc[((size_t(bi) * sk + j) * hkv + kh) * d + c]);
      sc[j] = acc * qd * kd / std::sqrt(double(d));
      mx = std::max(mx, sc[j]);
    }
    double l = 0;
    for (int j = 0; j < kend; ++j) l += std::exp(sc[j] - mx);
    const float lse_k = lse[(size_t(bi) * h + hi) * sq + row];
    if (kend > 0) lse_maxe = std::max(lse_maxe, std::fabs(double(lse_k) - (mx + std::log(l))));
    for (int c = 0; c < d; ++c) {
      double o = 0;
      for (int j = 0; j < kend; ++j)
        o += std::exp(sc[j] - mx) *
             fp8attn::model::e4m3_to_float(vc[((size_t(bi) * sk + j) * hkv + kh) * d + c]) * vd;
      o = kend > 0 ? o / l : 0.0;
      const double got = __bfloat162float(out[((size_t(bi) * sq + row) * h + hi) * d + c]);
      se += (got - o) * (got - o);
      sr += o * o;
      maxe = std::max(maxe, std::fabs(got - o));
      ++count;
    }
  }
  const double rel_rmse = std::sqrt(se / std::max(sr, 1e-300));

  // Timing.
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  for (int i = 0; i < 5; ++i) fp8attn_probe_attention_fwd(&p, nullptr);
  std::vector<float> ms(iters);
  for (int i = 0; i < iters; ++i) {
    CHECK_CUDA(cudaEventRecord(e0));
    fp8attn_probe_attention_fwd(&p, nullptr);
    CHECK_CUDA(cudaEventRecord(e1));
    CHECK_CUDA(cudaEventSynchronize(e1));
    CHECK_CUDA(cudaEventElapsedTime(&ms[i], e0, e1));
  }
  CHECK_CUDA(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  const double med = iters ? ms[iters / 2] : 0;
  const double flops = 4.0 * b * h * double(sq) * sk * d * (causal ? 0.5 : 1.0);
  std::printf(
      "probe b=%d sq=%d sk=%d h=%d hkv=%d causal=%d p=%d seed=%u | rel_rmse=%.3e max=%.3e lse_max=%.3e "
      "nonfinite=%zu rows=%d | median %.4f ms %.1f TFLOP/s\n",
      b, sq, sk, h, hkv, causal, p_precision, seed, rel_rmse, maxe, lse_maxe, nan_count, check_rows, med,
      iters ? flops / (med * 1e-3) / 1e12 : 0.0);
  return (nan_count == 0 && rel_rmse < 5e-2) ? 0 : 1;
}
