#include "model/flash.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "model/blas.h"
#include "model/reference.h"

namespace fp8attn::model {

float truncate_mantissa(float x, int bits) {
  if (bits >= 23 || !std::isfinite(x)) return x;
  const uint32_t mask = ~((1u << (23 - bits)) - 1u);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & mask);
}

namespace {

constexpr int kTileM = 128;              // query rows per tile: the kernel's kBlockM
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.69314718055994531f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// acc = truncate(acc + x) elementwise over n values (the Hopper FP8 accumulator model's k-step).
// Branch-free: clearing low mantissa bits keeps inf an inf and a quiet NaN a NaN.
void add_truncated(float* acc, const float* x, int64_t n, int bits) {
  const uint32_t mask = bits >= 23 ? ~0u : ~((1u << (23 - bits)) - 1u);
  for (int64_t i = 0; i < n; ++i) {
    acc[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(acc[i] + x[i]) & mask);
  }
}
void truncate_all(float* acc, int64_t n, int bits) {
  const uint32_t mask = bits >= 23 ? ~0u : ~((1u << (23 - bits)) - 1u);
  for (int64_t i = 0; i < n; ++i) acc[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(acc[i]) & mask);
}

// 2^x for x in [-126, 127]: Cody-Waite split x = n + f (|f| <= 1/2), 2^f by the Cephes exp2f
// polynomial (relative error <= 1.7e-7, about the GPU's ex2.approx), times 2^n built in the
// exponent bits. Branch-free so the loops below vectorize.
inline float exp2_poly(float x) {
  x = x < -126.0f ? -126.0f : (x > 127.0f ? 127.0f : x);
  const float n = (x + 12582912.0f) - 12582912.0f;  // rint by the 1.5 * 2^23 magic number
  const float f = x - n;
  float p = 1.535336188319500e-4f;
  p = std::fma(p, f, 1.339887440266574e-3f);
  p = std::fma(p, f, 9.618437357674640e-3f);
  p = std::fma(p, f, 5.550332471162809e-2f);
  p = std::fma(p, f, 2.402264791363012e-1f);
  p = std::fma(p, f, 6.931472028550421e-1f);
  p = std::fma(p * f, 1.0f, 1.0f);
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
  return p * scale;
}

// e[j] = 2^t[j] for n values; ftz: results below FLT_MIN are 0 (ex2.approx.ftz), else exact
// exp2f there (rare: a probability below 2^-126).
void exp2_array(const float* t, float* e, int n, bool ftz) {
  bool tiny = false;
  for (int j = 0; j < n; ++j) {
    const float x = t[j];
    e[j] = x < -126.0f ? 0.0f : exp2_poly(x);
    tiny |= x < -126.0f;
  }
  if (tiny && !ftz) {
    for (int j = 0; j < n; ++j) {
      if (t[j] < -126.0f) e[j] = std::exp2(t[j]);
    }
  }
}

}  // namespace

float flash_exp2(float x) { return x < -126.0f ? 0.0f : exp2_poly(x); }

