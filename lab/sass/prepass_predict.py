#!/usr/bin/env python3
"""Instructions per byte of the default pre-pass kernels' steady-state loops, from two listings of
lab/sass/prepass_counts.sh (a base and a candidate). A prediction from static SASS, not a
measurement: it counts every instruction of the loop body once (branches not taken included,
e.g. the K mean path in the Q kernel) and ignores latency and the work outside the loops.
Usage: prepass_predict.py BASE.txt NEW.txt"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from prepass_bw_predict import listing, rotated_loop  # noqa: E402

# kernel, which loop (rotated: rotated_loop; else the V loop), which lanes per row (the
# listing's "# lanes:" header, default 4 for rows and 8 for the statistics), bytes per channel of
# an iteration: 2 rows of Q/K (128 / L channels each, 3 bytes per channel read + written) or
# 4 keys of the statistics (128 / L channels, 2 bytes read).
CASES = [
    ("kv_group_stats_kernelILb1ELb1E", True, "4 keys of K, statistics", "stats", 4 * 2),
    ("kv_group_stats_kernelILb1ELb1E", False, "4 keys of V, statistics", "stats", 4 * 2),
    ("quantize_q_kernelILb1ELNS0_4rows5ScaleE0E", True, "2 rows of Q", "rows", 2 * 3),
    ("quantize_kv_kernelILb1ELNS0_4rows5ScaleE2E", True, "2 rows of K", "rows", 2 * 3),
    ("quantize_q_kernelILb0ELNS0_4rows5ScaleE0E", False, "2 rows of Q, no rotation", "rows", 2 * 3),
    ("quantize_kv_kernelILb0ELNS0_4rows5ScaleE2E", False, "2 rows of K, no rotation", "rows", 2 * 3),
]


def loops(path):
    """The listing's loops per kernel (prepass_bw_predict.listing), with its lanes under "lanes"."""
    out, lanes = listing(path)
    out["lanes"] = lanes
    return out


def pick(ls, kernel, rotated):
    name = next(k for k in ls if k != "lanes" and k.startswith(kernel))
    cand = [(n, h) for n, h in ls[name] if rotated_loop(h) == rotated]
    return min(cand, key=lambda c: c[0])  # the full-tile loop (a tail copy has the checks)


base, new = loops(sys.argv[1]), loops(sys.argv[2])
print(f"# steady-state loop instructions per thread (static SASS), {sys.argv[1]} -> {sys.argv[2]}")
print(f"{'loop (per thread; per byte)':44s} {'base':>6s} {'new':>6s} {'base/B':>7s} {'new/B':>7s} "
      f"{'change/B':>8s}")
for kernel, rotated, what, part, per_channel in CASES:
    (nb, hb), (nn, hn) = pick(base, kernel, rotated), pick(new, kernel, rotated)
    lb, ln = base["lanes"][part], new["lanes"][part]
    bb, bn = per_channel * 128 // lb, per_channel * 128 // ln
    what = f"{what} (L {lb}->{ln})" if lb != ln else f"{what} ({128 // lb} channels)"
    print(f"{what:44s} {nb:6d} {nn:6d} {nb / bb:7.2f} {nn / bn:7.2f} {(nn / bn) / (nb / bb) - 1:+8.1%}"
          f"   spills in loop: LDL {hb.get('LDL', 0)}->{hn.get('LDL', 0)}")
