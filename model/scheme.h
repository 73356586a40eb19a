// A Scheme: every numeric choice of an attention method, as named fields. The model's named
// schemes (scheme_by_name) and any variant spelled NAME:key=value:... are values of this struct.
#ifndef FP8ATTN_MODEL_SCHEME_H_
#define FP8ATTN_MODEL_SCHEME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "model/codecs.h"
#include "model/flash.h"
#include "model/prepass.h"

namespace fp8attn::model {

// Which elements share one quantization scale (amax / format max).
enum class Granularity {
  kTensor,     // the whole tensor
  kBatchHead,  // (batch, kv head); for Q the query heads of one kv head (FA3's q_descale)
  kBlock,      // (batch, head, 128 consecutive tokens)
  kToken,      // (batch, head, token): one row of d values
  kChannel,    // (batch, head, channel) over all tokens
};
const char* granularity_name(Granularity g);
const char* acc_name(Accumulator a);

// The library's default Hadamard seed (fp8attn_quant_options_init, src/quant/quant_api.cu; that
// function lives in a CUDA file the CPU model does not link). The schemes that claim to be the
// library's defaults (fp8attn-default, fp8attn-accurate, fp8attn-accurate-e4m3v) rotate with it.
inline constexpr uint64_t kLibraryHadamardSeed = 0x5EED5EED5EED5EEDull;

struct OperandQuant {
  Format format = Format::E4M3;  // BF16: rounded to BF16 only (no scale); FP32: kept as is
  Granularity granularity = Granularity::kBatchHead;
  bool hilo = false;  // x = s * (hi + lo / f), hi and lo in the format; f = 16 (E4M3), 128 (INT8)
};

struct Scheme {
  std::string name;
  std::string description;
  OperandQuant q, k, v;
  // Smoothing: subtract the per-channel mean over tokens (per batch and head) before quantizing.
  // K: exact under softmax (adds a per-row constant to the scores; the LSE gets it back).
  // Q: S = (Q - mq) K^T + mq K^T; the second term is a per-key vector computed in FP32 from the
  //    unquantized K and added to the scores.
  // V: O = P (V - mv) / l + mv, exact when l sums the P that multiplies V (l_from_rounded_p).
  bool smooth_q = false, smooth_k = false, smooth_v = false;
  // Random-sign Hadamard rotation along d (orthonormal): Q and K together (Q K^T unchanged);
  // V with O rotated back before the output rounding.
  bool hadamard_qk = false, hadamard_v = false;
  uint64_t hadamard_seed = 0x2545F4914F6CDD1Dull;  // the numerics study's; the library's: above
  // Scales as python/fp8attn/quantize.py makes them on the GPU (key torch_scale=1): descale =
  // fp32(amax * fp32(1/fmax)) (torch multiplies a tensor divided by a Python float by the float's
  // FP32 reciprocal), codes = RNE(fp32(x / descale)). Off: descale = fp32(amax / fmax) and codes
  // = RNE(fp32(x * fp32(fmax / amax))). The two differ by one ulp of the descale for some amax
  // (e.g. 0.6015625, 10.5, 12.25): x / descale then falls just below the E4M3 ties that exact
  // amax/448 scales make exact, and those ties round toward zero instead of to even.
  bool torch_scale = false;
  // Everything after the operands: P format and offset, KV order, accumulators, output format.
  FlashNumerics numerics;
  // The operands come from the pre-pass mirror (model/prepass.h) with these options, in the
  // kernel's layout and granularities: Q per token (or per 128-token block), K per 128-key block
  // (or per head: prepass_k_head, with which the kernel runs 192-key blocks), V per channel (or
  // per head). q, k, v, smooth_* and hadamard_* above are then unused. These are the numerics
  // study's fixed choices, not the library's defaults (fp8attn_quant_options_init).
  bool kernel_prepass = false;
  bool prepass_smooth_k = true, prepass_smooth_v = true, prepass_hadamard = false;
  bool prepass_q_block = false, prepass_v_head = false, prepass_k_head = false;
  // fp8attn_centre (FP8ATTN_CENTRE_SAMPLE: the one-pass pre-pass) and, for the study, its sample.
  int prepass_centre = FP8ATTN_CENTRE_MEAN;
  SampleSpec prepass_sample;
  // V^T in FP16 (FP8ATTN_VT_FP16: the same scaled values, rounded to FP16 instead of E4M3);
  // only with FP16 P (numerics.p_format FP16), as the kernel.
  bool prepass_v_fp16 = false;

  // The products see only BF16 values and nothing is transformed: the kernel-only reference
  // equals the end-to-end one.
  bool inputs_exact() const;
  std::string summary() const;  // one line listing every option
};

// The named schemes, and NAME:key=value:key=value... variants of them (see scheme_help()).
Scheme scheme_by_name(const std::string& spec);
std::vector<std::string> scheme_names();
std::string scheme_help();

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_SCHEME_H_
