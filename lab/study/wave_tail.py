#!/usr/bin/env python3
"""How much of a head-to-head ratio between two tilings is the last wave? (CPU model.)

A persistent kernel on 132 SMs claims tiles from a counter in the scheduler's order
(src/attn/scheduler.cuh: head-major when non-causal, longest first when causal). When the tiles
do not fill the last wave, SMs idle at the end. This script simulates that list scheduling for
two tilings of the same call:
  two   the two-warpgroup kernels: 128-row tiles, 192-key blocks, the first block trimmed per
        warpgroup (src/attn/first_block.h)
  trio  the three-warpgroup FP16 V^T kernel: 192-row tiles, 128-key blocks, whole first blocks
        (KernelFP16VtTrioBlock128, the form measured in the twenty-ninth session)
The busy share is the SMs' summed tile costs over SMs x the makespan (1 = no tail).
A tile's cost is the scores its warpgroups compute (rows past seqlen_q included: the kernels
compute them) divided by a per-score rate, plus a fixed cost per tile (c0, in units of one
warpgroup's 64 x 128 scores). The trio's per-score rate relative to the two-warpgroup kernel's
(g) and c0 for each are fitted by a grid search to the measured ratios (trio / two-warpgroup,
each head to head with FA3 FP8) of a lottery file, so the fit says how much of the measured
gain is per-score speed and how much is the tail and the diagonal.

usage: lab/study/wave_tail.py LOTTERY.json A_NAME B_NAME [--out PATH]
  (A = the two-warpgroup build, B = the trio build, as named in the lottery's configs)
       lab/study/wave_tail.py --shift-table [--out PATH]
       lab/study/wave_tail.py --waves-check WAVES_LOTTERY.json [--out PATH]
       lab/study/wave_tail.py --refit-tail LOTTERY.json A_NAME B_NAME [--out PATH]
  (scores computed by top- and end-aligned causal tiles, attn/tile_rows.h)
"""
import argparse
import heapq
import json
import sys

SMS = 132


def emit(lines, out):
    """The report to stdout, and to `out` when given."""
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if out:
        with open(out, "w") as f:
            f.write(text)


def block_keys(limit, n, block_n):
    keys = limit - n * block_n
    return 0 if keys <= 0 else 64 if keys <= 64 else 128 if keys <= 128 else block_n


