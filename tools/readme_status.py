#!/usr/bin/env python3
"""Writes the status block of README.md (between the STATUS markers) from a GPU results file,
so that no figure in the README is typed by hand. The tables are bench/report.py's, the same as
in the run's own report.
Usage: python3 tools/readme_status.py results/<date>-h200-<commit>.json [--readme PATH]
         [--accuracy-from results/<other>.json]
--accuracy-from: the accuracy section from another GPU run's file (named in the block, with its
commit and date), for a run that carried no captured activations."""
import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import report  # noqa: E402

BEGIN, END = "<!-- STATUS:BEGIN (tools/readme_status.py) -->", "<!-- STATUS:END -->"


def block(d: dict, rel: str, acc: tuple[dict, str] | None = None) -> list[str]:
    fa3 = d.get("fa3", {})
    lines = [BEGIN, "", f"From `{rel}` (commit {d['commit']}, {d.get('gpu_name', d['gpu'])}, "
             f"{d['date']}): GPU tests {d['tests']['passed']} passed, {d['tests']['failed']} failed. "
             f"Peer: FlashAttention-3 `{fa3.get('pin', '?')}`"
             + ("" if fa3.get("available", False) else f" (NOT RUN: {fa3.get('error', 'no record')})")
             + "."]
    if d.get("dry_run"):
        lines += ["", "**DRY RUN: stand-ins, not measurements.**"]
    main, rope = report.split_rope(d.get("speed") or [])
    if main:
        lines += ["", "Speed, TFLOP/s (medians of head-to-head alternations in one process; "
                  "'in context': each call right after the model's QKV-projection GEMM):", ""]
        lines += report.headline_table(main) + [""]
        lines += report.verdict_lines(main, report.seed_of(d)) + [""]
        lines += ["BF16 in -> output (the library's pre-pass + kernel) against FA3 BF16:", ""]
        lines += report.e2e_table(main) + [""]
    if rope:  # beside the BF16-in table
        lines += [""] if lines[-1] else []
        lines += ["BF16 in, rotary fused: pre-rotary BF16 Q, K, V and cos/sin tables in, the "
                  f"library's rope + quantize pre-pass and kernel ({report.ROPE_PAIR}) against a BF16 "
                  f"rotary on Q and K then FA3 BF16 ({report.ROPE_PEER}):", ""]
        lines += report.rope_table(rope) + [""]
        lines += report.rope_verdict_lines(rope) + [""]
    if main:
        lines += ["Precision modes head to head with FA3 FP8 and with FA3 BF16 (each pairing its own "
                  f"TFLOP/s; {report.ACCURATE}: FP16 P on an FP16 V^T, {report.E2E_ACCURATE}: its "
                  "BF16-in call, fp8attn_p_fp16: FP16 P on E4M3 V^T):", ""]
        lines += report.modes_table(main, report.seed_of(d)) + [""]
        lines += report.accurate_verdict_lines(main, report.seed_of(d))
    if d.get("speed_captured"):
        import captured_speed
        lines += ["", "Speed on captured activations (the capture pack's Q, K, V as MHA rows; "
                  "bench/captured_speed.py), head to head, TFLOP/s:", ""]
        lines += captured_speed.table(d["speed_captured"])
    src, where = (d, "") if acc is None else (
        acc[0], f" From `{acc[1]}` (commit {acc[0]['commit']}, {acc[0]['date']}), not this run.")
    if src.get("accuracy"):
        lines += ["", "Accuracy, RMSE as a multiple of FA3 BF16's end-to-end RMSE on the same data "
                  "(kernel-only: against exact attention on the FP8 inputs the kernel read; per-head "
                  "inputs are shared by fp8attn and FA3 FP8, 'own inputs' are the library's pre-pass "
                  f"outputs).{where}", ""]
        lines += report.accuracy_ratio_table(src["accuracy"]) + [""]
        lines += report.accuracy_verdict_lines(src["accuracy"])
    lines += ["", END]
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--readme", default=str(ROOT / "README.md"))
    ap.add_argument("--accuracy-from", default=None, help="another run's file for the accuracy section")
    a = ap.parse_args(argv)

    def load(name):
        path = pathlib.Path(name).resolve()
        try:
            rel = str(path.relative_to(ROOT))
        except ValueError:
            rel = str(path)
        return json.loads(path.read_text()), rel
    d, rel = load(a.results)
    lines = block(d, rel, load(a.accuracy_from) if a.accuracy_from else None)
    readme = pathlib.Path(a.readme)
    text = readme.read_text()
    if BEGIN in text:
        i, j = text.index(BEGIN), text.index(END) + len(END)
        text = text[:i] + "\n".join(lines) + text[j:]
    else:
        text += "\n## Status\n\n" + "\n".join(lines) + "\n"
    readme.write_text(text)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
