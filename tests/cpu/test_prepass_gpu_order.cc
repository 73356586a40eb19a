// The GPU kernels' own data movement, replayed on the CPU lane by lane, against the CPU mirror:
// catches a mirror whose order of operations or layout differs from what src/quant/*.cu does,
// without a GPU. The replays use the kernels' own index arithmetic (src/quant/lanes.h) and copy
// their shuffle patterns (the sources are named): the lane layouts, the Hadamard rotation in
// both variants' lanes and in the statistics pass, lse_bias's reduction, the channel statistics.
// The V^T layout the kernels write: tests/cpu/test_prepass_vt_layout.cc. The GPU test
// (tests/gpu/test_quant.cu) then checks the real kernels, both variants.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "model/codecs.h"
#include "model/prepass.h"
#include "src/quant/lanes.h"
#include "tests/common/seed.h"

namespace fp8attn::model {
namespace {

constexpr int kD = 128;
namespace q = fp8attn::quant;

using fp8attn::test::fresh_seed;

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The seed's sign bits as the kernels hold them: bit c % 32 of word c / 32 set when channel c
// is negated.
void sign_words(uint64_t seed, uint32_t (&neg)[4]) {
  neg[0] = neg[1] = neg[2] = neg[3] = 0;
  for (int c = 0; c < kD; ++c) {
    if (fp8attn_hadamard_sign_negative(seed, c)) neg[c / 32] |= 1u << (c % 32);
  }
}

// One lane's run `hi` of 8 channels (quant/lanes.h RowLanes<L>): the BF16 codes with the signs
// folded into the conversion (quant_common.cuh bf16x8_to_float_signed), then the butterflies of
// strides 1, 2, 4 inside the run. Writes x_lane[8 hi .. 8 hi + 7].
template <int L>
void signed_run_strides_1_2_4(const uint16_t* codes, const uint32_t (&neg)[4], int lane, int hi,
                              float* x_lane) {
  using Lanes = q::RowLanes<L>;
  for (int p = 0; p < 4; ++p) {
    const int c = Lanes::channel(hi, lane, 2 * p);
    const uint32_t b = (neg[c >> 5] >> (c & 31)) & 3u;
    const uint32_t mask = ((b & 1u) << 15) | ((b & 2u) << 30);
    const uint32_t w = (uint32_t(codes[c]) | (uint32_t(codes[c + 1]) << 16)) ^ mask;
    x_lane[8 * hi + 2 * p] = from_bits(w << 16);
    x_lane[8 * hi + 2 * p + 1] = from_bits(w & 0xFFFF0000u);
  }
  for (int h = 1; h < 8; h *= 2) {
    for (int j = 0; j < 8; ++j) {
      if (j & h) continue;
      const float a = x_lane[8 * hi + j], b = x_lane[8 * hi + j + h];
      x_lane[8 * hi + j] = a + b;
      x_lane[8 * hi + j + h] = a - b;
    }
  }
}

// A row held by L lanes as quant_common.cuh's kernels hold it (quant/lanes.h), from BF16 codes:
// the sign masks of sign_masks<L> XORed into the packed codes (bf16x8_to_float_signed), the
// butterflies of hadamard_lanes<L>: strides 1, 2, 4 in a lane, 8 .. 4L across lanes as
// fma(x, +-1, other), 8L .. 64 across a lane's runs.
template <int L>
void replay_hadamard_lanes_v2(const uint16_t* codes, uint64_t seed,
                              float (&x)[L][q::RowLanes<L>::kValues]) {
  using Lanes = q::RowLanes<L>;
  uint32_t neg[4];
  sign_words(seed, neg);
  for (int lane = 0; lane < L; ++lane) {
    for (int hi = 0; hi < Lanes::kChunks; ++hi) signed_run_strides_1_2_4<L>(codes, neg, lane, hi, x[lane]);
  }
  for (int m = 1; m < L; m *= 2) {
    float before[L][Lanes::kValues];
    std::memcpy(before, x, sizeof before);
    for (int lane = 0; lane < L; ++lane) {
      const float sign = (lane & m) ? -1.0f : 1.0f;
      for (int v = 0; v < Lanes::kValues; ++v) {
        x[lane][v] = std::fma(before[lane][v], sign, before[lane ^ m][v]);
      }
    }
  }
  for (int lane = 0; lane < L; ++lane) {
    for (int h = 1; h < Lanes::kChunks; h *= 2) {
      for (int hi = 0; hi < Lanes::kChunks; ++hi) {
        if (hi & h) continue;
        for (int j = 0; j < 8; ++j) {
          const float a = x[lane][8 * hi + j], b = x[lane][8 * (hi + h) + j];
          x[lane][8 * hi + j] = a + b;
          x[lane][8 * (hi + h) + j] = a - b;
        }
      }
    }
  }
}

// kv_stats.cu's rotation of K (quant/lanes.h StatsTranspose): the sign flips and strides 1, 2,
// 4 of hadamard_lanes<8> in its layout, the row written to a buffer at pos(l, j) and read back by
// lane j from row_start(j) (word m = k(m)), then strides 8 .. 64 over k in the lane. Out:
// y[j][k] = channel 8 k + j.
void replay_stats_rotation(const uint16_t* codes, uint64_t seed, float (&y)[8][16]) {
  using Tr = q::StatsTranspose;
  using Lanes = q::RowLanes<q::kStatsLanes>;
  static_assert(q::kStatsLanes == 8 && Lanes::kChunks == 2);
  float x[8][16];
  uint32_t neg[4];
  sign_words(seed, neg);
  for (int lane = 0; lane < 8; ++lane) {
    for (int hi = 0; hi < Lanes::kChunks; ++hi) signed_run_strides_1_2_4<8>(codes, neg, lane, hi, x[lane]);
  }
  std::vector<float> buf(Tr::kSlot, NAN);
  std::set<int> written;
  for (int l = 0; l < 8; ++l) {
    for (int j = 0; j < 8; ++j) {
      const int p = Tr::pos(l, j);
      ASSERT_TRUE(p + 1 < Tr::kSlot && p % 2 == 0);  // 8-byte aligned, inside the row's buffer
      ASSERT_TRUE(written.insert(p).second && written.insert(p + 1).second);
      buf[p] = x[l][j], buf[p + 1] = x[l][8 + j];
    }
  }
  for (int j = 0; j < 8; ++j) {
    ASSERT_EQ(Tr::row_start(j) % 4, 0);  // 16-byte loads
    for (int m = 0; m < 16; ++m) y[j][Tr::k(m)] = buf[Tr::row_start(j) + m];
    for (int h = 1; h < 16; h *= 2) {
      for (int k = 0; k < 16; ++k) {
        if (k & h) continue;
        const float a = y[j][k], b = y[j][k + h];
        y[j][k] = a + b;
        y[j][k + h] = a - b;
      }
    }
  }
}

// A row of N(0, sigma^2) values rounded to BF16: its codes and their exact floats.
void random_row(std::mt19937_64& rng, float sigma, uint16_t (&codes)[kD], float (&row)[kD]) {
  std::normal_distribution<float> n01;
  for (int c = 0; c < kD; ++c) {
    codes[c] = float_to_bf16(n01(rng) * sigma);
    row[c] = bf16_to_float(codes[c]);
  }
}

TEST(PrepassGpuOrder, StatsRotationEqualsTheMirror) {
  const uint64_t seed = fresh_seed("stats rotation");
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 64; ++trial) {
    uint16_t codes[kD];
    float row[kD];
    random_row(rng, 1 + trial, codes, row);
    float y[8][16];
    replay_stats_rotation(codes, seed + trial, y);
    hadamard_rotate_128(row, seed + trial);
    for (int j = 0; j < 8; ++j) {
      for (int k = 0; k < 16; ++k) {
        ASSERT_TRUE(same_bits(y[j][k], row[8 * k + j])) << "channel " << 8 * k + j;
      }
    }
  }
}

template <int L>
void expect_lanes_equal_mirror(uint64_t seed) {
  using Lanes = q::RowLanes<L>;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 64; ++trial) {
    uint16_t codes[kD];
    float row[kD];
    random_row(rng, 1 + trial, codes, row);
    float lanes[L][Lanes::kValues];
    replay_hadamard_lanes_v2<L>(codes, seed + trial, lanes);
    hadamard_rotate_128(row, seed + trial);
    for (int lane = 0; lane < L; ++lane) {
      for (int hi = 0; hi < Lanes::kChunks; ++hi) {
        for (int j = 0; j < 8; ++j) {
          const int c = Lanes::channel(hi, lane, j);
          ASSERT_TRUE(same_bits(lanes[lane][8 * hi + j], row[c]))
              << "L=" << L << " channel " << c << ": lanes " << lanes[lane][8 * hi + j]
              << " mirror " << row[c];
        }
      }
    }
  }
}