def tile_scores(sq, sk, causal, m, block_m, block_n, trim, shift=0):
    """Scores one tile computes: sum over its 64-row warpgroups (first_block.h's rule); causal
    tiles shifted up by `shift` rows (attn/tile_rows.h)."""
    w = block_m // 64
    n_blocks = -(-sk // block_n)
    if not causal:
        if trim:  # the last, partial block computed only as far as sk (64 / 128 / whole)
            last = block_keys(sk, n_blocks - 1, block_n)
            return w * 64 * ((n_blocks - 1) * block_n + last)
        return w * 64 * n_blocks * block_n
    end = m * block_m - shift + block_m + sk - sq
    n_hi = 0 if end <= 0 else min(-(-end // block_n), n_blocks)
    total = 0
    for wg in range(w):
        lim = max(0, min(m * block_m - shift + 64 * (wg + 1) + sk - sq, sk))
        n = n_hi - 1
        if n < 0:
            continue
        if not trim:
            total += 64 * n_hi * block_n
            continue
        k = block_keys(lim, n, block_n)
        if k == 0 and n > 0:
            n -= 1
            k = block_keys(lim, n, block_n)
        total += 64 * (k + n * block_n)
    return total


def makespan(b, sq, sk, h, causal, block_m, block_n, trim, rate, c0):
    m_blocks = -(-sq // block_m)
    per_head = [tile_scores(sq, sk, causal, m, block_m, block_n, trim) for m in range(m_blocks)]
    order = list(range(m_blocks))
    if causal:
        order.sort(key=lambda m: -per_head[m])  # longest first (across sections: approximate)
        costs = [c0 * 64 * 128 + per_head[m] / rate for m in order for _ in range(b * h)]
    else:
        costs = [c0 * 64 * 128 + per_head[m] / rate for _ in range(b * h) for m in order]
    sms = [0.0] * min(SMS, len(costs))
    heapq.heapify(sms)
    for c in costs:
        t = heapq.heappop(sms)
        heapq.heappush(sms, t + c)
    return max(sms)


def measured(path, a, b_name):
    """Per row: B's mean ratio to the peer over A's (the lottery's summary records)."""
    d = json.load(open(path))
    heads = {(r["b"], r["sq"], r["sk"], r["h_kv"], r["causal"]): r["h"]
             for r in d["records"] if not r.get("summary")}
    mean = {}
    for r in d["records"]:
        if r.get("summary"):
            k = (r["b"], r["sq"], r["sk"], r["h_kv"], r["causal"])
            mean.setdefault(k, {})[r["method"]] = r["ratio_mean"]
    rows = {}
    for k, v in mean.items():
        if a in v and b_name in v:
            b, sq, sk, hkv, causal = k
            rows[(b, sq, sk, heads[k], hkv, causal)] = v[b_name] / v[a]
    return rows, d


def efficiency(row, block_m, block_n, trim, c0):
    """The busy share of the SMs' time: total tile cost / SMs over the makespan."""
    b, sq, sk, h, _, causal = row
    per_head = sum(c0 * 64 * 128 + tile_scores(sq, sk, causal, m, block_m, block_n, trim)
                   for m in range(-(-sq // block_m)))
    return per_head * b * h / SMS / makespan(b, sq, sk, h, causal, block_m, block_n, trim, 1.0, c0)


def predict(row, g, c0_two, c0_trio):
    b, sq, sk, h, _, causal = row
    t_two = makespan(b, sq, sk, h, causal, 128, 192, True, 1.0, c0_two)
    t_trio = makespan(b, sq, sk, h, causal, 192, 128, False, g, c0_trio)
    return t_two / t_trio


def shift_table(out):
    """Scores computed by top-aligned and end-aligned causal tiles (attn/tile_rows.h), per head."""
    lines = ["# Causal tiles aligned to the end of the sequence: scores computed (lab/study/wave_tail.py --shift-table)",
             "", "Per (batch, head), the two-warpgroup kernels' tiling (128-row tiles, 192-key blocks, the "
             "per-warpgroup first-block trim); shift = the top-aligned last tile's rows past sq in whole "
             "warpgroups; sq = sk.", "",
             "| sq = sk | shift | scores, top-aligned | scores, end-aligned | end / top |",
             "|---:|---:|---:|---:|---:|"]
    for s in (1000, 1024, 1040, 1100, 2000, 2048, 3000, 4000, 4096, 8000, 8192, 8250, 16000):
        shift = ((128 - s % 128) % 128) // 64 * 64
        m_blocks = -(-s // 128)
        top = sum(tile_scores(s, s, True, m, 128, 192, True) for m in range(m_blocks))
        end = sum(tile_scores(s, s, True, m, 128, 192, True, shift) for m in range(m_blocks))
        lines.append(f"| {s} | {shift} | {top} | {end} | {end / top:.4f} |")
    emit(lines, out)


def waves_check(path, out):
    """The model's last round against a lottery that ran the same tiles in 3.88 and exactly 4
    rounds (sq 2k x sk 16k, 32 and 33 MHA heads: --shape-set waves): per method, the mean TFLOP/s
    over rounds at each head count and its change, beside the model's busy shares."""
    d = json.load(open(path))
    acc = {}
    for r in d["records"]:
        if r.get("summary") or r["sq"] != 2048 or r["sk"] != 16384 or r["h"] != r["h_kv"]:
            continue
        acc.setdefault((r["method"], r["h"]), []).append(r["tflops_median"])
    lines = [f"# The last round, measured: 32 against 33 heads at sq 2k x sk 16k (lab/study/wave_tail.py --waves-check)", "",
             f"Lottery: `{path}` (command: `{d.get('command', '?')}`, commit {d.get('commit', '?')}, "
             f"{d.get('gpu', '?')}, {d.get('date', '?')}). Means over every record of the method.", ""]
    for h in (32, 33):
        row = (1, 2048, 16384, h, h, False)
        lines.append(f"- model busy share at {h} heads ({-(-2048 // 128) * h} tiles, "
                     f"{-(-2048 // 128) * h / SMS:.2f} rounds): {efficiency(row, 128, 192, True, 2):.3f}")
    lines += ["", "| method | TFLOP/s, 32 heads | 33 heads | change |", "|---|---:|---:|---:|"]
    for m in sorted({k[0] for k in acc}):
        if (m, 32) in acc and (m, 33) in acc:
            a, b = sum(acc[(m, 32)]) / len(acc[(m, 32)]), sum(acc[(m, 33)]) / len(acc[(m, 33)])
            lines.append(f"| {m} | {a:.1f} | {b:.1f} | {b / a - 1:+.1%} |")
    emit(lines, out)


def refit_tail(path, a, b_name, out):
    """The fit again with the last partial round's tiles running v times faster (SMs alone at
    the end are not held at the power cap; non-causal rows only, whose tiles are equal), one
    fixed cost for both tilings: per v, the fitted per-score rate g and the squared error."""
    meas, src = measured(path, a, b_name)
    rows = sorted(meas)

    def span(row, block_m, block_n, trim, rate, c0, v):
        bb, sq, sk, h, _, causal = row
        if causal:
            return makespan(bb, sq, sk, h, causal, block_m, block_n, trim, rate, c0)
        tiles = -(-sq // block_m) * bb * h
        t = c0 * 64 * 128 + tile_scores(sq, sk, False, 0, block_m, block_n, trim) / rate
        return tiles // SMS * t + (t / v if tiles % SMS else 0.0)

    lines = [f"# The last round running faster: the fit again (lab/study/wave_tail.py --refit-tail)", "",
             f"Lottery: `{path}`, {b_name} / {a}. v: the speed of the last partial round's tiles "
             "(1 = the plain model); g: the fitted per-score rate trio / two; c0: one fixed cost per tile "
             "for both, in warpgroup blocks of 64 x 128 scores.", "",
             "| v | g | c0 | squared error over the 18 rows |", "|---:|---:|---:|---:|"]
    for v in (1.0, 1.25, 1.5, 2.0, 3.0):
        best = None
        for g in [1.0 + 0.005 * i for i in range(0, 21)]:
            for c0 in (0, 1, 2, 3, 4, 6, 8):
                err = sum((span(r, 128, 192, True, 1.0, c0, v) / span(r, 192, 128, False, g, c0, v) - meas[r]) ** 2
                          for r in rows)
                if best is None or err < best[0]:
                    best = (err, g, c0)
        lines.append(f"| {v} | {best[1]:.3f} | {best[2]} | {best[0]:.4f} |")
    emit(lines, out)


def main():
    if "--refit-tail" in sys.argv:
        i = sys.argv.index("--refit-tail")
        j = sys.argv.index("--out") if "--out" in sys.argv else -1
        refit_tail(sys.argv[i + 1], sys.argv[i + 2], sys.argv[i + 3], sys.argv[j + 1] if j >= 0 else None)
        return
    if "--waves-check" in sys.argv:
        i = sys.argv.index("--waves-check")
        j = sys.argv.index("--out") if "--out" in sys.argv else -1
        waves_check(sys.argv[i + 1], sys.argv[j + 1] if j >= 0 else None)
        return
    if "--shift-table" in sys.argv:
        i = sys.argv.index("--out") if "--out" in sys.argv else -1
        shift_table(sys.argv[i + 1] if i >= 0 else None)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lottery")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--out")
    args = ap.parse_args()
    meas, src = measured(args.lottery, args.a, args.b)
    rows = sorted(meas)
    # A tile's waste and tail, without per-score or per-tile differences (g = 1, c0 = 0).
    plain = {r: predict(r, 1.0, 0.0, 0.0) for r in rows}
    best = None
    for g in [1.0 + 0.005 * i for i in range(0, 21)]:
        for c0_two in (0, 2, 4, 8):
            for c0_trio in (0, 2, 4, 8, 12, 16, 24):
                err = sum((predict(r, g, c0_two, c0_trio) - meas[r]) ** 2 for r in rows)
                if best is None or err < best[0]:
                    best = (err, g, c0_two, c0_trio)
    _, g, c0_two, c0_trio = best
    lines = [f"# Wave tail and diagonal model: {args.b} / {args.a} (lab/study/wave_tail.py)", "",
             f"Lottery: `{args.lottery}` (command: `{src.get('command', '?')}`, commit "
             f"{src.get('commit', '?')}, {src.get('gpu', '?')}, {src.get('date', '?')}).",
             f"Fit (grid search, least squares over {len(rows)} rows): per-score rate trio / two "
             f"= {g:.3f}, fixed cost per tile c0 = {c0_two} (two) and {c0_trio} (trio) "
             "warpgroup blocks of 64 x 128 scores.", "",
             "| b | sq | sk | h/h_kv | causal | tiles two / trio | waves two / trio | "
             "busy share two / trio | work and tail only | fitted | measured |",
             "|---:|---:|---:|---|---|---|---|---|---:|---:|---:|"]
    recs = []
    for r in rows:
        b, sq, sk, h, hkv, causal = r
        t2 = -(-sq // 128) * b * h
        t3 = -(-sq // 192) * b * h
        fit = predict(r, g, c0_two, c0_trio)
        e2, e3 = efficiency(r, 128, 192, True, c0_two), efficiency(r, 192, 128, False, c0_trio)
        lines.append(f"| {b} | {sq} | {sk} | {h}/{hkv} | {'yes' if causal else 'no'} | {t2} / {t3} | "
                     f"{t2 / SMS:.2f} / {t3 / SMS:.2f} | {e2:.3f} / {e3:.3f} | {plain[r]:.3f} | {fit:.3f} | {meas[r]:.3f} |")
        recs.append({"b": b, "sq": sq, "sk": sk, "h": h, "h_kv": hkv, "causal": causal,
                     "busy_two": e2, "busy_trio": e3, "work_and_tail": plain[r], "fitted": fit, "measured": meas[r]})
    emit(lines, args.out)
    if args.out:
        with open(args.out.rsplit(".", 1)[0] + ".json", "w") as f:
            json.dump({"command": " ".join(sys.argv), "fit": {"g": g, "c0_two": c0_two,
                       "c0_trio": c0_trio}, "records": recs}, f, indent=1)


if __name__ == "__main__":
    main()
