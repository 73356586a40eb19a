#!/usr/bin/env python3
"""Issue 14's two bounds against the files that measured them: what every mode reached, and what
the unbuilt or unmeasured levers could add at most (CPU only: it reads GPU files, measures nothing).

Item 1: some mode with kernel-only RMSE and max <= 2x fa3_bf16 end to end on every dataset (on the
pre-pass's inputs) and >= 0.95x fa3_fp8 head to head at the seed, both masks.
Item 2: the default's kernel-only RMSE and max <= fa3_fp8's on every dataset and mask, same
per-head inputs.

usage: lab/study/issue14_bounds.py [--out PATH]   (paths below are the defaults; each is printed)"""
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import wave_tail  # noqa: E402  (tile_scores: the scores a tile computes, first_block.h's rule)
sys.path.insert(0, str(ROOT / "bench"))
import report  # noqa: E402  (a results file's own pairing and accuracy index)
FULL = ROOT / "results/2026-12-04-h200-0c1f1f56342e.json"           # last full run
TRIO = ROOT / "results/accurate-dispatch-ab-1851a134fe16.json"       # three-warpgroup A/B
CLOCK = ROOT / "lab/results/probe/2026-12-04-h200-s28-clock-power-accurate.json"
REFIT = ROOT / "lab/results/study/2026-12-04-cpu-s30-wave-tail-refit.md"
MODEL = ROOT / "results/fastmode-study-2.json"                       # CPU model, H200 adder
TRIO_CAUSAL = ROOT / "lab/results/probe/2026-12-04-h200-s29-trio2-lottery-sweep18.json"  # trio, causal too
SEED = report.SEED  # (b, sq, sk, h, h_kv, d)


def full_ratio(idx, seed, method, causal):
    """method / FA3 FP8, head to head at the full run's seed row (report.pair, the report's own)."""
    ratio = report.pair(idx, (seed, causal), method, "fa3_fp8")[2]
    if ratio is None:
        raise SystemExit(f"no head-to-head records for {method} / fa3_fp8 causal={causal}")
    return ratio


def lottery_ratio(lot, config, causal):
    """config / FA3 FP8 at the seed: the lottery's own mean over rounds (its summary record)."""
    for r in lot["records"]:
        if (r.get("summary") and r["method"] == config and r["causal"] == causal
                and (r["b"], r["sq"], r["sk"], r["h_kv"]) == SEED[:3] + SEED[4:5]):
            return r["ratio_mean"]
    raise SystemExit(f"no summary record for {config} causal={causal}")


def ko_ratios(ix, method):
    """{(dataset, causal): (rmse ratio, max ratio)}: method's kernel-only error over FA3 FP8's,
    same inputs (ix: report.acc_index of the full run)."""
    out = {}
    for (d, c, m, ref), r in ix.items():
        if m == method and ref == "kernel_only":
            p = ix[(d, c, "fa3_fp8", "kernel_only")]
            out[(d, c)] = (r["rmse"] / p["rmse"], r["max_abs"] / p["max_abs"])
    return out


def refit_best_g():
    """The per-score rate trio / two of the best-fitting row of the refit table (least error)."""
    rows = []
    for ln in REFIT.read_text().splitlines():
        cols = [c.strip() for c in ln.strip("|").split("|")]
        if len(cols) == 4 and cols[0].replace(".", "").isdigit():
            rows.append((float(cols[3]), float(cols[1]), float(cols[0])))
    err, g, v = min(rows)
    return g, v, max(r[1] for r in rows)


