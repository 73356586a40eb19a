"""Times, in one process at the seed shape (b=2, s=8192, h=32/32, default options), median of 100
runs after warm-up, the calls and probe knobs of CONFIGS (at 3d2df5b: K's rows paired; at 9fe9f8d:
Q's rows one after the other; at 6709c7a: 4 CTAs per SM; at fa41305:
the statistics pass by
bulk copies; at 83dca51: the rotated rows' sign
masks; at b88eecb: the statistics pass's L2 prefetch; at cb2e8d6: Q's tiles inside the K/V launch;
each knob removed after its probe).
Each variant is timed twice, interleaved (drift check). Prints one line per timing and writes
JSON to argv[2]."""
import json
import os
import statistics
import sys
from pathlib import Path

import torch

from prepass_setup import ROOT, SeedPrepass, bp  # puts bench/ on the path
import speed  # noqa: E402  (bench/speed.py)


def CONFIGS(dst, src, qkv, split, q_only, kv_only):
    """(name, probe-knob environment, call) of each timing; names starting q_only / kv_only
    count only that pass's bytes."""
    return (("copy", {}, lambda: dst.copy_(src)), ("qkv", {}, qkv), ("split", {}, split),
            ("q_only", {}, q_only), ("kv_only", {}, kv_only))


def main() -> None:
    sp = SeedPrepass(sys.argv[1])
    b, s, h, h_kv = sp.b, sp.s, sp.h, sp.h_kv
    q, k, v = sp.q, sp.k, sp.v
    o = sp.options()
    moved, _ = bp._prepass_bytes(b, s, s, h, h_kv, o)

    def qkv():
        sp.qkv(o)

    def kv_only():
        sp.kv_only(o)

    def q_only():
        sp.q_only(o)

    def split():
        sp.split(o)

    src = torch.cat([q.reshape(-1), k.reshape(-1), v.reshape(-1)])
    dst = torch.empty_like(src)
    out = {"commit": open(ROOT / ".carry" / "COMMIT").read().strip(),
           "gpu": torch.cuda.get_device_name(), "bytes_moved": moved, "runs": 100, "timings": []}
    for rep in range(2):
        for name, env, fn in CONFIGS(dst, src, qkv, split, q_only, kv_only):
            os.environ.update(env)  # probe knobs, read by the library at every call
            try:
                ms = statistics.median(speed.time_ms(fn, 10, 100))
            finally:
                for key in env:
                    del os.environ[key]
            q_bytes = b * s * h * 128 * 3 + 8 * b * h * s
            nbytes = (2 * src.numel() * 2 if name == "copy" else q_bytes if name.startswith("q_only")
                      else moved - q_bytes if name.startswith("kv_only") else moved)
            gbps = nbytes / (ms * 1e-3) / 1e9
            out["timings"].append({"name": name, "rep": rep, "ms_median": ms, "gbps": gbps})
            print(f"{name:<20} rep {rep}: {ms * 1e3:7.1f} us  {gbps:7.0f} GB/s")
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
