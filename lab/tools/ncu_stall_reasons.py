#!/usr/bin/env python3
"""Warp-stall reasons of attention kernels from Nsight Compute's per-SASS-line source page
(`ncu --section SourceCounters --page source --print-source sass --csv`): the stall_* columns
summed over the kernel's lines, as shares of its samples, side by side per kernel; the key loop
(the address span of the lines executed as often as most MUFU.EX2 lines) with its MUFU.EX2 density
and its share of each kernel's 'mio' samples; the key loop's samples by instruction class (opcode
families, the wgmma waits apart) and main stall reasons, side by side; then each kernel's top lines
by samples.
  python3 lab/tools/ncu_stall_reasons.py DIR TAG [TAG...]   (reads DIR/TAG*-source.csv)
"""
import csv
import io
import re
import sys
from collections import Counter
from pathlib import Path


def sections(path):
    """(kernel name, header, rows) per "Kernel Name" block of a source-page CSV."""
    return sections_of_text(Path(path).read_text(errors="replace"))


def sections_of_text(text):
    """sections() of a source page's text (e.g. read out of an archive)."""
    out, cur = [], None
    for line in text.splitlines():
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
    return busiest(sections(path))


def busiest(secs):
    """Of sections(), the block with the most samples."""
    return max(secs, key=lambda s: sum(num(r.get("# Samples", 0)) for r in s[2]))


def loop_span(rows):
    """The key loop's lines: from the first to the last line executed as many times as most
    MUFU.EX2 lines (the per-block exponentials)."""
    rows = sorted((r for r in rows if r.get("Address")), key=lambda r: int(r["Address"], 16))
    counts = Counter(num(r.get("Instructions Executed", 0)) for r in rows
                     if "MUFU.EX2" in r.get("Source", "") and num(r.get("Instructions Executed", 0)) > 0)
    if not counts:
        return []
    hot = counts.most_common(1)[0][0]
    idx = [i for i, r in enumerate(rows) if num(r.get("Instructions Executed", 0)) == hot]
    return rows[min(idx):max(idx) + 1]


CLASSES = ("HGMMA", "QGMMA", "MUFU", "F2FP", "FMNMX", "FMUL", "FFMA", "FADD", "SHFL", "BAR", "SYNCS",
           "BRA", "LDL", "STL")
CLASS_REASONS = ("stall_wait", "stall_selected", "stall_dispatch", "stall_short_sb", "stall_long_sb",
                 "stall_mio", "stall_math", "stall_barrier")


def instruction_class(src):
    """An opcode family; the wgmma waits (WARPGROUP.DEPBAR) by their group count."""
    s = re.sub(r"^@!?U?P\w+\s+", "", src.strip())
    if s.startswith("WARPGROUP.DEPBAR"):
        return "DEPBAR " + s.split(",")[-1].strip()
    return next((c for c in CLASSES if s.startswith(c)), "other")


def loop_classes(kernels):
    """The key loop's samples per instruction class, and per class its main stall reasons."""
    per = {}
    for t, k in kernels.items():
        agg = {}
        for r in loop_span(k[2]):
            a = agg.setdefault(instruction_class(r.get("Source", "")), Counter())
            a["lines"] += 1
            a["samples"] += num(r.get("# Samples", 0))
            for c in CLASS_REASONS:
                a[c] += num(r.get(c, 0))
        per[t] = agg
    order = sorted({c for a in per.values() for c in a}, key=lambda c: -max(a.get(c, Counter())["samples"] for a in per.values()))
    short = [c.replace("stall_", "") for c in CLASS_REASONS]
    print("\nthe key loop's samples by instruction class (lines; samples; per stall reason: " + ", ".join(short) + "):")
    for c in order:
        for t, a in per.items():
            v = a.get(c, Counter())
            print(f"  {c:10} {t:26} {v['lines']:4.0f} {v['samples']:8.0f} " + " ".join(f"{v[r]:7.0f}" for r in CLASS_REASONS))


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
    print("\nthe key loop (lines executed as often as most MUFU.EX2 lines, first to last):")
    for t, k in kernels.items():
        loop = loop_span(k[2])
        src = [r.get("Source", "") for r in loop]
        mufu = sum("MUFU.EX2" in x for x in src)
        dense = max((sum("MUFU.EX2" in x for x in src[i:i + 32]) for i in range(max(1, len(src) - 31))), default=0)
        mio = sum(num(r.get("stall_mio", 0)) for r in loop)
        mio_mufu = sum(num(r.get("stall_mio", 0)) for r in loop if "MUFU" in r.get("Source", ""))
        samp = sum(num(r.get("# Samples", 0)) for r in loop)
        print(f"  {t}: {len(src)} instructions, {mufu} MUFU.EX2, densest 32-instruction window {dense}; "
              f"samples {samp:.0f} ({100 * samp / max(samples[t], 1):.1f}% of the kernel's); stall_mio "
              f"{100 * mio / max(samp, 1):.1f}% of the loop's samples, {100 * mio_mufu / max(mio, 1):.0f}% of it on MUFU lines")
    loop_classes(kernels)
    print("\nbarrier waits' re-tests (YIELD / SYNCS...TRYWAIT / NANOSLEEP lines, executed warp instructions):")
    for t, k in kernels.items():
        spin = sum(num(r.get("Instructions Executed", 0)) for r in k[2]
                   if re.search(r"\bYIELD\b|TRYWAIT|NANOSLEEP", r.get("Source", "")))
        print(f"  {t}: {spin:.0f} ({100 * spin / max(insts[t], 1):.1f}% of the kernel's executed instructions)")
    for t, k in kernels.items():
        print(f"\n{t}: top lines by samples (share %, address, SASS)")
        for r in sorted(k[2], key=lambda r: -num(r.get("# Samples", 0)))[:15]:
            print(f"  {100 * num(r.get('# Samples', 0)) / max(samples[t], 1):5.1f}  {r.get('Address', '')}  "
                  f"{r.get('Source', '')[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
