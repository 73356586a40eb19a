"""Writes the harness's results: <stem>.json (the record), <stem>.md (tables with ratios),
<stem>.png (TFLOP/s per sweep row) and <stem>-tradeoff.png (issue 14: error vs speed). The table
builders are shared with tools/readme_status.py, so the README and the report say the same.

Speed records come in pairs: {method, ..., protocol: "head_to_head:<peer>" | "in_context:<peer>"},
the peer's record naming the method back. A ratio is always taken within one pair.
"""
from __future__ import annotations

import json
from pathlib import Path

HEADLINE_PEER = "fa3_fp8"
KERNEL_PEERS = ("fa3_fp8", "fa3_bf16", "sdpa_cudnn_bf16")
SEED = (2, 8192, 8192, 32, 32, 128)
SEED_BOUND = 0.95      # fp8attn / fa3_fp8 at the seed shape, both masks (the seed's bound)
GOAL = 1.00            # fp8attn / fa3_fp8 at every row (issue 13); fp8attn_end_to_end / fa3_bf16
E2E_LONG_GOAL, E2E_LONG_TOKENS = 1.20, 4096   # issue 17: at rows with >= 4096 tokens per sequence
# Issue 17's rotary-fused pair (the harness's part "rope") and its peer; the same goals.
ROPE_PAIR, ROPE_PEER = "fp8attn_rope_quantize_pair", "fa3_bf16_rope_pair"
ROPE_METHODS = (ROPE_PAIR, ROPE_PEER)
PROTOCOLS = ("head_to_head", "in_context")  # bench/speed.py's
ACCURATE, E2E_ACCURATE = "fp8attn_accurate", "fp8attn_accurate_end_to_end"
# The modes table's methods: the kernel per P precision (E4M3 V^T), the accurate mode (FP16 V^T)
# and its BF16-in call.
MODES = ("fp8attn", "fp8attn_exact", "fp8attn_p_hilo", "fp8attn_p_fp16", ACCURATE, E2E_ACCURATE)
ACC_BOUND = 2.0        # issue 14: the accurate mode's kernel-only error <= 2x fa3_bf16 end to end
ACC_YARDSTICK = "fa3_bf16"
ACC_SECOND = "sdpa_cudnn_bf16"
# (label, method, reference) of the accuracy ratio table (README and report).
ACC_COLUMNS = [("fp8attn kernel-only", "fp8attn", "kernel_only"),
               ("fp8attn exact-softmax kernel-only", "fp8attn_exact", "kernel_only"),
               ("FA3 FP8 kernel-only", "fa3_fp8", "kernel_only"),
               ("fp8attn kernel-only, own inputs", "fp8attn@prepass", "kernel_only"),
               ("P hi+lo kernel-only, own inputs", "fp8attn_p_hilo@prepass", "kernel_only"),
               ("FP16 P kernel-only, own inputs", "fp8attn_p_fp16@prepass", "kernel_only"),
               ("accurate kernel-only, own inputs", f"{ACCURATE}@prepass", "kernel_only"),
               ("accurate kernel-only, per-head Q K + FP16 V", ACCURATE, "kernel_only"),
               ("fp8attn end-to-end (BF16 in)", "fp8attn_end_to_end", "end_to_end"),
               ("accurate end-to-end (BF16 in)", E2E_ACCURATE, "end_to_end"),
               ("FA3 FP8 end-to-end", "fa3_fp8", "end_to_end"),
               ("SDPA BF16 end-to-end", ACC_SECOND, "end_to_end")]


def _f(x, spec=".3e"):
    return "null" if x is None else format(x, spec)


def fmt_tf(rec) -> str:
    return "failed" if rec is None or rec.get("tflops_median") is None else f"{rec['tflops_median']:.1f}"


def shape_key(r):
    return (r["b"], r["sq"], r["sk"], r["h"], r["h_kv"], r["d"])


def _index(speed: list) -> dict:
    return {(shape_key(r), r["causal"], r["method"], r.get("protocol")): r for r in speed}


