#!/usr/bin/env python3
"""Static schedule metrics of the long-tile kernel's steady-state loop, one row per build, beside
each build's measured speed relative to the release (issue 13: is there a static measure that orders
builds as their speeds do?).

  python3 lab/sass/schedule_metrics.py --builds lab/sass/schedule_builds.tsv --sass-dir build-sched \
      --out lab/results/sass/schedule-metrics.txt

The loop is lab/sass/inner_loop.py's (the smallest backward-branch loop holding both wgmmas). Its
hot path is the instructions one unmasked key block executes: from the loop's start, falling
through every conditional forward branch except one that skips a masked region (>= 16 FSEL and
>= 16 ISETP: the causal diagonal's masking), taking unconditional forward branches, never taking
branches out of the loop (barrier retries, BRA.DIV). The O rescale (64 FMULs the loop skips when no
row max grew) is on the hot path. Every metric below is over the hot path,
positions are hot-path indices, "cycles" are sums of the control codes' stall counts (bits 41-44 of
the high word; a lower bound on issue cycles, not a latency model).
  n_loop     instructions in the loop (every path); n_hot: on the hot path
  stall      sum of stall counts on the hot path; waits: instructions with a scoreboard wait mask
             (bits 52-57); b45: instructions with bit 45 set (ptxas sets it on every instruction that
             carries .reuse, and the encoding refuses .reuse without it: read as "stay on this warp")
  reuse      operands carrying .reuse; reads: register source reads (ALU opcodes, below) not served
             by the reuse cache. Model: a source in operand slot s (0 = a, 1 = b, 2 = c) is served
             when the hot path's previous instruction read the same register in slot s with .reuse.
  m2t3/m2t2/m4t2  instructions (ALU opcodes: FFMA FMUL FADD FMNMX FSEL FSETP F2FP MUFU IMAD IADD3
             LOP3 ISETP PRMT SHF LEA SEL VIADD MOV) whose distinct unserved source registers put
             >= T in one bank, bank = register mod M: (M, T) = (2, 3), (2, 2), (4, 2). Per class in
             the second table. m2t2x / m4t2x: the extra same-bank reads (sum over banks of
             count - T + 1), i.e. the cycles those conflicts would cost at one read per bank per cycle
  imad_mov   IMAD.MOV instructions (moves the compiler put on the FMA pipe)
  exp_ffma   FFMAs whose result the next reader is a MUFU.EX2 (the exp arguments s*scale + bias);
             exp_reused: of those, with at least one source served by the reuse cache
  f2m_i/f2m_c  mean distance from each exp FFMA to its MUFU.EX2 in instructions / cycles; min in
             the second figure. m2u_i/m2u_c: the same from each of those MUFU.EX2 to the first
             instruction reading its result (cyclic over the hot path)
  ex2_span   cycles from the first exp MUFU.EX2 to the last
  sync/arv   position of the first BAR.SYNC (the warpgroup's turn starts: it waits for the other's
             BAR.ARV) and of the first BAR.ARV after it (the turn ends); turn_i / turn_c: the
             instructions / cycles from one to the other (the other warpgroup waits this long)
  off_c      stall - turn_c: the cycles of the hot path outside the turn (softmax and exp stream)
  qk / pv    position of the first QK^T wgmma (QGMMA 64x192/224) and of the first P V wgmma (64x128)
  depbar     positions of WARPGROUP.DEPBAR (the waits on wgmma completion)
  arrive     positions of SYNCS.ARRIVE (a K or V buffer handed back to the producer)
Speed: from kernel_ab.py files (head to head with FA3 FP8 in one process), the build's ratio to
FA3 FP8 over the base library's ratio in the same file, geometric mean over repeated pairs, at
b4 s4096 and b2 s8192 (h 32/32), non-causal (nc) and causal (c); mean: their geometric mean.
"""
import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inner_loop import inner_loop, parse  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "study"))
import ranks  # noqa: E402

ALU = ("FFMA", "FMUL", "FADD", "FMNMX", "FSEL", "FSETP", "F2FP", "MUFU", "IMAD", "IADD3", "LOP3",
       "ISETP", "PRMT", "SHF", "LEA", "SEL", "VIADD", "MOV")
CLASSES = ("FFMA", "FMUL", "FADD", "FMNMX", "F2FP", "MUFU")
MODELS = (("m2t3", 2, 3), ("m2t2", 2, 2), ("m4t2", 4, 2))
REG = re.compile(r"^[-!|~]*R(\d+)((?:\.\w+)*)\|?$")
NOISE = 0.005
SPEED_CELLS = ((4096, False, "4k nc"), (4096, True, "4k c"), (8192, False, "8k nc"), (8192, True, "8k c"))


