#!/usr/bin/env python3
"""Predicted bandwidth of the default pre-pass (smoothing, rotation, K per head) at the seed shape,
from a measured GPU run and the static SASS of the measured kernels and of a candidate
(lab/sass/prepass_counts.sh listings). A prediction, not a measurement.

Model: per part (the Q pass; the K/V part = channel reduction + fused K/V pass) the time is linear
in the thread-instructions of the steady-state loops per row (every lane of the row, every loop
body instruction counted once; V^T's loop and everything outside the loops taken as unchanged).
The slope of each part is calibrated on the measured run: the default record (rotated) and the
record with the same options but no rotation (mode smooth_kv_khead), whose loop counts come from
the measured listing. Then
  T_part(candidate) = T_part(measured, rotated) + slope_part * (I_candidate - I_measured)
and the prediction is bytes_moved / (T_q + T_kv) beside that record's copy bandwidth.
It assumes that an instruction saved costs what the measured rotated-minus-plain difference
says an instruction costs (no saturation at the memory bound: do not read it past the plain
record's time), that the lanes per row of a listing are those its header names (default 4 for
Q/K rows, 8 for the statistics), and that a loop iteration holds 2 rows (Q/K) or 4 keys (stats).
Usage: prepass_bw_predict.py MEASURED.json MEASURED_LISTING.txt CANDIDATE_LISTING.txt..."""
import json
import re
import sys

SHAPE = dict(b=2, s=8192, h=32, h_kv=32)


def listing(path):
    out, cur, lanes = {}, None, {"rows": 4, "stats": 8}
    lines = open(path).read().splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"# lanes: rows (\d+), stats (\d+)", ln)
        if m:
            lanes = {"rows": int(m.group(1)), "stats": int(m.group(2))}
        m = re.match(r"== (\S+): \d+ instructions", ln)
        if m:
            cur = m.group(1)
            out[cur] = []
        m = re.match(r"loop \S+: (\d+) instructions", ln)
        if m and cur:
            hist = dict((k, int(v)) for k, v in (x.split() for x in lines[i + 1].strip().split(", ")))
            out[cur].append((int(m.group(1)), hist))
    return out, lanes


def rotated_loop(hist):
    """A loop that rotates: the butterflies' adds (an unrotated loop has at most ~80 FADD)."""
    return hist.get("FADD", 0) >= 200


def loop(ls, kernel, rotated):
    name = next(k for k in ls if k.startswith(kernel))
    cand = [n for n, h in ls[name] if rotated_loop(h) == rotated]
    return min(cand)  # the full-tile loop (a tail copy has the checks)


def per_row(path, rotated):
    """Thread-instructions per row (Q) and per key (K/V part) of the steady-state loops."""
    ls, lanes = listing(path)
    lr, lst = lanes["rows"], lanes["stats"]
    r, k = int(rotated), int(rotated)
    q = loop(ls, f"quantize_q_kernelILb{r}ELNS0_4rows5ScaleE0E", rotated) * lr / 2
    k_rows = loop(ls, f"quantize_kv_kernelILb{k}ELNS0_4rows5ScaleE2E", rotated) * lr / 2
    stats = f"kv_group_stats_kernelILb{k}ELb1E"
    k_stats = loop(ls, stats, rotated) * lst / 4
    v_stats = loop(ls, stats, False) * lst / 4
    return q, k_rows + k_stats + v_stats


def record(runs, mode):
    return next(r for r in runs if r["mode"] == mode and r.get("variant") == "v2" and
                all(r[key] == val for key, val in SHAPE.items()))


def main():
    measured, base, cands = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs = json.load(open(measured))["prepass"]
    rot, plain = record(runs, "smooth_kv_hadamard_khead"), record(runs, "smooth_kv_khead")
    (iq_r, ikv_r), (iq_p, ikv_p) = per_row(base, True), per_row(base, False)
    slope_q = (rot["q_only_ms_median"] - plain["q_only_ms_median"]) / (iq_r - iq_p)
    slope_kv = (rot["kv_only_ms_median"] - plain["kv_only_ms_median"]) / (ikv_r - ikv_p)
    copy = rot["copy_gbps"]
    print(f"# PREDICTION (static SASS + linear model, lab/sass/prepass_bw_predict.py), not a "
          f"measurement; calibrated on {measured} (b=2 s=8192 h=32, v2)")
    print(f"# measured: default {rot['gbps']:.0f} GB/s ({rot['gbps'] / copy:.1%} of copy "
          f"{copy:.0f}); no rotation {plain['gbps']:.0f} GB/s ({plain['gbps'] / plain['copy_gbps']:.1%})")
    print(f"# loop instructions per row, measured listing {base}: Q {iq_r:.0f} (plain {iq_p:.0f}),"
          f" K/V {ikv_r:.0f} (plain {ikv_p:.0f}); ms per instruction-per-row: Q {slope_q:.3g}, "
          f"K/V {slope_kv:.3g}")
    print(f"{'listing':52s} {'Q/row':>6s} {'KV/key':>7s} {'Q ms':>7s} {'KV ms':>7s} {'GB/s':>6s} "
          f"{'of copy':>8s}")
    for path in [base] + cands:
        iq, ikv = per_row(path, True)
        tq = rot["q_only_ms_median"] + slope_q * (iq - iq_r)
        tkv = rot["kv_only_ms_median"] + slope_kv * (ikv - ikv_r)
        gbps = rot["bytes_moved"] / ((tq + tkv) * 1e-3) / 1e9
        print(f"{path:52s} {iq:6.0f} {ikv:7.0f} {tq:7.4f} {tkv:7.4f} {gbps:6.0f} {gbps / copy:8.1%}")


if __name__ == "__main__":
    main()
