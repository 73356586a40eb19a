// CPU mirror of src/quant/: see model/prepass.h. Every FP32 operation below has a twin in
// src/quant/*.cu, in the same order; keep the two in step (docs/prepass.md lists the order).
#include "model/prepass.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "model/codecs.h"

// The model builds with -march=x86-64-v3, where GCC would fuse a*b+c into an FMA (even across
// statements). The GPU code rounds every product separately unless it calls fmaf explicitly, so
// contraction must be off here; the one intended FMA (the lse_bias dot product) uses std::fma.
#pragma GCC optimize("fp-contract=off")

namespace fp8attn::model {
namespace {

constexpr int kHeadDim = 128;
constexpr float kHadamardDescale = 0.0078125f;  // 1/128: H_128 unnormalized, taken out on K

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("fp8attn prepass: " + what);
}

void check_view(const Bf16View& t, const char* name) {
  require(t.data != nullptr, std::string(name) + " is null");
  require(t.head_dim == kHeadDim, std::string(name) + ".head_dim must be 128, got " +
                                      std::to_string(t.head_dim));
  require(t.batch > 0 && t.seqlen > 0 && t.heads > 0,
          std::string(name) + " needs batch, seqlen, heads > 0");
}

float bf16(uint16_t code) { return bf16_to_float(code); }

float max_of(float a, float b) { return b > a ? b : a; }  // fmaxf on non-NaN inputs

// Row s of head h: float(bf16), then the rotation (signs and butterflies) when `rotate`; the K
// mean is subtracted after the rotation (K is rotated first, then smoothed in the rotated basis:
// the statistics of the rotated rows then give the exact amax of a per-head scale).
// With `rope` (the rope entry), the rotary embedding of table row rope->pos0 + s first.
void transformed_row(const Bf16View& x, int b, int s, int h, bool rotate, uint64_t seed,
                     float* out, const RopeHost* rope = nullptr) {
  for (int c = 0; c < kHeadDim; ++c) out[c] = bf16(x.at(b, s, h, c));
  if (rope != nullptr) {
    const size_t row = static_cast<size_t>(rope->pos0 + s) * (kHeadDim / 2);
    rope_rotate_128(out, rope->cos + row, rope->sin + row);
  }
  if (rotate) hadamard_rotate_128(out, seed);
}

void check_rope(const RopeHost* rope, int seqlen, const char* name) {
  if (rope == nullptr) return;
  require(rope->cos != nullptr && rope->sin != nullptr, std::string(name) + ": rope tables null");
  require(rope->pos0 >= 0 && int64_t{rope->pos0} + seqlen <= rope->max_positions,
          std::string(name) + ": rope positions out of the table's range");
}

float row_amax(const float* row) {
  float m = 0.0f;
  for (int c = 0; c < kHeadDim; ++c) m = max_of(m, std::fabs(row[c]));
  return m;
}

// The amax of x - mean over every row of a channel from its max and min (exact: rounding is
// monotone), or of x itself when not smoothed.
float channel_amax(float max, float min, float mean, bool smoothed) {
  return smoothed ? max_of(max - mean, mean - min) : max_of(max, -min);
}

}  // namespace

Bf16View contiguous_view(const std::vector<uint16_t>& codes, int batch, int seqlen, int heads,
                         int head_dim) {
  require(codes.size() == static_cast<size_t>(batch) * seqlen * heads * head_dim,
          "contiguous_view: size does not match the shape");
  Bf16View v;
  v.data = codes.data();
  v.batch = batch, v.seqlen = seqlen, v.heads = heads, v.head_dim = head_dim;
  v.stride_h = head_dim;
  v.stride_s = static_cast<int64_t>(heads) * head_dim;
  v.stride_b = static_cast<int64_t>(seqlen) * v.stride_s;
  return v;
}

