// fp8attn quantization pre-pass: BF16 Q, K, V -> the E4M3 inputs of fp8attn_attention_fwd.
//
// Two entry points, for the two ways users hold data:
//   fp8attn_quantize_kv  BF16 K, V -> an FP8 KV cache (E4M3 K, E4M3 V^T, scales, channel means),
//                        built once and reused by many attention calls;
//   fp8attn_quantize_q   BF16 Q -> E4M3 Q + per-token descales (+ lse_bias when the cache's K
//                        was smoothed), once per call, using the cache's rotation.
// fp8attn_quantize_qkv runs both at once (one end-to-end call's pre-pass, the same bytes), and
// fp8attn/attention.h composes it with the kernel (fp8attn::attention on BF16 tensors).
//
// Every pointer is a device pointer; strides are in elements; the last dimension is contiguous.
// Every value is computed in FP32 with a fixed order of operations that model/prepass.cc repeats
// on the CPU, so the CPU model reproduces every output byte (docs/prepass.md gives the order).
#ifndef FP8ATTN_QUANT_H_
#define FP8ATTN_QUANT_H_

#include <stddef.h>
#include <stdint.h>

#include "fp8attn.h"  // same folder: found without include/ on the path (model/)

#ifdef __cplusplus
extern "C" {
#endif

// The fixed summation order of the channel sums (the CPU mirror repeats it): keys in chunks of
// FP8ATTN_QUANT_STATS_CHUNK, each chunk summed sequentially in key order; the chunk sums of a group
// of FP8ATTN_QUANT_STATS_GROUP consecutive chunks summed sequentially in chunk order; the group
// sums added sequentially in group order. Every sum starts from 0. (One pre-pass CTA sums one
// group: a short serial chain per thread, and one partial per group and channel in memory.)
#define FP8ATTN_QUANT_STATS_CHUNK 32
#define FP8ATTN_QUANT_STATS_GROUP 16

// Granularity of the Q scales. Both are stored per (batch, head, token) as the kernel takes them.
typedef enum fp8attn_q_scale {
  FP8ATTN_Q_SCALE_TOKEN = 0,     // one scale per token (a row of head_dim values)
  FP8ATTN_Q_SCALE_BLOCK128 = 1,  // one scale per 128 consecutive tokens of a (batch, head)
} fp8attn_q_scale;

// Granularity of the V scales. Both are stored per (batch, kv head, channel).
typedef enum fp8attn_v_scale {
  FP8ATTN_V_SCALE_CHANNEL = 0,  // one scale per channel over all keys
  FP8ATTN_V_SCALE_HEAD = 1,     // one scale per (batch, kv head)
} fp8attn_v_scale;

// Granularity of the K scales. Both are stored per (batch, kv head, block of FP8ATTN_K_SCALE_BLOCK
// keys); with FP8ATTN_K_SCALE_HEAD every block of a head holds the head's one value, and
// fp8attn_fwd_params_from_quant (fp8attn/attention.h) passes it with kd_stride_blk = 0, for which
// the kernel runs its faster 192-key blocks (a per-block descale needs 128-key blocks).
typedef enum fp8attn_k_scale {
  FP8ATTN_K_SCALE_HEAD = 0,      // one scale per (batch, kv head) over all keys (exact amax)
  FP8ATTN_K_SCALE_BLOCK128 = 1,  // one scale per (batch, kv head, 128 keys)
} fp8attn_k_scale;

// Where the smoothing centre (the vector subtracted from K's and V's rows) and the scales' amax
// come from. Any centre is exact (softmax ignores a per-row constant; rows of P sum to 1): only
// the rounding error depends on it.
typedef enum fp8attn_centre {
  // The mean over all keys and the exact amax: a statistics pass reads K and V, then the fused
  // pass reads them again.
  FP8ATTN_CENTRE_MEAN = 0,
  // One pass: the mean of fp8attn_sample_rows(seqlen) keys spread evenly over the sequence
  // (fp8attn_sample_key, the first FP8ATTN_QUANT_SAMPLE_SKIP keys, attention sinks, never taken),
  // a scale bound of FP8ATTN_QUANT_SAMPLE_HEADROOM times the sample's amax, and the fused pass,
  // which reads K and V once and measures the true amax; a group (K's head, V's channel) whose
  // true amax exceeds its bound is quantized again with the true amax's scale (no saturation).
  FP8ATTN_CENTRE_SAMPLE = 1,
} fp8attn_centre;

// The sample's size: one key in FP8ATTN_QUANT_SAMPLE_FRACTION, at least ROWS_MIN and at most
// ROWS_MAX keys. The centre's distance from the true mean (about a channel's spread / the square
// root of the sample's size) stays in V - centre, so in the kernel's P V accumulator, whose
// rounding grows with its magnitude (the FP8 tensor core's adder). Against that, a row averaging
// over all keys has its own distance from the mean shrink with the square root of the sequence's
// length: the sample must grow with it, so a fixed fraction (docs/prepass.md, "One pass", with
// the measurements; past ROWS_MAX x FRACTION keys the fraction falls).
#define FP8ATTN_QUANT_SAMPLE_FRACTION 8
#define FP8ATTN_QUANT_SAMPLE_ROWS_MIN 128
#define FP8ATTN_QUANT_SAMPLE_ROWS_MAX 4096
#define FP8ATTN_QUANT_SAMPLE_SKIP 4
// The sample's sum: sample row i into slot i % SLOTS in i order, the slot sums in slot order.
#define FP8ATTN_QUANT_SAMPLE_SLOTS 16
// A power of two, so the bound is exact. E4M3 keeps its relative precision over its normal range
// (2^-6 .. 448), so scaling the bound down by 16 makes subnormal only the values below
// amax * 16 / 28672 (docs/prepass.md, "One pass").
#define FP8ATTN_QUANT_SAMPLE_HEADROOM 16.0f

// The sample's size for `seqlen` keys (seqlen / FRACTION within [ROWS_MIN, ROWS_MAX]), every key
// when seqlen <= that + SKIP; the i-th sampled key (0 <= i < fp8attn_sample_rows(seqlen)): i in the
// second case, else SKIP + floor(i (seqlen - SKIP) / fp8attn_sample_count(seqlen)).
#if defined(__CUDACC__)
#define FP8ATTN_QUANT_HOST_DEVICE __host__ __device__
#else
#define FP8ATTN_QUANT_HOST_DEVICE
#endif
static inline FP8ATTN_QUANT_HOST_DEVICE int fp8attn_sample_count(int seqlen) {
  const int n = seqlen / FP8ATTN_QUANT_SAMPLE_FRACTION;
  return n < FP8ATTN_QUANT_SAMPLE_ROWS_MIN ? FP8ATTN_QUANT_SAMPLE_ROWS_MIN
         : n > FP8ATTN_QUANT_SAMPLE_ROWS_MAX ? FP8ATTN_QUANT_SAMPLE_ROWS_MAX
                                              : n;
}
static inline FP8ATTN_QUANT_HOST_DEVICE int fp8attn_sample_rows(int seqlen) {
  const int n = fp8attn_sample_count(seqlen);
  return seqlen <= n + FP8ATTN_QUANT_SAMPLE_SKIP ? seqlen : n;
}
static inline FP8ATTN_QUANT_HOST_DEVICE int fp8attn_sample_key(int seqlen, int i) {
  const int n = fp8attn_sample_rows(seqlen);
  if (n == seqlen) return i;  // every key (fp8attn_sample_rows' first case; else n < seqlen - SKIP)
  return FP8ATTN_QUANT_SAMPLE_SKIP + (int)((int64_t)i * (seqlen - FP8ATTN_QUANT_SAMPLE_SKIP) / n);
}

typedef struct fp8attn_quant_options {
  int32_t smooth_k;      // subtract K's per-channel mean over keys; restored exactly by lse_bias
  int32_t smooth_v;      // subtract V's per-channel mean over keys; restored exactly by o_bias
  int32_t hadamard_qk;   // rotate Q and K by diag(signs) * H_128 (exact for Q K^T). V is never
                         // rotated: O would need the inverse rotation, which the kernel lacks.
  int32_t q_scale;       // fp8attn_q_scale
  int32_t v_scale;       // fp8attn_v_scale
  int32_t k_scale;       // fp8attn_k_scale (in what was padding: size and seed offset unchanged)
  uint64_t hadamard_seed;  // picks the random signs (fp8attn_hadamard_sign_negative)
  int32_t centre;        // fp8attn_centre
  int32_t reserved;      // 0
} fp8attn_quant_options;

// Defaults (the numerics study's decision, docs/numerics-report.md): K and V smoothing on,
// Hadamard rotation of Q and K on, per-token Q, per-head K and per-channel V scales.
void fp8attn_quant_options_init(fp8attn_quant_options* options);

// FP8ATTN_SUCCESS when every option holds a known value (q_scale, v_scale, k_scale); otherwise
// FP8ATTN_ERROR_INVALID_ARGUMENT naming the option (fp8attn_quant_last_error). No device work:
// the end-to-end call runs it before anything else, so a bad option never grows a workspace.
fp8attn_status fp8attn_check_quant_options(const fp8attn_quant_options* options);

// 1 when the Hadamard rotation negates channel `c` (0..127) before the transform. splitmix64 of
// the seed and the channel's 64-bit word: the GPU host code and the CPU mirror both call this.
static inline int fp8attn_hadamard_sign_negative(uint64_t seed, int c) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(1 + c / 64);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  return (int)((z >> (c % 64)) & 1u);
}

