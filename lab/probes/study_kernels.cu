// The study variants of the attention kernel, for the probes only (built with -DFP8ATTN_PROBE=ON,
// never part of libfp8attn.so). fp8attn_probe_attention_fwd takes the same parameters as
// fp8attn_attention_fwd and reads the lab's knobs from the environment; with none set it runs
// what the library selects. An unknown knob value is an error, never a silent default.
//   FP8ATTN_ACCUMULATION=two-level|one-level   (E4M3 and hi+lo P)
//   FP8ATTN_BLOCK_N=128|192|224                (one-level E4M3 P)
//   FP8ATTN_VARIANT=tc-rowsum|fp32-rowsum      (l from the tensor core or the FP32 sum of p)
//   FP8ATTN_POLY_EXP_EVERY=0|4                 (every 4th group of 8 keys: exp2 on the FMA pipe)
//   FP8ATTN_PERSISTENT=0|1, FP8ATTN_SCHED=section|head
// The ablations of the old probes (ablate-*) no longer exist: rerun them at their commit.
#include <cstdlib>
#include <cstring>
#include <string>

#include "attn/launch.cuh"
#include "attn/select.h"
#include "attn/validate.h"
#include "study_kernels.h"

namespace {
using namespace fp8attn;  // DeviceInfo, check_device, clear_error (src/common/)
using namespace fp8attn::attn;
constexpr PPrecision E = PPrecision::kE4M3, H = PPrecision::kE4M3HiLo;

const char* knob(const char* name) { return std::getenv(name); }

bool parse(const char* name, std::initializer_list<const char*> allowed, std::string* out) {
  const char* v = knob(name);
  if (!v) return true;
  for (const char* a : allowed)
    if (std::strcmp(v, a) == 0) {
      *out = v;
      return true;
    }
  return false;
}

template <class Cfg>
fp8attn_status go(const fp8attn_fwd_params& p, const DeviceInfo& d, const LaunchOptions& o, cudaStream_t s) {
  return launch<Cfg>(p, d, o, s);
}
}  // namespace

extern "C" fp8attn_status fp8attn_probe_attention_fwd(const fp8attn_fwd_params* params, void* stream) {
  clear_error();
  std::string acc, block, variant, poly, pers, sched;
  if (!parse("FP8ATTN_ACCUMULATION", {"two-level", "one-level"}, &acc) ||
      !parse("FP8ATTN_BLOCK_N", {"128", "192", "224"}, &block) ||
      !parse("FP8ATTN_VARIANT", {"tc-rowsum", "fp32-rowsum", "default"}, &variant) ||
      !parse("FP8ATTN_POLY_EXP_EVERY", {"0", "4"}, &poly) ||
      !parse("FP8ATTN_PERSISTENT", {"0", "1"}, &pers) || !parse("FP8ATTN_SCHED", {"section", "head"}, &sched))
    return fail(FP8ATTN_ERROR_INVALID_ARGUMENT, "unknown value of an FP8ATTN_* probe knob");
  fp8attn_status st = validate(params);
  if (st != FP8ATTN_SUCCESS || params->batch == 0 || params->seqlen_q == 0) return st;
  DeviceInfo d;
  if ((st = check_device(&d)) != FP8ATTN_SUCCESS) return st;
  const fp8attn_fwd_params& p = *params;
  const auto s = static_cast<cudaStream_t>(stream);
  LaunchOptions o;
  o.persistent = pers != "0";
  o.causal_sections = sched != "head";
  const bool poly4 = poly == "4";
  const bool tc = variant != "fp32-rowsum" && variant != "default";
  const bool per_block_k = k_scale_per_block(p);
  if (p.p_precision == FP8ATTN_P_FP16) return go<KernelFP16Block128>(p, d, o, s);
  if (p.p_precision == FP8ATTN_P_E4M3_HILO) {
    if (acc != "one-level") return poly4 ? go<Config<H, true, 128, 2, false, 4>>(p, d, o, s)
                                         : go<KernelE4M3HiLoTwoLevel>(p, d, o, s);
    if (per_block_k || block == "128") return go<Config<H, false, 128, 3, false>>(p, d, o, s);
    return poly4 ? go<Config<H, false, 192, 2, false, 4>>(p, d, o, s) : go<Config<H, false, 192, 2, false>>(p, d, o, s);
  }
  if (acc == "two-level")
    return poly4 ? go<Config<E, true, 128, 2, false, 4>>(p, d, o, s) : go<Config<E, true, 128, 2, false>>(p, d, o, s);
  if (per_block_k || block == "128")
    return tc ? go<KernelE4M3Block128>(p, d, o, s) : go<Config<E, false, 128, 3, false>>(p, d, o, s);
  if (block == "224")
    return tc ? go<Config<E, false, 224, 2, true>>(p, d, o, s) : go<Config<E, false, 224, 2, false>>(p, d, o, s);
  if (poly4) return go<Config<E, false, 192, 2, false, 4>>(p, d, o, s);
  return tc ? go<Config<E, false, 192, 2, true, 0, VtType::kE4M3, /*kTmaStoreO=*/false, FirstBlock::kTrim>>(p, d, o, s)
            : go<Config<E, false, 192, 2, false>>(p, d, o, s);
}
