// fp8attn: FP8 (E4M3) attention forward for NVIDIA Hopper (sm_90a).
//
// The algorithm is three stages, each with its own header:
//   quantize  (fp8attn/quant.h)   BF16 Q, K, V -> E4M3 Q, K, V^T + scales (+ smoothing vectors)
//   attend    (this header)       E4M3 inputs -> BF16 O + FP32 LSE
//   report    (bench/, tools/)    errors and speed against references
//
// This header is the C ABI (usable from ctypes / any FFI) plus a thin C++ wrapper.
// Every pointer is a device pointer. Strides are in elements. The last dimension of
// every tensor is contiguous.
#ifndef FP8ATTN_FP8ATTN_H_
#define FP8ATTN_FP8ATTN_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fp8attn_status {
  FP8ATTN_SUCCESS = 0,
  FP8ATTN_ERROR_INVALID_ARGUMENT = 1,  // dtype / shape / stride / alignment / head dim
  FP8ATTN_ERROR_UNSUPPORTED_DEVICE = 2,  // not an sm_90 device, or no device
  FP8ATTN_ERROR_CUDA = 3,                // a CUDA call failed; see fp8attn_last_error()
} fp8attn_status;

// Precision of the softmax probabilities P fed to the P @ V product.
typedef enum fp8attn_p_precision {
  // P * 2^FP8ATTN_P_OFFSET_LOG2 (relative to the running max) rounded to E4M3, one FP8 PV
  // wgmma; one-level accumulation, 192-key blocks (128 with a per-block K descale).
  FP8ATTN_P_E4M3 = 0,
  // P = hi + lo, two E4M3 terms, two FP8 PV wgmmas; two-level accumulation, 128-key blocks.
  FP8ATTN_P_E4M3_HILO = 1,
  // P in FP16 (11 significant bits), one FP16 PV wgmma (FP32 accumulation); 192-key blocks
  // from an FP16 V^T with one K descale per head, else 128.
  // V in FP16: loaded as such from an FP16 V^T (FP8ATTN_VT_FP16, the fast form), or up-converted
  // from E4M3 V^T in shared memory by the kernel (FP8ATTN_VT_E4M3, for callers with E4M3 V).
  FP8ATTN_P_FP16 = 2,
  // E4M3 P with FlashAttention-3 FP8's softmax numerics: P = e4m3(2^(s - m +
  // FP8ATTN_P_EXACT_OFFSET_LOG2)) against the exact running max m (no slack), and l the FP32
  // sum of the unrounded p. Its kernel-only error matches FA3 FP8's on the same inputs where the
  // default's (offset 5, slack 3, l from the rounded P) is higher on outlier-heavy scores (and
  // at or lower on most real activations); it runs a few percent slower. 192-key blocks; one K descale per head (or none) only.
  FP8ATTN_P_E4M3_EXACT = 3,
} fp8attn_p_precision;

// The dtype of V^T (fp8attn_fwd_params.vt_dtype, fp8attn_kv_cache.vt_dtype).
typedef enum fp8attn_vt_dtype {
  // E4M3, keys permuted within each group of 32 (fp8attn_vt_key_at). Any P precision.
  FP8ATTN_VT_E4M3 = 0,
  // FP16 (IEEE binary16), keys in natural order, same shape and padding rules; strides still in
  // elements (2 bytes each), so a V^T takes twice the bytes of the E4M3 form. FP8ATTN_P_FP16
  // only: the kernel's TMA loads it straight into the FP16 P V product's operand.
  FP8ATTN_VT_FP16 = 1,
} fp8attn_vt_dtype;

// Keys inside every group of 32 are stored permuted in V^T (see fp8attn_vt_key_at).
#define FP8ATTN_VT_KEY_GROUP 32
// V^T's key dimension must be padded to a multiple of this; padding must be finite (zeros).
#define FP8ATTN_VT_PAD 32
// Granularity of the K descale along keys.
#define FP8ATTN_K_SCALE_BLOCK 128
// The kernel's softmax, part of its numerics contract (model/kernel_mirror repeats it): P =
// e4m3(2^(s - m + FP8ATTN_P_OFFSET_LOG2)) with s the scaled score and m the row's running max
// (log2 units). m moves only when a block's max exceeds it by more than FP8ATTN_RESCALE_SLACK_LOG2,
// so most blocks skip rescaling O and l; P stays <= 2^(offset + slack) = 256 <= 448.
#define FP8ATTN_P_OFFSET_LOG2 5.0f
#define FP8ATTN_RESCALE_SLACK_LOG2 3.0f
// FP8ATTN_P_E4M3_EXACT's offset; its running max has no slack (P <= 2^8 = 256 <= 448).
#define FP8ATTN_P_EXACT_OFFSET_LOG2 8.0f

// Position p (0..31) inside a 32-key group of V^T holds key fp8attn_vt_key_at(p) of that group.
// This is the order in which the FP8 wgmma A-fragment wants P; storing V^T in that order lets the
// kernel feed the QK^T accumulator to the PV product with no register shuffles.
static inline int fp8attn_vt_key_at(int p) {
  const int half = p / 16, quad = (p % 16) / 4, m = p % 4;
  return half * 16 + (m / 2) * 8 + quad * 2 + (m % 2);
}

