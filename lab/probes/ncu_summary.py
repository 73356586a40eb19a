#!/usr/bin/env python3
"""Side-by-side table of the ncu CSVs lab/probes/ncu_vs_fa3.sh writes (one column per file)."""
import csv
import sys
from pathlib import Path

KEYS = ["Duration", "Elapsed Cycles", "SM Frequency", "Compute (SM) Throughput", "Registers Per Thread",
        "Dynamic Shared Memory Per Block", "Grid Size", "Block Size", "Executed Ipc Active",
        "Issue Slots Busy", "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
        "Issued Warp Per Scheduler", "Warp Cycles Per Issued Instruction", "Executed Instructions", "Stall Long Scoreboard", "Stall Wait", "Stall Barrier", "Stall Math Pipe Throttle",
        "Avg. Executed Instructions Per Scheduler", "Memory Throughput", "L2 Hit Rate", "DRAM Throughput",
        "L1/TEX Hit Rate", "Mem Busy", "Max Bandwidth"]


def read(path):
    vals = {}
    try:
        rows = list(csv.reader(open(path)))
    except OSError:
        return vals
    head = None
    for r in rows:
        if "Metric Name" in r:
            head = r
            continue
        if head and len(r) >= 15:
            d = dict(zip(head, r))
            vals[d["Metric Name"]] = f'{d["Metric Value"]} {d.get("Metric Unit", "")}'.strip()
            vals.setdefault("_kernel", d.get("Kernel Name", "")[:60])
    return vals


files = sys.argv[1:]
cols = [read(f) for f in files]
names = [Path(f).stem for f in files]
print("metric".ljust(42) + "".join(n[:28].ljust(30) for n in names))
print("kernel".ljust(42) + "".join(c.get("_kernel", "?")[:28].ljust(30) for c in cols))
for k in KEYS:
    print(k[:41].ljust(42) + "".join(c.get(k, "-")[:28].ljust(30) for c in cols))
