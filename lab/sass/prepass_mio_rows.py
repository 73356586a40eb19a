#!/usr/bin/env python3
"""MIO-class instructions per row of the default rotated Q and K row loops (full-tile loop: the
shortest rotated loop of the kernel), from lab/sass/prepass_counts.sh listings. Static counts:
every loop-body instruction once, per thread and per row (a loop iteration holds 2 rows), so a
path the kernel never takes is counted (the Q listings before the held constants carry the mean
path of K: 8 LDG.128 a row that Q never executes). Bytes per row through the SM's shared / L1 data
path: 16 per LDG.128 / LDS.128 lane, 4 per SHFL lane, 8 per STG.64 lane, 4 lanes a row.
Usage: prepass_mio_rows.py LISTING..."""
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from prepass_bw_predict import listing, rotated_loop  # noqa: E402

OPS = ["SHFL", "LDS", "LDG", "STG", "LDL", "STL", "LDC"]
KERNELS = {"Q": "quantize_q_kernelILb1ELNS0_4rows5ScaleE0E",
           "K": "quantize_kv_kernelILb1ELNS0_4rows5ScaleE2E"}


def main():
    print("# static SASS counts per thread per row (loop body / 2), lab/sass/prepass_mio_rows.py")
    print(f"{'listing':40s} {'pass':4s} " + " ".join(f"{o:>5s}" for o in OPS) + f" {'loop':>5s}")
    for path in sys.argv[1:]:
        ls, _ = listing(path)
        for part, kernel in KERNELS.items():
            name = next(k for k in ls if k.startswith(kernel))
            n, h = min(((n, h) for n, h in ls[name] if rotated_loop(h)), key=lambda c: c[0])
            print(f"{path:40s} {part:4s} " + " ".join(f"{h.get(o, 0) / 2:5.1f}" for o in OPS) +
                  f" {n / 2:5.0f}")


if __name__ == "__main__":
    main()