def rows(speed: list) -> list:
    """Sweep rows (shape key, causal) in the order measured, from the paired records."""
    return list(dict.fromkeys((shape_key(r), r["causal"]) for r in speed
                              if str(r.get("protocol", "")).startswith("head_to_head:")))


def pair(idx, row, a: str, b: str, protocol: str = "head_to_head"):
    """(a's record, b's record, a / b) of one pairing at one row; None where missing/failed."""
    ra = idx.get((row[0], row[1], a, f"{protocol}:{b}"))
    rb = idx.get((row[0], row[1], b, f"{protocol}:{a}"))
    ok = ra and rb and ra.get("tflops_median") and rb.get("tflops_median")
    return ra, rb, (ra["tflops_median"] / rb["tflops_median"] if ok else None)


def is_rope(r) -> bool:
    """A record of the part "rope": a rope method, or a method paired with one."""
    return r["method"] in ROPE_METHODS or str(r.get("protocol", "")).partition(":")[2] in ROPE_METHODS


def split_rope(speed: list) -> tuple[list, list]:
    """(the other records, the rope part's): each table reads its own rows."""
    return [r for r in speed if not is_rope(r)], [r for r in speed if is_rope(r)]


def goal_of(row) -> float:
    """Issue 17's goal for a BF16-in path at a row: >= 1.20 at >= 4096 tokens, else >= 1.00."""
    return E2E_LONG_GOAL if row[0][1] >= E2E_LONG_TOKENS else GOAL


def bf16_in_cells(idx, row, mine: str, peer: str) -> list[str]:
    """A BF16-in table's cells for a row: both TFLOP/s, the ratio head to head and in context, the
    goal (the plain end-to-end table's and the rotary-fused one's)."""
    ra, rb, ratio = pair(idx, row, mine, peer)
    ctx = pair(idx, row, mine, peer, "in_context")[2]
    return [fmt_tf(ra), fmt_tf(rb), _r(ratio), _r(ctx), f">= {goal_of(row):.2f}"]


def bf16_in_misses(idx, all_rows, mine: str, peer: str, protocol: str = "head_to_head") -> list:
    """The rows where mine / peer misses issue 17's goal (a missing figure is a miss)."""
    return [row for row in all_rows if (pair(idx, row, mine, peer, protocol)[2] or 0) < goal_of(row)]