def decode(text):
    """(opcode, operands, dest register or None, [(slot, reg, reuse)] of the register sources)."""
    t = re.sub(r"^@!?U?P\w+\s+", "", text)
    op, _, rest = t.partition(" ")
    ops = [o.strip() for o in rest.split(",")] if rest.strip() else []
    dest, start = None, 0
    if ops and REG.match(ops[0]) and not op.startswith(("ST", "RED", "ATOM", "BAR", "SYNCS")):
        dest, start = int(REG.match(ops[0]).group(1)), 1
    else:
        while start < len(ops) and re.match(r"^!?(P\d|PT)$", ops[start]):
            start += 1
    srcs = []
    for slot, o in enumerate(ops[start:]):
        m = REG.match(o)
        if m:
            srcs.append((slot, int(m.group(1)), ".reuse" in m.group(2)))
    return op, ops, dest, srcs


def reads(text):
    """Every register number an instruction reads (all operands but its destination), any opcode."""
    op, ops, dest, _ = decode(text)
    skip = 1 if dest is not None else 0
    return {int(r) for o in ops[skip:] for r in re.findall(r"\bR(\d+)\b", o)}


def hot_path(body):
    base, n = body[0][0], len(body)
    def masked(s, e):
        ts = [body[j][1] for j in range(s, e)]
        return sum("FSEL" in t for t in ts) >= 16 and sum("ISETP" in t for t in ts) >= 16
    path, k = [], 0
    while k < n:
        path.append(k)
        t = body[k][1]
        op = decode(t)[0]
        m = re.search(r"0x([0-9a-f]+)", t)
        if op == "BRA" and m:
            tgt = (int(m.group(1), 16) - base) // 16
            if k < tgt < n and (not t.startswith("@") or masked(k + 1, tgt)):
                k = tgt
                continue
        k += 1
    return [body[k] for k in path]


def metrics(body):
    hot = hot_path(body)
    n = len(hot)
    dec = [decode(t) for _, t, _ in hot]
    stall = [(h >> 41) & 0xF for _, _, h in hot]
    cyc = lambda a, b: sum(stall[a:b])  # noqa: E731
    m = {"n_loop": len(body), "n_hot": n, "stall": sum(stall),
         "waits": sum(((h >> 52) & 0x3F) != 0 for _, _, h in hot),
         "b45": sum((h >> 45) & 1 for _, _, h in hot),
         "reuse": sum(r for d in dec for _, _, r in d[3])}
    served = []  # per instruction: set of (slot, reg) served by the reuse cache
    for i, (op, _, _, srcs) in enumerate(dec):
        prev = {(s, r) for s, r, ru in dec[i - 1][3] if ru} if i else set()
        served.append({(s, r) for s, r, _ in srcs if (s, r) in prev})
    m["reads"] = 0
    per_class = {c: {k: 0 for k, _, _ in MODELS} for c in CLASSES + ("other",)}
    for k, _, _ in MODELS:
        m[k] = m[k + "x"] = 0
    for i, (op, _, _, srcs) in enumerate(dec):
        if not op.startswith(ALU):
            continue
        regs = {r for s, r, _ in srcs if (s, r) not in served[i]}
        m["reads"] += len(regs)
        cls = next((c for c in CLASSES if op.startswith(c)), "other")
        for k, mod, thr in MODELS:
            banks = [sum(1 for r in regs if r % mod == b) for b in range(mod)]
            if max(banks, default=0) >= thr:
                m[k] += 1
                per_class[cls][k] += 1
            m[k + "x"] += sum(max(0, c - thr + 1) for c in banks)
    # the exp stream: MUFU.EX2 whose source's last writer is an FFMA
    pairs = []
    for p, (op, _, dest, srcs) in enumerate(dec):
        if op != "MUFU.EX2" or not srcs:
            continue
        r = srcs[0][1]
        q = next((j for j in range(p - 1, -1, -1) if dec[j][2] == r), None)
        if q is not None and dec[q][0] == "FFMA":
            pairs.append((q, p, dest))
    m["exp_ffma"] = len(pairs)
    m["exp_reused"] = sum(1 for q, _, _ in pairs if served[q])
    f2m = [(p - q, cyc(q, p)) for q, p, _ in pairs]
    m2u = []
    for _, p, d in pairs:
        for step in range(1, n):
            j = (p + step) % n
            if d in reads(hot[j][1]):
                m2u.append((step, cyc(p, p + step) if p + step <= n else cyc(p, n) + cyc(0, j)))
                break
            if dec[j][2] == d:
                break
    def mean_min(xs, i):
        return f"{sum(x[i] for x in xs) / len(xs):.1f}/{min(x[i] for x in xs)}" if xs else "-"
    m["f2m_i"], m["f2m_c"] = mean_min(f2m, 0), mean_min(f2m, 1)
    m["m2u_i"], m["m2u_c"] = mean_min(m2u, 0), mean_min(m2u, 1)
    m["ex2_span"] = cyc(pairs[0][1], pairs[-1][1]) if pairs else "-"
    ops = [d[0] for d in dec]
    sync = next((i for i, o in enumerate(ops) if o.startswith("BAR.SYNC")), None)
    arv = next((i for i, o in enumerate(ops) if o.startswith("BAR.ARV") and sync is not None and i > sync), None)
    m["sync"], m["arv"] = sync, arv
    m["turn_i"] = arv - sync - 1 if arv is not None else "-"
    m["turn_c"] = cyc(sync, arv) if arv is not None else "-"
    m["off_c"] = m["stall"] - m["turn_c"] if arv is not None else "-"
    m["depbar"] = ",".join(str(i) for i, o in enumerate(ops) if o.startswith("WARPGROUP.DEPBAR"))
    m["arrive"] = ",".join(str(i) for i, o in enumerate(ops) if o.startswith("SYNCS.ARRIVE"))
    m["qk"] = next((i for i, o in enumerate(ops) if re.match(r"QGMMA\.64x(192|224)", o)), "-")
    m["pv"] = next((i for i, o in enumerate(ops) if re.match(r"[QH]GMMA\.64x128x", o)), "-")
    m["imad_mov"] = sum(o.startswith("IMAD.MOV") for o in ops)
    return m, per_class