// A BF16 input tensor (batch, seqlen, heads, head_dim). data and every stride times 2 bytes must
// be 16-byte aligned (the kernels read 16 bytes at a time).
typedef struct fp8attn_bf16_tensor {
  const void* data;
  int32_t batch, seqlen, heads, head_dim;
  int64_t stride_b, stride_s, stride_h;
} fp8attn_bf16_tensor;

// The FP8 KV cache: everything the kernel needs from K and V, contiguous, carved out of one
// device buffer by fp8attn_kv_cache_init. Filled by fp8attn_quantize_kv.
typedef struct fp8attn_kv_cache {
  int32_t batch, seqlen_k, heads_kv, head_dim, vt_seqlen_pad;
  // fp8attn_vt_dtype of vt, set by fp8attn_kv_cache_init(_vt). In what was padding before k: the
  // struct's size and every other offset are unchanged.
  int32_t vt_dtype;
  void* k;             // E4M3 (batch, seqlen_k, heads_kv, 128)
  void* vt;            // (batch, heads_kv, 128, vt_seqlen_pad), zero from seqlen_k on: E4M3 with
                       // keys permuted per 32 (fp8attn.h), or FP16 in natural key order (twice
                       // the bytes; for FP8ATTN_P_FP16 at full speed). Both hold V' * v_inv with
                       // V' the (smoothed) V and |V' * v_inv| <= 448; only the rounding differs
                       // (E4M3 or FP16 RNE).
  float* k_descale;    // (batch, heads_kv, ceil(seqlen_k / 128)); per head: all blocks equal
  float* v_descale;    // (batch, heads_kv, 128)
  float* k_mean;       // (batch, heads_kv, 128): the mean subtracted from K (zeros if not smoothed);
                       // with hadamard_qk K is rotated first, so this is the rotated rows' mean
  float* v_mean;       // (batch, heads_kv, 128): the mean subtracted from V = the kernel's o_bias
  // Written by fp8attn_quantize_kv: how the cache was made (fp8attn_quantize_q must match it).
  fp8attn_quant_options options;
} fp8attn_kv_cache;

