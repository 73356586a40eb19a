#!/usr/bin/env python3
"""Warp-stall reasons of attention kernels from Nsight Compute's per-SASS-line source page
(`ncu --section SourceCounters --page source --print-source sass --csv`): the stall_* columns
summed over the kernel's lines, as shares of its samples, side by side per kernel, then each
kernel's top lines by samples.
  python3 lab/tools/ncu_stall_reasons.py DIR TAG [TAG...]   (reads DIR/TAG*-source.csv)
"""
import csv
import io
import sys
from pathlib import Path


def sections(path):
    """(kernel name, header, rows) per "Kernel Name" block of a source-page CSV."""
    out, cur = [], None
    for line in Path(path).read_text(errors="replace").splitlines():
        if not line.startswith('"'):
            continue
        row = next(csv.reader(io.StringIO(line)))
        if row and row[0] == "Kernel Name":
            cur = [row[1] if len(row) > 1 else "?", None, []]
            out.append(cur)
        elif cur is not None and cur[1] is None:
            cur[1] = row
        elif cur is not None:
            cur[2].append(dict(zip(cur[1], row)))
    return out


def num(x):
    try:
        return float(str(x).replace(",", ""))
    except ValueError:
        return 0.0


def kernel_of(path):
    """The block with the most samples (the attention kernel when one launch was profiled)."""
    best = max(sections(path), key=lambda s: sum(num(r.get("# Samples", 0)) for r in s[2]))
    return best


def main():
    folder, tags = Path(sys.argv[1]), sys.argv[2:]
    kernels = {}
    for t in tags:
        files = sorted(folder.glob(f"{t}*-source.csv"))
        if not files:
            print(f"{t}: no source CSV in {folder}")
            continue
        kernels[t] = kernel_of(files[0])
    if not kernels:
        return 1
    reasons = sorted({c for k in kernels.values() for c in k[1] if c.startswith("stall_")})
    totals = {t: {c: sum(num(r.get(c, 0)) for r in k[2]) for c in reasons} for t, k in kernels.items()}
    samples = {t: sum(num(r.get("# Samples", 0)) for r in k[2]) for t, k in kernels.items()}
    insts = {t: sum(num(r.get("Instructions Executed", 0)) for r in k[2]) for t, k in kernels.items()}
    print("kernels: " + "; ".join(f"{t} = {k[0][:110]}" for t, k in kernels.items()))
    print(f"{'':38}" + "".join(f"{t:>14}" for t in kernels))
    print(f"{'samples':38}" + "".join(f"{samples[t]:>14.0f}" for t in kernels))
    print(f"{'instructions executed':38}" + "".join(f"{insts[t]:>14.0f}" for t in kernels))
    print("stall reason, share of the kernel's samples (%):")
    for c in sorted(reasons, key=lambda c: -max(totals[t][c] / max(samples[t], 1) for t in kernels)):
        shares = [100 * totals[t][c] / max(samples[t], 1) for t in kernels]
        if max(shares) >= 0.5:
            print(f"  {c:36}" + "".join(f"{s:>14.1f}" for s in shares))
    for t, k in kernels.items():
        print(f"\n{t}: top lines by samples (share %, address, SASS)")
        for r in sorted(k[2], key=lambda r: -num(r.get("# Samples", 0)))[:15]:
            print(f"  {100 * num(r.get('# Samples', 0)) / max(samples[t], 1):5.1f}  {r.get('Address', '')}  "
                  f"{r.get('Source', '')[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