def ratios(path, method):
    """{(sq, causal): [method / its FA3 FP8 partner]} from a kernel_ab.py file."""
    recs = [r for r in json.load(open(path))["records"] if "tflops_median" in r]
    out = {}
    for r in recs:
        if r["method"] != method or r["protocol"] != "head_to_head:fa3_fp8":
            continue
        fa3 = [f for f in recs if f["method"] == "fa3_fp8" and f["protocol"] == "head_to_head:" + method
               and (f["b"], f["sq"], f["sk"], f["h_kv"], f["causal"]) == (r["b"], r["sq"], r["sk"], r["h_kv"], r["causal"])]
        if len(fa3) == 1:
            out.setdefault((r["sq"], r["causal"]), []).append(r["tflops_median"] / fa3[0]["tflops_median"])
    return out


def speed(root, row):
    if row["json"] == "-":
        return {c[2]: 1.0 for c in SPEED_CELLS}
    if row["json"] == "none":
        return {}
    path = row["json"] if os.path.isabs(row["json"]) else os.path.join(root, row["json"])
    out = {}
    for sq, causal, name in SPEED_CELLS:
        logs = []
        for v, b in zip(row["variant"].split(","), row["base"].split(",")):
            rv, rb = ratios(path, v).get((sq, causal)), ratios(path, b).get((sq, causal))
            if rv and rb:
                logs.append(math.log(rv[0] / rb[0]))
        if logs:
            s = math.exp(sum(logs) / len(logs))
            out[name] = 1 / s if row["invert"] == "1" else s
    return out


def spearman(xs, ys):
    r = ranks.spearman(xs, ys)
    return float("nan") if r is None else r