def _r(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _row_cells(row) -> list[str]:
    (b, sq, sk, h, h_kv, d), causal = row
    return [str(b), str(sq), str(sk), f"{h}/{h_kv}", "yes" if causal else "no"]


def headline_table(speed: list) -> list[str]:
    idx = _index(speed)
    head = ["b", "sq", "sk", "h/h_kv", "causal", "fp8attn", "FA3 FP8", "**fp8attn / FA3 FP8**",
            "same, in context", "FA3 BF16", "fp8attn / FA3 BF16", "in context", "SDPA cuDNN BF16",
            "fp8attn / SDPA", "in context"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for row in rows(speed):
        cells = _row_cells(row)
        for peer in KERNEL_PEERS:
            ra, rb, ratio = pair(idx, row, "fp8attn", peer)
            ctx = pair(idx, row, "fp8attn", peer, "in_context")[2]
            cells += ([fmt_tf(ra)] if peer == HEADLINE_PEER else []) + [fmt_tf(rb), _r(ratio), _r(ctx)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def seed_of(res: dict) -> tuple:
    """The seed row of this run (the sweep's first row; tiny in a dry run)."""
    return tuple(res.get("speed_protocol", {}).get("seed") or SEED)


def verdict_lines(speed: list, seed=SEED) -> list[str]:
    idx, out = _index(speed), []
    all_rows = rows(speed)
    for causal in (False, True):
        ratio = pair(idx, (seed, causal), "fp8attn", HEADLINE_PEER)[2]
        out.append(f"- seed shape, {'causal' if causal else 'non-causal'}: fp8attn / FA3 FP8 = "
                   f"{_r(ratio)} head to head: "
                   + ("no figure" if ratio is None else
                      f"{'meets' if ratio >= SEED_BOUND else 'misses'} the seed's bound {SEED_BOUND}"))
    ratios = [(row, pair(idx, row, "fp8attn", HEADLINE_PEER)[2]) for row in all_rows]
    below = [row for row, r in ratios if r is None or r < GOAL]
    out.append(f"- every row >= {GOAL:.2f} x FA3 FP8 (the team's goal): "
               + ("met" if all_rows and not below else
                  f"not met at {len(below)} of {len(all_rows)} rows (missing figures count as misses)"))
    gaps = [(row, peer, proto) for row in all_rows for peer in KERNEL_PEERS
            for proto in PROTOCOLS if pair(idx, row, "fp8attn", peer, proto)[2] is None]
    out.append(f"- fp8attn and each of {', '.join(KERNEL_PEERS)} with figures at every row, head to head "
               "and in context: " + ("complete" if all_rows and not gaps else
                                     f"{len(gaps)} pairings without a figure"))
    miss = bf16_in_misses(idx, all_rows, "fp8attn_end_to_end", "fa3_bf16")
    out.append(f"- BF16 in (issue 17): fp8attn_end_to_end / FA3 BF16 >= {GOAL:.2f} at every row and "
               f">= {E2E_LONG_GOAL} at >= {E2E_LONG_TOKENS} tokens per sequence: "
               + ("met" if all_rows and not miss else f"not met at {len(miss)} of {len(all_rows)} rows"))
    return out


def rope_table(speed: list) -> list[str]:
    """BF16 in, rotary fused: fp8attn_rope_quantize_pair against a BF16 rotary + FA3 BF16, head to
    head and in context, and against the plain end-to-end call (no rotary) head to head."""
    _, mine = split_rope(speed)
    idx = _index(mine)
    head = ["b", "sq", "sk", "h/h_kv", "causal", "rope + quantize + fp8attn", "BF16 rotary + FA3 BF16",
            "ratio", "ratio, in context", "goal", "plain end to end (same pairing)",
            "rope pair / plain"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for row in rows(mine):
        _, rp, plain = pair(idx, row, ROPE_PAIR, "fp8attn_end_to_end")
        lines.append("| " + " | ".join(_row_cells(row) + bf16_in_cells(idx, row, ROPE_PAIR, ROPE_PEER)
                                       + [fmt_tf(rp), _r(plain)]) + " |")
    return lines


def rope_verdict_lines(speed: list) -> list[str]:
    """Issue 17's goal on the rotary-fused pair, head to head and in context; a missing figure is a
    miss."""
    _, mine = split_rope(speed)
    idx, all_rows, out = _index(mine), rows(mine), []
    for protocol in PROTOCOLS:
        miss = bf16_in_misses(idx, all_rows, ROPE_PAIR, ROPE_PEER, protocol)
        out.append(f"- BF16 in, rotary fused (issue 17), {protocol.replace('_', ' ')}: {ROPE_PAIR} / "
                   f"{ROPE_PEER} >= {GOAL:.2f} at every row and >= {E2E_LONG_GOAL} at >= "
                   f"{E2E_LONG_TOKENS} tokens per sequence: "
                   + ("met" if all_rows and not miss else
                      f"not met at {len(miss)} of {len(all_rows)} rows (missing figures count as misses)"))
    return out


def e2e_table(speed: list) -> list[str]:
    idx = _index(speed)
    head = ["b", "sq", "sk", "h/h_kv", "causal", "fp8attn end to end", "FA3 BF16", "ratio",
            "ratio, in context", "goal"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for row in rows(speed):
        lines.append("| " + " | ".join(_row_cells(row) + bf16_in_cells(idx, row, "fp8attn_end_to_end",
                                                                       "fa3_bf16")) + " |")
    return lines


def _label(key) -> str:
    b, sq, sk, h, h_kv, _ = key
    return f"{b} x {sq}" + (f"/{sk}" if sk != sq else "") + f", h {h}/{h_kv}"


def modes_table(speed: list, seed=SEED, modes=MODES) -> list[str]:
    """Each mode head to head with FA3 FP8 and with FA3 BF16 (each pairing its own TFLOP/s), at the
    seed row and every other row where a mode besides fp8attn was paired; each ratio's in-context
    twin (every call after the QKV GEMM) where the harness ran it."""
    idx = _index(speed)
    extra = [k for k in dict.fromkeys(shape_key(r) for r in speed
                                      if r["method"] in modes[1:]) if k != tuple(seed)]
    lines = ["| mode | row | causal | TFLOP/s | FA3 FP8 (same pairing) | mode / FA3 FP8 | in context "
             "| TFLOP/s | FA3 BF16 (same pairing) | mode / FA3 BF16 | in context |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key in [tuple(seed)] + extra:
        for causal in (False, True):
            for mode in modes:
                cells = []
                for peer in (HEADLINE_PEER, "fa3_bf16"):
                    ra, rb, ratio = pair(idx, (key, causal), mode, peer)
                    ctx = pair(idx, (key, causal), mode, peer, "in_context")[2]
                    cells.append(f"{fmt_tf(ra)} | {fmt_tf(rb)} | {_r(ratio)} | {_r(ctx)}" if ra or rb
                                 else "- | - | - | -")
                if cells != ["- | - | - | -"] * 2:
                    lines.append(f"| {mode} | {_label(key)} | {'yes' if causal else 'no'} | "
                                 + " | ".join(cells) + " |")
    return lines


def accurate_verdict_lines(speed: list, seed=SEED) -> list[str]:
    """Issue 14's speed bounds on fp8attn_accurate: >= SEED_BOUND x FA3 FP8 at the seed, both
    masks; >= 1.0 x FA3 BF16 wherever it was paired with it (below, it has no reason to exist)."""
    idx, out = _index(speed), []
    for causal in (False, True):
        ratio = pair(idx, (tuple(seed), causal), ACCURATE, HEADLINE_PEER)[2]
        ctx = pair(idx, (tuple(seed), causal), ACCURATE, HEADLINE_PEER, "in_context")[2]
        out.append(f"- {ACCURATE}, seed shape, {'causal' if causal else 'non-causal'}: / FA3 FP8 = "
                   f"{_r(ratio)} head to head: " + ("no figure" if ratio is None else
                                                    f"{'meets' if ratio >= SEED_BOUND else 'misses'} "
                                                    f"issue 14's bound {SEED_BOUND}")
                   + (f" ({_r(ctx)} in context)" if ctx is not None else ""))
    paired = [row for row in rows(speed) if (row[0], row[1], ACCURATE, "head_to_head:fa3_bf16") in idx]
    below = [row for row in paired if (pair(idx, row, ACCURATE, "fa3_bf16")[2] or 0) < GOAL]
    if paired:
        out.append(f"- {ACCURATE} / FA3 BF16 >= {GOAL:.2f} at every row it was paired with FA3 BF16: "
                   + ("met" if not below else "NOT met at " + ", ".join(
                       f"{_label(k)} {'causal' if c else 'non-causal'}" for k, c in below)
                      + ": there FA3 BF16 is faster and rounds nothing, so the mode has no reason to exist"))
    return out


def other_speed_table(speed: list) -> list[str]:
    """Records outside the pairings (e.g. bench_prepass's own alternation)."""
    other = [r for r in speed if not str(r.get("protocol", "")).startswith(("head_to_head:", "in_context:"))]
    if not other:
        return []
    lines = ["| method | b | sq | sk | h/h_kv | causal | TFLOP/s | runs | protocol |",
             "|---|---:|---:|---:|---|---|---:|---:|---|"]
    lines += [f"| {r['method']} | {r['b']} | {r['sq']} | {r['sk']} | {r['h']}/{r['h_kv']} | "
              f"{'yes' if r['causal'] else 'no'} | {fmt_tf(r)} | {r.get('runs')} | {r.get('protocol', '-')} |"
              for r in other]
    return lines


def acc_index(acc: list) -> dict:
    return {(r["dataset"], r["causal"], r["method"], r["reference"]): r for r in acc}


def acc_ratio(ix, ds, causal, method, reference, field="rmse", base=ACC_YARDSTICK):
    r, y = ix.get((ds, causal, method, reference)), ix.get((ds, causal, base, "end_to_end"))
    if not r or not y or r.get(field) is None or not y.get(field):
        return None
    return r[field] / y[field]


def accuracy_verdict_lines(acc: list) -> list[str]:
    """Issue 14's accuracy bounds, over every (dataset, mask) with a yardstick: the accurate mode's
    kernel-only RMSE and max on its own inputs <= ACC_BOUND x fa3_bf16's end-to-end; fp8attn's
    kernel-only RMSE and max <= fa3_fp8's on the same per-head inputs. Missing figures are misses."""
    ix = acc_index(acc)
    cases = list(dict.fromkeys((r["dataset"], r["causal"]) for r in acc
                               if (r["dataset"], r["causal"], ACC_YARDSTICK, "end_to_end") in ix))
    if not cases:
        return []

    def where(bad):
        return ", ".join(f"{ds} {'causal' if c else 'non-causal'}" for ds, c in bad)
    out = []
    for method in (f"{ACCURATE}@prepass", ACCURATE):
        bad = [(ds, c) for ds, c in cases
               if any((acc_ratio(ix, ds, c, method, "kernel_only", f) is None
                       or acc_ratio(ix, ds, c, method, "kernel_only", f) > ACC_BOUND)
                      for f in ("rmse", "max_abs"))]
        out.append(f"- {method} kernel-only RMSE and max <= {ACC_BOUND:g} x {ACC_YARDSTICK} end-to-end "
                   f"on every dataset and mask ({len(cases)}): "
                   + ("met" if not bad else f"not met at {len(bad)}: {where(bad)}"))
    # The default (issue 14 item 2), and the exact-softmax mode beside it (FA3 FP8's numerics).
    for method in ("fp8attn", "fp8attn_exact"):
        bad = []
        for ds, c in cases:
            for f in ("rmse", "max_abs"):
                a, b = ix.get((ds, c, method, "kernel_only")), ix.get((ds, c, HEADLINE_PEER, "kernel_only"))
                if not a or not b or a.get(f) is None or b.get(f) is None or a[f] > b[f]:
                    bad.append((ds, c))
                    break
        out.append(f"- {method} kernel-only RMSE and max <= FA3 FP8's (same per-head inputs) on every "
                   f"dataset and mask ({len(cases)}): "
                   + ("met" if not bad else f"not met at {len(bad)}: {where(bad)}"))
    return out


def accuracy_ratio_table(acc: list, field: str = "rmse") -> list[str]:
    ix = acc_index(acc)
    cases = list(dict.fromkeys((r["dataset"], r["causal"]) for r in acc
                               if (r["dataset"], r["causal"], ACC_YARDSTICK, "end_to_end") in ix
                               or (r["dataset"], r["causal"], ACC_SECOND, "end_to_end") in ix))
    head = ["dataset", "causal"] + [c[0] for c in ACC_COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * len(ACC_COLUMNS)]
    for ds, causal in cases:
        ratios = [acc_ratio(ix, ds, causal, m, ref, field) for _, m, ref in ACC_COLUMNS]
        if all(r is None for r in ratios):  # no yardstick here (bench_prepass's own sets)
            continue
        cells = [_r2(r) for r in ratios]
        lines.append(f"| {ds} | {'yes' if causal else 'no'} | " + " | ".join(cells) + " |")
    return lines


def _r2(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def accuracy_table(acc: list) -> list[str]:
    ix = acc_index(acc)
    head = ["dataset", "causal", "method", "inputs", "reference", "rmse", "max_abs", "rel_rmse",
            f"rmse / {ACC_YARDSTICK} e2e", f"max_abs / {ACC_YARDSTICK} e2e", f"rmse / {ACC_SECOND} e2e"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|---|" + "---:|" * 6]
    for r in acc:
        k = (r["dataset"], r["causal"], r["method"], r["reference"])
        lines.append(f"| {r['dataset']} | {'yes' if r['causal'] else 'no'} | {r['method']} | "
                     f"{r.get('inputs', '-')} | {r['reference']} | {_f(r['rmse'])} | {_f(r['max_abs'])} | "
                     f"{_f(r['rel_rmse'])} | {_r2(acc_ratio(ix, *k))} | {_r2(acc_ratio(ix, *k, 'max_abs'))} | "
                     f"{_r2(acc_ratio(ix, *k, base=ACC_SECOND))} |")
    return lines


def rope_section(sp: dict) -> list[str]:
    """The heading and protocol of the rotary-fused table (the report's; the README's is shorter)."""
    return ["## BF16 in, rotary fused: rope + quantize + fp8attn vs a BF16 rotary + FA3 BF16", "",
            f"Pre-rotary BF16 Q, K, V and Llama's cos/sin tables (FP32, base 10000; keys at positions "
            f"0.., queries at the last sq of max(sq, sk)) in. {ROPE_PAIR}: fp8attn_attention_rope (the "
            f"rope + quantize pre-pass and the kernel). {ROPE_PEER}: fp8attn_rope_bf16 on Q, then on K "
            "(the library's copy-speed BF16 rotary, in place), then FA3 BF16. Each pair alternated in one "
            f"process as in the speed part ({sp.get('runs')} timed calls per method, blocks of "
            f"{sp.get('block')}, the order reversed each round); in context: each call after the QKV GEMM. 'plain end to end': fp8attn_end_to_end (no rotary) on the same tensors, "
            f"alternated with {ROPE_PAIR}: below 1, the fused rotary costs the pre-pass time.", ""]


def write_markdown(path: Path, res: dict, pngs: list[Path]) -> None:
    t = res["tests"]
    fa3 = res.get("fa3", {})
    lines = [f"# fp8attn GPU run: {res['date']}, {res['gpu_name']}, commit {res['commit']}", "",
             "| | |", "|---|---|", f"| command | `{res['command']}` |", f"| commit | {res['commit']} |",
             f"| GPU | {res['gpu_name']} ({res['gpu']}) |",
             f"| clocks | {res['clocks'].get('summary', '-')} |", f"| date | {res['date']} |",
             f"| tests | {t['passed']} passed, {t['failed']} failed |", f"| torch | {res.get('torch', '-')} |",
             f"| FA3 | {fa3.get('pin', '-')}: {'imported from ' + str(fa3.get('module')) if fa3.get('available') else 'NOT RUN: ' + str(fa3.get('error'))} |",
             f"| parts | {', '.join(res.get('parts', []))}; {res.get('harness_seconds', '?')} s |", ""]
    if res.get("dry_run"):
        lines += ["**DRY RUN on the CPU: numpy stand-ins, not the kernel, not FA3; nothing here is a "
                  "measurement.**", ""]
    detail = res.get("tests_detail") or {}
    if detail.get("stages"):
        lines += ["## Tests", "", "| stage | passed | failed | skipped | status |", "|---|---:|---:|---:|---|"]
        lines += [f"| {s['name']} | {s.get('passed', 0)} | {s.get('failed', 0)} | {s.get('skipped', 0)} | "
                  f"{s.get('status', '')} |" for s in detail["stages"]]
        lines.append("")
    sp = res.get("speed_protocol", {})
    main, rope = split_rope(res["speed"])
    if main:
        lines += ["## Speed: fp8attn head to head (TFLOP/s, medians)", "",
                  f"Each pair alternated in one process: blocks of {sp.get('block')} calls, the order "
                  f"reversed each round, {sp.get('runs')} timed calls per method (CUDA events per call) "
                  f"after {sp.get('warmup')} warm-up calls each, inputs rotated over enough sets to "
                  "exceed the L2 twice. In context: each timed call right after an untimed BF16 GEMM "
                  "of the QKV projection's size (tokens x h*128 @ h*128 x (h + 2 h_kv)*128). "
                  "FLOPs = 4 b h d x the (query, key) pairs seen (causal bottom-right).", ""]
        lines += headline_table(main) + [""] + verdict_lines(main, seed_of(res)) + [""]
        lines += ["## BF16 in -> output: fp8attn end to end (pre-pass + kernel) vs FA3 BF16", ""]
        lines += e2e_table(main) + [""]
    if rope:  # beside the BF16-in table
        lines += rope_section(sp)
        lines += rope_table(rope) + [""] + rope_verdict_lines(rope) + [""]
    if main:
        lines += ["## Precision modes, head to head with FA3 FP8 and with FA3 BF16", "",
                  f"{ACCURATE}: FP16 P on an FP16 V^T (per-head Q, K as fp8attn's, V / v_descale in "
                  f"FP16); {E2E_ACCURATE}: the library's BF16-in call with FP16 P (its pre-pass writes "
                  "the FP16 V^T); fp8attn_p_fp16: FP16 P on E4M3 V^T (the converter kernel).", ""]
        lines += modes_table(main, seed_of(res)) + [""]
        lines += accurate_verdict_lines(main, seed_of(res)) + [""]
    if res.get("speed_captured"):
        import captured_speed
        lines += ["## Speed on captured activations (head to head, TFLOP/s)", "",
                  captured_speed.__doc__.split("\n\n")[2].replace("\n", " "), ""]
        lines += captured_speed.table(res["speed_captured"]) + [""]
    other = other_speed_table(res["speed"])
    if other:
        lines += ["## Other speed records", ""] + other + [""]
    if res["accuracy"]:
        lines += ["## Accuracy: RMSE as a multiple of FA3 BF16's end-to-end RMSE on the same data", "",
                  "kernel-only: against exact FP64 attention on the inputs the method read (per-head "
                  "E4M3 inputs shared by fp8attn and FA3 FP8; 'own inputs': the library's pre-pass "
                  "outputs); end-to-end: against exact FP64 attention on the BF16 data.", ""]
        lines += accuracy_ratio_table(res["accuracy"]) + ["", "Max abs error, same ratios:", ""]
        lines += accuracy_ratio_table(res["accuracy"], "max_abs") + [""]
        lines += accuracy_verdict_lines(res["accuracy"]) + [""]
        lines += ["### Every accuracy record", ""] + accuracy_table(res["accuracy"]) + [""]
    if res.get("lse"):
        lines += ["LSE, max |LSE - exact LSE on the dequantized inputs| (natural log):", ""]
        lines += [f"- {r['dataset']} causal={'yes' if r['causal'] else 'no'} {r['method']}: "
                  f"{_f(r['lse_max_abs'])}" for r in res["lse"]] + [""]
    if pngs:
        lines += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in pngs] + [""]
    if res.get("prepass"):
        lines += ["## Pre-pass", "", "```", *[json.dumps(r) for r in res["prepass"]], "```", ""]
    if res.get("attached"):
        lines += ["## Attached", ""] + [f"- `{k}`: " + (f"FAILED: {v['error']}" if isinstance(v, dict) and
                                                       "error" in v and len(v) == 1 else
                                                       f"{len(json.dumps(v))} bytes of JSON (in the .json)")
                                       for k, v in res["attached"].items()] + [""]
    if res.get("notes"):
        lines += ["## Notes", "", *[f"- {n}" for n in res["notes"]], ""]
    path.write_text("\n".join(lines))


def write_all(out_dir: Path, stem: str, res: dict) -> list[Path]:
    import plots
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.json", out_dir / f"{stem}.md"]
    paths[0].write_text(json.dumps(res, indent=1, allow_nan=False) + "\n")
    title = f"{res['gpu_name']}  commit {res['commit']}  {res['date']}" + ("  DRY RUN" if res.get("dry_run") else "")
    pngs = []
    for name, fn in ((f"{stem}.png", plots.speed_png), (f"{stem}-tradeoff.png", plots.tradeoff_png)):
        try:
            if fn(out_dir / name, res, title):
                pngs.append(out_dir / name)
        except Exception as e:  # a plot must never cost the tables
            res.setdefault("notes", []).append(f"plot {name} failed: {type(e).__name__}: {e}")
    write_markdown(paths[1], res, pngs)
    return paths + pngs