TEST(PrepassGpuOrder, LaneLayoutsCoverEveryChannelOnceWithWholeSectors) {
  auto check = [](auto lanes_tag) {
    using Lanes = decltype(lanes_tag);
    constexpr int L = kD / Lanes::kValues;
    std::set<int> seen;
    for (int lane = 0; lane < L; ++lane) {
      for (int hi = 0; hi < Lanes::kChunks; ++hi) {
        for (int j = 0; j < 8; ++j) ASSERT_TRUE(seen.insert(Lanes::channel(hi, lane, j)).second);
      }
    }
    ASSERT_EQ(seen.size(), size_t(kD));
    // One 16-byte load per run: the L lanes' loads of run hi are 16 L contiguous bytes, starting
    // on a 32-byte boundary (whole sectors).
    for (int hi = 0; hi < Lanes::kChunks; ++hi) {
      for (int lane = 0; lane < L; ++lane) {
        ASSERT_EQ(2 * Lanes::channel(hi, lane, 0), 2 * Lanes::channel(hi, 0, 0) + 16 * lane);
      }
      ASSERT_EQ(2 * Lanes::channel(hi, 0, 0) % 32, 0);
    }
  };
  check(q::RowLanes<q::kRowLanes>{});
  check(q::RowLanes<q::kStatsLanes>{});
}

