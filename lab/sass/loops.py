#!/usr/bin/env python3
"""Opcode histogram of the loops in a cuobjdump -sass listing (backward branches = loop edges).
Usage: loops.py file.sass [--min N]   (prints every loop whose body has >= N instructions)"""
import collections
import re
import sys

lines = open(sys.argv[1]).read().splitlines()
min_n = int(sys.argv[sys.argv.index("--min") + 1]) if "--min" in sys.argv else 200
ins = []  # (addr, opcode, text)
pat = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
for ln in lines:
    m = pat.search(ln)
    if not m:
        continue
    addr = int(m.group(1), 16)
    text = m.group(2).strip()
    t = re.sub(r"^@!?U?P\w+\s+", "", text)
    op = t.split()[0] if t else "?"
    ins.append((addr, op, text))
by_addr = {a: i for i, (a, _, _) in enumerate(ins)}
loops = []
for i, (a, op, text) in enumerate(ins):
    if op.startswith("BRA"):
        m = re.search(r"0x([0-9a-f]+)", text)
        if m:
            tgt = int(m.group(1), 16)
            if tgt <= a and tgt in by_addr:
                loops.append((by_addr[tgt], i))
for s, e in sorted(loops):
    n = e - s + 1
    if n < min_n:
        continue
    h = collections.Counter(ins[k][1].split(".")[0] for k in range(s, e + 1))
    print(f"loop {ins[s][0]:#x}-{ins[e][0]:#x}: {n} instructions")
    print("  " + ", ".join(f"{k} {v}" for k, v in h.most_common()))
