#!/usr/bin/env python3
"""Assembles the `reliability` block of a GPU results file from the logs of one session.

Reads the "RELIABILITY key=value ..." lines that tests/gpu/test_fuzz, test_graphs and
test_nonfinite print, and the summary.tsv of scripts/gpu/sanitize.sh, and writes

  {"fuzz_shapes", "fuzz_failed", "fuzz_seed", "graph_replays", "streams", "graph_mismatches",
   "nonfinite_cases", "nonfinite_failed", "sanitizers": [{"tool", "target", "errors", "status"}],
   "missing": [...], "ok": bool, "command", "commit", "machine", "date"}

Anything a log does not show is null and named in "missing" (a run that did not happen or did
not finish is reported, never filled in); "ok" is true only with >= 1000 fuzz shapes, zero
failures, mismatches and sanitizer errors, and all four tools run on the default kernel and the
pre-pass. bench/harness.py attaches the file with --attach reliability=FILE.

  python3 scripts/gpu/reliability.py --logs LOG [LOG ...] --sanitize DIR/summary.tsv --out FILE
"""
import argparse
import csv
import datetime
import json
import platform
import re
import subprocess
import sys
from pathlib import Path

LINE = re.compile(r"^RELIABILITY (.*)$")
PAIR = re.compile(r"(\w+)=(-?\d+)")


def parse_logs(paths):
    """Sums graph replays/mismatches over the lines that carry them; fuzz and nonfinite: last."""
    out = {}
    for path in paths:
        for line in Path(path).read_text(errors="replace").splitlines():
            m = LINE.match(line.strip())
            if not m:
                continue
            kv = {k: int(v) for k, v in PAIR.findall(m.group(1))}
            if "graph_replays" in kv:
                for key in ("graph_replays", "graph_mismatches"):
                    out[key] = out.get(key, 0) + kv.get(key, 0)
                out["streams"] = max(out.get("streams", 0), kv.get("streams", 0))
            if "fuzz_shapes" in kv:
                out.update(fuzz_shapes=kv["fuzz_shapes"], fuzz_failed=kv.get("fuzz_failed"),
                           fuzz_seed=kv.get("seed"))
            if "nonfinite_cases" in kv:
                out.update(nonfinite_cases=kv["nonfinite_cases"],
                           nonfinite_failed=kv.get("nonfinite_failed"))
    return out


def parse_sanitize(path):
    if not path or not Path(path).exists():
        return None
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            rows.append({"tool": r["tool"], "target": r["target"], "errors": int(r["errors"]),
                         "status": r["status"]})
    return rows


def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def assemble(logs, sanitize, commit=None):
    got = parse_logs(logs)
    keys = ["fuzz_shapes", "fuzz_failed", "fuzz_seed", "graph_replays", "streams",
            "graph_mismatches", "nonfinite_cases", "nonfinite_failed"]
    block = {k: got.get(k) for k in keys}
    block["sanitizers"] = parse_sanitize(sanitize)
    missing = [k for k in keys if block[k] is None]
    if block["sanitizers"] is None:
        missing.append("sanitizers")
    san = block["sanitizers"] or []
    tools_on = lambda target_prefix: {s["tool"] for s in san
                                      if s["target"].startswith(target_prefix) and s["errors"] == 0}
    four = {"memcheck", "racecheck", "initcheck", "synccheck"}
    block["missing"] = missing
    block["ok"] = bool(
        not missing and block["fuzz_shapes"] >= 1000 and block["fuzz_failed"] == 0
        and block["graph_mismatches"] == 0 and block["graph_replays"] > 0
        and block["nonfinite_failed"] == 0 and block["nonfinite_cases"] > 0
        and all(s["errors"] == 0 for s in san)
        and tools_on("Default") >= four and tools_on("PrePass") >= four)
    block["command"] = " ".join(sys.argv)
    block["commit"] = commit or git_commit()
    block["machine"] = platform.node()
    block["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return block


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", nargs="+", required=True, help="test logs (stdout of the tests)")
    ap.add_argument("--sanitize", help="summary.tsv of scripts/gpu/sanitize.sh")
    ap.add_argument("--commit", help="commit the binaries were built from (.carry/COMMIT)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    block = assemble([p for p in a.logs if Path(p).exists()], a.sanitize, a.commit)
    Path(a.out).write_text(json.dumps(block, indent=2) + "\n")
    print(json.dumps({k: block[k] for k in block if k not in ("sanitizers",)}, indent=None))
    return 0 if block["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
