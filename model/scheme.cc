#include "model/scheme.h"

#include "model/kernel_mirror.h"

#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

namespace fp8attn::model {

const char* granularity_name(Granularity g) {
  switch (g) {
    case Granularity::kTensor: return "tensor";
    case Granularity::kBatchHead: return "head";
    case Granularity::kBlock: return "block";
    case Granularity::kToken: return "token";
    case Granularity::kChannel: return "channel";
  }
  return "?";
}

namespace {

const OperandQuant kBF16{Format::BF16, Granularity::kTensor, false};
OperandQuant quant(Format f, Granularity g, bool hilo = false) { return OperandQuant{f, g, hilo}; }

// FA3's BF16 numerics: P in [0, 1] rounded to BF16, O accumulated across blocks in FP32.
FlashNumerics bf16_numerics() {
  FlashNumerics nm;
  nm.p_format = Format::BF16;
  nm.p_offset_log2 = 0.0f;
  nm.two_level = false;
  return nm;
}

// FA3's FP8 numerics: P * 2^8 in E4M3, O accumulated across blocks (no two-level).
FlashNumerics fa3_fp8_numerics() {
  FlashNumerics nm;
  nm.p_format = Format::E4M3;
  nm.p_offset_log2 = 8.0f;
  nm.two_level = false;
  return nm;
}

// One component alone: exact P (FP32), FP32 output; the operands BF16 unless a scheme sets them.
FlashNumerics component_numerics() {
  FlashNumerics nm;
  nm.p_format = Format::FP32;
  nm.p_offset_log2 = 0.0f;
  nm.o_format = Format::FP32;
  return nm;
}

Scheme make(const std::string& name, const std::string& desc, OperandQuant q, OperandQuant k,
            OperandQuant v, FlashNumerics nm) {
  Scheme s;
  s.name = name;
  s.description = desc;
  s.q = q;
  s.k = k;
  s.v = v;
  s.numerics = nm;
  return s;
}

using Builder = std::function<Scheme()>;

const std::vector<std::pair<std::string, Builder>>& registry() {
  static const std::vector<std::pair<std::string, Builder>> r = [] {
    std::vector<std::pair<std::string, Builder>> v;
    const auto e4 = Format::E4M3;
    const auto G = Granularity::kBatchHead;
    v.push_back({"bf16-flash", [] {
      return make("bf16-flash", "FA3-BF16 numerics: BF16 inputs, FP32 S and softmax, P in BF16, "
                  "FP32 O across blocks, O/l in BF16", kBF16, kBF16, kBF16, bf16_numerics());
    }});
    v.push_back({"fa3-fp8", [=] {
      return make("fa3-fp8", "FA3 FP8: Q, K, V E4M3 with amax/448 per (batch, kv head), P*2^8 in "
                  "E4M3, FP32 accumulation", quant(e4, G), quant(e4, G), quant(e4, G),
                  fa3_fp8_numerics());
    }});
    v.push_back({"fa3-fp8-rot", [=] {
      Scheme s = make("fa3-fp8-rot", "fa3-fp8 after a random-sign Hadamard rotation of Q and K",
                      quant(e4, G), quant(e4, G), quant(e4, G), fa3_fp8_numerics());
      s.hadamard_qk = true;
      return s;
    }});
    v.push_back({"fa3-fp8-hopper", [=] {
      FlashNumerics nm = fa3_fp8_numerics();
      nm.acc_qk = nm.acc_pv = Accumulator::kHopperFP8;
      return make("fa3-fp8-hopper", "fa3-fp8 with the Hopper FP8 accumulator model (13 mantissa "
                  "bits, truncated every 32 products) in both products, O across blocks",
                  quant(e4, G), quant(e4, G), quant(e4, G), nm);
    }});
    v.push_back({"fa3-fp8-rot-hopper", [=] {
      FlashNumerics nm = fa3_fp8_numerics();
      nm.acc_qk = nm.acc_pv = Accumulator::kHopperFP8;
      Scheme s = make("fa3-fp8-rot-hopper", "fa3-fp8-hopper after the Hadamard rotation of Q, K",
                      quant(e4, G), quant(e4, G), quant(e4, G), nm);
      s.hadamard_qk = true;
      return s;
    }});
    auto kernel = [](const std::string& name, const std::string& desc, int p_precision,
                     bool hadamard) {
      Scheme s;
      s.name = name;
      s.description = desc;
      s.kernel_prepass = true;
      s.prepass_hadamard = hadamard;
      s.numerics = kernel_numerics(p_precision);
      return s;
    };
    v.push_back({"fp8attn-kernel", [=] {
      return kernel("fp8attn-kernel", "our pre-pass (smooth K and V, Q per token, K per 128 keys, "
                    "V per channel) + the kernel's numerics as it dispatches them (kernel_numerics: "
                    "P*2^8 E4M3, blocks last to first)", FP8ATTN_P_E4M3, false);
    }});
    v.push_back({"fp8attn-kernel-hilo", [=] {
      return kernel("fp8attn-kernel-hilo", "fp8attn-kernel with P as E4M3 hi+lo",
                    FP8ATTN_P_E4M3_HILO, false);
    }});
    v.push_back({"fp8attn-kernel-rot", [=] {
      return kernel("fp8attn-kernel-rot", "fp8attn-kernel with the pre-pass Hadamard on Q, K",
                    FP8ATTN_P_E4M3, true);
    }});
    // The library's default pre-pass (K descaled per head, its Hadamard seed) writing V^T in FP16
    // or E4M3, with the numerics of the kernel the dispatch picks for those inputs
    // (kernel_numerics with one K descale per head).
    auto library = [=](const std::string& name, const std::string& desc, int p_precision,
                       bool vt_fp16) {
      Scheme s = kernel(name, desc, p_precision, true);
      s.prepass_k_head = true;
      s.prepass_v_fp16 = vt_fp16;
      s.hadamard_seed = kLibraryHadamardSeed;
      s.numerics = kernel_numerics(p_precision, Accumulator::kFP32, /*k_descale_per_block=*/false, vt_fp16);
      return s;
    };
    v.push_back({"fp8attn-default", [=] {
      // What the library does with default options (fp8attn_quant_options_init): smooth K and V,
      // Hadamard on Q and K, K descaled per (batch, KV head), so the kernel runs 192-key blocks.
      return library("fp8attn-default", "the library's defaults: pre-pass with smoothing, Hadamard "
                     "on Q, K and per-head K descales + the kernel's numerics (192-key blocks)",
                     FP8ATTN_P_E4M3, false);
    }});
    v.push_back({"fp8attn-accurate", [=] {
      // The library's accurate mode end to end: the default pre-pass writing V^T in FP16
      // (FP8ATTN_VT_FP16: V never rounded to E4M3), P in FP16 (FP8ATTN_P_FP16: with per-head K
      // descales 192-key blocks, the P V product accumulated in FP32). Long non-causal calls
      // (src/attn/select.h, fp16_vt_three_warpgroups: >= 8192 keys and >= 1024 tiles of 192
      // rows) run 128-key blocks instead; no captured set is that large, and the kernel-only
      // errors of the two block lengths agree to 4 digits (docs/kernel.md, the dispatch
      // table), so the scheme keeps 192.
      return library("fp8attn-accurate", "fp8attn-default's pre-pass with V^T in FP16 and P in "
                     "FP16 (FP8ATTN_P_FP16 + FP8ATTN_VT_FP16, the accurate mode)",
                     FP8ATTN_P_FP16, true);
    }});
    v.push_back({"fp8attn-accurate-e4m3v", [=] {
      // FP16 P from an E4M3 V^T (a caller's E4M3 KV cache): V rounded to E4M3, converted to FP16
      // in the kernel (exact; the converter kernel's 128-key blocks).
      return library("fp8attn-accurate-e4m3v", "fp8attn-accurate with V^T in E4M3 (the "
                     "kernel converts it to FP16)", FP8ATTN_P_FP16, false);
    }});
    v.push_back({"sage2-like", [=] {
      FlashNumerics nm;
      nm.p_offset_log2 = std::log2(448.0f);
      nm.acc_pv = Accumulator::kHopperFP8;
      nm.two_level = true;
      Scheme s = make("sage2-like", "SageAttention2-like: smooth K, INT8 Q, K per 128-token block, "
                      "P*448 E4M3, V E4M3 per channel, FP22 PV with two-level accumulation",
                      quant(Format::INT8, Granularity::kBlock), quant(Format::INT8, Granularity::kBlock),
                      quant(e4, Granularity::kChannel), nm);
      s.smooth_k = true;
      return s;
    }});
    // Components alone (the rest exact: BF16 operands, FP32 P and O): the error budget of
    // ../shared/docs/NUMERICS.md.
    auto comp = [](const std::string& name, const std::string& desc, OperandQuant q, OperandQuant k,
                   OperandQuant v) {
      return make(name, desc, q, k, v, component_numerics());
    };
    const auto T = Granularity::kToken;
    v.push_back({"only-qk-tensor", [=] {
      return comp("only-qk-tensor", "Q, K E4M3 per tensor; all else exact",
                  quant(e4, Granularity::kTensor), quant(e4, Granularity::kTensor), kBF16);
    }});
    v.push_back({"only-qk-token", [=] {
      return comp("only-qk-token", "Q, K E4M3 per token", quant(e4, T), quant(e4, T), kBF16);
    }});
    v.push_back({"only-qk-token-smoothk", [=] {
      Scheme s = comp("only-qk-token-smoothk", "Q, K E4M3 per token, K smoothed", quant(e4, T),
                      quant(e4, T), kBF16);
      s.smooth_k = true;
      return s;
    }});
    v.push_back({"only-qk-token-rot", [=] {
      Scheme s = comp("only-qk-token-rot", "Q, K E4M3 per token after Hadamard", quant(e4, T),
                      quant(e4, T), kBF16);
      s.hadamard_qk = true;
      return s;
    }});
    v.push_back({"only-qk-int8-token-smoothk", [=] {
      Scheme s = comp("only-qk-int8-token-smoothk", "Q, K INT8 per token, K smoothed",
                      quant(Format::INT8, T), quant(Format::INT8, T), kBF16);
      s.smooth_k = true;
      return s;
    }});
    v.push_back({"only-qk-hilo-smoothk", [=] {
      Scheme s = comp("only-qk-hilo-smoothk", "Q, K E4M3 hi+lo per token, K smoothed",
                      quant(e4, T, true), quant(e4, T, true), kBF16);
      s.smooth_k = true;
      return s;
    }});
    v.push_back({"only-p-e4m3", [=] {
      Scheme s = comp("only-p-e4m3", "P*448 in E4M3", kBF16, kBF16, kBF16);
      s.numerics.p_format = e4;
      s.numerics.p_offset_log2 = std::log2(448.0f);
      return s;
    }});
    v.push_back({"only-p-e4m3-hilo", [=] {
      Scheme s = comp("only-p-e4m3-hilo", "P*448 in E4M3 hi+lo", kBF16, kBF16, kBF16);
      s.numerics.p_format = e4;
      s.numerics.p_hilo = true;
      s.numerics.p_offset_log2 = std::log2(448.0f);
      return s;
    }});
    v.push_back({"only-v-channel", [=] {
      return comp("only-v-channel", "V E4M3 per channel", kBF16, kBF16,
                  quant(e4, Granularity::kChannel));
    }});
    v.push_back({"only-v-int8-channel", [=] {
      return comp("only-v-int8-channel", "V INT8 per channel", kBF16, kBF16,
                  quant(Format::INT8, Granularity::kChannel));
    }});
    v.push_back({"only-v-hilo", [=] {
      return comp("only-v-hilo", "V E4M3 hi+lo per channel", kBF16, kBF16,
                  quant(e4, Granularity::kChannel, true));
    }});
    v.push_back({"all-e4m3-tensor", [=] {
      FlashNumerics nm = fa3_fp8_numerics();
      nm.o_format = Format::FP32;
      return make("all-e4m3-tensor", "Q, K, V E4M3 per tensor, P*2^8 E4M3, FP32 accumulation and O",
                  quant(e4, Granularity::kTensor), quant(e4, Granularity::kTensor),
                  quant(e4, Granularity::kTensor), nm);
    }});
    return v;
  }();
  return r;
}

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw std::invalid_argument("scheme '" + spec + "': " + why + "\n" + scheme_help());
}

Format parse_format(const std::string& spec, const std::string& s) {
  for (Format f : {Format::E4M3, Format::E5M2, Format::BF16, Format::FP16, Format::INT8, Format::FP32}) {
    if (s == format_name(f)) return f;
  }
  bad(spec, "unknown format '" + s + "'");
}

Granularity parse_gran(const std::string& spec, const std::string& s) {
  for (Granularity g : {Granularity::kTensor, Granularity::kBatchHead, Granularity::kBlock,
                        Granularity::kToken, Granularity::kChannel}) {
    if (s == granularity_name(g)) return g;
  }
  bad(spec, "unknown granularity '" + s + "'");
}

bool parse_bool(const std::string& spec, const std::string& s) {
  if (s == "1" || s == "true" || s == "on") return true;
  if (s == "0" || s == "false" || s == "off") return false;
  bad(spec, "expected 0 or 1, got '" + s + "'");
}

// FORMAT[.GRANULARITY][.hilo]
OperandQuant parse_operand(const std::string& spec, const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  if (parts.empty()) bad(spec, "empty operand format");
  OperandQuant o;
  o.format = parse_format(spec, parts[0]);
  o.granularity = Granularity::kBatchHead;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i] == "hilo") o.hilo = true;
    else o.granularity = parse_gran(spec, parts[i]);
  }
  return o;
}

