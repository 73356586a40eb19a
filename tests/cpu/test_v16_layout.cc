// FP8ATTN_P_FP16's V conversion (src/attn/kernel.cuh, v_converter), replayed on the CPU with the
// kernel's own index arithmetic (src/attn/v16_layout.h): a V^T block as the pre-pass stores it
// (keys permuted per 32-key group) is placed in shared memory as the TMA's 64-byte swizzle would,
// converted chunk by chunk, and read back as the FP16 wgmma's K-major B operand with a 128-byte
// swizzle would: every (channel, key) must come back as V's value in natural key order, and
// every output byte must be written exactly once. The two swizzles are modelled here from the
// address bits (CUTLASS's Swizzle<2,4,3> and Swizzle<3,4,3>: bits [4, 4+B) ^= bits [7, 7+B)),
// not from v16_layout.h's formulas. What this cannot check: that the hardware's swizzles are
// these (the H200 run does).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "model/codecs.h"
#include "src/attn/v16_layout.h"

namespace {

namespace v16 = fp8attn::attn::v16;
namespace fm = fp8attn::model;

constexpr int kKeys = 128;  // the FP16 kernel's key block
constexpr int kAtoms = kKeys / v16::kAtomKeys;

// Physical byte of logical byte L under a swizzle of 2^b 16-byte chunks (b = 2: 64 B, 3: 128 B).
int swizzle(int logical, int b) { return logical ^ (((logical >> 7) & ((1 << b) - 1)) << 4); }

TEST(V16Layout, ConverterUnpermutesAndSwizzles) {
  std::mt19937 rng(1234);
  // V: [key][channel] E4M3 codes (finite: 0x7F / 0xFF are NaN).
  std::vector<uint8_t> v(kKeys * v16::kChannels);
  for (auto& x : v) {
    do x = static_cast<uint8_t>(rng()); while ((x & 0x7F) == 0x7F);
  }
  // TMA's staging: atom a, channel row c, 64 positions; position p of the block holds key
  // p / 32 * 32 + fp8attn_vt_key_at(p % 32).
  std::vector<uint8_t> staged(kAtoms * v16::kAtomBytes, 0);
  for (int a = 0; a < kAtoms; ++a)
    for (int c = 0; c < v16::kChannels; ++c)
      for (int b = 0; b < v16::kAtomKeys; ++b) {
        const int p = a * v16::kAtomKeys + b;
        const int key = p / FP8ATTN_VT_KEY_GROUP * FP8ATTN_VT_KEY_GROUP + fp8attn_vt_key_at(p % FP8ATTN_VT_KEY_GROUP);
        staged[a * v16::kAtomBytes + swizzle(c * v16::kAtomKeys + b, 2)] = v[key * v16::kChannels + c];
      }
  // The converter: per input chunk, word q's low two bytes -> word q of the "lo" output chunk,
  // the high two -> word q of the "hi" one (cvt.rn.f16x2.e4m3x2: the lower byte to the lower half).
  std::vector<uint8_t> out(kAtoms * v16::kHalfBytes, 0);
  std::vector<int> writes(out.size(), 0);
  auto put_f16 = [&](size_t off, uint8_t e4m3) {
    const uint16_t h = fm::float_to_fp16(fm::e4m3_to_float(e4m3));
    std::memcpy(&out[off], &h, 2);
    writes[off]++, writes[off + 1]++;
  };
  const int chunks = kAtoms * v16::kChannels * v16::kInChunksPerRow;
  for (int i = 0; i < chunks; ++i) {
    const v16::Chunk ch = v16::chunk_of(i);
    const uint8_t* w = &staged[ch.atom * v16::kAtomBytes + v16::in_offset(ch.channel, ch.j)];
    const size_t half = static_cast<size_t>(ch.atom) * v16::kHalfBytes;
    const size_t lo = half + v16::out_offset(ch.channel, v16::out_chunk_lo(ch.j));
    const size_t hi = half + v16::out_offset(ch.channel, v16::out_chunk_hi(ch.j));
    for (int q = 0; q < 4; ++q) {
      put_f16(lo + 4 * q, w[4 * q]), put_f16(lo + 4 * q + 2, w[4 * q + 1]);
      put_f16(hi + 4 * q, w[4 * q + 2]), put_f16(hi + 4 * q + 2, w[4 * q + 3]);
    }
  }
  for (size_t i = 0; i < writes.size(); ++i) ASSERT_EQ(writes[i], 1) << "output byte " << i;
  // The wgmma's view: B[k][n] = half k / 64, row n (channel), FP16 element k % 64 of the row.
  for (int key = 0; key < kKeys; ++key)
    for (int c = 0; c < v16::kChannels; ++c) {
      const int h = key / v16::kAtomKeys, k = key % v16::kAtomKeys;
      uint16_t bits;
      std::memcpy(&bits, &out[h * v16::kHalfBytes + swizzle(c * 128 + 2 * k, 3)], 2);
      ASSERT_EQ(fm::fp16_to_float(bits), fm::e4m3_to_float(v[key * v16::kChannels + c]))
          << "key " << key << " channel " << c;
    }
}

// A warp's 32 consecutive chunks read 512 contiguous bytes of the staging atom (whole rows).
TEST(V16Layout, WarpReadsAreContiguous) {
  for (int w0 = 0; w0 < kAtoms * v16::kChannels * v16::kInChunksPerRow; w0 += 32) {
    std::vector<int> seen(512, 0);
    const v16::Chunk first = v16::chunk_of(w0);
    const int base = first.atom * v16::kAtomBytes + first.channel * v16::kAtomKeys;
    for (int l = 0; l < 32; ++l) {
      const v16::Chunk ch = v16::chunk_of(w0 + l);
      const int off = ch.atom * v16::kAtomBytes + v16::in_offset(ch.channel, ch.j) - base;
      ASSERT_TRUE(off >= 0 && off < 512 && off % 16 == 0) << off;
      seen[off / 16]++;
    }
    for (int k = 0; k < 32; ++k) ASSERT_EQ(seen[k], 1);
  }
}

}  // namespace
