#include "model/evaluate.h"

#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace fp8attn::model {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

const char* kBf16 = "bf16-flash";

}  // namespace

SchemeRun run_scheme(const Scheme& s, const Tensor& q, const Tensor& k, const Tensor& v,
                     bool causal, float softmax_scale) {
  const double t0 = now(), c0 = cpu_now();
  SchemeRun run;
  run.prepared = prepare_operands(s, q, k, v, softmax_scale);
  const Prepared& p = run.prepared;
  auto ptr = [](const std::vector<float>& x) { return x.empty() ? nullptr : x.data(); };
  FlashInputs fi;
  fi.q = &p.q;
  fi.k = &p.k;
  fi.v = &p.v;
  fi.q_scale = ptr(p.q_scale);
  fi.k_scale = ptr(p.k_scale);
  fi.v_scale = ptr(p.v_scale);
  fi.key_bias = ptr(p.key_bias);
  fi.lse_bias = ptr(p.lse_bias);
  fi.o_bias = p.rotate_v ? nullptr : ptr(p.o_bias);
  fi.softmax_scale = softmax_scale;
  fi.causal = causal;
  FlashOutputs fo = flash_forward(fi, s.numerics);
  run.lse = std::move(fo.lse);
  if (!p.rotate_v) {
    run.o = std::move(fo.o);
    run.o_acc = std::move(fo.o_acc);
  } else {
    // O was computed on rotated V: rotate it back, add the V mean, then round.
    run.o_acc = std::move(fo.o_acc);
    Tensor& o = run.o_acc;
    hadamard_rows(o.data.data(), o.size() / o.d, o.d, p.seed, true);
    if (!p.o_bias.empty()) {
      const int group = o.h / p.v.h;
      for (int b = 0; b < o.b; ++b)
        for (int i = 0; i < o.s; ++i)
          for (int h = 0; h < o.h; ++h)
            for (int c = 0; c < o.d; ++c)
              o(b, i, h, c) += p.o_bias[(static_cast<size_t>(b) * p.v.h + h / group) * o.d + c];
    }
    // Rows that see no key stay zero.
    for (int b = 0; b < o.b; ++b)
      for (int h = 0; h < o.h; ++h)
        for (int i = 0; i < o.s; ++i)
          if (std::isinf(run.lse[(static_cast<size_t>(b) * o.h + h) * o.s + i]))
            for (int c = 0; c < o.d; ++c) o(b, i, h, c) = 0.0f;
    run.o = o;
    round_inplace(s.numerics.o_format, run.o.data.data(), run.o.size());
  }
  run.seconds = now() - t0;
  run.cpu_seconds = cpu_now() - c0;
  return run;
}

TensorD kernel_only_reference(const SchemeRun& run, bool causal, float softmax_scale, bool fp64) {
  const Prepared& p = run.prepared;
  AttnConfig cfg;
  cfg.causal = causal;
  cfg.softmax_scale = softmax_scale;
  cfg.score_bias = p.score_bias.empty() ? nullptr : p.score_bias.data();
  ExactF64 r;
  if (fp64) {
    r = attention_exact_f64(p.q_deq, p.k_deq, p.v_deq, cfg);
  } else {
    ExactF32 r32 = attention_exact_f32(p.q_deq, p.k_deq, p.v_deq, cfg);
    r.o = TensorD(r32.o.b, r32.o.s, r32.o.h, r32.o.d);
    for (size_t i = 0; i < r32.o.data.size(); ++i) r.o.data[i] = r32.o.data[i];
    r.lse.assign(r32.lse.begin(), r32.lse.end());
  }
  TensorD& o = r.o;
  if (p.rotate_v) hadamard_rows(o.data.data(), o.size() / o.d, o.d, p.seed, true);
  if (!p.o_bias.empty()) {
    const int group = o.h / p.v.h;
    for (int b = 0; b < o.b; ++b)
      for (int i = 0; i < o.s; ++i)
        for (int h = 0; h < o.h; ++h) {
          if (std::isinf(r.lse[(static_cast<size_t>(b) * o.h + h) * o.s + i])) continue;
          for (int c = 0; c < o.d; ++c)
            o(b, i, h, c) += p.o_bias[(static_cast<size_t>(b) * p.v.h + h / group) * o.d + c];
        }
  }
  return std::move(r.o);
}

