// fp8attn-eval: errors of attention schemes emulated by the CPU numerics model (model/), against
// exact FP64 attention, on synthetic or captured Q, K, V. Prints a table (each scheme's error and
// its ratio to bf16-flash) and writes JSON records; tools/plot_eval.py draws them.
#include <omp.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "model/evaluate.h"
#include "model/h200_table.h"
#include "model/scheme.h"
#include "model/synthetic.h"

namespace fm = fp8attn::model;

namespace {

const char* kUsage = R"(usage:
  fp8attn-eval --synthetic gaussian|outlier|kbias[,...] --seqlen N --heads H [--heads-kv HK]
               [--batch B] [--head-dim D] [--seed S] [--causal | --mask none|causal|both]
               --scheme NAME[,NAME...] [--heads-subset N] [--no-kernel-only] [--json FILE]
  fp8attn-eval --data FILE.safetensors[,FILE...] (tensors q, k, v: (b, s, h, d) BF16; k, v may
               have fewer heads) [--heads-subset N] [--batches N] ... (as above)
  fp8attn-eval --h200-table [--heads-subset N] [--batches N] [--seed S]
               the model's reproduction of the H200 measurements (b=2, s=8192, h=32, d=128)
  fp8attn-eval --list-schemes
options:
  --heads-subset N   evaluate N of the heads, evenly spaced (N divides h); kv heads follow
  --no-kernel-only   only the end_to_end reference (skips the kernel_only and floor records)
  --kernel-only-fp64 the kernel_only reference in FP64 (default FP32; end_to_end is always FP64)
  --softmax-scale X  default 1/sqrt(d)
  --threads N        OpenMP threads (default: all cores)
  --quiet            no progress on stderr
exit status: 0 done, 1 failed (e.g. a file that cannot be read), 2 bad arguments
)";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, sep);) {
    if (!x.empty()) out.push_back(x);
  }
  return out;
}

std::string run_cmd(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p.get())) out += buf;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The repository the executable was built in (its build folder lies inside it): its commit, for
// the provenance of the records; "unknown" when the executable is not inside a git checkout.
std::string git_commit() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "unknown";
  const std::string dir = exe.parent_path().string();
  std::string c = run_cmd("git -C '" + dir + "' rev-parse --short=12 HEAD 2>/dev/null");
  if (c.empty()) return "unknown";
  // Dirty when the code that makes the figures (the model and this tool) differs from the commit.
  const std::string top = run_cmd("git -C '" + dir + "' rev-parse --show-toplevel 2>/dev/null");
  if (!run_cmd("git -C '" + top + "' status --porcelain -- model tools/eval 2>/dev/null").empty()) {
    c += "-dirty";
  }
  return c;
}

std::string machine() {
  std::string cpu = run_cmd("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2");
  while (!cpu.empty() && cpu.front() == ' ') cpu.erase(cpu.begin());
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return std::string(host) + ", " + (cpu.empty() ? "unknown CPU" : cpu) + ", " +
         std::to_string(omp_get_max_threads()) + " threads";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void print_table(const std::vector<fm::EvalRecord>& recs) {
  std::printf("%-22s %-6s %-28s %-11s %10s %10s %10s %9s %9s %9s %8s %8s\n", "dataset", "causal",
              "scheme", "reference", "rmse", "max_abs", "rel_rmse", "cosine", "x bf16", "x bf16",
              "time s", "cpu s");
  std::printf("%-22s %-6s %-28s %-11s %10s %10s %10s %9s %9s %9s %8s %8s\n", "", "", "", "", "", "",
              "", "", "(rmse)", "(max)", "", "");
  for (const fm::EvalRecord& r : recs) {
    auto ratio = [](double x) {
      char b[32];
      if (x < 0) std::snprintf(b, sizeof b, "-");
      else std::snprintf(b, sizeof b, "%.2f", x);
      return std::string(b);
    };
    std::printf("%-22s %-6s %-28s %-11s %10.3e %10.3e %10.3e %9.6f %9s %9s %8.2f %8.2f\n",
                r.dataset.c_str(), r.causal ? "yes" : "no", r.scheme.c_str(), r.reference.c_str(),
                r.err.rmse, r.err.max_abs, r.err.rel_rmse, r.err.cosine, ratio(r.rmse_ratio).c_str(),
                ratio(r.max_ratio).c_str(), r.seconds, r.cpu_seconds);
  }
}

nlohmann::json to_json(const fm::EvalRecord& r, const nlohmann::json& run) {
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"dataset", r.dataset}, {"causal", r.causal}, {"scheme", r.scheme},
      {"reference", r.reference}, {"rmse", num(r.err.rmse)}, {"max_abs", num(r.err.max_abs)},
      {"rel_rmse", num(r.err.rel_rmse)}, {"cosine", num(r.err.cosine)},
      {"max_at", {r.err.max_at[0], r.err.max_at[1], r.err.max_at[2], r.err.max_at[3]}},
      {"finite", r.err.finite}, {"rmse_ratio", r.rmse_ratio < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.rmse_ratio)},
      {"max_ratio", r.max_ratio < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.max_ratio)},
      {"seconds", r.seconds}, {"cpu_seconds", r.cpu_seconds},
      {"reference_seconds", r.reference_seconds}, {"batch", r.batch}, {"seqlen", r.seqlen}, {"heads", r.heads},
      {"heads_kv", r.heads_kv}, {"head_dim", r.head_dim}};
  if (r.lse_max_abs >= 0) j["lse_max_abs"] = r.lse_max_abs;
  for (auto it = run.begin(); it != run.end(); ++it) j[it.key()] = it.value();
  return j;
}

