"""Issue 17, after lab/probes/e2e_split.py: two questions about the BF16-in call, one process.

1. Context. Inside the end-to-end call the fused K/V pass took about twice what Nsight Compute
   measured for it alone (lab/results/ncu/2026-11-30-h200-cb2e8d6-prepass-summary.txt). A
   torch.profiler trace gives each pre-pass kernel's median duration when the pre-pass runs
   (a) back to back with itself, (b) right after the attention kernel, (c) after an idle GPU
   (synchronized first), and (d) inside the end-to-end call back to back.
2. The kernel's own share. On the pre-pass's inputs the kernel ran 5-7% slower than on per-head
   inputs at 16 x 1k (1% at 8k). Ablations of its parameters, timing only (outputs wrong):
   no o_bias, no lse_bias, V descale broadcast (vd_stride_d 0), Q descale per head
   (qd_stride_s 0), all four; alternated call by call with the per-head kernel.

usage: python3 lab/probes/e2e_context.py LIB OUT.json [COMMIT_FILE]
"""
import json
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "lab" / "probes"))
import fp8attn_calls as fc  # noqa: E402
import speed  # noqa: E402
from e2e_split import probe_args, random_qkv  # noqa: E402

SHAPES = [(16, 1024, 32, 32, True), (16, 1024, 32, 32, False), (2, 8192, 32, 32, True)]
RUNS = 100
KERNELS = ("kv_group_stats", "kv_finalize", "quantize_kv", "quantize_q", "attention_fwd",
           "FlashAttn")


def trace(calls, n=10, sync_each=False):
    """Median duration (us) per kernel name over n rounds of `calls` (each a callable)."""
    from torch.profiler import ProfilerActivity, profile
    for fn in calls:
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            for fn in calls:
                if sync_each:
                    torch.cuda.synchronize()
                fn()
        torch.cuda.synchronize()
    rows = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = next((k for k in KERNELS if k in e.name), e.name[:40])
        rows.setdefault(name, []).append(e.time_range.end - e.time_range.start)
    return {k: round(statistics.median(v), 1) for k, v in rows.items()}


def ablations(lib, pp, causal):
    """name -> runner of the kernel on pp's outputs with some parameters dropped."""
    b, sq, sk, h, h_kv, d = pp.shape
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
    base = pp._params(causal, "fp8attn", out, lse)
    edits = {"kpp": {}, "no_obias": {"o_bias": None}, "no_lsebias": {"lse_bias": None},
             "vd_head": {"vd_stride_d": 0}, "qd_head": {"qd_stride_s": 0}}
    edits["all4"] = {k: v for e in list(edits.values()) for k, v in e.items()}
    runs = {}
    for name, e in edits.items():
        p = type(base).from_buffer_copy(base)
        for f, v in e.items():
            setattr(p, f, v)
        runs[name] = fc.params_runner(lib, p, (p, out, lse, pp))
    return runs


def main():
    lib, out_path, res = probe_args(RUNS)
    for b, s, h, h_kv, causal in SHAPES:
        q, k, v = random_qkv(b, s, h, h_kv)
        e2e = fc.end_to_end_runner(lib, q, k, v, causal)
        pp = fc.prepass(lib, q, k, v)
        pre = pp.requantize
        qz = fc.quantize_per_head(q, k, v)
        kph = fc.kernel_runner(lib, qz, causal, "fp8attn")
        row = {"b": b, "s": s, "h": h, "h_kv": h_kv, "causal": causal}
        row["trace"] = {"pre_back_to_back": trace([pre]),
                        "pre_after_kernel": trace([kph, pre]),
                        "pre_after_idle": trace([pre], sync_each=True),
                        "e2e_back_to_back": trace([e2e])}
        runs = ablations(lib, pp, causal)
        runs["kph"] = kph
        names = list(runs)
        times = speed.time_ms_alternating([runs[n] for n in names], warmup=5, runs=RUNS)
        f = speed.Shape(b, s, s, h, h_kv, 128, causal).flops()
        row["ms_median"] = {n: statistics.median(t) for n, t in zip(names, times)}
        row["tflops_median"] = {n: f / (m * 1e-3) / 1e12 for n, m in row["ms_median"].items()}
        ms = row["ms_median"]
        print(f"b{b} s{s} h{h}/{h_kv} causal={int(causal)}: " +
              " ".join(f"{n} {ms[n] * 1e3:.1f}us ({ms[n] / ms['kph']:.3f})" for n in names), flush=True)
        for ctx, t in row["trace"].items():
            print(f"  {ctx}: " + ", ".join(f"{k} {x}" for k, x in t.items()), flush=True)
        res["rows"].append(row)
        del e2e, pp, pre, qz, kph, runs, q, k, v
        torch.cuda.empty_cache()
    out_path.write_text(json.dumps(res, indent=1))
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