void hadamard_rotate_128(float* x, uint64_t seed) {
  for (int c = 0; c < kHeadDim; ++c) {
    if (fp8attn_hadamard_sign_negative(seed, c)) x[c] = -x[c];
  }
  for (int h = 1; h < kHeadDim; h *= 2) {
    for (int i = 0; i < kHeadDim; ++i) {
      if (i & h) continue;
      const float a = x[i], b = x[i + h];
      x[i] = a + b;
      x[i + h] = a - b;
    }
  }
}

void rope_rotate_128(float* x, const float* cos_row, const float* sin_row) {
  constexpr int kHalf = kHeadDim / 2;
  for (int c = 0; c < kHalf; ++c) {
    const float a = x[c], b = x[c + kHalf];
    const float bs = b * sin_row[c], as = a * sin_row[c];
    x[c] = std::fmaf(a, cos_row[c], -bs);
    x[c + kHalf] = std::fmaf(b, cos_row[c], as);
  }
}

GroupScale group_scale(float amax) {
  // Below 2^-100 the reciprocal could overflow; such a group quantizes to zeros anyway. An
  // infinite or NaN amax makes the group NaN, as the kernels do (src/quant/quant_common.cuh).
  if (!(amax <= FLT_MAX)) return {std::nanf(""), std::nanf("")};
  if (!(amax >= 0x1p-100f)) return {1.0f, 1.0f};
  return {kE4M3Max / amax, amax / kE4M3Max};
}

ChannelStats channel_stats(const float* rows, int n) {
  constexpr int kChunk = FP8ATTN_QUANT_STATS_CHUNK, kGroup = kChunk * FP8ATTN_QUANT_STATS_GROUP;
  ChannelStats st;
  for (int c = 0; c < kHeadDim; ++c) {
    float total = 0.0f, mx = -INFINITY, mn = INFINITY;
    for (int g0 = 0; g0 < n; g0 += kGroup) {
      float group = 0.0f;
      for (int c0 = g0; c0 < std::min(n, g0 + kGroup); c0 += kChunk) {
        float chunk = 0.0f;
        for (int s = c0; s < std::min(n, c0 + kChunk); ++s) {
          const float x = rows[static_cast<size_t>(s) * kHeadDim + c];
          chunk = chunk + x;
          mx = max_of(mx, x);
          mn = x < mn ? x : mn;
        }
        group = group + chunk;
      }
      total = total + group;
    }
    st.sum[c] = total, st.max[c] = mx, st.min[c] = mn;
  }
  return st;
}

float lse_dot_128(const float* q, const float* mean) {
  float chain[16];
  for (int g = 0; g < 16; ++g) {
    float acc = 0.0f;
    for (int j = 0; j < 8; ++j) acc = std::fma(q[8 * g + j], mean[8 * g + j], acc);
    chain[g] = acc;
  }
  float t[4];
  for (int j = 0; j < 4; ++j) t[j] = (chain[j] + chain[4 + j]) + (chain[8 + j] + chain[12 + j]);
  return (t[0] + t[1]) + (t[2] + t[3]);
}

std::vector<int> sample_keys(int seqlen, const SampleSpec& spec) {
  std::vector<int> keys;
  const int rows = spec.rows > 0 ? spec.rows : fp8attn_sample_count(seqlen);
  if (seqlen <= rows + spec.skip) {
    for (int i = 0; i < seqlen; ++i) keys.push_back(i);
    return keys;
  }
  for (int i = 0; i < rows; ++i) {
    keys.push_back(spec.strided
                       ? spec.skip + static_cast<int>(static_cast<int64_t>(i) * (seqlen - spec.skip) / rows)
                       : spec.skip + i);
  }
  return keys;
}

