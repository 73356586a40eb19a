#include "model/prepare.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "fp8attn/quant.h"
#include "model/codecs.h"
#include "model/kernel_mirror.h"
#include "model/prepass.h"

namespace fp8attn::model {

template <typename T>
void hadamard_rows(T* x, int64_t rows, int d, uint64_t seed, bool inverse) {
  if (d <= 0 || (d & (d - 1)) != 0) throw std::invalid_argument("hadamard: d must be a power of 2");
  std::vector<T> sign(d);
  for (int c = 0; c < d; ++c) sign[c] = fp8attn_hadamard_sign_negative(seed, c) ? T(-1) : T(1);
  const T norm = T(1) / std::sqrt(static_cast<T>(d));
#pragma omp parallel for schedule(static) if (rows > 256)
  for (int64_t r = 0; r < rows; ++r) {
    T* row = x + r * d;
    if (!inverse) for (int c = 0; c < d; ++c) row[c] *= sign[c];
    for (int len = 1; len < d; len *= 2) {
      for (int i = 0; i < d; i += 2 * len) {
        for (int j = i; j < i + len; ++j) {
          const T a = row[j], b = row[j + len];
          row[j] = a + b;
          row[j + len] = a - b;
        }
      }
    }
    for (int c = 0; c < d; ++c) row[c] *= inverse ? norm * sign[c] : norm;
  }
}
template void hadamard_rows<float>(float*, int64_t, int, uint64_t, bool);
template void hadamard_rows<double>(double*, int64_t, int, uint64_t, bool);

namespace {

constexpr int kScaleBlock = 128;
constexpr float kLog2e = 1.4426950408889634f;

// Per-channel mean over tokens of each (batch, head): (b, h, d).
std::vector<float> channel_mean(const Tensor& x) {
  std::vector<float> m(static_cast<size_t>(x.b) * x.h * x.d);
  for (int b = 0; b < x.b; ++b) {
    for (int h = 0; h < x.h; ++h) {
      std::vector<double> acc(x.d, 0.0);
      for (int s = 0; s < x.s; ++s) {
        const float* r = x.row(b, s, h);
        for (int c = 0; c < x.d; ++c) acc[c] += r[c];
      }
      for (int c = 0; c < x.d; ++c) {
        m[(static_cast<size_t>(b) * x.h + h) * x.d + c] = static_cast<float>(acc[c] / std::max(x.s, 1));
      }
    }
  }
  return m;
}

void subtract_mean(Tensor& x, const std::vector<float>& m) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < x.b; ++b) {
    for (int s = 0; s < x.s; ++s) {
      for (int h = 0; h < x.h; ++h) {
        float* r = x.row(b, s, h);
        const float* mr = &m[(static_cast<size_t>(b) * x.h + h) * x.d];
        for (int c = 0; c < x.d; ++c) r[c] -= mr[c];
      }
    }
  }
}

// Group id of element (b, s, h, c) for a granularity; heads_per_group: query heads per kv head
// (Q's kBatchHead groups them; 1 for K and V).
struct Groups {
  Granularity g;
  int B, S, H, D, heads_per_group;
  int64_t count() const {
    switch (g) {
      case Granularity::kTensor: return 1;
      case Granularity::kBatchHead: return static_cast<int64_t>(B) * (H / heads_per_group);
      case Granularity::kBlock: return static_cast<int64_t>(B) * H * ((S + kScaleBlock - 1) / kScaleBlock);
      case Granularity::kToken: return static_cast<int64_t>(B) * H * S;
      case Granularity::kChannel: return static_cast<int64_t>(B) * H * D;
    }
    return 1;
  }
  int64_t id(int b, int s, int h, int c) const {
    switch (g) {
      case Granularity::kTensor: return 0;
      case Granularity::kBatchHead: return static_cast<int64_t>(b) * (H / heads_per_group) + h / heads_per_group;
      case Granularity::kBlock: return (static_cast<int64_t>(b) * H + h) * ((S + kScaleBlock - 1) / kScaleBlock) + s / kScaleBlock;
      case Granularity::kToken: return (static_cast<int64_t>(b) * H + h) * S + s;
      case Granularity::kChannel: return (static_cast<int64_t>(b) * H + h) * D + c;
    }
    return 0;
  }
};

struct Quantized {
  Tensor value;                // codes' values (factored) or dequantized values
  Tensor deq;                  // dequantized values
  std::vector<float> descale;  // per group
  Groups groups;
  bool factored = false;
};

