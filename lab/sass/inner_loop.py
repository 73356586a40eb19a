#!/usr/bin/env python3
"""The attention kernel's steady-state loop in a `cuobjdump -sass` listing (with encodings): the
smallest backward-branch loop holding both the QK^T (QGMMA 64xN) and the P V (QGMMA 64x128 or 64x136, or
HGMMA 64x128 for FP16 P) wgmmas. Prints its size, start address (mod 128), the sum of the control
codes' stall counts, the count of instructions that wait on a scoreboard, the counts of the
instruction classes that bound a block (MUFU.EX2, wgmmas, conversions, local memory), and writes
the loop's opcode sequence (register numbers dropped) to FILE.inner for diffing two builds.
  cuobjdump -xelf e4m3_block192.sm_90a.cubin lib.so; cuobjdump -sass e4m3_block192.sm_90a.cubin > a.sass
  python3 lab/sass/inner_loop.py a.sass b.sass; diff a.sass.inner b.sass.inner
  python3 lab/sass/inner_loop.py --all-loops a.sass   (every loop with >= 4 wgmmas: size, wgmmas, LDL/STL)
Control bits (sm_70 and later, high 64-bit word): stall bits 41-44, yield 45, wait mask 52-57."""
import re
import sys

PAT = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);\s+/\* (0x[0-9a-f]+) \*/")


def parse(path):
    lines = open(path).read().splitlines()
    ins, i = [], 0
    while i < len(lines):
        m = PAT.search(lines[i])
        hi = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1]) if m and i + 1 < len(lines) else None
        if m and hi:
            ins.append((int(m.group(1), 16), m.group(2).strip(), int(hi.group(1), 16)))
            i += 2
        else:
            i += 1
    return ins


def backward_loops(ins):
    """(first, last) instruction indices of every loop: a branch back to an earlier address."""
    idx = {a: k for k, (a, _, _) in enumerate(ins)}
    loops = []
    for k, (a, t, _) in enumerate(ins):
        tt = re.sub(r"^@!?U?P\w+\s+", "", t)
        m = re.search(r"0x([0-9a-f]+)", t) if tt.startswith("BRA") else None
        if m and int(m.group(1), 16) <= a and int(m.group(1), 16) in idx:
            loops.append((idx[int(m.group(1), 16)], k))
    return loops


def inner_loop(ins):
    loops = backward_loops(ins)
    def has(s, e, pat):
        return any(re.search(pat, ins[j][1]) for j in range(s, e + 1))
    cands = [(e - s, s, e) for s, e in loops
             if has(s, e, r"QGMMA\.64x(128|192|224)") and has(s, e, r"[QH]GMMA\.64x(128|136)x(32|16)")
             and (has(s, e, r"HGMMA\.64x(128|136)") or has(s, e, r"QGMMA\.64x(192|224)"))]
    if not cands:
        return None
    _, s, e = min(cands)
    return ins[s:e + 1]


def wgmma_loops(ins):
    """(instructions, wgmmas, local-memory accesses) of every backward-branch loop holding at
    least four wgmmas, smallest first."""
    out = []
    for s, e in backward_loops(ins):
        body = ins[s:e + 1]
        g = sum("GMMA" in x for _, x, _ in body)
        if g >= 4:
            out.append((len(body), g, sum(bool(re.search(r"\b(LDL|STL)", x)) for _, x, _ in body)))
    return sorted(out)


def main(paths):
    if paths and paths[0] == "--all-loops":
        for path in paths[1:]:
            print("  wgmma loops (instructions, wgmmas, local accesses):", wgmma_loops(parse(path))[:6])
        return
    for path in paths:
        body = inner_loop(parse(path))
        if body is None:
            print(f"{path}: no loop with both wgmmas")
            continue
        stalls = sum((h >> 41) & 0xF for _, _, h in body)
        waits = sum(((h >> 52) & 0x3F) != 0 for _, _, h in body)
        print(f"{path}: {len(body)} instructions from {body[0][0]:#x} (mod 128: {body[0][0] % 128}), "
              f"stall counts {stalls}, scoreboard waits {waits}")
        count = {k: sum(1 for _, t, _ in body if re.search(p, t)) for k, p in (
            ("MUFU.EX2", r"MUFU\.EX2"), ("QGMMA", r"QGMMA"), ("HGMMA", r"HGMMA"), ("F2FP", r"F2FP"),
            ("FMNMX", r"FMNMX"), ("FADD", r"\bFADD"), ("FMUL", r"\bFMUL"), ("FFMA", r"\bFFMA"),
            ("SHFL", r"SHFL"), ("LDL/STL", r"\b(LDL|STL)"))}
        print("  " + ", ".join(f"{k} {v}" for k, v in count.items()))
        ops = [re.sub(r"R\d+", "R", re.sub(r"^@!?U?P\w+\s+", "", t)) for _, t, _ in body]
        open(path + ".inner", "w").write("\n".join(ops) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