TEST(PrepassGpuOrder, HadamardOnFourAndEightLanesEqualsTheMirror) {
  const uint64_t seed = fresh_seed("hadamard lanes v2");
  expect_lanes_equal_mirror<q::kRowLanes>(seed);
  expect_lanes_equal_mirror<q::kStatsLanes>(seed + 1000);
  expect_lanes_equal_mirror<2>(seed + 2000);
}

// quant_common.cuh hadamard_row (v1) on 8 lanes x 16 values: sign bits picked per lane from the 4
// words, butterflies 1..8 in a thread, then xor-shuffles 1, 2, 4 (upper lane: other - mine).
void replay_hadamard_lanes(float (&x)[8][16], uint64_t seed) {
  uint32_t neg[4];
  sign_words(seed, neg);
  for (int lane = 0; lane < 8; ++lane) {
    uint32_t word = neg[0];
    word = lane >= 2 ? neg[1] : word;
    word = lane >= 4 ? neg[2] : word;
    word = lane >= 6 ? neg[3] : word;
    const uint32_t bits = (lane & 1) ? word >> 16 : word & 0xFFFFu;
    for (int i = 0; i < 16; ++i) {
      if ((bits >> i) & 1u) x[lane][i] = -x[lane][i];
    }
    for (int h = 1; h < 16; h *= 2) {
      for (int i = 0; i < 16; ++i) {
        if (i & h) continue;
        const float a = x[lane][i], b = x[lane][i + h];
        x[lane][i] = a + b;
        x[lane][i + h] = a - b;
      }
    }
  }
  for (int lane_bit = 1; lane_bit < 8; lane_bit *= 2) {
    float before[8][16];
    std::memcpy(before, x, sizeof before);
    for (int lane = 0; lane < 8; ++lane) {
      const bool upper = (lane & lane_bit) != 0;
      for (int i = 0; i < 16; ++i) {
        const float other = before[lane ^ lane_bit][i];
        x[lane][i] = upper ? other - before[lane][i] : before[lane][i] + other;
      }
    }
  }
}

TEST(PrepassGpuOrder, HadamardLanesEqualTheMirror) {
  const uint64_t seed = fresh_seed("hadamard lanes");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01;
  for (int trial = 0; trial < 64; ++trial) {
    float lanes[8][16], row[kD];
    for (int c = 0; c < kD; ++c) lanes[c / 16][c % 16] = row[c] = n01(rng) * (1 + trial);
    replay_hadamard_lanes(lanes, seed + trial);
    hadamard_rotate_128(row, seed + trial);
    for (int c = 0; c < kD; ++c) {
      ASSERT_TRUE(same_bits(lanes[c / 16][c % 16], row[c]))
          << "channel " << c << ": lanes " << lanes[c / 16][c % 16] << " mirror " << row[c];
    }
  }
}