struct Args {
  std::vector<std::string> synthetic, data, schemes;
  int seqlen = 2048, heads = 1, heads_kv = 0, batch = 1, head_dim = 128, heads_subset = 0;
  int batches = 0, threads = 0;
  uint64_t seed = 1;
  std::string mask = "none", json;
  bool kernel_only = true, kernel_only_fp64 = false, quiet = false, h200 = false, list = false;
  float softmax_scale = 0.0f;
};

// A bad argument: exit status 2 with the message (std::invalid_argument, which the model's own
// argument checks throw too, maps to the same).
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The whole text as an integer in [lo, hi], or a UsageError naming the option.
long long parse_int(const std::string& opt, const std::string& text, long long lo, long long hi) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (ec == std::errc::invalid_argument || ptr != end || text.empty()) {
    throw UsageError(opt + " needs an integer in " + range + ", got '" + text + "'");
  }
  if (ec == std::errc::result_out_of_range || v < lo || v > hi) {
    throw UsageError(opt + " must be in " + range + ", got " + text);
  }
  return v;
}

uint64_t parse_seed(const std::string& text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty()) {
    throw UsageError("--seed needs an integer in [0, 2^64 - 1], got '" + text + "'");
  }
  return v;
}

float parse_positive_float(const std::string& opt, const std::string& text) {
  float v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty() || !std::isfinite(v) || v <= 0) {
    throw UsageError(opt + " needs a finite number > 0, got '" + text + "'");
  }
  return v;
}

