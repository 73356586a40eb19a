// FP8ATTN_P_FP16: where the converter warps (kernel.cuh, v_converter) read E4M3 V^T and write
// FP16 V in shared memory. Plain index arithmetic, shared by the kernel and by
// tests/cpu/test_v16_layout.cc, which replays it on the CPU between models of the TMA's 64-byte
// and the wgmma's 128-byte swizzles (written there from the address bits, not from these).
#pragma once

#if defined(__CUDACC__)
#define FP8ATTN_ATTN_HD __host__ __device__
#else
#define FP8ATTN_ATTN_HD
#endif

namespace fp8attn::attn::v16 {

inline constexpr int kChannels = 128;
inline constexpr int kAtomKeys = 64;                  // keys per E4M3 atom = per FP16 half
inline constexpr int kAtomBytes = kChannels * kAtomKeys;      // E4M3 atom: [128][64], 64-byte rows
inline constexpr int kHalfBytes = kChannels * kAtomKeys * 2;  // FP16 half: [128][64], 128-byte rows
inline constexpr int kInChunksPerRow = kAtomKeys / 16;        // 4 chunks of 16 E4M3 positions

// Input chunk i of a block (0 .. atoms * 128 * 4 - 1): consecutive i are consecutive 16-byte
// chunks of one channel's row, then the next channel (a warp reads 512 contiguous bytes).
struct Chunk {
  int atom, channel, j;  // j: 16-position chunk of the channel's 64 positions
};
FP8ATTN_ATTN_HD constexpr Chunk chunk_of(int i) {
  return {i / (kChannels * kInChunksPerRow), (i / kInChunksPerRow) % kChannels, i % kInChunksPerRow};
}

// Byte offset of input chunk (c, j) in its E4M3 atom: 64-byte rows, 64-byte swizzle (the 16-byte
// chunk index, address bits [4,6), XOR address bits [7,9) = (c / 2) % 4).
FP8ATTN_ATTN_HD constexpr int in_offset(int c, int j) { return c * kAtomKeys + ((j ^ ((c >> 1) & 3)) << 4); }

// Byte offset of output chunk k (0..7: keys 8k..8k+7 of the half, natural order) of channel c in
// its FP16 half: 128-byte rows, 128-byte swizzle (chunk bits [4,7) XOR bits [7,10) = c % 8).
FP8ATTN_ATTN_HD constexpr int out_offset(int c, int k) { return c * 128 + ((k ^ (c & 7)) << 4); }

// Input chunk j holds positions 16j..16j+15 of the atom, i.e. half j % 2 of 32-key group j / 2;
// by fp8attn_vt_key_at, its 32-bit word q (positions 4q..4q+3) holds keys 16j + {2q, 2q+1, 8+2q,
// 9+2q}. So the low two bytes of word q, converted to FP16x2, are word q of output chunk 2j (keys
// 16j..16j+7) and the high two bytes word q of output chunk 2j + 1 (keys 16j+8..16j+15).
FP8ATTN_ATTN_HD constexpr int out_chunk_lo(int j) { return 2 * j; }
FP8ATTN_ATTN_HD constexpr int out_chunk_hi(int j) { return 2 * j + 1; }

}  // namespace fp8attn::attn::v16