// Quantizes x with the operand's format and granularity. `factorable`: the product can take the
// group scale out (then value holds code values, else dequantized values).
// torch_scale: the scales and codes of python/fp8attn/quantize.py on the GPU (Scheme::torch_scale).
Quantized quantize(const Tensor& x, const OperandQuant& oq, int heads_per_group, bool factorable,
                   bool torch_scale) {
  Quantized r{x, x, {}, Groups{oq.granularity, x.b, x.s, x.h, x.d, heads_per_group}, false};
  if (oq.format == Format::FP32) return r;
  if (oq.format == Format::BF16) {
    round_inplace(Format::BF16, r.value.data.data(), r.value.size());
    r.deq = r.value;
    return r;
  }
  const Groups& G = r.groups;
  std::vector<float> amax(G.count(), 0.0f);
  for (int b = 0; b < x.b; ++b) {
    for (int s = 0; s < x.s; ++s) {
      for (int h = 0; h < x.h; ++h) {
        const float* row = x.row(b, s, h);
        for (int c = 0; c < x.d; ++c) {
          float& a = amax[G.id(b, s, h, c)];
          a = std::max(a, std::fabs(row[c]));
        }
      }
    }
  }
  const float fmax = format_max(oq.format);
  r.descale.resize(amax.size());
  std::vector<float> inv(amax.size());
  const float recip_fmax = 1.0f / fmax;
  for (size_t i = 0; i < amax.size(); ++i) {
    const bool ok = amax[i] > 0.0f && std::isfinite(fmax / amax[i]);
    r.descale[i] = ok ? (torch_scale ? amax[i] * recip_fmax : amax[i] / fmax) : 1.0f;
    inv[i] = ok ? fmax / amax[i] : 1.0f;
  }
  const float lo_factor = oq.format == Format::INT8 ? 128.0f : 16.0f;
  r.factored = factorable && !oq.hilo;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < x.b; ++b) {
    for (int s = 0; s < x.s; ++s) {
      for (int h = 0; h < x.h; ++h) {
        const float* src = x.row(b, s, h);
        float* val = r.value.row(b, s, h);
        float* deq = r.deq.row(b, s, h);
        for (int c = 0; c < x.d; ++c) {
          const int64_t gid = G.id(b, s, h, c);
          // torch clamps x / descale to +-fmax before its cast (quantize.py); round_to saturates.
          const float y = torch_scale ? src[c] / r.descale[gid] : src[c] * inv[gid];
          float code = round_to(oq.format, y);
          if (oq.hilo) code += round_to(oq.format, (y - code) * lo_factor) / lo_factor;
          deq[c] = code * r.descale[gid];
          val[c] = r.factored ? code : deq[c];
        }
      }
    }
  }
  return r;
}

Tensor from_codes(const std::vector<uint8_t>& codes, int b, int s, int h, int d) {
  Tensor t(b, s, h, d);
  e4m3_to_floats(codes.data(), t.data.data(), t.size());
  return t;
}