// Bytes of device memory a cache with E4M3 V^T needs; vt_seqlen_pad = 0 picks seqlen_k rounded
// up to 32.
size_t fp8attn_kv_cache_bytes(int32_t batch, int32_t seqlen_k, int32_t heads_kv,
                              int32_t head_dim, int32_t vt_seqlen_pad);
// Lays a cache with E4M3 V^T out in `buffer` (device, 256-byte aligned, >= fp8attn_kv_cache_bytes).
fp8attn_status fp8attn_kv_cache_init(fp8attn_kv_cache* cache, void* buffer, size_t bytes,
                                     int32_t batch, int32_t seqlen_k, int32_t heads_kv,
                                     int32_t head_dim, int32_t vt_seqlen_pad);
// The same for a V^T of vt_dtype (fp8attn_vt_dtype): FP8ATTN_VT_FP16 doubles V^T's bytes (a
// cache for FP8ATTN_P_FP16 attention; fp8attn_fwd_params_from_quant passes the dtype on). 0 /
// FP8ATTN_ERROR_INVALID_ARGUMENT for an unknown dtype.
size_t fp8attn_kv_cache_bytes_vt(int32_t batch, int32_t seqlen_k, int32_t heads_kv,
                                 int32_t head_dim, int32_t vt_seqlen_pad, int32_t vt_dtype);
fp8attn_status fp8attn_kv_cache_init_vt(fp8attn_kv_cache* cache, void* buffer, size_t bytes,
                                        int32_t batch, int32_t seqlen_k, int32_t heads_kv,
                                        int32_t head_dim, int32_t vt_seqlen_pad, int32_t vt_dtype);

// Scratch for fp8attn_quantize_kv (partial sums of the channel reduction): device, 256-aligned.
size_t fp8attn_quantize_kv_workspace_bytes(int32_t batch, int32_t seqlen_k, int32_t heads_kv);

// BF16 K, V (batch, seqlen_k, heads_kv, 128) -> cache. Launches on `stream` (cudaStream_t):
// FP8ATTN_CENTRE_MEAN: a channel reduction (V always: its scale needs every key; K when smooth_k
// or a per-head K scale), then one fused pass over K and V that reads each input once more.
// FP8ATTN_CENTRE_SAMPLE: the sample, the fused pass, the regroup and the fused pass again for
// the heads with a group over its bound only (docs/prepass.md, "One pass").
fp8attn_status fp8attn_quantize_kv(const fp8attn_bf16_tensor* k, const fp8attn_bf16_tensor* v,
                                   const fp8attn_quant_options* options, fp8attn_kv_cache* cache,
                                   void* workspace, size_t workspace_bytes, void* stream);

