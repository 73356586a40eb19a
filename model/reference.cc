#include "model/reference.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "model/blas.h"

namespace fp8attn::model {

double AttnConfig::scale_for(int d) const {
  return softmax_scale > 0.0 ? softmax_scale : 1.0 / std::sqrt(static_cast<double>(d));
}

int causal_key_end(int i, int sq, int sk, bool causal) {
  if (!causal) return sk;
  return std::clamp(i + 1 + (sk - sq), 0, sk);
}

void check_attention_shapes(const Tensor& q, const Tensor& k, const Tensor& v) {
  auto shape = [](const Tensor& t) {
    return "(" + std::to_string(t.b) + ", " + std::to_string(t.s) + ", " + std::to_string(t.h) +
           ", " + std::to_string(t.d) + ")";
  };
  if (!k.same_shape(v) || q.b != k.b || q.d != k.d || k.h <= 0 || q.h % k.h != 0 ||
      q.size() != static_cast<int64_t>(q.b) * q.s * q.h * q.d) {
    throw std::invalid_argument("attention: q " + shape(q) + ", k " + shape(k) + ", v " + shape(v) +
                                ": need q (b, sq, h, d), k = v (b, sk, h_kv, d), h % h_kv == 0");
  }
}

namespace {

constexpr int kTile = 128;

template <typename T>
void exact_impl(const Tensor& q, const Tensor& k, const Tensor& v, const AttnConfig& cfg,
                Array4<T>& o, std::vector<T>& lse) {
  check_attention_shapes(q, k, v);
  const int B = q.b, sq = q.s, sk = k.s, H = q.h, HK = k.h, D = q.d, group = H / HK;
  const T scale = static_cast<T>(cfg.scale_for(D));
  o = Array4<T>(B, sq, H, D);
  lse.assign(static_cast<size_t>(B) * H * sq, T(0));
  blas_single_thread();
  const int ntiles = (sq + kTile - 1) / kTile;
  std::vector<T> kc(static_cast<size_t>(sk) * D), vc(static_cast<size_t>(sk) * D);
  for (int b = 0; b < B; ++b) {
    for (int kh = 0; kh < HK; ++kh) {
      for (int j = 0; j < sk; ++j) {
        for (int c = 0; c < D; ++c) {
          kc[static_cast<size_t>(j) * D + c] = k(b, j, kh, c);
          vc[static_cast<size_t>(j) * D + c] = v(b, j, kh, c);
        }
      }
#pragma omp parallel
      {
        std::vector<T> qt(static_cast<size_t>(kTile) * D), ot(static_cast<size_t>(kTile) * D);
        std::vector<T> s, rowl(kTile);
#pragma omp for schedule(dynamic)
        for (int task = 0; task < group * ntiles; ++task) {
          const int h = kh * group + task / ntiles;
          const int i0 = (task % ntiles) * kTile, rows = std::min(kTile, sq - i0);
          const int kend = causal_key_end(i0 + rows - 1, sq, sk, cfg.causal);
          for (int r = 0; r < rows; ++r) {
            for (int c = 0; c < D; ++c) qt[static_cast<size_t>(r) * D + c] = q(b, i0 + r, h, c);
          }
          s.assign(static_cast<size_t>(rows) * std::max(kend, 1), T(0));
          gemm_nt(rows, kend, D, scale, qt.data(), D, kc.data(), D, T(0), s.data(), kend);
          if (cfg.score_bias) {
            const float* sb = cfg.score_bias + (static_cast<size_t>(b) * H + h) * sk;
            for (int r = 0; r < rows; ++r) {
              for (int j = 0; j < kend; ++j) s[static_cast<size_t>(r) * kend + j] += sb[j];
            }
          }
          for (int r = 0; r < rows; ++r) {
            const int ke = causal_key_end(i0 + r, sq, sk, cfg.causal);
            T* sr = s.data() + static_cast<size_t>(r) * kend;
            T& out_lse = lse[(static_cast<size_t>(b) * H + h) * sq + i0 + r];
            if (ke == 0) {
              std::fill(sr, sr + kend, T(0));
              rowl[r] = T(0);
              out_lse = -std::numeric_limits<T>::infinity();
              continue;
            }
            T m = -std::numeric_limits<T>::infinity();
            for (int j = 0; j < ke; ++j) m = std::max(m, sr[j]);
            T l = 0;
            for (int j = 0; j < ke; ++j) {
              sr[j] = std::exp(sr[j] - m);
              l += sr[j];
            }
            std::fill(sr + ke, sr + kend, T(0));
            rowl[r] = l;
            out_lse = m + std::log(l);
          }
          gemm_nn(rows, D, kend, T(1), s.data(), kend, vc.data(), D, T(0), ot.data(), D);
          for (int r = 0; r < rows; ++r) {
            const T inv = rowl[r] > 0 ? T(1) / rowl[r] : T(0);
            T* dst = o.row(b, i0 + r, h);
            for (int c = 0; c < D; ++c) dst[c] = ot[static_cast<size_t>(r) * D + c] * inv;
          }
        }
      }
    }
  }
}

}  // namespace

ExactF64 attention_exact_f64(const Tensor& q, const Tensor& k, const Tensor& v, const AttnConfig& cfg) {
  ExactF64 r;
  exact_impl<double>(q, k, v, cfg, r.o, r.lse);
  return r;
}

ExactF32 attention_exact_f32(const Tensor& q, const Tensor& k, const Tensor& v, const AttnConfig& cfg) {
  ExactF32 r;
  exact_impl<float>(q, k, v, cfg, r.o, r.lse);
  return r;
}

}  // namespace fp8attn::model
