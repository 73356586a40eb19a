// The GPU kernels' own data movement, replayed on the CPU lane by lane, against the CPU mirror:
// catches a mirror whose order of operations or layout differs from what src/quant/*.cu does,
// without a GPU. Each replay copies the kernel's index arithmetic and shuffle pattern (the
// sources are named); the GPU test (tests/gpu/test_quant.cu) then checks the real kernels.
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
#include "tests/common/seed.h"

namespace fp8attn::model {
namespace {

constexpr int kD = 128;

using fp8attn::test::fresh_seed;

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// quant_common.cuh hadamard_row on 8 lanes x 16 values: sign bits picked per lane from the 4
// words, butterflies 1..8 in a thread, then xor-shuffles 1, 2, 4 (upper lane: other - mine).
void replay_hadamard_lanes(float (&x)[8][16], uint64_t seed) {
  uint32_t neg[4] = {0, 0, 0, 0};
  for (int c = 0; c < kD; ++c) {
    if (fp8attn_hadamard_sign_negative(seed, c)) neg[c / 32] |= 1u << (c % 32);
  }
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

// quantize_rows.cu's lse_bias: FMA chain per lane over its 16 channels, then
// acc += shfl_xor(acc, 4), 2, 1 on every lane; lane 0 writes scale * acc.
TEST(PrepassGpuOrder, LseBiasButterflyEqualsTheMirror) {
  const uint64_t seed = fresh_seed("lse_bias butterfly");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01;
  const int sk = 77, sq = 50;
  std::vector<uint16_t> k(static_cast<size_t>(sk) * kD), q(static_cast<size_t>(sq) * kD);
  for (size_t i = 0; i < k.size(); ++i) k[i] = float_to_bf16(5.0f * n01(rng) + n01(rng));
  for (uint16_t& x : q) x = float_to_bf16(n01(rng));
  fp8attn_quant_options opt{};
  opt.smooth_k = 1;
  const KvCacheHost cache = prepass_kv(contiguous_view(k, 1, sk, 1, kD),
                                       contiguous_view(k, 1, sk, 1, kD), opt);
  const float scale = 0.08838834764831845f;
  const QQuantHost qq = prepass_q(contiguous_view(q, 1, sq, 1, kD), cache, FP8ATTN_Q_SCALE_TOKEN,
                                  scale);
  for (int s = 0; s < sq; ++s) {
    float acc[8];
    for (int lane = 0; lane < 8; ++lane) {
      acc[lane] = 0.0f;
      for (int i = 0; i < 16; ++i) {
        const int c = lane * 16 + i;
        acc[lane] = std::fma(bf16_to_float(q[static_cast<size_t>(s) * kD + c]), cache.k_mean[c],
                             acc[lane]);
      }
    }
    for (int off = 4; off > 0; off /= 2) {
      float before[8];
      std::memcpy(before, acc, sizeof before);
      for (int lane = 0; lane < 8; ++lane) acc[lane] = before[lane] + before[lane ^ off];
    }
    for (int lane = 1; lane < 8; ++lane) ASSERT_TRUE(same_bits(acc[lane], acc[0]));
    ASSERT_TRUE(same_bits(scale * acc[0], qq.lse_bias[s])) << "token " << s;
  }
}

// kv_stats.cu: the partial kernel's thread (flat (b, h, chunk), 8 channels) sums its chunk in key
// order; the finalize kernel's thread (segment, channel) sums its run of chunks, and segment 0
// adds the runs in order, then mean = sum / n and V's amax from the max / min.
TEST(PrepassGpuOrder, ChannelStatisticsEqualTheMirror) {
  const uint64_t seed = fresh_seed("channel statistics");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01;
  for (const int sk : {1, 200, 1000, 4097}) {
    const int b = 2, h = 2;
    std::vector<uint16_t> k(static_cast<size_t>(b) * sk * h * kD), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = float_to_bf16(3.0f * n01(rng) + 10.0f);
      v[i] = float_to_bf16(n01(rng) - 2.0f);
    }
    fp8attn_quant_options opt{};
    opt.smooth_k = opt.smooth_v = 1;
    const Bf16View kv = contiguous_view(k, b, sk, h, kD), vv = contiguous_view(v, b, sk, h, kD);
    const KvCacheHost cache = prepass_kv(kv, vv, opt);
    const int chunk = FP8ATTN_QUANT_STATS_CHUNK, segments = FP8ATTN_QUANT_STATS_SEGMENTS;
    const int nchunks = (sk + chunk - 1) / chunk, run = (nchunks + segments - 1) / segments;
    for (int bi = 0; bi < b; ++bi) {
      for (int hi = 0; hi < h; ++hi) {
        for (int c = 0; c < kD; ++c) {
          std::vector<float> k_part(nchunks), v_part(nchunks), v_pmax(nchunks), v_pmin(nchunks);
          for (int ch = 0; ch < nchunks; ++ch) {
            float ks = 0.0f, vs = 0.0f, mx = -INFINITY, mn = INFINITY;
            for (int s = ch * chunk; s < std::min(sk, ch * chunk + chunk); ++s) {
              ks = ks + bf16_to_float(kv.at(bi, s, hi, c));
              const float x = bf16_to_float(vv.at(bi, s, hi, c));
              vs = vs + x, mx = std::fmax(mx, x), mn = std::fmin(mn, x);
            }
            k_part[ch] = ks, v_part[ch] = vs, v_pmax[ch] = mx, v_pmin[ch] = mn;
          }
          float run_k[8], run_v[8], run_max[8], run_min[8];
          for (int seg = 0; seg < segments; ++seg) {
            run_k[seg] = run_v[seg] = 0.0f, run_max[seg] = -INFINITY, run_min[seg] = INFINITY;
            for (int ch = seg * run; ch < std::min(nchunks, (seg + 1) * run); ++ch) {
              run_k[seg] = run_k[seg] + k_part[ch];
              run_v[seg] = run_v[seg] + v_part[ch];
              run_max[seg] = std::fmax(run_max[seg], v_pmax[ch]);
              run_min[seg] = std::fmin(run_min[seg], v_pmin[ch]);
            }
          }
          float ksum = 0.0f, vsum = 0.0f, vmax = run_max[0], vmin = run_min[0];
          for (int seg = 0; seg < segments; ++seg) {
            ksum = ksum + run_k[seg], vsum = vsum + run_v[seg];
            vmax = std::fmax(vmax, run_max[seg]), vmin = std::fmin(vmin, run_min[seg]);
          }
          const float n = static_cast<float>(sk);
          const float k_mean = ksum / n, v_mean = vsum / n;
          const float amax = std::fmax(vmax - v_mean, v_mean - vmin);
          const size_t o = (static_cast<size_t>(bi) * h + hi) * kD + c;
          ASSERT_TRUE(same_bits(k_mean, cache.k_mean[o])) << "sk " << sk << " channel " << c;
          ASSERT_TRUE(same_bits(v_mean, cache.v_mean[o])) << "sk " << sk << " channel " << c;
          ASSERT_TRUE(same_bits(group_scale(amax).descale, cache.v_descale[o]))
              << "sk " << sk << " channel " << c;
        }
      }
    }
  }
}

// quantize_vt.cu: 256 threads store 16 codes of key r = pass * 32 + t / 8, channels
// 16 (t % 8) .. +15, at tile_offset(r, c0); then thread t writes, for id = i * 256 + t,
// channel id / 8, positions 16 (id % 8) .. +15, gathering key 32 (j / 2) + key_at(16 (j % 2) + n).
int tile_offset(int key, int channel) {
  return key * kD + ((((channel >> 4) ^ (key >> 4)) & 7) << 4) + (channel & 15);
}
int vt_key_at_device(int p) {  // quantize_vt.cu's copy of fp8attn_vt_key_at
  const int half = p / 16, quad = (p % 16) / 4, m = p % 4;
  return half * 16 + (m / 2) * 8 + quad * 2 + (m % 2);
}

TEST(PrepassGpuOrder, VtTileSwizzleAndGatherGiveTheHeaderLayout) {
  const auto code = [](int key, int c) { return static_cast<uint8_t>((key * 131 + c * 7) & 0xFF); };
  std::vector<uint8_t> tile(128 * kD, 0);
  std::set<int> written;
  for (int t = 0; t < 256; ++t) {
    for (int pass = 0; pass < 4; ++pass) {
      const int r = pass * 32 + t / 8, c0 = (t % 8) * 16;
      ASSERT_EQ(tile_offset(r, c0) % 16, 0) << "16-byte store misaligned";
      for (int i = 0; i < 16; ++i) {
        ASSERT_TRUE(written.insert(tile_offset(r, c0) + i).second) << "two codes, one byte";
        tile[tile_offset(r, c0) + i] = code(r, c0 + i);
      }
    }
  }
  std::vector<uint8_t> vt(kD * 128, 0);
  std::vector<int> banks_hit(32);
  for (int i = 0; i < 4; ++i) {
    for (int t = 0; t < 256; ++t) {
      const int id = i * 256 + t, c = id / 8, j = id % 8;
      for (int n = 0; n < 16; ++n) {
        const int key = 32 * (j / 2) + vt_key_at_device(16 * (j % 2) + n);
        vt[c * 128 + 16 * j + n] = tile[tile_offset(key, c)];
      }
    }
  }
  for (int c = 0; c < kD; ++c) {
    for (int p = 0; p < 128; ++p) {
      const int key = p / 32 * 32 + fp8attn_vt_key_at(p % 32);
      ASSERT_EQ(vt[c * 128 + p], code(key, c)) << "channel " << c << " position " << p;
    }
  }
  // The gather of one warp (32 threads, fixed i and n) touches 8 keys 16 apart and 4 channels:
  // the swizzle must spread them over distinct 4-byte banks (no conflict but same-word reuse).
  for (int n = 0; n < 16; ++n) {
    std::set<int> banks, words;
    for (int t = 0; t < 32; ++t) {
      const int c = t / 8, j = t % 8;
      const int key = 32 * (j / 2) + vt_key_at_device(16 * (j % 2) + n);
      const int word = tile_offset(key, c) / 4;
      words.insert(word);
      banks.insert(word % 32);
    }
    EXPECT_EQ(banks.size(), words.size()) << "bank conflict in the V^T gather, n = " << n;
  }
}

}  // namespace
}  // namespace fp8attn::model
