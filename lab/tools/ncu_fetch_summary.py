#!/usr/bin/env python3
"""The table of lab/probes/ncu_fetch.sh's CSVs (Nsight Compute raw page, WarpStateStats and
SpeedOfLight): per build and shape, the kernel's duration and its warps' stall cycles per issued
instruction by reason (smsp__average_warps_issue_stalled_*_per_issue_active), the reasons that
differ most between the builds first.
  python3 lab/tools/ncu_fetch_summary.py ncu-fetch.tar.gz
"""
import csv
import io
import re
import sys
import tarfile

STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")


def rows(text):
    """{metric: value} of the last kernel in a raw-page CSV."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    recs = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(recs) < 3:
        return {}
    head, last = recs[0], recs[-1]
    out = {}
    for k, v in zip(head, last):
        try:
            out[k] = float(v.replace(",", ""))
        except ValueError:
            pass
    return out


def main():
    data = {}
    with tarfile.open(sys.argv[1]) as tf:
        for m in tf.getmembers():
            if m.name.endswith(".csv"):
                data[m.name.split("/")[-1][:-4]] = rows(tf.extractfile(m).read().decode(errors="replace"))
    print(f"# python3 lab/tools/ncu_fetch_summary.py {sys.argv[1]}")
    tags = sorted(data)
    shapes = sorted({t.split("-", 1)[1] for t in tags})
    for shape in shapes:
        cols = [t for t in tags if t.endswith(shape)]
        print(f"\n{shape}: " + "  ".join(cols))
        dur = [data[c].get("gpu__time_duration.sum") for c in cols]
        print(f"  {'duration (ns)':34s}" + "".join(f"{d:>14.0f}" if d else f"{'-':>14s}" for d in dur))
        reasons = sorted({STALL.match(k).group(1) for c in cols for k in data[c] if STALL.match(k)})
        vals = {r: [data[c].get(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio") for c in cols]
                for r in reasons}
        spread = lambda r: max(v or 0 for v in vals[r]) - min(v or 0 for v in vals[r])  # noqa: E731
        for r in sorted(reasons, key=spread, reverse=True):
            print(f"  {r:34s}" + "".join(f"{v:>14.3f}" if v is not None else f"{'-':>14s}" for v in vals[r]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
