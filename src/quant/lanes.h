// Which thread holds which value in the pre-pass kernels: plain index arithmetic, shared by the
// kernels and by the CPU replays: tests/cpu/test_prepass_gpu_order.cc against the mirror
// (model/prepass.cc), tests/cpu/test_prepass_vt_layout.cc against the header's V^T layout.
#pragma once

#if defined(__CUDACC__)
#define FP8ATTN_QUANT_HD __host__ __device__
#else
#define FP8ATTN_QUANT_HD
#endif

namespace fp8attn::quant {

inline constexpr int kHeadDim = 128;

// A 128-value row held by L consecutive lanes, kValues = 128 / L each: value x[8 hi + j] of lane
// `lane` is channel hi * 8L + 8 lane + j. Each lane loads run hi (8 channels, 16 bytes of BF16)
// with one 16-byte load, and the L lanes' loads of a run are 16 L contiguous bytes: whole 32-byte
// sectors per warp instruction for L >= 2.
template <int L>
struct RowLanes {
  static_assert(L == 1 || L == 2 || L == 4 || L == 8 || L == 16);
  static constexpr int kValues = kHeadDim / L;
  static constexpr int kChunks = kValues / 8;
  static constexpr FP8ATTN_QUANT_HD int channel(int hi, int lane, int j) {
    return hi * 8 * L + 8 * lane + j;
  }
};

// The fused pass for Q and K: 4 lanes per row (two butterfly stages across lanes, 32 values per
// thread). The statistics pass: 8 lanes per row (16 values, so that sum, max and min of every
// value fit in registers).
inline constexpr int kRowLanes = 4;
inline constexpr int kStatsLanes = 8;

// lse_bias's 16 FMA chains of 8 channels (model/prepass.cc lse_dot_128): with 4 lanes per row,
// chain g = 4 hi + lane is the lane's run hi, so each lane holds 4 whole chains.
static_assert(RowLanes<kRowLanes>::channel(1, 0, 0) == 8 * 4 && RowLanes<kRowLanes>::channel(0, 1, 0) == 8);

// The V^T pass (quantize_vt.cu): a warp covers 64 keys x 16 channels. Lane pair u (lanes 2u,
// 2u + 1; u = 0..15) holds 4 keys of the 64 and lane 2u + i channels 8 i .. 8 i + 7 of the
// warp's 16. Its 4 keys are those V^T position 4u .. 4u + 3 holds (fp8attn_vt_key_at: keys
// 2q, 2q + 1, 2q + 8, 2q + 9 of a 16-key half, q = u % 4), so the 4 codes of one channel are one
// 32-bit word of V^T, and the 16 pairs write 64 contiguous bytes of a V^T row.
struct VtSlot {
  static constexpr int kKeysPerWarp = 64;
  static constexpr FP8ATTN_QUANT_HD int position(int u) { return 4 * u; }
  // Key (0..63) of byte m (0..3) of the slot's word.
  static constexpr FP8ATTN_QUANT_HD int key(int u, int m) {
    return 32 * (u / 8) + 16 * ((u / 4) % 2) + 2 * (u % 4) + 8 * (m / 2) + (m % 2);
  }
};

// The statistics pass's rotation of K (kv_stats.cu): the 8 lanes of a row do the strides 1, 2, 4
// in Lanes<8>'s layout, then transpose the row through a per-row shared buffer so that lane j
// holds channels 8 k + j (k = 0..15) and does the strides 8 .. 64 itself. The loading lane l
// writes value j of its runs 0 and 1 (channels 8 l + j, 64 + 8 l + j) as the two floats at
// pos(l, j); the reading lane j loads the 16 floats from row_start(j) on, word m holding k(m).
struct StatsTranspose {
  static constexpr int kRow = 20;    // a multiple of 4 (16-byte loads); 8 lanes' loads: distinct banks
  static constexpr int kSlot = 176;  // floats per row buffer, = 16 mod 32: two rows' 8-byte stores
  static constexpr FP8ATTN_QUANT_HD int pos(int l, int j) { return kRow * j + 2 * l; }
  static constexpr FP8ATTN_QUANT_HD int row_start(int j) { return kRow * j; }
  static constexpr FP8ATTN_QUANT_HD int k(int m) { return 8 * (m % 2) + m / 2; }
};

// The statistics pass (kv_stats.cu): one CTA of 128 threads per group of
// FP8ATTN_QUANT_STATS_GROUP chunks; thread t sums chunk t / 8 of the group (slot), lane t % 8
// of its rows.
inline constexpr int kStatsThreads = 128;

}  // namespace fp8attn::quant