typedef struct fp8attn_fwd_params {
  // Shapes. head_dim must be 128. heads % heads_kv == 0 (GQA: query head i uses kv head
  // i / (heads / heads_kv)).
  int32_t batch, seqlen_q, seqlen_k, heads, heads_kv, head_dim;

  // Q: E4M3 (batch, seqlen_q, heads, head_dim).
  const void* q;
  int64_t q_stride_b, q_stride_s, q_stride_h;
  // K: E4M3 (batch, seqlen_k, heads_kv, head_dim).
  const void* k;
  int64_t k_stride_b, k_stride_s, k_stride_h;
  // V^T: (batch, heads_kv, head_dim, vt_seqlen_pad) of vt_dtype (below): E4M3 with keys permuted
  // within groups of 32 (fp8attn_vt_key_at), or FP16 in natural key order. vt_seqlen_pad >=
  // seqlen_k rounded up to FP8ATTN_VT_PAD; positions for keys >= seqlen_k must hold finite values
  // (the pre-pass writes zeros).
  const void* vt;
  int64_t vt_stride_b, vt_stride_h, vt_stride_d;
  int32_t vt_seqlen_pad;

  // O: BF16 (batch, seqlen_q, heads, head_dim).
  void* o;
  int64_t o_stride_b, o_stride_s, o_stride_h;
  // LSE: FP32 (batch, heads, seqlen_q), contiguous, natural log. May be NULL.
  float* lse;

  // Dequantization scales (x_real = x_fp8 * descale). NULL means 1. A stride of 0 broadcasts.
  // Q: per (batch, head, query token).
  const float* q_descale;
  int64_t qd_stride_b, qd_stride_h, qd_stride_s;
  // K: per (batch, kv head, block of FP8ATTN_K_SCALE_BLOCK keys).
  const float* k_descale;
  int64_t kd_stride_b, kd_stride_h, kd_stride_blk;
  // V: per (batch, kv head, channel).
  const float* v_descale;
  int64_t vd_stride_b, vd_stride_h, vd_stride_d;

  // Exact corrections for smoothing done by the pre-pass. NULL means none.
  // lse_bias: FP32 (batch, heads, seqlen_q), added to LSE (K smoothing shifts every score of a
  //   row by -scale * q . mean(K); this restores the true LSE).
  const float* lse_bias;
  // o_bias: FP32 (batch, heads_kv, head_dim), added to O (V smoothing: mean(V) comes back
  //   because each row of P sums to 1).
  const float* o_bias;
  int64_t ob_stride_b, ob_stride_h;

  float softmax_scale;  // usually 1/sqrt(head_dim)
  int32_t causal;       // 1: bottom-right aligned causal mask (as FlashAttention)
  int32_t p_precision;  // fp8attn_p_precision
  // fp8attn_vt_dtype of vt (0, E4M3, after fp8attn_fwd_params_init). In what was the struct's
  // tail padding: its size and every other offset are unchanged.
  int32_t vt_dtype;
} fp8attn_fwd_params;

// Fills shapes, contiguous strides for the given shapes, softmax_scale = 1/sqrt(head_dim),
// and NULLs everything else.
void fp8attn_fwd_params_init(fp8attn_fwd_params* p, int32_t batch, int32_t seqlen_q,
                             int32_t seqlen_k, int32_t heads, int32_t heads_kv, int32_t head_dim);

// Validates every argument (shapes, strides, alignment, O and LSE overlapping each other or an
// input), then launches on `stream` (a cudaStream_t, NULL = default); a refused call launches
// nothing. May be captured into a CUDA graph (even its first call) and replayed on any stream,
// beside other launches; two executables instantiated from one captured graph must not run at
// the same time (docs/reliability.md).
// Non-finite data: a row that a NaN reaches (a NaN E4M3 code or descale) comes out NaN (O and
// LSE), never as O = 0 / LSE = -inf, which only a row that sees no key gets.
fp8attn_status fp8attn_attention_fwd(const fp8attn_fwd_params* params, void* stream);

// Validation only (no device work); returns the same status the call would.
fp8attn_status fp8attn_check_fwd_params(const fp8attn_fwd_params* params);

// Human-readable reason of the last failed call on this thread, "" after a call that succeeded.
// One channel for the whole library (kernel, pre-pass, end to end): fp8attn_quant_last_error()
// returns the same message. It names the stage that refused ("fp8attn: ", "fp8attn pre-pass: ",
// "fp8attn attention: ").
const char* fp8attn_last_error(void);

#ifdef __cplusplus
}  // extern "C"

#include <stdexcept>
#include <string>

namespace fp8attn {

using FwdParams = fp8attn_fwd_params;

class Error : public std::runtime_error {
 public:
  Error(fp8attn_status s, const std::string& what) : std::runtime_error(what), status(s) {}
  fp8attn_status status;
};

// Throws fp8attn::Error with fp8attn_last_error() on any failure.
inline void attention_fwd(const FwdParams& p, void* stream = nullptr) {
  const fp8attn_status s = fp8attn_attention_fwd(&p, stream);
  if (s != FP8ATTN_SUCCESS) throw Error(s, fp8attn_last_error());
}

}  // namespace fp8attn
#endif  // __cplusplus

#endif  // FP8ATTN_FP8ATTN_H_
