#!/usr/bin/env python3
"""Register budget of an attention kernel's key loop (lab/sass/inner_loop.py's loop) in a
`cuobjdump -sass` listing: the registers the wgmmas own (QK^T accumulator S, P V accumulator O,
P V's register A operand P, each from the first wgmma of its kind and its shape), the registers the
loop touches outside them (the softmax's working set), and the distinct destinations of the
running-max FMNMX chains (how many partial maxima ptxas kept); with --turn, the opcodes of the
hot path's ping-pong turn (lab/sass/schedule_metrics.py's hot path, from the turn barrier's sync
to its arrive: the instructions that hold the other warpgroup's wgmma issue back).
  python3 lab/sass/loop_registers.py [--turn] A.sass [B.sass ...]
"""
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inner_loop import inner_loop, parse  # noqa: E402


def span(first, n):
    return set(range(first, first + n))


def budget(path):
    body = inner_loop(parse(path))
    text = [t for _, t, _ in body]
    s = o = p = set()
    for t in text:
        m = re.search(r"[QH]GMMA\.64x(\d+)x(\d+)\.F32\S*\s+R(\d+),\s*(R(\d+)|gdesc)", t)
        if not m:
            continue
        n, k, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if m.group(4) == "gdesc" and not s:  # the QK^T (both operands in shared memory): 64 x kBlockN
            s = span(d, n // 2)
        elif m.group(5) and n in (128, 136) and not o:  # the P V: 64 x 128 (+8 row-sum columns)
            o = span(d, n // 2)
        if m.group(5) and n in (128, 136):  # register A operand: 64 x k of P, 4 registers per wgmma
            p = p | span(int(m.group(5)), 4)
    used = set()
    for t in text:
        used |= {int(r) for r in re.findall(r"\bR(\d+)\b", t)}
    rest = sorted(used - s - o - p)
    mx = sorted({int(m.group(1)) for t in text for m in [re.search(r"FMNMX R(\d+), R\d+, (R\d+|-INF)", t)] if m
                 and int(m.group(1)) not in s})
    return len(s), len(o), len(p), rest, mx


def turn_census(path):
    """(turn length, Counter of opcodes) of the hot path's turn, as schedule_metrics.metrics bounds it."""
    from schedule_metrics import decode, hot_path, metrics  # noqa: E402 (lab/sass, beside this file)
    body = inner_loop(parse(path))
    m, _ = metrics(body)
    ops = [decode(t)[0] for _, t, _ in hot_path(body)]
    return m["turn_i"], Counter(ops[m["sync"] + 1:m["arv"]])


def main():
    args = sys.argv[1:]
    if args and args[0] == "--turn":
        for path in args[1:]:
            n, c = turn_census(path)
            print(f"{os.path.basename(os.path.dirname(path)) or path}/{os.path.basename(path)}: turn {n} "
                  f"instructions: " + ", ".join(f"{k} {v}" for k, v in c.most_common()))
        return 0
    for path in sys.argv[1:]:
        ns, no, np_, rest, mx = budget(path)
        print(f"{os.path.basename(path)}: S {ns} + O {no} + P {np_} registers owned by the wgmmas; "
              f"{len(rest)} other registers touched in the loop; {len(mx)} distinct FMNMX destinations outside S")
        print(f"  other: {' '.join(f'R{r}' for r in rest)}")
        print(f"  FMNMX destinations: {' '.join(f'R{r}' for r in mx)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