def table(cols, rows):
    w = [max(len(str(c)), *(len(str(r.get(c, "-"))) for r in rows)) for c in cols]
    lines = ["  ".join(str(c).rjust(x) for c, x in zip(cols, w))]
    lines += ["  ".join(str(r.get(c, "-")).rjust(x) for c, x in zip(cols, w)) for r in rows]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builds", required=True)
    ap.add_argument("--sass-dir", required=True)
    ap.add_argument("--out")
    a = ap.parse_args()
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    keys = ("tag", "sass", "provenance", "json", "variant", "base", "invert", "group")
    rows = [dict(zip(keys, ln.rstrip("\n").split("\t"))) for ln in open(a.builds)
            if ln.strip() and not ln.startswith("#")]
    out = ["# " + " ".join(["lab/sass/schedule_metrics.py"] + sys.argv[1:]),
           f"# tree: {subprocess.run(['git', 'rev-parse', '--short=12', 'HEAD'], capture_output=True, text=True, cwd=root).stdout.strip()}"
           f"  date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  (static: no GPU run here;"
           " speeds are read from the H200 files named below)", "#"]
    for r in rows:
        out.append(f"# {r['tag']}: {r['provenance']}; speed: {r['json']} {r['variant']} / {r['base']}"
                   + (" (inverted)" if r["invert"] == "1" else ""))
    cls_rows = []
    for r in rows:
        m, pc = metrics(inner_loop(parse(os.path.join(a.sass_dir, r["sass"]))))
        r.update(m)
        sp = speed(root, r)
        for _, _, name in SPEED_CELLS:
            r[name] = f"{sp[name]:.3f}" if name in sp else "-"
        r["mean"] = f"{math.exp(sum(math.log(v) for v in sp.values()) / len(sp)):.3f}" if sp else "-"
        cls_rows.append({"tag": r["tag"], **{f"{c}:{k}": pc[c][k] for c in pc for k, _, _ in MODELS if pc[c][k]}})
    speed_cols = ["tag", "group"] + [c[2] for c in SPEED_CELLS] + ["mean"]
    cols1 = ["tag", "n_loop", "n_hot", "stall", "waits", "b45", "reuse", "reads", "m2t3", "m2t2", "m4t2",
             "exp_ffma", "exp_reused"]
    cols1 += ["m2t2x", "m4t2x", "imad_mov"]
    cols2 = ["tag", "f2m_i", "f2m_c", "m2u_i", "m2u_c", "ex2_span", "sync", "arv", "turn_i", "turn_c", "off_c",
             "qk", "pv", "depbar", "arrive"]
    out += ["", "## speed relative to the release (ratio to FA3 FP8 over the base's ratio, same file)"]
    out += table(speed_cols, rows)
    out += ["", "## hot-path metrics (docstring of lab/sass/schedule_metrics.py)"] + table(cols1, rows)
    out += [""] + table(cols2, rows)
    ccols = ["tag"] + sorted({k for c in cls_rows for k in c if k != "tag"})
    out += ["", "## bank-conflict instructions by class (class:model; zero columns left out)"] + table(ccols, cls_rows)
    num = cols1[1:] + ["m2u_i", "m2u_c", "f2m_i", "f2m_c", "ex2_span", "sync", "arv", "turn_i", "turn_c", "off_c",
                       "qk", "pv", "FFMA:m2t2", "FFMA:m4t2"]
    for r, c in zip(rows, cls_rows):
        r["FFMA:m2t2"], r["FFMA:m4t2"] = c.get("FFMA:m2t2", 0), c.get("FFMA:m4t2", 0)
    sel_all = [r for r in rows if r["group"] in ("same", "control") and r["mean"] != "-"]
    sel_same = [r for r in rows if r["group"] == "same" and r["mean"] != "-"]
    out += ["", "## Spearman rank correlation of each metric with the mean speed: rho_same over the "
            f"{len(sel_same)} builds whose loops differ ({', '.join(r['tag'] for r in sel_same)}), rho_all adding "
            f"the {len(sel_all) - len(sel_same)} controls that have the release's loop (ties). Values listed slowest build first.",
            "## rho > 0: a larger value goes with a faster build. C/D/T: of the pairs of those builds whose speeds differ by",
            f"## >= {NOISE} (the release against itself moved <= 0.004), how many the metric orders as speed (larger = faster),",
            "## against it, or ties. Suggestive only: 7 builds, and one metric in 30."]
    corr = []
    for c in num:
        row = {"metric": c}
        for name, sel in (("rho_same", sel_same), ("rho_all", sel_all)):
            speeds = [float(r["mean"]) for r in sel]
            vals = [r[c] for r in sel]
            vals = [float(v.split("/")[0]) if isinstance(v, str) and v != "-" else v for v in vals]
            if any(v == "-" or v is None for v in vals) or len(set(vals)) < 2:
                row[name] = "const"
                continue
            row[name] = f"{spearman(vals, speeds):+.2f}"
            if name == "rho_same":
                pairs = [(i, j) for i in range(len(sel)) for j in range(i) if abs(speeds[i] - speeds[j]) >= NOISE]
                row["C/D/T"] = "/".join(str(sum(1 for i, j in pairs if f(i, j))) for f in (
                    lambda i, j: (vals[i] - vals[j]) * (speeds[i] - speeds[j]) > 0,
                    lambda i, j: (vals[i] - vals[j]) * (speeds[i] - speeds[j]) < 0,
                    lambda i, j: vals[i] == vals[j]))
            if name == "rho_same":
                order = sorted(range(len(sel)), key=lambda i: speeds[i])
                row["values (slowest first)"] = " ".join(f"{sel[i]['tag']}={vals[i]:g}" for i in order)
        corr.append(row)
    out += table(["metric", "rho_same", "C/D/T", "rho_all", "values (slowest first)"], corr)
    text = "\n".join(out) + "\n"
    if a.out:
        open(a.out, "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
