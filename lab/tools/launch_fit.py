"""Per-wave times from a lottery_ab.py run with --shape-set launch (132 heads, sq = 128 n: n whole
waves of one tile per SM): each method's median time per n, the difference, and the least-squares
line time = intercept + slope * n over n >= 2 (n = 1 apart: one wave, no tile boundary).
    python3 lab/tools/launch_fit.py lab/results/probe/...-launch-ab.json > ...-launch-fit.txt"""
import json
import statistics as st
import sys


def fit(xs, ys):
    mx, my = st.mean(xs), st.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


def main(path):
    d = json.load(open(path))
    by = {}
    for r in d["records"]:
        if "ms_median" in r:
            by.setdefault((r["sk"], r["sq"] // 128), {}).setdefault(r["method"], []).append(r["ms_median"] * 1e3)
    print(f"# {path}\n# commit {d.get('commit')} gpu {d.get('gpu')} date {d.get('date')}")
    for sk in sorted({k[0] for k in by}, reverse=True):
        rows = sorted((n, v) for (s, n), v in by.items() if s == sk)
        methods = [m for m in rows[0][1] if m != "fa3_fp8"] + ["fa3_fp8"]
        print(f"sk {sk}: median us per call (mean over rounds)")
        for n, v in rows:
            cells = "  ".join(f"{m} {st.mean(v[m]):8.1f}" for m in methods)
            print(f"  n {n:3d}  {cells}  ratio {st.mean(v['fa3_fp8']) / st.mean(v[methods[0]]):.3f}")
        for m in methods:
            pts = [(n, st.mean(v[m])) for n, v in rows if n >= 2]
            a, b = fit([p[0] for p in pts], [p[1] for p in pts])
            print(f"  fit n >= 2, {m:8s}: {b:7.2f} us per wave + {a:6.1f} us")


if __name__ == "__main__":
    main(sys.argv[1])