namespace {

// P rounded to its format, n values.
void round_p(const float* e, float* p, int n, Format fmt, bool hilo) {
  switch (fmt) {
    case Format::E4M3:
      if (hilo) {
        for (int j = 0; j < n; ++j) {
          const float hi = round_e4m3_inline(e[j]);
          p[j] = hi + round_e4m3_inline(e[j] - hi);
        }
      } else {
        for (int j = 0; j < n; ++j) p[j] = round_e4m3_inline(e[j]);
      }
      break;
    case Format::BF16:
      for (int j = 0; j < n; ++j) p[j] = round_bf16_inline(e[j]);
      break;
    case Format::FP32:
      std::copy_n(e, n, p);
      break;
    default:
      for (int j = 0; j < n; ++j) p[j] = round_to(fmt, e[j]);
  }
}

// Thread-local buffers of one query tile.
struct TileBuffers {
  std::vector<float> qt, s, tmp, p, alpha, o, ob, inv_l, t, e, mwarp;
  void reserve(int ld_s, int nblk, int d, int block_n) {
    mwarp.resize(static_cast<size_t>(kTileM) * nblk);
    qt.resize(static_cast<size_t>(kTileM) * d);
    s.resize(static_cast<size_t>(kTileM) * ld_s);
    tmp.resize(static_cast<size_t>(kTileM) * std::max(ld_s, d));
    p.resize(static_cast<size_t>(kTileM) * ld_s);
    alpha.resize(static_cast<size_t>(kTileM) * nblk);
    o.resize(static_cast<size_t>(kTileM) * d);
    ob.resize(static_cast<size_t>(kTileM) * d);
    inv_l.resize(kTileM);
    t.resize(block_n);
    e.resize(block_n);
  }
};

constexpr int kWarpRows = 16;  // rows of the tile one warp holds (the m64 wgmma: 16 per warp)

// rescale_per_warp: each row's running max after each visited block (m_out[r * nkb + idx]), the
// slack tested per warp: when any row of a warp would move (its block max exceeds its m by more
// than the slack), every row of that warp takes max(m, block max), its exact running max.
void warp_running_max(const FlashNumerics& nm, const float* S, int ld_s, int R, int i0, int nblk,
                      int kcols, int sq, int sk, int nkb, const FlashInputs& in, float scale_log2,
                      size_t bh, const float* ks, const float* kb_row, float* m_out) {
  const int BN = nm.block_n;
  float cand[kWarpRows], m[kWarpRows];
  for (int w0 = 0; w0 < R; w0 += kWarpRows) {
    const int wr = std::min(kWarpRows, R - w0);
    std::fill_n(m, kWarpRows, kNegInf);
    for (int idx = 0; idx < nblk; ++idx) {
      const int n = nm.last_to_first ? nblk - 1 - idx : idx;
      bool any = false;
      for (int rr = 0; rr < wr; ++rr) {
        const int r = w0 + rr, i = i0 + r;
        const int ke = causal_key_end(i, sq, sk, in.causal);
        const int j0 = n * BN, jv = std::min(std::min(j0 + BN, kcols), ke);
        const float scale = scale_log2 * (in.q_scale ? in.q_scale[bh * sq + i] : 1.0f) * (ks ? ks[n] : 1.0f);
        const float* sr = S + static_cast<size_t>(r) * ld_s;
        float mx = kNegInf;
        if (!kb_row) {
          for (int j = j0; j < jv; ++j) mx = sr[j] > mx ? sr[j] : mx;
          cand[rr] = std::fmax(m[rr], mx * scale);
        } else {
          for (int j = j0; j < jv; ++j) mx = std::fmax(mx, std::fma(sr[j], scale, kb_row[j]));
          cand[rr] = std::fmax(m[rr], mx);
        }
        any |= cand[rr] > m[rr] + nm.rescale_slack_log2;
      }
      for (int rr = 0; rr < wr; ++rr) {
        if (any) m[rr] = cand[rr];
        m_out[static_cast<size_t>(w0 + rr) * nkb + idx] = m[rr];
      }
    }
  }
}

}  // namespace