Prepared prepare_with_prepass(const Scheme& sc, const Tensor& q, const Tensor& k, const Tensor& v,
                              float softmax_scale) {
  if (q.d != 128) throw std::invalid_argument("fp8attn-kernel schemes need head_dim 128");
  std::vector<uint16_t> qb(q.data.size()), kb(k.data.size()), vb(v.data.size());
  floats_to_bf16(q.data.data(), qb.data(), q.size());
  floats_to_bf16(k.data.data(), kb.data(), k.size());
  floats_to_bf16(v.data.data(), vb.data(), v.size());
  fp8attn_quant_options opt{};
  opt.smooth_k = sc.prepass_smooth_k;
  opt.smooth_v = sc.prepass_smooth_v;
  opt.hadamard_qk = sc.prepass_hadamard;
  opt.q_scale = sc.prepass_q_block ? FP8ATTN_Q_SCALE_BLOCK128 : FP8ATTN_Q_SCALE_TOKEN;
  opt.v_scale = sc.prepass_v_head ? FP8ATTN_V_SCALE_HEAD : FP8ATTN_V_SCALE_CHANNEL;
  opt.k_scale = sc.prepass_k_head ? FP8ATTN_K_SCALE_HEAD : FP8ATTN_K_SCALE_BLOCK128;
  opt.hadamard_seed = sc.hadamard_seed;
  opt.centre = sc.prepass_centre;
  if (sc.prepass_v_fp16 && sc.numerics.p_format != Format::FP16) {
    throw std::invalid_argument("prepass_v_fp16 needs P in FP16 (as the kernel: FP8ATTN_P_FP16)");
  }
  const KvCacheHost cache = prepass_kv(contiguous_view(kb, k.b, k.s, k.h, k.d),
                                       contiguous_view(vb, v.b, v.s, v.h, v.d), opt, 0,
                                       sc.prepass_v_fp16 ? FP8ATTN_VT_FP16 : FP8ATTN_VT_E4M3,
                                       sc.prepass_sample);
  const QQuantHost qq = prepass_q(contiguous_view(qb, q.b, q.s, q.h, q.d), cache,
                                  static_cast<fp8attn_q_scale>(opt.q_scale), softmax_scale);
  Prepared p;
  p.q = from_codes(qq.q, q.b, q.s, q.h, q.d);
  p.k = from_codes(cache.k, k.b, k.s, k.h, k.d);
  if (sc.prepass_v_fp16) {
    const std::vector<uint16_t> v16 = vt16_to_v(cache.vt16.data(), v.b, v.h, v.s, cache.vt_seqlen_pad);
    p.v = Tensor(v.b, v.s, v.h, v.d);
    for (size_t i = 0; i < v16.size(); ++i) p.v.data[i] = fp16_to_float(v16[i]);
  } else {
    p.v = from_codes(vt_to_v(cache.vt.data(), v.b, v.h, v.s, cache.vt_seqlen_pad), v.b, v.s, v.h, v.d);
  }
  p.q_scale = qq.q_descale;
  // The engine takes k_scale per block of its block_n keys; a per-head descale (every 128-key
  // entry of a head equal) is laid out again for that.
  const int nkb = (k.s + 127) / 128;
  if (sc.prepass_k_head) {
    const int nb = (k.s + sc.numerics.block_n - 1) / sc.numerics.block_n;
    p.k_scale.resize(static_cast<size_t>(k.b) * k.h * nb);
    for (size_t bh = 0; bh < static_cast<size_t>(k.b) * k.h; ++bh)
      for (int n = 0; n < nb; ++n) p.k_scale[bh * nb + n] = cache.k_descale[bh * nkb];
  } else {
    p.k_scale = cache.k_descale;
  }
  p.v_scale = cache.v_descale;
  if (opt.smooth_k) p.lse_bias = qq.lse_bias;
  if (opt.smooth_v) p.o_bias = cache.v_mean;
  // Dequantized: x = code * descale at the kernel's granularities.
  p.q_deq = p.q;
  p.k_deq = p.k;
  p.v_deq = p.v;
  for (int b = 0; b < q.b; ++b)
    for (int s = 0; s < q.s; ++s)
      for (int h = 0; h < q.h; ++h)
        for (int c = 0; c < q.d; ++c)
          p.q_deq(b, s, h, c) *= p.q_scale[(static_cast<size_t>(b) * q.h + h) * q.s + s];
  for (int b = 0; b < k.b; ++b)
    for (int s = 0; s < k.s; ++s)
      for (int h = 0; h < k.h; ++h)
        for (int c = 0; c < k.d; ++c) {
          p.k_deq(b, s, h, c) *= cache.k_descale[(static_cast<size_t>(b) * k.h + h) * nkb + s / 128];
          p.v_deq(b, s, h, c) *= p.v_scale[(static_cast<size_t>(b) * k.h + h) * k.d + c];
        }
  return p;
}

}  // namespace