// lse_bias: rows_tile.cuh (v2: 4 lanes, lane holds chains 4 hi + lane; pairwise in the lane,
// then xor-shuffles 1, 2) and quantize_rows_v1.cu (8 lanes, lane l chains 2l and 2l + 1; every
// lane gathers the 16 chain sums) against lse_dot_128 and the mirror's lse_bias, rotated or not.
TEST(PrepassGpuOrder, LseBiasLanesEqualTheMirror) {
  const uint64_t seed = fresh_seed("lse_bias lanes");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01;
  const int sk = 77, sq = 50;
  std::vector<uint16_t> k(static_cast<size_t>(sk) * kD), q(static_cast<size_t>(sq) * kD);
  for (size_t i = 0; i < k.size(); ++i) k[i] = float_to_bf16(5.0f * n01(rng) + n01(rng));
  for (uint16_t& x : q) x = float_to_bf16(n01(rng));
  for (const bool rotate : {false, true}) {
    fp8attn_quant_options opt{};
    opt.smooth_k = 1, opt.hadamard_qk = rotate, opt.hadamard_seed = seed;
    const KvCacheHost cache = prepass_kv(contiguous_view(k, 1, sk, 1, kD),
                                         contiguous_view(k, 1, sk, 1, kD), opt);
    const float scale = 0.08838834764831845f;
    const QQuantHost qq = prepass_q(contiguous_view(q, 1, sq, 1, kD), cache,
                                    FP8ATTN_Q_SCALE_TOKEN, scale);
    const float* m = cache.k_mean.data();
    for (int s = 0; s < sq; ++s) {
      float row[kD];
      for (int c = 0; c < kD; ++c) row[c] = bf16_to_float(q[static_cast<size_t>(s) * kD + c]);
      if (rotate) hadamard_rotate_128(row, seed);
      // v2
      using Lanes = q::RowLanes<q::kRowLanes>;
      float dot[q::kRowLanes];
      for (int lane = 0; lane < q::kRowLanes; ++lane) {
        float chain[Lanes::kChunks];
        for (int hi = 0; hi < Lanes::kChunks; ++hi) {
          float acc = 0.0f;
          for (int j = 0; j < 8; ++j) {
            const int c = Lanes::channel(hi, lane, j);
            acc = std::fma(row[c], m[c], acc);
          }
          chain[hi] = acc;
        }
        dot[lane] = (chain[0] + chain[1]) + (chain[2] + chain[3]);
      }
      for (int off = 1; off < q::kRowLanes; off *= 2) {
        float before[q::kRowLanes];
        std::memcpy(before, dot, sizeof before);
        for (int lane = 0; lane < q::kRowLanes; ++lane) dot[lane] = before[lane] + before[lane ^ off];
      }
      // v1
      float lo[8], hi[8];
      for (int l = 0; l < 8; ++l) {
        lo[l] = hi[l] = 0.0f;
        for (int i = 0; i < 8; ++i) lo[l] = std::fma(row[16 * l + i], m[16 * l + i], lo[l]);
        for (int i = 0; i < 8; ++i) hi[l] = std::fma(row[16 * l + 8 + i], m[16 * l + 8 + i], hi[l]);
      }
      float chain[16];
      for (int l = 0; l < 8; ++l) chain[2 * l] = lo[l], chain[2 * l + 1] = hi[l];
      float t[4];
      for (int j = 0; j < 4; ++j) t[j] = (chain[j] + chain[4 + j]) + (chain[8 + j] + chain[12 + j]);
      const float v1 = (t[0] + t[1]) + (t[2] + t[3]);
      const float mirror_dot = lse_dot_128(row, m);
      for (int lane = 0; lane < q::kRowLanes; ++lane) ASSERT_TRUE(same_bits(dot[lane], mirror_dot));
      ASSERT_TRUE(same_bits(v1, mirror_dot));
      const float d = rotate ? mirror_dot * 0.0078125f : mirror_dot;
      ASSERT_TRUE(same_bits(scale * d, qq.lse_bias[s])) << "token " << s << " rotate " << rotate;
    }
  }
}

