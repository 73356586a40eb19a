"""Times, in one process at the seed shape (b=2, s=8192, h=32/32, default options), median of 100
runs after warm-up, the calls and probe knobs of CONFIGS (at 3d2df5b: K's rows paired; at 9fe9f8d:
Q's rows one after the other; at 6709c7a: 4 CTAs per SM; at fa41305:
the statistics pass by
bulk copies; at 83dca51: the rotated rows' sign
masks; at b88eecb: the statistics pass's L2 prefetch; at cb2e8d6: Q's tiles inside the K/V launch;
each knob removed after its probe).
Each variant is timed twice, interleaved (drift check). Prints one line per timing and writes
JSON to argv[2].
Issue 17: every call also with centre=sample (FP8ATTN_CENTRE_SAMPLE, the one-pass pre-pass:
names *_sample), at the seed shape, at h_kv 8, and at 16 x 1k (SHAPES)."""
import json
import os
import statistics
import sys
from pathlib import Path

import torch

from prepass_setup import ROOT, SeedPrepass, bp  # puts bench/ on the path
import speed  # noqa: E402  (bench/speed.py)


SHAPES = [(2, 8192, 32, 32), (2, 8192, 32, 8), (16, 1024, 32, 32)]


def CONFIGS(dst, src, sp, o, o_sample):
    """(name, probe-knob environment, call) of each timing; names starting q_only / kv_only
    count only that pass's bytes."""
    c = [("copy", {}, lambda: dst.copy_(src))]
    for suffix, opt in (("", o), ("_sample", o_sample)):
        c += [(f"qkv{suffix}", {}, lambda opt=opt: sp.qkv(opt)),
              (f"split{suffix}", {}, lambda opt=opt: sp.split(opt)),
              (f"q_only{suffix}", {}, lambda opt=opt: sp.q_only(opt)),
              (f"kv_only{suffix}", {}, lambda opt=opt: sp.kv_only(opt))]
    return c


def main() -> None:
    out = {"commit": open(ROOT / ".carry" / "COMMIT").read().strip(),
           "gpu": torch.cuda.get_device_name(), "runs": 100, "timings": []}
    for shape in SHAPES:
        time_shape(sys.argv[1], shape, out)
        Path(sys.argv[2]).write_text(json.dumps(out, indent=1))


def time_shape(lib_path, shape, out) -> None:
    sp = SeedPrepass(lib_path, *shape)
    b, s, h, h_kv = sp.b, sp.s, sp.h, sp.h_kv
    q, k, v = sp.q, sp.k, sp.v
    o = sp.options()
    o_sample = sp.options(centre=1)
    moved, _ = bp._prepass_bytes(b, s, s, h, h_kv, o)
    src = torch.cat([q.reshape(-1), k.reshape(-1), v.reshape(-1)])
    dst = torch.empty_like(src)
    print(f"b={b} s={s} h={h}/{h_kv}")
    for rep in range(2):
        for name, env, fn in CONFIGS(dst, src, sp, o, o_sample):
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
            out["timings"].append({"name": name, "rep": rep, "ms_median": ms, "gbps": gbps,
                                   "b": b, "s": s, "h": h, "h_kv": h_kv,
                                   "bytes_moved_mean": moved})
            print(f"{name:<20} rep {rep}: {ms * 1e3:7.1f} us  {gbps:7.0f} GB/s")


if __name__ == "__main__":
    main()
