#!/usr/bin/env python3
"""The table of lab/probes/ncu_fetch.sh's CSVs (Nsight Compute raw page, WarpStateStats and
SpeedOfLight): per build and shape, the kernel's duration and its warps' stall cycles per issued
instruction by reason (smsp__average_warps_issue_stalled_*_per_issue_active), the reasons that
differ most between the builds first.
  python3 lab/tools/ncu_fetch_summary.py ncu-fetch.tar.gz
--lines (SOURCE=1 archives: the source page's per-SASS-line samples): per build, the kernel's
samples, the share on once-per-tile lines (executed at most 1.5x as often as a store of O: the
tile boundary, producer waits included), and for the stall reasons lg, long_sb, mio and barrier
their samples by opcode.
  python3 lab/tools/ncu_fetch_summary.py --lines ncu-fetch.tar.gz
When the CSVs hold MemoryWorkloadAnalysis too (lab/probes/waves_ncu.sh), the memory metrics of
MEMORY (L2 hit rate, its tag, sector and data-bank throughputs, the crossbar, DRAM, the SM clock)
follow each shape's stall table.
"""
import collections
import csv
import io
import os
import re
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_stall_reasons  # noqa: E402  (the source page's parsing)

MEMORY = ("gpc__cycles_elapsed.avg.per_second", "lts__t_sector_hit_rate.pct",
          "lts__throughput.avg.pct_of_peak_sustained_elapsed",
          "lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed",
          "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
          "lts__d_sectors.avg.pct_of_peak_sustained_elapsed",
          "l1tex__m_xbar2l1tex_read_sectors.avg.pct_of_peak_sustained_elapsed",
          "l1tex__m_l1tex2xbar_req_cycles_active.avg.pct_of_peak_sustained_elapsed",
          "dram__bytes.sum.per_second")
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


def source_lines(text):
    """(SASS, samples, executions, {stall column: samples}) per line of a source page's busiest
    kernel (lab/tools/ncu_stall_reasons.py's parsing)."""
    _, head, recs = ncu_stall_reasons.busiest(ncu_stall_reasons.sections_of_text(text))
    stalls = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
    num = ncu_stall_reasons.num
    return [(r.get("Source", "").strip(), num(r.get("Warp Stall Sampling (All Samples)", 0)),
             num(r.get("Instructions Executed", 0)), {k: num(r.get(k, 0)) for k in stalls}) for r in recs]


def opcode(sass):
    parts = sass.split()
    if not parts:
        return ""
    return parts[1] if parts[0].startswith("@") and len(parts) > 1 else parts[0]


def lines_main(path):
    print(f"# python3 lab/tools/ncu_fetch_summary.py --lines {path}")
    with tarfile.open(path) as tf:
        for m in sorted(tf.getmembers(), key=lambda m: m.name):
            if not m.name.endswith(".csv"):
                continue
            rows = source_lines(tf.extractfile(m).read().decode(errors="replace"))
            total = sum(s for _, s, _, _ in rows)
            stores = [e for t, _, e, _ in rows if opcode(t).startswith("STG") and e > 0]
            per_tile = sum(s for _, s, e, _ in rows if stores and 0 < e <= 1.5 * max(stores))
            print(f"\n{m.name.split('/')[-1][:-4]}: {total:.0f} samples, {per_tile / total:.3f} on once-per-tile lines")
            for k in ("stall_lg", "stall_long_sb", "stall_mio", "stall_barrier"):
                by = collections.Counter()
                for t, _, _, st in rows:
                    by[opcode(t)] += st.get(k, 0)
                top = ", ".join(f"{op} {v:.0f}" for op, v in by.most_common(5) if v)
                print(f"  {k:14s} {sum(by.values()):7.0f}: {top}")
    return 0


def main():
    if sys.argv[1] == "--lines":
        return lines_main(sys.argv[2])
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
        for m in MEMORY:
            if any(m in data[c] for c in cols):
                print(f"  {m[:34]:34s}" + "".join(f"{data[c][m]:>14.4g}" if m in data[c] else f"{'-':>14s}"
                                                  for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