std::vector<EvalRecord> evaluate(const Dataset& data, bool causal, std::vector<Scheme> schemes,
                                 const EvalOptions& opt, double* reference_seconds) {
  bool has_bf16 = false;
  for (const Scheme& s : schemes) has_bf16 = has_bf16 || s.name == kBf16;
  if (!has_bf16) schemes.insert(schemes.begin(), scheme_by_name(kBf16));
  AttnConfig cfg;
  cfg.causal = causal;
  cfg.softmax_scale = opt.softmax_scale;
  double t0 = now();
  const ExactF64 ref = attention_exact_f64(data.q, data.k, data.v, cfg);
  const double ref_seconds = now() - t0;
  if (reference_seconds) *reference_seconds = ref_seconds;
  if (opt.verbose) {
    std::fprintf(stderr, "[eval] %s causal=%d: exact FP64 reference %.2f s\n", data.name.c_str(),
                 causal, now() - t0);
  }
  std::vector<EvalRecord> out;
  auto record = [&](const Scheme& s, const char* reference, const ErrorStats& e, double sec,
                    double cpu) {
    EvalRecord r;
    r.dataset = data.name;
    r.scheme = s.name;
    r.reference = reference;
    r.causal = causal;
    r.batch = data.q.b;
    r.seqlen = data.q.s;
    r.heads = data.q.h;
    r.heads_kv = data.k.h;
    r.head_dim = data.q.d;
    r.err = e;
    r.seconds = sec;
    r.cpu_seconds = cpu;
    r.reference_seconds = ref_seconds;
    out.push_back(r);
    return &out.back();
  };
  for (const Scheme& s : schemes) {
    const SchemeRun run = run_scheme(s, data.q, data.k, data.v, causal, opt.softmax_scale);
    EvalRecord* e2e = record(s, "end_to_end", compare(run.o, ref.o), run.seconds, run.cpu_seconds);
    double lse_err = 0.0;
    for (size_t i = 0; i < ref.lse.size(); ++i) {
      if (std::isinf(ref.lse[i])) continue;
      lse_err = std::max(lse_err, std::fabs(static_cast<double>(run.lse[i]) - ref.lse[i]));
    }
    e2e->lse_max_abs = lse_err;
    if (opt.verbose) {
      std::fprintf(stderr, "[eval] %s causal=%d %s: emulation %.2f s (%.2f CPU s), rel rmse %.3e\n",
                   data.name.c_str(), causal, s.name.c_str(), run.seconds, run.cpu_seconds,
                   e2e->err.rel_rmse);
    }
    if (!opt.kernel_only) continue;
    if (s.inputs_exact()) {
      const ErrorStats same = e2e->err;
      record(s, "kernel_only", same, run.seconds, run.cpu_seconds);
      record(s, "floor", ErrorStats{}, 0.0, 0.0);
      continue;
    }
    t0 = now();
    const double c0 = cpu_now();
    const TensorD kref = kernel_only_reference(run, causal, opt.softmax_scale, opt.kernel_only_fp64);
    const double kref_sec = now() - t0, kref_cpu = cpu_now() - c0;
    if (opt.verbose) {
      std::fprintf(stderr, "[eval] %s causal=%d %s: kernel_only reference %.2f s (%.2f CPU s)\n",
                   data.name.c_str(), causal, s.name.c_str(), kref_sec, kref_cpu);
    }
    record(s, "kernel_only", compare(run.o, kref), run.seconds, run.cpu_seconds);
    record(s, "floor", compare(kref, ref.o), kref_sec, kref_cpu);
  }
  // Ratios to bf16-flash (its end_to_end figures; the BF16 kernel sees exact inputs).
  std::map<std::string, const EvalRecord*> base;
  for (const EvalRecord& r : out) {
    if (r.scheme == kBf16) base[r.reference] = &r;
  }
  for (EvalRecord& r : out) {
    const auto it = base.find(r.reference == "floor" ? "end_to_end" : r.reference);
    if (it == base.end()) continue;
    const ErrorStats& b = it->second->err;
    if (b.rmse > 0) r.rmse_ratio = r.err.rmse / b.rmse;
    if (b.max_abs > 0) r.max_ratio = r.err.max_abs / b.max_abs;
  }
  return out;
}

}  // namespace fp8attn::model
