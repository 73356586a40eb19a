// The V^T layout the pre-pass kernels write, replayed on the CPU word by word and byte by byte
// against the public header's (fp8attn_vt_key_at: keys permuted within each group of 32): the v2
// tile's 32-bit words (vt_tile.cuh, quant/lanes.h VtSlot) and the v1 kernel's swizzled shared
// tile and gather (quantize_vt_v1.cu), each byte written once, and the v1 gather free of shared
// memory bank conflicts. No GPU; the GPU test (tests/gpu/test_quant.cu) checks the real kernels'
// bytes against the mirror. The lanes' Hadamard, lse_bias and statistics order:
// tests/cpu/test_prepass_gpu_order.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "include/fp8attn/fp8attn.h"  // fp8attn_vt_key_at
#include "src/quant/lanes.h"

namespace {

namespace q = fp8attn::quant;
constexpr int kD = q::kHeadDim;

// vt_tile.cuh (v2): warp w, lane pair u = lane / 2 holds keys VtSlot::key(u, 0..3) of each 64-key
// step and channels 16 w + 8 (lane % 2) .. + 7; each lane stores, per channel, one 32-bit word of
// the 4 codes at V^T position VtSlot::position(u). Together: the header's layout, every byte
// once, and per store instruction 16 consecutive words (64 bytes) of each of two V^T rows.
TEST(PrepassGpuOrder, VtWordsGiveTheHeaderLayout) {
  const auto code = [](int key, int c) { return static_cast<uint8_t>((key * 131 + c * 7) & 0xFF); };
  const int keys = 128;
  std::vector<uint8_t> vt(kD * keys, 0);
  std::set<int> written;
  for (int step = 0; step < keys / q::VtSlot::kKeysPerWarp; ++step) {
    for (int warp = 0; warp < 8; ++warp) {
      for (int lane = 0; lane < 32; ++lane) {
        const int u = lane / 2, c0 = 16 * warp + 8 * (lane % 2);
        const int base = step * q::VtSlot::kKeysPerWarp, pos = base + q::VtSlot::position(u);
        for (int j = 0; j < 8; ++j) {
          for (int m = 0; m < 4; ++m) {
            const int at = (c0 + j) * keys + pos + m;
            ASSERT_TRUE(written.insert(at).second) << "two codes, one byte";
            vt[at] = code(base + q::VtSlot::key(u, m), c0 + j);
          }
        }
      }
      // One store instruction (fixed j): lanes of one parity write 16 consecutive words.
      for (int parity = 0; parity < 2; ++parity) {
        for (int u = 0; u < 16; ++u) {
          ASSERT_EQ(q::VtSlot::position(u), 4 * u);
        }
      }
    }
  }
  ASSERT_EQ(written.size(), vt.size());
  for (int c = 0; c < kD; ++c) {
    for (int p = 0; p < keys; ++p) {
      const int key = p / 32 * 32 + fp8attn_vt_key_at(p % 32);
      ASSERT_EQ(vt[c * keys + p], code(key, c)) << "channel " << c << " position " << p;
    }
  }
}

// quantize_vt_v1.cu: 256 threads store 16 codes of key r = pass * 32 + t / 8, channels
// 16 (t % 8) .. +15, at tile_offset(r, c0); then thread t writes, for id = i * 256 + t,
// channel id / 8, positions 16 (id % 8) .. +15, gathering key 32 (j / 2) + key_at(16 (j % 2) + n).
int tile_offset(int key, int channel) {
  return key * kD + ((((channel >> 4) ^ (key >> 4)) & 7) << 4) + (channel & 15);
}
int vt_key_at_device(int p) {  // quantize_vt_v1.cu's copy of fp8attn_vt_key_at
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
