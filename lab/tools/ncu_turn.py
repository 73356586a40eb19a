#!/usr/bin/env python3
"""The ping-pong turn of a kernel from an Nsight Compute source-view CSV (the per-instruction
table ncu_source_vs_fa3.sh writes): the instructions from the most-executed BAR.SYNC (the consumer
warpgroup's turn starts) to the next BAR.ARV (it hands the turn over), with an opcode census. For
kernels whose SASS we do not build (FA3's), beside lab/sass/loop_registers.py --turn for ours.
  python3 lab/tools/ncu_turn.py SOURCE.csv [SOURCE.csv ...]
"""
import collections
import csv
import sys


def turn(path):
    rows = list(csv.reader(open(path, errors="ignore")))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    col = rows[start].index("Instructions Executed")
    ins = [(r[1].strip(), int(r[col] or 0)) for r in rows[start + 1:] if len(r) > col]
    syncs = [j for j, (t, _) in enumerate(ins) if t.startswith("BAR.SYNC")]
    first = max(syncs, key=lambda j: ins[j][1])
    last = min(j for j, (t, _) in enumerate(ins) if t.startswith("BAR.ARV") and j > first)
    ops = collections.Counter(t.split()[1] if t.startswith("@") else t.split()[0] for t, _ in ins[first:last + 1])
    return last - first + 1, ins[first][1], ops


def main():
    print(f"# python3 lab/tools/ncu_turn.py {' '.join(sys.argv[1:])}")
    for path in sys.argv[1:]:
        n, execs, ops = turn(path)
        census = ", ".join(f"{k} {v}" for k, v in ops.most_common())
        print(f"{path}: turn {n} instructions (its BAR.SYNC executed {execs} times): {census}")


if __name__ == "__main__":
    sys.exit(main())
