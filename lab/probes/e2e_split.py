"""Issue 17: where the BF16-in call's time goes. The end-to-end call (fp8attn_attention) took
0.1-0.2 ms more than the pre-pass timed alone plus the kernel timed alone (results/e2e-bound-*.txt,
last column, against the `prepass` records of the 2026-11-30 runs); this splits it, one process:

  e2e      fp8attn_attention (pre-pass with the default options + kernel; one C call)
  split    fp8attn_quantize_qkv, then fp8attn_attention_fwd on its outputs (two C calls)
  pre      fp8attn_quantize_qkv alone
  kpp      the kernel alone on the pre-pass's outputs (per-token Q scales, biases)
  kph      the kernel alone on per-(batch, kv head) inputs (the harness's fp8attn)
  fa3_bf16 FlashAttention-3 in BF16 (when importable), the issue's peer

all alternated call by call (speed.time_ms_alternating, CUDA events per call), then:
  host_us  the host time of enqueueing one call of each (perf_counter over 50 calls, the queue
           kept non-empty by a long GEMM first);
  kernels  a torch.profiler trace of 10 e2e calls: each kernel's median duration and the median
           idle gap before it (GPU time between the previous kernel's end and its start).

usage: python3 lab/probes/e2e_split.py LIB OUT.json [COMMIT_FILE]   (FA3 on PYTHONPATH optional)
"""
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import fp8attn_calls as fc  # noqa: E402
import methods  # noqa: E402
import speed  # noqa: E402

SHAPES = [(16, 1024, 32, 32, True), (16, 1024, 32, 32, False), (2, 8192, 32, 32, True),
          (2, 8192, 32, 32, False)]
RUNS = 100


def kernel_on_prepass(lib, pp, causal):
    b, sq, sk, h, h_kv, d = pp.shape
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
    p = pp._params(causal, "fp8attn", out, lse)
    return fc.params_runner(lib, p, (p, out, lse, pp))


def host_us(fn, gemm, n=50):
    """Host microseconds per enqueue, with the GPU busy (a queue of GEMMs ahead)."""
    for _ in range(20):
        gemm()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    return dt


def kernel_trace(fn, other, n=10):
    """Per kernel name of fn's calls: median duration and median idle gap before it (us)."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn(); other()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            other()
            torch.cuda.synchronize()
            fn()
            torch.cuda.synchronize()
    evs = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                  and "memcpy" not in e.name.lower()),
                 key=lambda e: e.time_range.start)
    # Every kernel of the trace, fn's and the peer's (told apart by name); the gap before the
    # first kernel after a synchronization is the host's launch latency, not the call's own.
    rows = {}
    prev_end = None
    for e in evs:
        dur = e.time_range.end - e.time_range.start
        gap = None if prev_end is None else e.time_range.start - prev_end
        prev_end = e.time_range.end
        rows.setdefault(e.name[:90], {"dur": [], "gap": []})
        rows[e.name[:90]]["dur"].append(dur)
        if gap is not None:
            rows[e.name[:90]]["gap"].append(gap)
    return {k: {"n": len(v["dur"]), "dur_us": statistics.median(v["dur"]),
                "gap_us": statistics.median(v["gap"]) if v["gap"] else None}
            for k, v in rows.items()}


def probe_args(runs):
    """LIB OUT.json [COMMIT_FILE] from argv: (the library, the output path, the results dict's
    header: commit, GPU, runs, date, command, an empty rows list). Seeds torch (the inputs of
    every probe that shares this are the same draws)."""
    lib = fc.load(sys.argv[1])
    commit = Path(sys.argv[3]).read_text().strip() if len(sys.argv) > 3 else "unknown"
    res = {"commit": commit, "gpu": torch.cuda.get_device_name(), "runs": runs,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "command": "python3 " + " ".join(sys.argv), "rows": []}
    torch.manual_seed(0)
    return lib, Path(sys.argv[2]), res


def random_qkv(b, s, h, h_kv):
    """Gaussian BF16 q (b, s, h, 128), k and v (b, s, h_kv, 128) on the GPU."""
    q = torch.randn(b, s, h, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, s, h_kv, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, s, h_kv, 128, device="cuda", dtype=torch.bfloat16)
    return q, k, v


def main():
    lib, out_path, res = probe_args(RUNS)
    fa3 = methods.load_fa3()
    res["fa3"] = None if not isinstance(fa3, str) else fa3
    for b, s, h, h_kv, causal in SHAPES:
        q, k, v = random_qkv(b, s, h, h_kv)
        run = {"e2e": fc.end_to_end_runner(lib, q, k, v, causal)}
        pp = fc.prepass(lib, q, k, v)
        run["pre"] = pp.requantize
        run["kpp"] = kernel_on_prepass(lib, pp, causal)

        def split(pre=run["pre"], kpp=run["kpp"]):
            pre()
            kpp()
        run["split"] = split
        qz = fc.quantize_per_head(q, k, v)
        run["kph"] = fc.kernel_runner(lib, qz, causal, "fp8attn")
        if not isinstance(fa3, str):
            run["fa3_bf16"] = methods._fa3_bf16(fa3, q, k, v, causal)
        torch.cuda.synchronize()
        names = list(run)
        times = speed.time_ms_alternating([run[n] for n in names], warmup=5, runs=RUNS)
        f = speed.Shape(b, s, s, h, h_kv, 128, causal).flops()
        row = {"b": b, "s": s, "h": h, "h_kv": h_kv, "causal": causal, "ms_median": {},
               "tflops_median": {}}
        for n, t in zip(names, times):
            med = statistics.median(t)
            row["ms_median"][n] = med
            row["tflops_median"][n] = f / (med * 1e-3) / 1e12
        gemm = methods.qkv_gemm(speed.Shape(b, s, s, h, h_kv, 128, causal))
        row["host_us"] = {n: host_us(run[n], gemm) for n in ("e2e", "split", "kph")}
        other = run.get("fa3_bf16", run["kph"])
        row["e2e_kernels"] = kernel_trace(run["e2e"], other)
        ms = row["ms_median"]
        print(f"b{b} s{s} h{h}/{h_kv} causal={int(causal)}: " +
              " ".join(f"{n} {ms[n] * 1e3:.0f}us" for n in names) +
              f" | e2e - (pre + kpp) {(ms['e2e'] - ms['pre'] - ms['kpp']) * 1e3:.0f}us"
              f" | kpp/kph {ms['kpp'] / ms['kph']:.3f}", flush=True)
        print("  host us per enqueue: " + " ".join(f"{n} {x:.1f}" for n, x in row["host_us"].items()))
        for name, r in row["e2e_kernels"].items():
            print(f"  {r['n']:3d} x {r['dur_us']:8.1f} us, gap before {r['gap_us']}: {name}")
        res["rows"].append(row)
        del run, pp, qz, q, k, v
        torch.cuda.empty_cache()
    out_path.write_text(json.dumps(res, indent=1))
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
