"""Issue 17 item 2: where the rope + quantize pre-pass's extra time goes. The rope pair
(fp8attn_attention_rope) runs 0.95-0.98 of the plain end-to-end call at the long rows
(results/2026-12-04-h200-90dfa200ed2d.md, "rope pair / plain"): its pre-pass takes about twice the
plain one's time, and the ropefast branch showed the table traffic is not the cause
(lab/perf-log.md, third session). One process, non-causal rows of SHAPES:

  plain   fp8attn_attention on BF16 q, k, v (pre-pass + kernel, one C call)
  rope    fp8attn_attention_rope on the same tensors taken as pre-rotary (Llama tables)
  rope16  fp8attn_rope_bf16 on q, then on k (the library's BF16 rotary, in place)
  copy    a device-to-device copy of q, k, v (the bandwidth yardstick)

alternated call by call (speed.time_ms_alternating, median of RUNS), then a torch.profiler trace
of 10 calls of plain and of rope: each kernel's median duration (lab/probes/e2e_split.py's
kernel_trace), so the pre-pass's kernels (statistics, finalize, K/V pass, Q pass) of the two
calls stand side by side.

usage: python3 lab/probes/rope_split.py LIB OUT.json [COMMIT_FILE]
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
from e2e_split import kernel_trace, probe_args, random_qkv  # noqa: E402

SHAPES = [(1, 16384, 32, 32), (2, 8192, 32, 8), (2, 8192, 32, 32), (16, 1024, 32, 32)]
RUNS = 100


def main():
    lib, out_path, res = probe_args(RUNS)
    cos, sin = fc.rope_tables(16384)
    for b, s, h, h_kv in SHAPES:
        q, k, v = random_qkv(b, s, h, h_kv)
        src = torch.cat([q.flatten(), k.flatten(), v.flatten()])
        dst = torch.empty_like(src)
        q2, k2 = q.clone(), k.clone()
        run = {"plain": fc.end_to_end_runner(lib, q, k, v, False),
               "rope": fc.rope_pair_runner(lib, q, k, v, False, cos, sin)}
        rq, rk = fc.rope_bf16_runner(lib, q2, cos, sin), fc.rope_bf16_runner(lib, k2, cos, sin)

        def rope16(rq=rq, rk=rk):
            rq()
            rk()
        run["rope16"] = rope16
        run["copy"] = lambda dst=dst, src=src: dst.copy_(src)
        torch.cuda.synchronize()
        names = list(run)
        times = speed.time_ms_alternating([run[n] for n in names], warmup=5, runs=RUNS)
        row = {"b": b, "s": s, "h": h, "h_kv": h_kv, "causal": False,
               "ms_median": {n: statistics.median(t) for n, t in zip(names, times)},
               "bytes": {"qkv_bf16": 2 * (q.numel() + k.numel() + v.numel())}}
        row["kernels"] = {n: kernel_trace(run[n], run["copy"]) for n in ("plain", "rope")}
        ms = row["ms_median"]
        print(f"b{b} s{s} h{h}/{h_kv}: " + " ".join(f"{n} {ms[n] * 1e3:.0f}us" for n in names) +
              f" | rope - plain {(ms['rope'] - ms['plain']) * 1e3:.0f}us"
              f" | copy {row['bytes']['qkv_bf16'] * 2 / ms['copy'] / 1e6:.0f} GB/s", flush=True)
        for n in ("plain", "rope"):
            for name, r in row["kernels"][n].items():
                if "copy" in name.lower() or "elementwise" in name.lower() or "Memcpy" in name:
                    continue
                print(f"  {n:5s} {r['n']:3d} x {r['dur_us']:8.1f} us, gap before {r['gap_us']}: {name}")
        res["rows"].append(row)
        del run, q, k, v, q2, k2, src, dst, rq, rk
        torch.cuda.empty_cache()
    out_path.write_text(json.dumps(res, indent=1))
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