FlashOutputs flash_forward(const FlashInputs& in, const FlashNumerics& nm) {
  if (!in.q || !in.k || !in.v) throw std::invalid_argument("flash_forward: q, k, v required");
  const Tensor& q = *in.q;
  const Tensor& k = *in.k;
  const Tensor& v = *in.v;
  check_attention_shapes(q, k, v);
  if (nm.block_n <= 0 || nm.acc_chunk <= 0) throw std::invalid_argument("flash_forward: bad block");
  const int B = q.b, sq = q.s, sk = k.s, H = q.h, HK = k.h, D = q.d, group = H / HK;
  const int BN = nm.block_n;
  // The row sums l is made of: the rounded P's (the tensor core's), the FP32 p's, or both (l_mix).
  const bool l_mixed = nm.l_mix >= 0.0f;
  const bool sum_rounded = nm.l_from_rounded_p || l_mixed, sum_fp32 = !nm.l_from_rounded_p || l_mixed;
  const int nkb = (sk + BN - 1) / BN;  // key blocks (and K scale blocks) per (b, kv head)
  const int ld_s = std::max(nkb * BN, 1);
  const float softmax_scale =
      in.softmax_scale > 0.0f ? in.softmax_scale : 1.0f / std::sqrt(static_cast<float>(D));
  const float scale_log2 = softmax_scale * kLog2e;  // as the kernel's host code forms it
  const float off = nm.p_offset_log2;
  const int bits = nm.acc_mantissa_bits;
  if (nm.exp_fa3 && (in.key_bias || nm.rescale_slack_log2 != 0.0f || nm.rescale_per_warp)) {
    throw std::invalid_argument("flash_forward: exp_fa3 needs slack 0 and no key bias");
  }

  FlashOutputs out;
  out.o_acc = Tensor(B, sq, H, D);
  out.o = Tensor(B, sq, H, D);
  out.lse.assign(static_cast<size_t>(B) * H * sq, kNegInf);
  blas_single_thread();
  const int ntiles = (sq + kTileM - 1) / kTileM;
  std::vector<float> kc(static_cast<size_t>(sk) * D), vc(static_cast<size_t>(sk) * D);
  std::vector<float> kt;  // K^T (D, sk): the aligned adder's B operand of Q K^T
  std::vector<float> ones(static_cast<size_t>(BN), 1.0f);  // the row sum's B operand

  for (int b = 0; b < B; ++b) {
    for (int kh = 0; kh < HK; ++kh) {
      for (int j = 0; j < sk; ++j) {
        std::copy_n(k.row(b, j, kh), D, &kc[static_cast<size_t>(j) * D]);
        std::copy_n(v.row(b, j, kh), D, &vc[static_cast<size_t>(j) * D]);
      }
      if (nm.acc_qk == Accumulator::kAligned) {
        kt.resize(static_cast<size_t>(D) * sk);
        for (int j = 0; j < sk; ++j)
          for (int c = 0; c < D; ++c) kt[static_cast<size_t>(c) * sk + j] = kc[static_cast<size_t>(j) * D + c];
      }
      const float* vs = in.v_scale ? in.v_scale + (static_cast<size_t>(b) * HK + kh) * D : nullptr;
      const float* obias = in.o_bias ? in.o_bias + (static_cast<size_t>(b) * HK + kh) * D : nullptr;
      const float* ks = in.k_scale ? in.k_scale + (static_cast<size_t>(b) * HK + kh) * nkb : nullptr;
#pragma omp parallel
      {
        TileBuffers tb;
        tb.reserve(ld_s, nkb, D, BN);
#pragma omp for schedule(dynamic)
        for (int task = 0; task < group * ntiles; ++task) {
          const int h = kh * group + task / ntiles;
          const int i0 = (task % ntiles) * kTileM, R = std::min(kTileM, sq - i0);
          const size_t bh = static_cast<size_t>(b) * H + h;
          const int kend_tile = causal_key_end(i0 + R - 1, sq, sk, in.causal);
          const int nblk = (kend_tile + BN - 1) / BN;
          const int kcols = std::min(nblk * BN, sk);
          if (nblk == 0) {  // no row of the tile sees a key: O = 0, LSE = -inf
            for (int r = 0; r < R; ++r) {
              std::fill_n(out.o_acc.row(b, i0 + r, h), D, 0.0f);
              std::fill_n(out.o.row(b, i0 + r, h), D, 0.0f);
            }
            continue;
          }
          for (int r = 0; r < R; ++r) std::copy_n(q.row(b, i0 + r, h), D, &tb.qt[static_cast<size_t>(r) * D]);

          // S = Q K^T for the tile's keys.
          float* S = tb.s.data();
          if (nm.acc_qk == Accumulator::kFP32) {
            gemm_nt(R, kcols, D, 1.0f, tb.qt.data(), D, kc.data(), D, 0.0f, S, ld_s);
          } else if (nm.acc_qk == Accumulator::kAligned) {
            for (int r = 0; r < R; ++r) std::fill_n(S + static_cast<size_t>(r) * ld_s, kcols, 0.0f);
            aligned_gemm_acc(nm.acc_rule, R, kcols, D, tb.qt.data(), D, kt.data(), sk, S, ld_s);
          } else {
            for (int c0 = 0; c0 < D; c0 += nm.acc_chunk) {
              const int kk = std::min(nm.acc_chunk, D - c0);
              gemm_nt(R, kcols, kk, 1.0f, tb.qt.data() + c0, D, kc.data() + c0, D, 0.0f,
                      c0 == 0 ? S : tb.tmp.data(), ld_s);
              for (int r = 0; r < R; ++r) {
                float* sr = S + static_cast<size_t>(r) * ld_s;
                if (c0 == 0) {
                  truncate_all(sr, kcols, bits);
                } else {
                  add_truncated(sr, tb.tmp.data() + static_cast<size_t>(r) * ld_s, kcols, bits);
                }
              }
            }
          }

          // Online softmax, row by row, blocks in the kernel's order: P, alpha per block, l, LSE.
          const float* kb_row = in.key_bias ? in.key_bias + bh * sk : nullptr;
          // rescale_per_warp: the running max of each row after each visited block, decided per
          // warp of 16 rows (tb.mwarp[r * nkb + idx]).
          if (nm.rescale_per_warp) warp_running_max(nm, S, ld_s, R, i0, nblk, kcols, sq, sk, nkb,
                                                    in, scale_log2, bh, ks, kb_row, tb.mwarp.data());
          for (int r = 0; r < R; ++r) {
            const int i = i0 + r;
            const int ke = causal_key_end(i, sq, sk, in.causal);
            const float qrow = scale_log2 * (in.q_scale ? in.q_scale[bh * sq + i] : 1.0f);
            const float* sr = S + static_cast<size_t>(r) * ld_s;
            float* pr = tb.p.data() + static_cast<size_t>(r) * ld_s;
            float* ar = tb.alpha.data() + static_cast<size_t>(r) * nkb;
            float m = kNegInf;
            float m_raw = kNegInf;  // exp_fa3: the running max of the unscaled scores
            float lp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            float lt = 0.0f, l_prev_blk = 0.0f;  // l_from_rounded_p: l, and the last block's sum
            for (int idx = 0; idx < nblk; ++idx) {
              const int n = nm.last_to_first ? nblk - 1 - idx : idx;
              const int j0 = n * BN, j1 = std::min(j0 + BN, kcols), jv = std::min(j1, ke);
              const float scale = qrow * (ks ? ks[n] : 1.0f);
              float m_new;
              if (!kb_row) {
                float mx = kNegInf;
                for (int j = j0; j < jv; ++j) mx = sr[j] > mx ? sr[j] : mx;
                m_new = std::fmax(m, mx * scale);
              } else {
                float mx = kNegInf;
                for (int j = j0; j < jv; ++j) mx = std::fmax(mx, std::fma(sr[j], scale, kb_row[j]));
                m_new = std::fmax(m, mx);
              }
              // The max moves only past the slack (the kernel's: FP8ATTN_RESCALE_SLACK_LOG2).
              if (nm.rescale_per_warp) {
                m_new = tb.mwarp[static_cast<size_t>(r) * nkb + idx];
              } else if (!(m_new > m + nm.rescale_slack_log2)) {
                m_new = m;
              }
              // A row that has seen no key yet keeps m = -inf; exp2 then gives 0, not NaN.
              const float m_use = m_new == kNegInf ? 0.0f : m_new;
              float alpha = std::exp2(m - m_use);
              float nb = off - m_use;
              if (nm.exp_fa3) {
                // FA3's arithmetic (its softmax: the max kept unscaled, the offset folded into
                // one FFMA, the rescale from the unscaled difference); with slack 0 and one scale
                // per row, m_new is m_raw * scale and only the roundings differ.
                float mx = kNegInf;
                for (int j = j0; j < jv; ++j) mx = sr[j] > mx ? sr[j] : mx;
                const float mr_new = std::fmax(m_raw, mx);
                const float cur = mr_new == kNegInf ? 0.0f : mr_new;
                alpha = std::exp2((m_raw - cur) * scale);
                nb = -(mr_new == kNegInf ? 0.0f : std::fma(mr_new, scale, -off));
                m_raw = mr_new;
              }
              const int nb_keys = j1 - j0;
              float* tt = tb.t.data();
              float* ee = tb.e.data();
              if (kb_row) {
                for (int j = j0; j < jv; ++j) tt[j - j0] = (std::fma(sr[j], scale, kb_row[j]) - m_use) + off;
              } else {
                for (int j = j0; j < jv; ++j) tt[j - j0] = std::fma(sr[j], scale, nb);
              }
              for (int j = std::max(jv, j0); j < j1; ++j) tt[j - j0] = kNegInf;
              exp2_array(tt, ee, nb_keys, nm.exp2_ftz);
              bool hilo = nm.p_hilo;
              if (hilo && nm.p_hilo_min_log2 > -1e29f) {  // the low term only in large blocks
                float bm = 0.0f;
                for (int j = 0; j < nb_keys; ++j) bm = std::fmax(bm, ee[j]);
                hilo = bm >= std::exp2(nm.p_hilo_min_log2);
              }
              round_p(ee, pr + j0, nb_keys, nm.p_format, hilo);
              if (sum_rounded) {
                // The tensor core's row sum (the kernel's kVariantTcRowSum): the block's rounded
                // P summed into a fresh accumulator, acc_chunk keys per k-step (the m64n8k32
                // wgmma of P against ones), truncated after each step as acc_pv's model says.
                // In the kernel's order: l is rescaled once the block's max is known, and the
                // previous block's sum (in the units of its own max) is added after, carried by
                // the same factor; the last block's sum is added at the end.
                const float* pb = pr + j0;
                float bs = 0.0f;
                if (nm.acc_pv == Accumulator::kAligned) {
                  aligned_gemm_acc(nm.acc_rule, 1, 1, nb_keys, pb, nb_keys, ones.data(), 1, &bs, 1);
                } else for (int k0 = 0; k0 < nb_keys; k0 += nm.acc_chunk) {
                  float cs = 0.0f;
                  for (int j = k0; j < std::min(k0 + nm.acc_chunk, nb_keys); ++j) cs += pb[j];
                  bs = nm.acc_pv == Accumulator::kHopperFP8 ? truncate_mantissa(bs + cs, bits) : bs + cs;
                }
                lt = lt * alpha;
                lt = std::fma(l_prev_blk, alpha, lt);
                l_prev_blk = bs;
              }
              if (sum_fp32) {
                // Four partial sums of the FP32 p, each in key order (thread t of a quad holds
                // keys with (key % 8) / 2 == t).
                float bsum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                for (int j = 0; j < nb_keys; ++j) bsum[(j & 7) >> 1] += ee[j];
                for (int t = 0; t < 4; ++t) lp[t] = std::fma(lp[t], alpha, bsum[t]);
              }
              ar[n] = alpha;
              m = m_new;
            }
            const float l_r = lt + l_prev_blk, l_32 = (lp[0] + lp[1]) + (lp[2] + lp[3]);
            const float l = l_mixed ? nm.l_mix * l_r + (1.0f - nm.l_mix) * l_32
                            : nm.l_from_rounded_p ? l_r : l_32;
            // l == 0: the row saw no key (O = 0, LSE = -inf); a NaN l (a NaN reached the row)
            // gives NaN, as the kernel's epilogue (src/attn/softmax.cuh finalize).
            tb.inv_l[r] = l == 0.0f ? 0.0f : 1.0f / l;
            float lse = kNegInf;
            if (l != 0.0f) {
              lse = (m + std::log2(l) - off) * kLn2;
              if (in.lse_bias) lse += in.lse_bias[bh * sq + i];
            }
            out.lse[bh * sq + i] = lse;
          }

          // O = sum over blocks (in order) of P_n V_n with the rescales.
          float* O = tb.o.data();
          float* Ob = tb.ob.data();
          std::fill_n(O, static_cast<size_t>(R) * D, 0.0f);
          for (int idx = 0; idx < nblk; ++idx) {
            const int n = nm.last_to_first ? nblk - 1 - idx : idx;
            const int c0 = n * BN, cn = std::min(BN, kcols - c0);
            const float* pb = tb.p.data() + c0;
            const float* vb = vc.data() + static_cast<size_t>(c0) * D;
            auto rescale_o = [&] {
              for (int r = 0; r < R; ++r) {
                const float a = tb.alpha[static_cast<size_t>(r) * nkb + n];
                for (int c = 0; c < D; ++c) O[static_cast<size_t>(r) * D + c] *= a;
              }
            };
            auto fma_o = [&] {
              for (int r = 0; r < R; ++r) {
                const float a = tb.alpha[static_cast<size_t>(r) * nkb + n];
                float* orow = O + static_cast<size_t>(r) * D;
                const float* brow = Ob + static_cast<size_t>(r) * D;
                for (int c = 0; c < D; ++c) orow[c] = std::fma(orow[c], a, brow[c]);
              }
            };
            if (nm.acc_pv == Accumulator::kFP32) {
              if (nm.two_level) {
                gemm_nn(R, D, cn, 1.0f, pb, ld_s, vb, D, 0.0f, Ob, D);
                fma_o();
              } else {
                rescale_o();
                gemm_nn(R, D, cn, 1.0f, pb, ld_s, vb, D, 1.0f, O, D);
              }
            } else {
              float* acc = O;
              if (nm.two_level) {
                std::fill_n(Ob, static_cast<size_t>(R) * D, 0.0f);
                acc = Ob;
              } else {
                rescale_o();
              }
              if (nm.acc_pv == Accumulator::kAligned) {
                aligned_gemm_acc(nm.acc_rule, R, D, cn, pb, ld_s, vb, D, acc, D);
              } else for (int k0 = 0; k0 < cn; k0 += nm.acc_chunk) {
                const int kk = std::min(nm.acc_chunk, cn - k0);
                gemm_nn(R, D, kk, 1.0f, pb + k0, ld_s, vb + static_cast<size_t>(k0) * D, D, 0.0f,
                        tb.tmp.data(), D);
                add_truncated(acc, tb.tmp.data(), static_cast<int64_t>(R) * D, bits);
              }
              if (nm.two_level) fma_o();
            }
          }

          // Epilogue: out = fma(O * v_scale, 1/l, o_bias), rounded to the output format.
          for (int r = 0; r < R; ++r) {
            float* acc_dst = out.o_acc.row(b, i0 + r, h);
            float* dst = out.o.row(b, i0 + r, h);
            const float inv_l = tb.inv_l[r];
            for (int c = 0; c < D; ++c) {
              float x = std::fma(O[static_cast<size_t>(r) * D + c] * (vs ? vs[c] : 1.0f), inv_l,
                                 obias ? obias[c] : 0.0f);
              if (inv_l == 0.0f) x = 0.0f;
              acc_dst[c] = x;
              dst[c] = round_to(nm.o_format, x);
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace fp8attn::model
