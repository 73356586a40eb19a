"""The lab probes' head-to-head pair loop (one_pass_e2e.py, rope_pairs.py): each pair of
callables alternated by bench/speed.head_to_head, one record per method with the pair it ran in,
and a printed line per pair; and their error verdict (a candidate within 10% of a baseline)."""
from __future__ import annotations

import statistics

import speed


def time_pairs(run: dict, pairs, b: int, s: int, h: int, h_kv: int, causal: bool, runs: int,
               protocol: str, flops, records: list) -> None:
    """run: name -> callable; pairs: (a, b) names; flops(b, s, h, causal) -> FLOPs per call / 1e9
    per millisecond's TFLOP/s (as the callers define it); records gains the speed records."""
    for a, bb in pairs:
        ta, tb = speed.head_to_head(run[a], run[bb], runs)
        row = {"pair": f"{a} vs {bb}"}
        for m, t in ((a, ta), (bb, tb)):
            med = statistics.median(t)
            rec = {"method": m, "b": b, "sq": s, "sk": s, "h": h, "h_kv": h_kv, "causal": causal,
                   "tflops_median": flops(b, s, h, causal) / med / 1e9, "ms_median": med,
                   "runs": len(t), "protocol": protocol, "pair": row["pair"]}
            records.append(rec)
            row[m] = rec["tflops_median"]
        print(f"b{b} s{s} h{h}/{h_kv} causal={int(causal)} {row['pair']}: "
              f"{row[a]:.0f} vs {row[bb]:.0f} TFLOP/s (ratio {row[a] / row[bb]:.3f})", flush=True)


def within_10pct(rec: dict, cand: dict, base: dict) -> None:
    """rec gains rmse_ratio, max_ratio (candidate / baseline error_metrics) and pass: both ratios
    <= 1.10 (None and False when either RMSE is missing)."""
    ok = all(x is not None for x in (cand["rmse"], base["rmse"]))
    rec["rmse_ratio"] = cand["rmse"] / base["rmse"] if ok else None
    rec["max_ratio"] = cand["max_abs"] / base["max_abs"] if ok else None
    rec["pass"] = bool(ok and rec["rmse_ratio"] <= 1.10 and rec["max_ratio"] <= 1.10)
