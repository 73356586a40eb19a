#!/usr/bin/env python3
"""Instructions per byte of the default pre-pass kernels' steady-state loops, from two listings of
tools/sass/prepass_counts.sh (a base and a candidate). A prediction from static SASS, not a
measurement: it counts every instruction of the loop body once (branches not taken included,
e.g. the K mean path in the Q kernel) and ignores latency and the work outside the loops.
Usage: prepass_predict.py BASE.txt NEW.txt"""
import re
import sys

# kernel, which loop (rotated: rotated_loop; else the V loop), work per thread per iteration, bytes
# per thread per iteration (read + written)
CASES = [
    ("kv_group_stats_kernelILb1ELb1E", True, "4 keys of K, 16 channels", 4 * 32),
    ("kv_group_stats_kernelILb1ELb1E", False, "4 keys of V, 16 channels", 4 * 32),
    ("quantize_q_kernelILb1ELNS0_4rows5ScaleE0E", True, "2 rows of Q, 32 channels", 2 * 96),
    ("quantize_kv_kernelILb1ELNS0_4rows5ScaleE2E", True, "2 rows of K, 32 channels", 2 * 96),
    ("quantize_q_kernelILb0ELNS0_4rows5ScaleE0E", False, "2 rows of Q, no rotation", 2 * 96),
    ("quantize_kv_kernelILb0ELNS0_4rows5ScaleE2E", False, "2 rows of K, no rotation", 2 * 96),
]


def loops(path):
    out, cur = {}, None
    lines = open(path).read().splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"== (\S+): \d+ instructions", ln)
        if m:
            cur = m.group(1)
            out[cur] = []
        m = re.match(r"loop \S+: (\d+) instructions", ln)
        if m and cur:
            hist = dict((k, int(v)) for k, v in (x.split() for x in lines[i + 1].strip().split(", ")))
            out[cur].append((int(m.group(1)), hist))
    return out


def rotated_loop(hist):
    """A loop that rotates: the butterflies' adds (an unrotated loop has at most ~80 FADD)."""
    return hist.get("FADD", 0) >= 200


def pick(ls, kernel, rotated):
    name = next(k for k in ls if k.startswith(kernel))
    cand = [(n, h) for n, h in ls[name] if rotated_loop(h) == rotated]
    return min(cand, key=lambda c: c[0])  # the full-tile loop (a tail copy has the checks)


base, new = loops(sys.argv[1]), loops(sys.argv[2])
print(f"# steady-state loop instructions per thread (static SASS), {sys.argv[1]} -> {sys.argv[2]}")
print(f"{'loop':44s} {'base':>6s} {'new':>6s} {'base/B':>7s} {'new/B':>7s} {'change':>7s}")
for kernel, rotated, what, nbytes in CASES:
    (nb, hb), (nn, hn) = pick(base, kernel, rotated), pick(new, kernel, rotated)
    print(f"{what:44s} {nb:6d} {nn:6d} {nb / nbytes:7.2f} {nn / nbytes:7.2f} {nn / nb - 1:+7.1%}"
          f"   spills in loop: LDL {hb.get('LDL', 0)}->{hn.get('LDL', 0)}")