// kv_stats.cu: a CTA per (tensor, b, h, group of 16 chunks); slot t / 8 sums its chunk of 32 keys
// in key order (lane t % 8 holds 16 channels of each row; rotated: StatsTranspose's layout), thread c adds the group's
// chunk sums in chunk order (chunks from sk on: none); the finalize adds the group sums in order,
// mean = sum / n, V's amax from max / min, K's per-head amax the max over channels of its
// channels' amax.
TEST(PrepassGpuOrder, ChannelStatisticsEqualTheMirror) {
  const uint64_t seed = fresh_seed("channel statistics");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01;
  const int chunk = FP8ATTN_QUANT_STATS_CHUNK, group = FP8ATTN_QUANT_STATS_GROUP;
  ASSERT_EQ(q::kStatsThreads, group * q::kStatsLanes);
  for (const int sk : {1, 200, 1000, 4097}) {
    for (const bool rotate : {false, true}) {
      const int b = 2, h = 2;
      std::vector<uint16_t> k(static_cast<size_t>(b) * sk * h * kD), v(k.size());
      for (size_t i = 0; i < k.size(); ++i) {
        k[i] = float_to_bf16(3.0f * n01(rng) + 10.0f);
        v[i] = float_to_bf16(n01(rng) - 2.0f);
      }
      fp8attn_quant_options opt{};
      opt.smooth_k = opt.smooth_v = 1, opt.hadamard_qk = rotate, opt.hadamard_seed = seed;
      opt.k_scale = FP8ATTN_K_SCALE_HEAD;
      const Bf16View kv = contiguous_view(k, b, sk, h, kD), vv = contiguous_view(v, b, sk, h, kD);
      const KvCacheHost cache = prepass_kv(kv, vv, opt);
      const int ngroups = (sk + chunk * group - 1) / (chunk * group);
      const int nblk = (sk + 127) / 128;
      for (int bi = 0; bi < b; ++bi) {
        for (int hi_ = 0; hi_ < h; ++hi_) {
          // The rows as the lanes hold them (rotated: the v2 replay), per channel.
          std::vector<float> krow(static_cast<size_t>(sk) * kD), vrow(krow.size());
          for (int s = 0; s < sk; ++s) {
            uint16_t codes[kD];
            for (int c = 0; c < kD; ++c) {
              codes[c] = kv.at(bi, s, hi_, c);
              vrow[size_t(s) * kD + c] = bf16_to_float(vv.at(bi, s, hi_, c));
            }
            if (rotate) {  // kv_stats.cu's rotation: lane j holds channels 8 k + j
              float y[8][16];
              replay_stats_rotation(codes, seed, y);
              for (int j = 0; j < 8; ++j)
                for (int k = 0; k < 16; ++k) krow[size_t(s) * kD + 8 * k + j] = y[j][k];
            } else {
              for (int c = 0; c < kD; ++c) krow[size_t(s) * kD + c] = bf16_to_float(codes[c]);
            }
          }
          float k_amax_head = 0.0f;
          const size_t o = (static_cast<size_t>(bi) * h + hi_) * kD;
          for (int c = 0; c < kD; ++c) {
            float stat[2][3];  // (k, v) x (sum, max, min)
            for (int t = 0; t < 2; ++t) {
              const std::vector<float>& rows = t == 0 ? krow : vrow;
              float total = 0.0f, mx = -INFINITY, mn = INFINITY;
              for (int g = 0; g < ngroups; ++g) {
                float gs = 0.0f;
                for (int slot = 0; slot < group; ++slot) {
                  const int s0 = (g * group + slot) * chunk;
                  if (s0 >= sk) break;
                  float cs = 0.0f;
                  for (int s = s0; s < std::min(sk, s0 + chunk); ++s) {
                    const float x = rows[size_t(s) * kD + c];
                    cs = cs + x, mx = std::fmax(mx, x), mn = std::fmin(mn, x);
                  }
                  gs = gs + cs;
                }
                total = total + gs;
              }
              stat[t][0] = total, stat[t][1] = mx, stat[t][2] = mn;
            }
            const float n = static_cast<float>(sk);
            const float k_mean = stat[0][0] / n, v_mean = stat[1][0] / n;
            const float v_amax = std::fmax(stat[1][1] - v_mean, v_mean - stat[1][2]);
            const float k_amax = std::fmax(stat[0][1] - k_mean, k_mean - stat[0][2]);
            k_amax_head = c == 0 ? k_amax : std::fmax(k_amax_head, k_amax);
            ASSERT_TRUE(same_bits(k_mean, cache.k_mean[o + c])) << "sk " << sk << " channel " << c;
            ASSERT_TRUE(same_bits(v_mean, cache.v_mean[o + c])) << "sk " << sk << " channel " << c;
            ASSERT_TRUE(same_bits(group_scale(v_amax).descale, cache.v_descale[o + c]))
                << "sk " << sk << " channel " << c;
          }
          const float descale = group_scale(k_amax_head).descale * (rotate ? 0.0078125f : 1.0f);
          for (int blk = 0; blk < nblk; ++blk) {
            ASSERT_TRUE(same_bits(descale, cache.k_descale[(static_cast<size_t>(bi) * h + hi_) * nblk + blk]))
                << "sk " << sk << " block " << blk;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace fp8attn::model