ChannelStats sample_stats(const float* rows, const std::vector<int>& keys) {
  constexpr int kSlots = FP8ATTN_QUANT_SAMPLE_SLOTS;
  ChannelStats st;
  for (int c = 0; c < kHeadDim; ++c) {
    float slot[kSlots] = {};
    float mx = -INFINITY, mn = INFINITY;
    for (size_t i = 0; i < keys.size(); ++i) {
      const float x = rows[static_cast<size_t>(keys[i]) * kHeadDim + c];
      slot[i % kSlots] = slot[i % kSlots] + x;
      mx = max_of(mx, x);
      mn = x < mn ? x : mn;
    }
    float total = 0.0f;
    for (int j = 0; j < kSlots; ++j) total = total + slot[j];
    st.sum[c] = total, st.max[c] = mx, st.min[c] = mn;
  }
  return st;
}

float amax_bits(float a, float b) {
  uint32_t x, y;
  const float fa = std::fabs(a), fb = std::fabs(b);
  std::memcpy(&x, &fa, 4);
  std::memcpy(&y, &fb, 4);
  return x >= y ? fa : fb;
}

KvCacheHost prepass_kv(const Bf16View& k, const Bf16View& v, const fp8attn_quant_options& options,
                       int vt_seqlen_pad, int vt_dtype, const SampleSpec& sample,
                       const RopeHost* k_rope) {
  check_view(k, "k");
  check_rope(k_rope, k.seqlen, "k");
  check_view(v, "v");
  require(k.batch == v.batch && k.seqlen == v.seqlen && k.heads == v.heads,
          "k and v shapes differ");
  require(options.v_scale == FP8ATTN_V_SCALE_CHANNEL || options.v_scale == FP8ATTN_V_SCALE_HEAD,
          "unknown v_scale");
  require(options.k_scale == FP8ATTN_K_SCALE_HEAD || options.k_scale == FP8ATTN_K_SCALE_BLOCK128,
          "unknown k_scale");
  require(options.centre == FP8ATTN_CENTRE_MEAN || options.centre == FP8ATTN_CENTRE_SAMPLE,
          "unknown centre");
  const int B = k.batch, S = k.seqlen, H = k.heads;
  const int min_pad = (S + FP8ATTN_VT_PAD - 1) / FP8ATTN_VT_PAD * FP8ATTN_VT_PAD;
  if (vt_seqlen_pad == 0) vt_seqlen_pad = min_pad;
  require(vt_seqlen_pad >= min_pad && vt_seqlen_pad % FP8ATTN_VT_PAD == 0,
          "vt_seqlen_pad must be a multiple of 32 and >= seqlen_k rounded up to 32");

  KvCacheHost out;
  out.batch = B, out.seqlen_k = S, out.heads_kv = H, out.vt_seqlen_pad = vt_seqlen_pad;
  out.options = options;
  const int nblk = (S + FP8ATTN_K_SCALE_BLOCK - 1) / FP8ATTN_K_SCALE_BLOCK;
  out.k.assign(static_cast<size_t>(B) * S * H * kHeadDim, 0);
  require(vt_dtype == FP8ATTN_VT_E4M3 || vt_dtype == FP8ATTN_VT_FP16, "unknown vt_dtype");
  out.vt_dtype = vt_dtype;
  const bool vt16 = vt_dtype == FP8ATTN_VT_FP16;
  if (vt16) out.vt16.assign(static_cast<size_t>(B) * H * kHeadDim * vt_seqlen_pad, 0);
  else out.vt.assign(static_cast<size_t>(B) * H * kHeadDim * vt_seqlen_pad, 0);
  out.k_descale.assign(static_cast<size_t>(B) * H * nblk, 0.0f);
  out.v_descale.assign(static_cast<size_t>(B) * H * kHeadDim, 0.0f);
  out.k_mean.assign(static_cast<size_t>(B) * H * kHeadDim, 0.0f);
  out.v_mean.assign(static_cast<size_t>(B) * H * kHeadDim, 0.0f);
  out.resampled.assign(static_cast<size_t>(B) * H, 0);
  const bool one_pass = options.centre == FP8ATTN_CENTRE_SAMPLE;
  const std::vector<int> keys = sample_keys(S, sample);
  const bool rotate = options.hadamard_qk != 0;
  const bool k_head = options.k_scale == FP8ATTN_K_SCALE_HEAD;
  const float k_descale_factor = rotate ? kHadamardDescale : 1.0f;

#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < H; ++h) {
      const size_t bh = static_cast<size_t>(b) * H + h;
      float* k_mean = &out.k_mean[bh * kHeadDim];
      float* v_mean = &out.v_mean[bh * kHeadDim];
      // K's rows as the fused pass holds them before smoothing: rotated when `rotate`.
      std::vector<float> k_rows(static_cast<size_t>(S) * kHeadDim), v_rows(k_rows.size());
      for (int s = 0; s < S; ++s) {
        transformed_row(k, b, s, h, rotate, options.hadamard_seed, &k_rows[size_t(s) * kHeadDim],
                        k_rope);
        for (int c = 0; c < kHeadDim; ++c) v_rows[size_t(s) * kHeadDim + c] = bf16(v.at(b, s, h, c));
      }

      // Channel statistics (quant.h's order), means, V's scales; for one pass, the sample's.
      const float n = static_cast<float>(one_pass ? keys.size() : S);
      const ChannelStats vs =
          one_pass ? sample_stats(v_rows.data(), keys) : channel_stats(v_rows.data(), S);
      float v_amax[kHeadDim];
      for (int c = 0; c < kHeadDim; ++c) {
        v_mean[c] = options.smooth_v ? vs.sum[c] / n : 0.0f;
        v_amax[c] = channel_amax(vs.max[c], vs.min[c], v_mean[c], options.smooth_v != 0);
      }
      if (options.v_scale == FP8ATTN_V_SCALE_HEAD) {
        float head_amax = v_amax[0];
        for (int c = 1; c < kHeadDim; ++c) head_amax = max_of(head_amax, v_amax[c]);
        std::fill(v_amax, v_amax + kHeadDim, head_amax);
      }
      if (one_pass) {  // the bound, unless the fused pass's true amax exceeds it
        float truth[kHeadDim] = {}, head_truth = 0.0f;
        for (int s = 0; s < S; ++s) {
          for (int c = 0; c < kHeadDim; ++c) {
            const float x = v_rows[size_t(s) * kHeadDim + c];
            truth[c] = amax_bits(truth[c], options.smooth_v ? x - v_mean[c] : x);
          }
        }
        for (int c = 0; c < kHeadDim; ++c) head_truth = amax_bits(head_truth, truth[c]);
        for (int c = 0; c < kHeadDim; ++c) {
          const float bound = v_amax[c] * sample.headroom;
          const float t = options.v_scale == FP8ATTN_V_SCALE_HEAD ? head_truth : truth[c];
          if (t <= bound) {
            v_amax[c] = bound;
          } else {
            v_amax[c] = t;
            out.resampled[bh] |= 2;
          }
        }
      }
      float v_inv[kHeadDim];
      for (int c = 0; c < kHeadDim; ++c) {
        const GroupScale g = group_scale(v_amax[c]);
        v_inv[c] = g.inv;
        out.v_descale[bh * kHeadDim + c] = g.descale;
      }
      float k_head_amax = 0.0f;
      if (options.smooth_k || k_head) {
        const ChannelStats ks =
            one_pass ? sample_stats(k_rows.data(), keys) : channel_stats(k_rows.data(), S);
        for (int c = 0; c < kHeadDim; ++c) k_mean[c] = options.smooth_k ? ks.sum[c] / n : 0.0f;
        for (int c = 0; c < kHeadDim; ++c) {
          const float a = channel_amax(ks.max[c], ks.min[c], k_mean[c], options.smooth_k != 0);
          k_head_amax = c == 0 ? a : max_of(k_head_amax, a);
        }
      }

      // K: smoothed in the rotated basis; one scale per head (from the statistics) or per 128 keys.
      if (options.smooth_k) {
        for (int s = 0; s < S; ++s) {
          float* row = &k_rows[size_t(s) * kHeadDim];
          for (int c = 0; c < kHeadDim; ++c) row[c] = row[c] - k_mean[c];
        }
      }
      if (one_pass && k_head) {
        float truth = 0.0f;
        for (size_t i = 0; i < k_rows.size(); ++i) truth = amax_bits(truth, k_rows[i]);
        const float bound = k_head_amax * sample.headroom;
        if (truth <= bound) {
          k_head_amax = bound;
        } else {
          k_head_amax = truth;
          out.resampled[bh] |= 1;
        }
      }
      for (int blk = 0; blk < nblk; ++blk) {
        const int s0 = blk * FP8ATTN_K_SCALE_BLOCK;
        const int n_rows = std::min(FP8ATTN_K_SCALE_BLOCK, S - s0);
        float amax = k_head_amax;
        if (!k_head) {
          amax = 0.0f;
          for (int r = 0; r < n_rows; ++r) amax = max_of(amax, row_amax(&k_rows[size_t(s0 + r) * kHeadDim]));
        }
        GroupScale g = group_scale(amax);
        g.descale = g.descale * k_descale_factor;
        out.k_descale[bh * nblk + blk] = g.descale;
        for (int r = 0; r < n_rows; ++r) {
          uint8_t* dst = &out.k[((static_cast<size_t>(b) * S + s0 + r) * H + h) * kHeadDim];
          const float* row = &k_rows[size_t(s0 + r) * kHeadDim];
          for (int c = 0; c < kHeadDim; ++c) dst[c] = float_to_e4m3(row[c] * g.inv);
        }
      }

      // FP16 V^T: the same scaled values, rounded to FP16, natural key order; zeros past S.
      for (int c = 0; vt16 && c < kHeadDim; ++c) {
        uint16_t* dst = &out.vt16[(bh * kHeadDim + c) * vt_seqlen_pad];
        for (int key = 0; key < S; ++key) {
          float f = v_rows[size_t(key) * kHeadDim + c];
          if (options.smooth_v) f = f - v_mean[c];
          dst[key] = float_to_fp16(f * v_inv[c]);
        }
      }
      // V^T: position p of each 32-key group holds key fp8attn_vt_key_at(p); zeros past S.
      for (int c = 0; !vt16 && c < kHeadDim; ++c) {
        uint8_t* dst = &out.vt[(bh * kHeadDim + c) * vt_seqlen_pad];
        for (int p = 0; p < vt_seqlen_pad; ++p) {
          const int key = p / FP8ATTN_VT_KEY_GROUP * FP8ATTN_VT_KEY_GROUP +
                          fp8attn_vt_key_at(p % FP8ATTN_VT_KEY_GROUP);
          if (key >= S) continue;  // stays zero
          float f = v_rows[size_t(key) * kHeadDim + c];
          if (options.smooth_v) f = f - v_mean[c];
          dst[p] = float_to_e4m3(f * v_inv[c]);
        }
      }
    }
  }
  return out;
}