Accumulator parse_acc(const std::string& spec, const std::string& s) {
  if (s == "fp32") return Accumulator::kFP32;
  if (s == "hopper") return Accumulator::kHopperFP8;
  if (s == "aligned") return Accumulator::kAligned;
  bad(spec, "accumulator must be fp32, hopper or aligned, got '" + s + "'");
}

void apply(Scheme& sc, const std::string& spec, const std::string& key, const std::string& val) {
  FlashNumerics& nm = sc.numerics;
  auto prepass_only = [&](bool& field) {
    if (!sc.kernel_prepass) bad(spec, key + " applies to fp8attn-kernel schemes");
    field = parse_bool(spec, val);
  };
  if (sc.kernel_prepass && (key == "q" || key == "k" || key == "v" || key == "smooth_q" ||
                            key == "hadamard_v")) {
    bad(spec, key + ": the pre-pass fixes it; use prepass_* keys");
  }
  if (key == "q") sc.q = parse_operand(spec, val);
  else if (key == "k") sc.k = parse_operand(spec, val);
  else if (key == "v") sc.v = parse_operand(spec, val);
  else if (key == "smooth_q") sc.smooth_q = parse_bool(spec, val);
  else if (key == "smooth_k") { if (sc.kernel_prepass) sc.prepass_smooth_k = parse_bool(spec, val); else sc.smooth_k = parse_bool(spec, val); }
  else if (key == "smooth_v") { if (sc.kernel_prepass) sc.prepass_smooth_v = parse_bool(spec, val); else sc.smooth_v = parse_bool(spec, val); }
  else if (key == "hadamard_qk") { if (sc.kernel_prepass) sc.prepass_hadamard = parse_bool(spec, val); else sc.hadamard_qk = parse_bool(spec, val); }
  else if (key == "hadamard_v") sc.hadamard_v = parse_bool(spec, val);
  else if (key == "prepass_q_block") prepass_only(sc.prepass_q_block);
  else if (key == "prepass_v_head") prepass_only(sc.prepass_v_head);
  else if (key == "prepass_v_fp16") prepass_only(sc.prepass_v_fp16);
  else if (key == "prepass_k_head") {
    // The kernel's dispatch (src/api.cu): a per-head K descale lets one-level E4M3 P run
    // 192-key blocks; two-level accumulation stays on 128.
    prepass_only(sc.prepass_k_head);
    if (!nm.two_level) nm.block_n = sc.prepass_k_head ? 192 : FP8ATTN_K_SCALE_BLOCK;
  }
  else if (key == "prepass_centre") {
    if (!sc.kernel_prepass) bad(spec, key + " applies to fp8attn-kernel schemes");
    if (val == "mean") sc.prepass_centre = FP8ATTN_CENTRE_MEAN;
    else if (val == "sample") sc.prepass_centre = FP8ATTN_CENTRE_SAMPLE;
    else bad(spec, "prepass_centre must be mean or sample, got '" + val + "'");
  }
  else if (key == "prepass_sample") {  // strided | block
    if (val != "strided" && val != "block") bad(spec, "prepass_sample must be strided or block");
    sc.prepass_sample.strided = val == "strided";
  }
  else if (key == "prepass_sample_rows") sc.prepass_sample.rows = std::stoi(val);
  else if (key == "prepass_sample_skip") sc.prepass_sample.skip = std::stoi(val);
  else if (key == "prepass_headroom") sc.prepass_sample.headroom = std::stof(val);
  else if (key == "seed") sc.hadamard_seed = std::stoull(val, nullptr, 0);  // 0x... or decimal
  else if (key == "torch_scale") {
    if (sc.kernel_prepass) bad(spec, key + ": the pre-pass makes its own scales");
    sc.torch_scale = parse_bool(spec, val);
  }
  else if (key == "p") {
    if (val == "e4m3hilo") { nm.p_format = Format::E4M3; nm.p_hilo = true; }
    else { nm.p_format = parse_format(spec, val); nm.p_hilo = false; }
  }
  else if (key == "p_offset") nm.p_offset_log2 = std::stof(val);
  else if (key == "hilo_min") nm.p_hilo_min_log2 = std::stof(val);
  else if (key == "slack") nm.rescale_slack_log2 = std::stof(val);
  else if (key == "l_rounded") nm.l_from_rounded_p = parse_bool(spec, val);
  else if (key == "l_mix") {
    nm.l_mix = std::stof(val);
    if (!(nm.l_mix >= 0.0f && nm.l_mix <= 1.0f)) bad(spec, "l_mix must be in [0, 1]");
  }
  else if (key == "rescale") {
    if (val != "row" && val != "warp") bad(spec, "rescale must be row or warp");
    nm.rescale_per_warp = val == "warp";
  }
  else if (key == "order") {
    if (val != "last" && val != "first") bad(spec, "order must be last or first");
    nm.last_to_first = val == "last";
  }
  else if (key == "acc") nm.acc_qk = nm.acc_pv = parse_acc(spec, val);
  else if (key == "acc_qk") nm.acc_qk = parse_acc(spec, val);
  else if (key == "acc_pv") nm.acc_pv = parse_acc(spec, val);
  else if (key == "acc_bits") nm.acc_mantissa_bits = nm.acc_rule.fraction_bits = std::stoi(val);
  else if (key == "acc_group") nm.acc_rule.group = std::stoi(val);
  else if (key == "acc_c_aligned") nm.acc_rule.c_aligned = parse_bool(spec, val);
  else if (key == "acc_round") {
    if (val == "zero") nm.acc_rule.rounding = AccRounding::kTowardZero;
    else if (val == "down") nm.acc_rule.rounding = AccRounding::kDown;
    else if (val == "nearest") nm.acc_rule.rounding = AccRounding::kNearest;
    else bad(spec, "acc_round must be zero, down or nearest");
  }
  else if (key == "acc_chunk") nm.acc_chunk = std::stoi(val);
  else if (key == "two_level") nm.two_level = parse_bool(spec, val);
  else if (key == "block") nm.block_n = std::stoi(val);
  else if (key == "o") nm.o_format = parse_format(spec, val);
  else if (key == "ftz") nm.exp2_ftz = parse_bool(spec, val);
  else if (key == "exp_fa3") nm.exp_fa3 = parse_bool(spec, val);
  else bad(spec, "unknown option '" + key + "'");
}

}  // namespace