Prepared prepare_operands(const Scheme& sc, const Tensor& q0, const Tensor& k0, const Tensor& v0,
                          float softmax_scale) {
  if (softmax_scale <= 0.0f) softmax_scale = 1.0f / std::sqrt(static_cast<float>(q0.d));
  if (sc.kernel_prepass) return prepare_with_prepass(sc, q0, k0, v0, softmax_scale);
  const int group = q0.h / std::max(k0.h, 1);
  Tensor q = q0, k = k0, v = v0;
  Prepared p;
  if (sc.smooth_k) {
    const std::vector<float> km = channel_mean(k);
    subtract_mean(k, km);
    // LSE correction: scale * q_i . mean(K) (the row constant smoothing removed).
    p.lse_bias.resize(static_cast<size_t>(q.b) * q.h * q.s);
    for (int b = 0; b < q.b; ++b)
      for (int h = 0; h < q.h; ++h)
        for (int s = 0; s < q.s; ++s) {
          const float* mr = &km[(static_cast<size_t>(b) * k.h + h / group) * k.d];
          double dot = 0;
          for (int c = 0; c < q.d; ++c) dot += static_cast<double>(q0(b, s, h, c)) * mr[c];
          p.lse_bias[(static_cast<size_t>(b) * q.h + h) * q.s + s] = static_cast<float>(softmax_scale * dot);
        }
  }
  if (sc.smooth_q) {
    const std::vector<float> qm = channel_mean(q);
    subtract_mean(q, qm);
    // Per-key correction mean(Q) . k_j (FP32 from the unquantized, smoothed K).
    p.score_bias.resize(static_cast<size_t>(q.b) * q.h * k.s);
    p.key_bias.resize(p.score_bias.size());
    for (int b = 0; b < q.b; ++b)
      for (int h = 0; h < q.h; ++h)
        for (int j = 0; j < k.s; ++j) {
          const float* mr = &qm[(static_cast<size_t>(b) * q.h + h) * q.d];
          const float* kr = k.row(b, j, h / group);
          float dot = 0;
          for (int c = 0; c < q.d; ++c) dot = std::fma(mr[c], kr[c], dot);
          const size_t i = (static_cast<size_t>(b) * q.h + h) * k.s + j;
          p.score_bias[i] = softmax_scale * dot;
          p.key_bias[i] = softmax_scale * kLog2e * dot;
        }
  }
  if (sc.smooth_v) {
    p.o_bias = channel_mean(v);
    subtract_mean(v, p.o_bias);
  }
  if (sc.hadamard_qk) {
    hadamard_rows(q.data.data(), q.size() / q.d, q.d, sc.hadamard_seed, false);
    hadamard_rows(k.data.data(), k.size() / k.d, k.d, sc.hadamard_seed, false);
  }
  if (sc.hadamard_v) {
    hadamard_rows(v.data.data(), v.size() / v.d, v.d, sc.hadamard_seed ^ 0x5Aull, false);
    p.rotate_v = true;
    p.seed = sc.hadamard_seed ^ 0x5Aull;
  }

  // Quantize. Scales the products can factor: Q per row (tensor, head, block, token), K per key
  // block of the engine (tensor, head, or 128-token block when the engine's block is 128), V per
  // channel (tensor, head, channel).
  using G = Granularity;
  const auto& og = sc.q.granularity;
  const bool q_fact = og != G::kChannel;
  const auto& kg = sc.k.granularity;
  const bool k_fact = kg == G::kTensor || kg == G::kBatchHead ||
                      (kg == G::kBlock && sc.numerics.block_n == kScaleBlock);
  const auto& vg = sc.v.granularity;
  const bool v_fact = vg == G::kTensor || vg == G::kBatchHead || vg == G::kChannel;
  Quantized qq = quantize(q, sc.q, group, q_fact, sc.torch_scale);
  Quantized kq = quantize(k, sc.k, 1, k_fact, sc.torch_scale);
  Quantized vq = quantize(v, sc.v, 1, v_fact, sc.torch_scale);

  if (qq.factored) {
    p.q_scale.resize(static_cast<size_t>(q.b) * q.h * q.s);
    for (int b = 0; b < q.b; ++b)
      for (int h = 0; h < q.h; ++h)
        for (int s = 0; s < q.s; ++s)
          p.q_scale[(static_cast<size_t>(b) * q.h + h) * q.s + s] = qq.descale[qq.groups.id(b, s, h, 0)];
  }
  if (kq.factored) {
    const int nkb = (k.s + sc.numerics.block_n - 1) / sc.numerics.block_n;
    p.k_scale.resize(static_cast<size_t>(k.b) * k.h * nkb);
    for (int b = 0; b < k.b; ++b)
      for (int h = 0; h < k.h; ++h)
        for (int n = 0; n < nkb; ++n)
          p.k_scale[(static_cast<size_t>(b) * k.h + h) * nkb + n] =
              kq.descale[kq.groups.id(b, n * sc.numerics.block_n, h, 0)];
  }
  if (vq.factored) {
    p.v_scale.resize(static_cast<size_t>(v.b) * v.h * v.d);
    for (int b = 0; b < v.b; ++b)
      for (int h = 0; h < v.h; ++h)
        for (int c = 0; c < v.d; ++c)
          p.v_scale[(static_cast<size_t>(b) * v.h + h) * v.d + c] = vq.descale[vq.groups.id(b, 0, h, c)];
  }
  p.q = std::move(qq.value);
  p.k = std::move(kq.value);
  p.v = std::move(vq.value);
  p.q_deq = std::move(qq.deq);
  p.k_deq = std::move(kq.deq);
  p.v_deq = std::move(vq.deq);
  return p;
}

}  // namespace fp8attn::model
