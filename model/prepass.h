// The CPU mirror of the quantization pre-pass (src/quant/): the same FP32 operations in the same
// order, so every output byte and every scale equals the GPU's (tests/gpu/test_quant*.cu checks
// it). Shapes, options and layouts are those of include/fp8attn/quant.h; docs/prepass.md gives
// the order of operations.
#ifndef FP8ATTN_MODEL_PREPASS_H_
#define FP8ATTN_MODEL_PREPASS_H_

#include <cstdint>
#include <vector>

#include "include/fp8attn/quant.h"
#include "model/tensor.h"

namespace fp8attn::model {

// A host BF16 tensor (batch, seqlen, heads, head_dim) given as raw BF16 codes; the last dimension
// is contiguous.
struct Bf16View {
  const uint16_t* data = nullptr;
  int batch = 0, seqlen = 0, heads = 0, head_dim = 0;
  int64_t stride_b = 0, stride_s = 0, stride_h = 0;
  uint16_t at(int b, int s, int h, int c) const {
    return data[b * stride_b + s * stride_s + h * stride_h + c];
  }
};
// Contiguous (batch, seqlen, heads, head_dim) view of `codes`.
Bf16View contiguous_view(const std::vector<uint16_t>& codes, int batch, int seqlen, int heads,
                         int head_dim);

// Host copy of an fp8attn_kv_cache (same layouts, contiguous).
struct KvCacheHost {
  int batch = 0, seqlen_k = 0, heads_kv = 0, vt_seqlen_pad = 0;
  int vt_dtype = FP8ATTN_VT_E4M3;  // which of vt / vt16 holds V^T
  fp8attn_quant_options options{};
  std::vector<uint8_t> k;          // (b, sk, h_kv, 128)
  std::vector<uint8_t> vt;         // E4M3: (b, h_kv, 128, vt_seqlen_pad), permuted, zero padded
  std::vector<uint16_t> vt16;      // FP16: (b, h_kv, 128, vt_seqlen_pad), natural key order,
                                   // zero padded: the same scaled values rounded to FP16
  std::vector<float> k_descale;    // (b, h_kv, ceil(sk / 128))
  std::vector<float> v_descale;    // (b, h_kv, 128)
  std::vector<float> k_mean;       // (b, h_kv, 128)
  std::vector<float> v_mean;       // (b, h_kv, 128)
  // FP8ATTN_CENTRE_SAMPLE: per (b, h_kv), bit 0 when K's true amax exceeded its sample bound, bit
  // 1 when some V channel's did (that group was quantized again with its true amax's scale).
  std::vector<uint8_t> resampled;
};

// Which keys FP8ATTN_CENTRE_SAMPLE takes; the library's choice is the default (fp8attn_sample_key).
// The numerics study (lab/study/one_pass.py) varies it through the scheme keys prepass_sample_*.
struct SampleSpec {
  bool strided = true;  // keys spread over the sequence; false: a block right after the skip
  int rows = 0;  // 0: the library's size for the sequence (fp8attn_sample_count), else this many
  int skip = FP8ATTN_QUANT_SAMPLE_SKIP;
  float headroom = FP8ATTN_QUANT_SAMPLE_HEADROOM;
  bool is_library() const {
    return strided && rows == 0 && skip == FP8ATTN_QUANT_SAMPLE_SKIP &&
           headroom == FP8ATTN_QUANT_SAMPLE_HEADROOM;
  }
};
std::vector<int> sample_keys(int seqlen, const SampleSpec& spec = {});

// Host copy of an fp8attn_q_quant.
struct QQuantHost {
  int batch = 0, seqlen_q = 0, heads = 0;
  std::vector<uint8_t> q;          // (b, sq, h, 128)
  std::vector<float> q_descale;    // (b, h, sq)
  std::vector<float> lse_bias;     // (b, h, sq)
};

// The rope entry's tables (include/fp8attn/rope.h), host copies: (max_positions, 64) each, row
// s of the tensor uses table row pos0 + s. NeoX rotate_half only.
struct RopeHost {
  const float* cos = nullptr;
  const float* sin = nullptr;
  int max_positions = 0;
  int pos0 = 0;
};

// Throws std::invalid_argument on shapes the GPU pre-pass rejects (head_dim != 128, ...).
// vt_seqlen_pad = 0 picks seqlen_k rounded up to 32. vt_dtype: fp8attn_vt_dtype of V^T.
KvCacheHost prepass_kv(const Bf16View& k, const Bf16View& v, const fp8attn_quant_options& options,
                       int vt_seqlen_pad = 0, int vt_dtype = FP8ATTN_VT_E4M3,
                       const SampleSpec& sample = {}, const RopeHost* k_rope = nullptr);
// q_rope / k_rope non-null: the rope entry (fp8attn_quantize_qkv_rope): every Q / K row is
// rotated (rope_rotate_128) right after the BF16 conversion, before the Hadamard.
QQuantHost prepass_q(const Bf16View& q, const KvCacheHost& cache, fp8attn_q_scale q_scale,
                     float softmax_scale, const RopeHost* q_rope = nullptr);

// The kernel's operands as E4M3 code values (decoded to float), (b, s, h, 128) each: V back from
// V^T's permuted layout (or, FP16 V^T, its FP16 values in natural order). With q_descale, k_descale, v_descale, lse_bias and o_bias (v_mean) of
// the two structs this is exactly what model/flash.h's FlashInputs takes.
struct DecodedOperands {
  Tensor q, k, v;
};
DecodedOperands decode_operands(const QQuantHost& q, const KvCacheHost& kv);

// The pieces, exposed for the CPU tests.
// In place on 128 values: the sign flips of `seed`, then the Walsh-Hadamard butterflies with
// strides 1, 2, 4, ..., 64 (unnormalized: the result is sqrt(128) times an orthogonal rotation).
void hadamard_rotate_128(float* x, uint64_t seed);

// In place on 128 values, the rope entry's rotation (src/quant/rope.cuh): for c < 64, with
// a = x[c], b = x[c + 64]: x[c] = fmaf(a, cos[c], -(b * sin[c])), x[c + 64] = fmaf(b, cos[c],
// a * sin[c]) (each product rounded to FP32, then one FMA).
void rope_rotate_128(float* x, const float* cos_row, const float* sin_row);

// Per-channel statistics of n rows of 128 values (row-major), in the order of quant.h: chunk
// sums, group sums, total; max and min are order-free.
struct ChannelStats {
  float sum[128], max[128], min[128];
};
ChannelStats channel_stats(const float* rows, int n);

// lse_bias's dot product q . mean over 128 channels as the GPU forms it: 16 FMA chains of 8
// channels each (chain g: channels 8g..8g+7, from 0), t_j = (s_j + s_{4+j}) + (s_{8+j} + s_{12+j}),
// then (t_0 + t_1) + (t_2 + t_3).
float lse_dot_128(const float* q, const float* mean);
// Scale pair of a group with largest magnitude amax: multiply by `inv` to quantize, multiply the
// E4M3 value by `descale` to dequantize. amax = 0 (or too small to invert) gives 1 and 1.
struct GroupScale {
  float inv, descale;
};
GroupScale group_scale(float amax);

// The sample's centre and bound (FP8ATTN_CENTRE_SAMPLE) of n rows of 128 values: sample row i is
// summed by slot i % FP8ATTN_QUANT_SAMPLE_SLOTS in i order, the slot sums added in slot order,
// centre = sum / n; max and min order-free.
ChannelStats sample_stats(const float* rows, const std::vector<int>& keys);
// max |x| over values as the GPU forms it: the largest bit pattern of |x| (a NaN wins over Inf).
float amax_bits(float a, float b);
}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_PREPASS_H_