QQuantHost prepass_q(const Bf16View& q, const KvCacheHost& cache, fp8attn_q_scale q_scale,
                     float softmax_scale, const RopeHost* q_rope) {
  check_view(q, "q");
  check_rope(q_rope, q.seqlen, "q");
  require(q.batch == cache.batch, "q and the KV cache have different batch sizes");
  require(q.heads % cache.heads_kv == 0, "heads must be a multiple of the cache's heads_kv");
  require(q_scale == FP8ATTN_Q_SCALE_TOKEN || q_scale == FP8ATTN_Q_SCALE_BLOCK128,
          "unknown q_scale");
  const int B = q.batch, S = q.seqlen, H = q.heads, group = q.heads / cache.heads_kv;
  const bool rotate = cache.options.hadamard_qk != 0;
  const bool bias = cache.options.smooth_k != 0;
  const int rows_per_scale = q_scale == FP8ATTN_Q_SCALE_TOKEN ? 1 : 128;

  QQuantHost out;
  out.batch = B, out.seqlen_q = S, out.heads = H;
  out.q.assign(static_cast<size_t>(B) * S * H * kHeadDim, 0);
  out.q_descale.assign(static_cast<size_t>(B) * H * S, 0.0f);
  out.lse_bias.assign(static_cast<size_t>(B) * H * S, 0.0f);

#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < H; ++h) {
      const size_t bh = static_cast<size_t>(b) * H + h;
      const float* k_mean =
          &cache.k_mean[(static_cast<size_t>(b) * cache.heads_kv + h / group) * kHeadDim];
      std::vector<float> rows(static_cast<size_t>(rows_per_scale) * kHeadDim);
      for (int s0 = 0; s0 < S; s0 += rows_per_scale) {
        const int n_rows = std::min(rows_per_scale, S - s0);
        float amax = 0.0f;
        for (int r = 0; r < n_rows; ++r) {
          float* row = &rows[static_cast<size_t>(r) * kHeadDim];
          transformed_row(q, b, s0 + r, h, rotate, cache.options.hadamard_seed, row, q_rope);
          amax = max_of(amax, row_amax(row));
        }
        const GroupScale g = group_scale(amax);
        for (int r = 0; r < n_rows; ++r) {
          const int s = s0 + r;
          uint8_t* dst = &out.q[((static_cast<size_t>(b) * S + s) * H + h) * kHeadDim];
          for (int c = 0; c < kHeadDim; ++c) {
            dst[c] = float_to_e4m3(rows[static_cast<size_t>(r) * kHeadDim + c] * g.inv);
          }
          out.q_descale[bh * S + s] = g.descale;
          if (!bias) continue;
          // q . k_mean in the basis K was smoothed in: the rotated q (the FP32 values quantized
          // above) when rotated, whose product carries H_128's factor 128 (taken out exactly).
          float dot = lse_dot_128(&rows[static_cast<size_t>(r) * kHeadDim], k_mean);
          if (rotate) dot = dot * kHadamardDescale;
          out.lse_bias[bh * S + s] = softmax_scale * dot;
        }
      }
    }
  }
  return out;
}