const char* acc_name(Accumulator a) {
  switch (a) {
    case Accumulator::kFP32: return "fp32";
    case Accumulator::kHopperFP8: return "hopper";
    case Accumulator::kAligned: return "aligned";
  }
  return "?";
}

bool Scheme::inputs_exact() const {
  if (kernel_prepass || smooth_q || smooth_k || smooth_v || hadamard_qk || hadamard_v) return false;
  for (const OperandQuant* o : {&q, &k, &v}) {
    if (o->format != Format::BF16 && o->format != Format::FP32) return false;
  }
  return true;
}

namespace {
std::string hex(uint64_t x) {
  std::ostringstream s;
  s << "0x" << std::hex << std::uppercase << x;
  return s.str();
}
}  // namespace

std::string Scheme::summary() const {
  std::ostringstream s;
  auto op = [](const OperandQuant& o) {
    std::string r = format_name(o.format);
    if (o.format != Format::BF16 && o.format != Format::FP32) {
      r += std::string(".") + granularity_name(o.granularity);
      if (o.hilo) r += ".hilo";
    }
    return r;
  };
  const FlashNumerics& nm = numerics;
  if (kernel_prepass) {
    s << "prepass(smooth_k=" << prepass_smooth_k << " smooth_v=" << prepass_smooth_v
      << " hadamard=" << prepass_hadamard << " q=" << (prepass_q_block ? "block" : "token")
      << " k=" << (prepass_k_head ? "head" : "block") << " v=" << (prepass_v_head ? "head" : "channel")
      << (prepass_centre == FP8ATTN_CENTRE_SAMPLE
              ? " centre=sample(" + std::string(prepass_sample.strided ? "strided" : "block") +
                    " rows=" + (prepass_sample.rows > 0 ? std::to_string(prepass_sample.rows)
                                                        : "1/" + std::to_string(FP8ATTN_QUANT_SAMPLE_FRACTION) + " in [" +
                                                              std::to_string(FP8ATTN_QUANT_SAMPLE_ROWS_MIN) + "," +
                                                              std::to_string(FP8ATTN_QUANT_SAMPLE_ROWS_MAX) + "]") +
                    " skip=" +
                    std::to_string(prepass_sample.skip) + " headroom=" +
                    std::to_string(prepass_sample.headroom) + ")"
              : std::string(" centre=mean"))
      << (prepass_v_fp16 ? " vt=fp16" : "")
      << (prepass_hadamard && hadamard_seed != Scheme{}.hadamard_seed ? " seed=" + hex(hadamard_seed) : "")
      << ")";
  } else {
    s << "q=" << op(q) << " k=" << op(k) << " v=" << op(v) << " smooth_q=" << smooth_q
      << " smooth_k=" << smooth_k << " smooth_v=" << smooth_v << " hadamard_qk=" << hadamard_qk
      << " hadamard_v=" << hadamard_v << (torch_scale ? " scale=torch" : "");
  }
  s << " p=" << format_name(nm.p_format) << (nm.p_hilo ? "hilo" : "");
  if (nm.p_hilo && nm.p_hilo_min_log2 > -1e29f) s << " hilo_min=" << nm.p_hilo_min_log2;
  s << " p_offset="
    << nm.p_offset_log2 << " slack=" << nm.rescale_slack_log2 << (nm.rescale_per_warp ? " rescale=warp" : "") << " l_rounded=" << nm.l_from_rounded_p << (nm.l_mix >= 0 ? " l_mix=" + std::to_string(nm.l_mix) : std::string()) << " order="
    << (nm.last_to_first ? "last" : "first") << " block=" << nm.block_n << " acc_qk="
    << acc_name(nm.acc_qk) << " acc_pv=" << acc_name(nm.acc_pv);
  if (nm.acc_qk == Accumulator::kHopperFP8 || nm.acc_pv == Accumulator::kHopperFP8) {
    s << " acc_bits=" << nm.acc_mantissa_bits << " acc_chunk=" << nm.acc_chunk;
  }
  if (nm.acc_qk == Accumulator::kAligned || nm.acc_pv == Accumulator::kAligned) {
    s << " acc_bits=" << nm.acc_rule.fraction_bits << " acc_group=" << nm.acc_rule.group
      << " acc_round=" << acc_rounding_name(nm.acc_rule.rounding) << " acc_c_aligned="
      << nm.acc_rule.c_aligned;
  }
  s << " two_level=" << nm.two_level << " o=" << format_name(nm.o_format)
    << (nm.exp_fa3 ? " exp_fa3=1" : "");
  return s.str();
}