// Limits: a dataset the model can hold (each of q, k, v under 2^31 elements) and the shapes the
// model emulates (a power-of-two head dim: the Hadamard rotation needs one).
constexpr long long kMaxSeqlen = 1 << 20, kMaxHeads = 1024, kMaxBatch = 1 << 16;
constexpr long long kMaxElements = (1LL << 31) - 1;

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(k + " needs a value");
      return argv[++i];
    };
    auto count = [&](long long lo, long long hi) { return static_cast<int>(parse_int(k, val(), lo, hi)); };
    if (k == "--synthetic") a.synthetic = split(val(), ',');
    else if (k == "--data") a.data = split(val(), ',');
    else if (k == "--scheme" || k == "--schemes") a.schemes = split(val(), ',');
    else if (k == "--seqlen") a.seqlen = count(1, kMaxSeqlen);
    else if (k == "--heads") a.heads = count(1, kMaxHeads);
    else if (k == "--heads-kv") a.heads_kv = count(1, kMaxHeads);
    else if (k == "--batch") a.batch = count(1, kMaxBatch);
    else if (k == "--head-dim") a.head_dim = count(16, 256);
    else if (k == "--seed") a.seed = parse_seed(val());
    else if (k == "--causal") a.mask = "causal";
    else if (k == "--mask") a.mask = val();
    else if (k == "--heads-subset") a.heads_subset = count(1, kMaxHeads);
    else if (k == "--batches") a.batches = count(1, kMaxBatch);
    else if (k == "--json") a.json = val();
    else if (k == "--no-kernel-only") a.kernel_only = false;
    else if (k == "--kernel-only-fp64") a.kernel_only_fp64 = true;
    else if (k == "--softmax-scale") a.softmax_scale = parse_positive_float(k, val());
    else if (k == "--threads") a.threads = count(1, 4096);
    else if (k == "--quiet") a.quiet = true;
    else if (k == "--h200-table") a.h200 = true;
    else if (k == "--list-schemes") a.list = true;
    else if (k == "-h" || k == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      throw UsageError("unknown argument '" + k + "'");
    }
  }
  if (a.mask != "none" && a.mask != "causal" && a.mask != "both") {
    throw UsageError("--mask must be none, causal or both, got '" + a.mask + "'");
  }
  if ((a.head_dim & (a.head_dim - 1)) != 0) {
    throw UsageError("--head-dim must be a power of two (16 ... 256), got " + std::to_string(a.head_dim));
  }
  const int heads_kv = a.heads_kv > 0 ? a.heads_kv : a.heads;
  if (a.heads % heads_kv != 0) {
    throw UsageError("--heads-kv " + std::to_string(heads_kv) + " must divide --heads " +
                     std::to_string(a.heads));
  }
  if (!a.synthetic.empty()) {
    if (a.heads_subset > 0 && a.heads_subset < a.heads && a.heads % a.heads_subset != 0) {
      throw UsageError("--heads-subset " + std::to_string(a.heads_subset) + " must divide --heads " +
                       std::to_string(a.heads));
    }
    if (static_cast<long long>(a.batch) * a.seqlen * a.heads * a.head_dim > kMaxElements) {
      throw UsageError("--batch x --seqlen x --heads x --head-dim must stay under 2^31 elements");
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    if (a.threads > 0) omp_set_num_threads(a.threads);
    if (a.list) {
      std::fputs(fm::scheme_help().c_str(), stdout);
      return 0;
    }
    std::string command;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
    const nlohmann::json run = {{"command", command}, {"commit", git_commit()},
                                {"machine", machine()}, {"date", utc_now()}};
    if (a.h200) {
      const int heads = a.heads_subset > 0 ? a.heads_subset : fm::kH200Heads;
      const int batches = a.batches > 0 ? a.batches : fm::kH200Batch;
      const auto rows = fm::reproduce_h200_table(heads, batches, a.seed, !a.quiet);
      std::printf("H200 figures (b=2, s=8192, h=32, d=128) vs the model on %d head(s) x %d batch "
                  "entr%s, seed %llu:\n%s", heads, batches, batches == 1 ? "y" : "ies",
                  static_cast<unsigned long long>(a.seed), fm::format_h200_table(rows).c_str());
      bool ok = true;
      for (const auto& r : rows) ok = ok && r.within();
      if (!a.json.empty()) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& r : rows) {
          nlohmann::json j = {{"dataset", r.h200.dataset}, {"causal", r.h200.causal},
                              {"scheme", r.h200.scheme}, {"reference", "end_to_end"},
                              {"rel_rmse", r.model_rel_rmse}, {"max_abs", r.model_max_abs},
                              {"h200_method", r.h200.method}, {"h200_rel_rmse", r.h200.rel_rmse},
                              {"ratio_to_h200", r.ratio()}, {"within_tolerance", r.within()},
                              {"heads", heads}, {"batch", batches}, {"seqlen", fm::kH200Seqlen}};
          for (auto it = run.begin(); it != run.end(); ++it) j[it.key()] = it.value();
          out.push_back(j);
        }
        std::ofstream(a.json) << out.dump(1) << "\n";
      }
      return ok ? 0 : 1;
    }
    if (a.schemes.empty()) throw UsageError("--scheme is required");
    if (a.synthetic.empty() == a.data.empty()) {
      throw UsageError("give exactly one of --synthetic and --data");
    }
    std::vector<fm::Scheme> schemes;
    for (const std::string& s : a.schemes) schemes.push_back(fm::scheme_by_name(s));
    std::vector<bool> masks;
    if (a.mask != "causal") masks.push_back(false);
    if (a.mask != "none") masks.push_back(true);

    fm::EvalOptions opt;
    opt.kernel_only = a.kernel_only;
    opt.kernel_only_fp64 = a.kernel_only_fp64;
    opt.softmax_scale = a.softmax_scale;
    opt.verbose = !a.quiet;
    std::vector<fm::EvalRecord> all;
    auto run_dataset = [&](const fm::Dataset& d) {
      if (!a.quiet) {
        std::fprintf(stderr, "[eval] %s: q (%d, %d, %d, %d), k/v (%d, %d, %d, %d)\n", d.name.c_str(),
                     d.q.b, d.q.s, d.q.h, d.q.d, d.k.b, d.k.s, d.k.h, d.k.d);
      }
      for (bool causal : masks) {
        const auto recs = fm::evaluate(d, causal, schemes, opt);
        all.insert(all.end(), recs.begin(), recs.end());
      }
    };
    for (const std::string& kind : a.synthetic) {
      const int hk = a.heads_kv > 0 ? a.heads_kv : a.heads;
      run_dataset(fm::make_synthetic(kind, a.batch, a.seqlen, a.heads, hk, a.head_dim, a.seed,
                                     a.heads_subset > 0 ? fm::head_subset(a.heads, a.heads_subset)
                                                        : std::vector<int>{}));
    }
    for (const std::string& path : a.data) run_dataset(fm::load_dataset(path, a.heads_subset, a.batches));
    print_table(all);
    if (!a.json.empty()) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : all) out.push_back(to_json(r, run));
      std::ofstream f(a.json);
      if (!f) throw std::runtime_error("cannot write " + a.json);
      f << out.dump(1) << "\n";
      if (!a.quiet) std::fprintf(stderr, "[eval] wrote %zu records to %s\n", all.size(), a.json.c_str());
    }
    return 0;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "fp8attn-eval: %s\n(fp8attn-eval --help lists the options)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp8attn-eval: %s\n", e.what());
    return 1;
  }
}