DecodedOperands decode_operands(const QQuantHost& q, const KvCacheHost& kv) {
  DecodedOperands out{Tensor(q.batch, q.seqlen_q, q.heads, kHeadDim),
                      Tensor(kv.batch, kv.seqlen_k, kv.heads_kv, kHeadDim),
                      Tensor(kv.batch, kv.seqlen_k, kv.heads_kv, kHeadDim)};
  for (size_t i = 0; i < q.q.size(); ++i) out.q.data[i] = e4m3_to_float(q.q[i]);
  for (size_t i = 0; i < kv.k.size(); ++i) out.k.data[i] = e4m3_to_float(kv.k[i]);
  int position_of_key[FP8ATTN_VT_KEY_GROUP];
  for (int p = 0; p < FP8ATTN_VT_KEY_GROUP; ++p) position_of_key[fp8attn_vt_key_at(p)] = p;
  for (int b = 0; b < kv.batch; ++b) {
    for (int s = 0; s < kv.seqlen_k; ++s) {
      const int p = s / FP8ATTN_VT_KEY_GROUP * FP8ATTN_VT_KEY_GROUP +
                    position_of_key[s % FP8ATTN_VT_KEY_GROUP];
      for (int h = 0; h < kv.heads_kv; ++h) {
        const size_t bh = static_cast<size_t>(b) * kv.heads_kv + h;
        for (int c = 0; c < kHeadDim; ++c) {
          const size_t row = (bh * kHeadDim + c) * kv.vt_seqlen_pad;
          out.v(b, s, h, c) = kv.vt_dtype == FP8ATTN_VT_FP16 ? fp16_to_float(kv.vt16[row + s])
                                                             : e4m3_to_float(kv.vt[row + p]);
        }
      }
    }
  }
  return out;
}

}  // namespace fp8attn::model