std::vector<std::string> scheme_names() {
  std::vector<std::string> n;
  for (const auto& [name, b] : registry()) n.push_back(name);
  return n;
}

std::string scheme_help() {
  std::string h = "schemes:\n";
  for (const auto& [name, b] : registry()) h += "  " + name + ": " + b().description + "\n";
  h += "variants: NAME:key=value:key=value..., keys: q, k, v (FORMAT[.GRAN][.hilo]; formats "
       "e4m3 e5m2 int8 fp16 bf16 fp32; granularities tensor head block token channel), smooth_q, "
       "smooth_k, smooth_v, hadamard_qk, hadamard_v, seed, torch_scale, p (e4m3 e4m3hilo bf16 fp16 fp32), "
       "p_offset, hilo_min (log2 of the block max of p below which hi+lo drops the low term), slack, rescale (row warp), l_rounded, l_mix (0..1: l mixes the rounded and FP32 sums), order (last first), acc, acc_qk, acc_pv (fp32 hopper aligned), "
       "acc_bits, acc_chunk, acc_group, acc_round (zero down nearest), acc_c_aligned, two_level, block, o (bf16 fp16 fp32), ftz, exp_fa3; fp8attn-kernel*: smooth_k, smooth_v, "
       "hadamard_qk, prepass_q_block, prepass_v_head, prepass_k_head, prepass_v_fp16,\n"
         "  prepass_centre (mean|sample), prepass_sample (strided|block), prepass_sample_rows,\n"
         "  prepass_sample_skip, prepass_headroom\n";
  return h;
}

Scheme scheme_by_name(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string base = spec.substr(0, colon);
  for (const auto& [name, build] : registry()) {
    if (name != base) continue;
    Scheme s = build();
    if (colon == std::string::npos) return s;
    s.name = spec;
    std::stringstream ss(spec.substr(colon + 1));
    for (std::string kv; std::getline(ss, kv, ':');) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) bad(spec, "expected key=value, got '" + kv + "'");
      try {
        apply(s, spec, kv.substr(0, eq), kv.substr(eq + 1));
      } catch (const std::invalid_argument&) {
        throw;
      } catch (const std::exception& e) {
        bad(spec, "bad value in '" + kv + "'");
      }
    }
    return s;
  }
  bad(spec, "unknown scheme '" + base + "'");
}

}  // namespace fp8attn::model