def main():
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    full = json.loads(FULL.read_text())
    idx, seed = report._index(full["speed"]), report.seed_of(full)
    L = [f"# Issue 14's bounds against the files that measured them (lab/study/issue14_bounds.py)", "",
         f"Written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC at commit {commit}, on the CPU "
         "(no GPU figure is new here). Inputs: " + ", ".join(f"`{p.relative_to(ROOT)}`" for p in
                                                             (FULL, TRIO, TRIO_CAUSAL, CLOCK, REFIT, MODEL)) + ".", ""]

    # ---- item 1: speed of the accurate mode at the seed
    L += ["## Item 1: the accurate mode's speed at the seed (b 2, 8192 x 8192, 32 heads)", "",
          f"Head to head with FA3 FP8 (`{FULL.name}`, commit {full['commit']}, {full['date']}):", "",
          "| mode | non-causal | causal |", "|---|---:|---:|"]
    for m in ("fp8attn", "fp8attn_exact", "fp8attn_accurate", "fp8attn_p_fp16", "fp8attn_p_hilo"):
        L.append(f"| {m} | {full_ratio(idx, seed, m, False):.3f} | {full_ratio(idx, seed, m, True):.3f} |")
    trio = json.loads(TRIO.read_text())
    tr = {(cfg, c): lottery_ratio(trio, cfg, c) for cfg in ("racc", "nacc") for c in (False, True)}
    L += ["", f"The three-warpgroup form (`{TRIO.name}`, {trio['date']}, the lottery's mean over "
          "its two rounds; `racc` the two-warpgroup kernel, `nacc` with the trio for long non-causal "
          "calls): "
          f"non-causal {tr[('racc', False)]:.3f} -> {tr[('nacc', False)]:.3f}, causal "
          f"{tr[('racc', True)]:.3f} -> {tr[('nacc', True)]:.3f} (the causal call takes the same kernel "
          "in both libraries).", ""]
    clk = json.loads(CLOCK.read_text())
    cyc = {}
    for r in clk["records"]:
        if tuple(int(x) for x in r["shape"].split(",")) == SEED[:5]:  # b,sq,sk,h,h_kv
            cyc[(r["method"], r["causal"])] = r
    names = sorted({m for m, _ in cyc})
    fa3 = next(m for m in names if "fa3" in m and "fp8" in m)
    acc = next(m for m in names if m.endswith("accurate"))
    L += [f"Back to back at the power cap (`{CLOCK.name}`, {clk['date']}, 4 s each): "]
    for c in (False, True):
        a, f = cyc[(acc, c)], cyc[(fa3, c)]
        L.append(f"- {'causal' if c else 'non-causal'}: time ratio accurate / FA3 FP8 "
                 f"{f['ms_per_call'] / a['ms_per_call']:.3f} at {a['sm_clock_mhz_median']:.0f} against "
                 f"{f['sm_clock_mhz_median']:.0f} MHz; in cycles {f['mcycles_per_call'] / a['mcycles_per_call']:.3f}.")
    t2 = json.loads(TRIO_CAUSAL.read_text())
    tc = {cfg: lottery_ratio(t2, cfg, True) for cfg in ("racc", "t2f")}
    L += ["", f"The three-warpgroup kernel run on causal calls too (`{TRIO_CAUSAL.name}`, "
          f"{t2['date']}, `t2f`; whole first blocks): at the seed causal "
          f"{tc['t2f']:.3f} of FA3 FP8 against the two-warpgroup kernel's "
          f"{tc['racc']:.3f} in the same call."]
    g, v, gmax = refit_best_g()
    causal_now = tr[("racc", True)]
    sq, sk = SEED[1], SEED[2]
    need = sq * (sq + 1) // 2  # bottom-right causal, sq == sk: the scores a row set must see

    def computed(bm, bn):
        return sum(wave_tail.tile_scores(sq, sk, True, m, bm, bn, True)
                   for m in range((sq + bm - 1) // bm)) / need
    two, trio = computed(128, 192), computed(192, 128)
    bound = causal_now * gmax * two / trio
    L += ["", f"Scores computed per needed score at the seed causal, both with the first-block trim "
          f"(`wave_tail.tile_scores`): two-warpgroup tiles {two:.4f}, three-warpgroup tiles "
          f"{trio:.4f}.", "",
          f"**Estimate for a causal three-warpgroup kernel:** today's causal ratio x the largest per-score edge x the scores "
          f"ratio = {causal_now:.3f} x {gmax:.3f} x {two / trio:.4f} = **{bound:.3f}** < 0.95. "
          "The trio with the trim was not measured: it spilled (`lab/variants/trio-trim-q.patch` "
          "is the static fix). End-aligned causal tiles (branch causal-end-tiles) save nothing at "
          "8192 rows (a multiple of the 128-row tile). In cycles (back to back) the causal ratio is "
          f"{cyc[(fa3, True)]['mcycles_per_call'] / cyc[(acc, True)]['mcycles_per_call']:.3f}: even "
          "at FA3 FP8's clock the accurate kernel would miss 0.95.", ""]

    # ---- item 2: the default's kernel-only error against FA3 FP8
    L += ["## Item 2: kernel-only error over FA3 FP8's, same per-head inputs", "",
          f"`{FULL.name}` (RMSE ratio / max ratio; <= 1.000 on both is the bound):", "",
          "| dataset | causal | fp8attn (default) | fp8attn_exact |", "|---|---|---:|---:|"]
    ix = report.acc_index(full["accuracy"])
    rd, rx = ko_ratios(ix, "fp8attn"), ko_ratios(ix, "fp8attn_exact")
    for k in sorted(rd):
        L.append(f"| {k[0]} | {'yes' if k[1] else 'no'} | {rd[k][0]:.3f} / {rd[k][1]:.3f} | "
                 f"{rx[k][0]:.3f} / {rx[k][1]:.3f} |")
    for name, rr in (("fp8attn", rd), ("fp8attn_exact", rx)):
        ok = sum(1 for a, b in rr.values() if a <= 1 and b <= 1)
        L.append("")
        L.append(f"- {name}: at or below on both at {ok} of {len(rr)}; worst RMSE ratio "
                 f"{max(a for a, _ in rr.values()):.3f}, worst max ratio {max(b for _, b in rr.values()):.3f}.")
    m = json.loads(MODEL.read_text())
    ver = m["verdict"]
    L += ["", f"The CPU model under the H200's FP8 adder (`{MODEL.name}`, part C; yardstick FA3 FP8 "
          "224 under the same adder), worst ratio over the 16 cases:"]
    for lab in ("today (o5 s3), H200 adder", "o8 s0 (ours), H200 adder", "o8 s0, l = FP32 p, H200 adder"):
        L.append(f"- {lab}: {ver[lab]['worst_ratio']:.3f} (RMSE {ver[lab]['worst_rmse_ratio']:.3f}, "
                 f"max {ver[lab]['worst_max_ratio']:.3f})")
    ex = [full_ratio(idx, seed, "fp8attn_exact", c) for c in (False, True)]
    de = [full_ratio(idx, seed, "fp8attn", c) for c in (False, True)]
    out_r = [v for (d, _), v in rd.items() if d == "outlier"]
    lo, hi = min(min(a, b) for a, b in out_r), max(max(a, b) for a, b in out_r)
    L += ["", "Speed at the seed, head to head with FA3 FP8 (non-causal / causal): default "
          f"{de[0]:.3f} / {de[1]:.3f}, exact {ex[0]:.3f} / {ex[1]:.3f}.", "",
          "**Reading:** FA3's numerics (the exact mode) tie FA3 FP8 within the yardstick's own spread "
          "but are not at or below it everywhere; the one cheaper change the model knows (o8 s0 with "
          "the tensor core's l) stays above on the outlier set, and the default's constants, which "
          f"buy its speed, are {lo:.1f}-{hi:.1f}x above there. No variant measured or modelled is at or below "
          "FA3 FP8 on all 16 cases.", ""]
    text = "\n".join(L)
    sys.stdout.write(text)
    if out:
        Path(out).write_text(text)


if __name__ == "__main__":
    main()