// The quantized Q of one call, contiguous, carved out of one device buffer.
typedef struct fp8attn_q_quant {
  int32_t batch, seqlen_q, heads, head_dim;
  void* q;            // E4M3 (batch, seqlen_q, heads, 128)
  float* q_descale;   // (batch, heads, seqlen_q)
  float* lse_bias;    // (batch, heads, seqlen_q): softmax_scale * q . k_mean (zeros if K not
                      // smoothed; then fp8attn_fwd_params_from_quant passes NULL)
  float softmax_scale;  // the one lse_bias was made with
} fp8attn_q_quant;

size_t fp8attn_q_quant_bytes(int32_t batch, int32_t seqlen_q, int32_t heads, int32_t head_dim);
fp8attn_status fp8attn_q_quant_init(fp8attn_q_quant* out, void* buffer, size_t bytes,
                                    int32_t batch, int32_t seqlen_q, int32_t heads,
                                    int32_t head_dim);

// BF16 Q (batch, seqlen_q, heads, 128) -> out, with the rotation and K mean of `cache` (whose
// batch must match and heads_kv divide heads). q_scale is an fp8attn_q_scale.
fp8attn_status fp8attn_quantize_q(const fp8attn_bf16_tensor* q, const fp8attn_kv_cache* cache,
                                  int32_t q_scale, float softmax_scale, fp8attn_q_quant* out,
                                  void* stream);

// The whole pre-pass of one end-to-end call (what fp8attn_attention runs): BF16 K, V -> cache
// (as fp8attn_quantize_kv, with `workspace` its scratch) and BF16 Q -> q_out (as
// fp8attn_quantize_q with options->q_scale): the same launches and bytes as those two calls,
// but everything is checked before anything is launched.
fp8attn_status fp8attn_quantize_qkv(const fp8attn_bf16_tensor* q, const fp8attn_bf16_tensor* k,
                                    const fp8attn_bf16_tensor* v,
                                    const fp8attn_quant_options* options, float softmax_scale,
                                    fp8attn_kv_cache* cache, fp8attn_q_quant* q_out,
                                    void* workspace, size_t workspace_bytes, void* stream);

// The reason of the last failed call on this thread, "" after a call that succeeded. The library
// has one error channel: this returns the same message as fp8attn_last_error() (kept so that
// existing callers of either getter work).
const char* fp8attn_quant_last_error(void);

// The fused-pass kernels the library runs: "v2" (the only ones since the first kernels, "v1",
// were removed; kept so that a results file can record it).
const char* fp8attn_quant_variant(void);

#ifdef __cplusplus
}  // extern "C"

namespace fp8attn {

using QuantOptions = fp8attn_quant_options;
using KvCache = fp8attn_kv_cache;
using QQuant = fp8attn_q_quant;
using Bf16Tensor = fp8attn_bf16_tensor;

inline QuantOptions default_quant_options() {
  QuantOptions o;
  fp8attn_quant_options_init(&o);
  return o;
}

// Throws fp8attn::Error with fp8attn_quant_last_error() on any failure.
inline void check_quant(fp8attn_status s) {
  if (s != FP8ATTN_SUCCESS) throw Error(s, fp8attn_quant_last_error());
}

inline void quantize_kv(const Bf16Tensor& k, const Bf16Tensor& v, const QuantOptions& options,
                        KvCache& cache, void* workspace, size_t workspace_bytes,
                        void* stream = nullptr) {
  check_quant(fp8attn_quantize_kv(&k, &v, &options, &cache, workspace, workspace_bytes, stream));
}

inline void quantize_q(const Bf16Tensor& q, const KvCache& cache, fp8attn_q_scale q_scale,
                       float softmax_scale, QQuant& out, void* stream = nullptr) {
  check_quant(fp8attn_quantize_q(&q, &cache, q_scale, softmax_scale, &out, stream));
}

inline void quantize_qkv(const Bf16Tensor& q, const Bf16Tensor& k, const Bf16Tensor& v,
                         const QuantOptions& options, float softmax_scale, KvCache& cache,
                         QQuant& q_out, void* workspace, size_t workspace_bytes,
                         void* stream = nullptr) {
  check_quant(fp8attn_quantize_qkv(&q, &k, &v, &options, softmax_scale, &cache, &q_out, workspace,
                                   workspace_bytes, stream));
}

}  // namespace fp8attn
#endif  // __cplusplus

#endif  // FP8ATTN_QUANT_H_
