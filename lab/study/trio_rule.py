#!/usr/bin/env python3
"""Does select.h's three-warpgroup rule pick the faster tiling off the sweep? (CPU model.)

For non-causal accurate-mode shapes users run (batch 1-8, 8-64 query heads, 4k-32k tokens),
lab/study/wave_tail.py's scheduler model, with the per-score rate and fixed tile cost it fitted
to the twenty-ninth session's 18-row lottery (--g, --c0), predicts the trio's time ratio to the
two-warpgroup 192-key kernel. The table lists each shape's prediction beside the rule's choice
(fp16_vt_three_warpgroups: >= 8192 keys and >= 1024 tiles of 192 rows) and marks where they
disagree by more than --margin: the shapes a GPU A/B of a tail-aware rule should time.
usage: lab/study/trio_rule.py [--g 1.015] [--c0 2] [--margin 0.01] [--out PATH]
"""
import argparse
import sys

import wave_tail as wt


def rule(sq, sk, b, h):
    return sk >= 8192 and -(-sq // 192) * h * b >= 1024


def two_keys(sk):  # the 192-key kernel's trimmed last block (select.h, two_warpgroup_tile_keys)
    whole = sk // 192 * 192
    rest = sk - whole
    return whole + (0 if rest == 0 else 64 if rest <= 64 else 128 if rest <= 128 else 192)


def thirds(tiles, sms):  # select.h's round_thirds: 3 a full round, 2 a partial last one
    return tiles // sms * 3 + (2 if tiles % sms else 0)


def tail_rule(sq, sk, b, h, sms=132, fixed=3 * 64 * 128, permille=1005):
    """select.h's three_warpgroups_fill_faster on top of the old rule (branch trio-tail-rule: the
    refit of wave_tail.py --refit-tail, a partial last round 2/3 of a round)."""
    r2 = thirds(-(-sq // 128) * b * h, sms)
    r3 = thirds(-(-sq // 192) * b * h, sms)
    return rule(sq, sk, b, h) and r3 * (fixed + 192 * (-(-sk // 128) * 128)) * 1000 < \
        r2 * (fixed + 128 * two_keys(sk)) * permille


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--g", type=float, default=1.015)
    ap.add_argument("--c0", type=float, default=2.0)
    ap.add_argument("--margin", type=float, default=0.01)
    ap.add_argument("--out")
    args = ap.parse_args()
    lines = ["# The three-warpgroup rule against the last-wave model (lab/study/trio_rule.py)", "",
             f"Model: lab/study/wave_tail.py, per-score rate trio / two = {args.g}, fixed cost per tile "
             f"{args.c0} warpgroup blocks (its fit to the 18-row lottery, "
             "lab/results/study/2026-12-04-cpu-s30-wave-tail-trio.md); non-causal, sq = sk, 132 SMs. "
             f"'disagree': the rule's choice is predicted slower by more than {args.margin:.0%}.", "",
             "| b | s | h | tiles two / trio | busy two / trio | predicted trio / two | rule | verdict | tail-aware rule |",
             "|---:|---:|---:|---|---|---:|---|---|---|"]
    n_dis = n_new = 0
    for s in (4096, 6144, 8192, 12288, 16384, 32768):
        for b in (1, 2, 4, 8):
            for h in (8, 16, 28, 32, 40, 64):
                if b * s > 65536 or b * h * s > 4 * 32 * 16384:
                    continue
                row = (b, s, s, h, h, False)
                r = wt.predict(row, args.g, args.c0, args.c0)
                e2 = wt.efficiency(row, 128, 192, True, args.c0)
                e3 = wt.efficiency(row, 192, 128, False, args.c0)
                pick = rule(s, s, b, h)
                worse = (pick and r < 1 - args.margin) or (not pick and r > 1 + args.margin)
                n_dis += worse
                t2, t3 = -(-s // 128) * b * h, -(-s // 192) * b * h
                new = tail_rule(s, s, b, h)
                n_new += new != pick
                lines.append(f"| {b} | {s} | {h} | {t2} / {t3} | {e2:.3f} / {e3:.3f} | {r:.3f} | "
                             f"{'trio' if pick else 'two'} | {'**disagree**' if worse else 'agree'} | "
                             f"{'trio' if new else 'two'}{' (changed)' if new != pick else ''} |")
    lines += ["", f"{n_dis} shapes where the rule's choice is predicted slower by more than {args.margin:.0%}; "
              f"the tail-aware rule (the old rule and the refitted closed form, select.h on branch "
              f"trio-tail-rule) changes {n_new}, each from trio to two."]
    wt.emit(lines, args.out)


if __name__ == "__main__":
    main()
