#!/usr/bin/env python3
"""The installed package on a GPU machine, as a user gets it (scripts/gpu/package.sh installs the
wheel into a clean folder and runs this from outside the repository). Checks, each one entry of
the `binding` block ({check, passed, detail}):

  import         fp8attn imports from the install folder and finds libfp8attn.so inside itself
  quickstart     the README's quick start (the python block between QUICKSTART markers), as is
  pytest:<test>  every test of tests/python: validation (each class of bad argument), accuracy
                 against FP64, the bitwise agreements, torch.compile with inductor and dynamic
                 sequence lengths, CUDA graph capture + replay, torch.library.opcheck of each op
  client         the transformers client (bench/hf_client.py): a Qwen2-architecture model at
                 real width over --tokens tokens with fp8attn against the same model with sdpa

Writes --out: {"binding": [...], "client": {...}, "summary": {...}, command, commit, date, gpu,
torch}. Exit status 0 iff every check passed.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import time
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path

RESULTS: list[dict] = []


def check(name: str, fn) -> object:
    t0 = time.time()
    try:
        detail = fn()
        RESULTS.append({"check": name, "passed": True, "detail": detail or ""})
    except Exception as e:  # one failing check must not hide the others
        traceback.print_exc()
        detail = None
        RESULTS.append({"check": name, "passed": False, "detail": f"{type(e).__name__}: {e}"})
    RESULTS[-1]["seconds"] = round(time.time() - t0, 2)
    print(f"  {'PASS' if RESULTS[-1]['passed'] else 'FAIL'} {name}: {RESULTS[-1]['detail']}",
          flush=True)
    return detail


def check_import(repo: Path) -> str:
    import fp8attn
    from fp8attn import capi
    pkg = Path(fp8attn.__file__).resolve().parent
    if repo in pkg.parents:
        raise AssertionError(f"fp8attn imported from the repository ({pkg}), not the install")
    lib = capi.load()
    if lib.path.resolve().parent != pkg:
        raise AssertionError(f"libfp8attn.so loaded from {lib.path}, not from {pkg}")
    return f"package {pkg}, library {lib.path.name} ({lib.path.stat().st_size} bytes)"


def quickstart_code(readme: Path) -> str:
    m = re.search(r"<!-- QUICKSTART:BEGIN[^>]*-->\s*```python\n(.*?)```\s*<!-- QUICKSTART:END -->",
                  readme.read_text(), re.S)
    if not m:
        raise AssertionError(f"no QUICKSTART python block in {readme}")
    return m.group(1)


def check_quickstart(readme: Path) -> str:
    code = quickstart_code(readme)
    scope: dict = {}
    exec(compile(code, "README quick start", "exec"), scope)
    import torch
    out = scope.get("out")
    if not isinstance(out, torch.Tensor) or not torch.isfinite(out).all():
        raise AssertionError("the quick start left no finite `out`")
    return f"out {tuple(out.shape)} {out.dtype}, {len(code.splitlines())} lines"


def run_pytest(tests: list[Path], junit: Path, timeout_s: int) -> None:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
           f"--junitxml={junit}", *map(str, tests)]
    print("  $ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, timeout=timeout_s, cwd="/tmp")
    print(f"  pytest exit status {r.returncode}", flush=True)
    if not junit.exists():
        RESULTS.append({"check": "pytest", "passed": False,
                        "detail": f"no junit report (exit status {r.returncode})"})
        return
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"pytest:{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        # (An Element without children is falsy: compare with None, never `or`.)
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            RESULTS.append({"check": name, "passed": False,
                            "detail": (failure.get("message") or "")[:400]})
        elif skipped is not None:
            RESULTS.append({"check": name, "passed": None,
                            "detail": "skipped: " + (skipped.get("message") or "")[:200]})
        else:
            RESULTS.append({"check": name, "passed": True, "detail": ""})
        RESULTS[-1]["seconds"] = float(case.get("time", 0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True, type=Path, help="the repository (README, tests)")
    ap.add_argument("--out", required=True, type=Path, help="JSON file to write")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--pytest-timeout", type=int, default=110,
                    help="seconds for the compile / CUDA graph / opcheck tests")
    args = ap.parse_args()
    repo = args.repo.resolve()
    t0 = time.time()
    check("import", lambda: check_import(repo))
    check("quickstart", lambda: check_quickstart(repo / "README.md"))
    sys.path.insert(0, str(repo / "bench"))
    import hf_client
    client = check("client", lambda: hf_client.run(args.tokens, args.layers)) or {}
    if client:
        e = client["logits_fp8attn_vs_sdpa_bf16"]
        RESULTS[-1]["detail"] = (f"logits vs sdpa: max abs {e['max_abs']:.4g}, mean abs "
                                 f"{e['mean_abs']:.4g}, rel RMS {e['rel_rms']:.4g}, top-1 "
                                 f"{e['top1_agreement']:.4f}; attention "
                                 f"{client['attention_ms_per_forward']['fp8attn_median']:.3f} ms "
                                 f"vs sdpa {client['attention_ms_per_forward']['sdpa_bf16_median']:.3f} ms")
        def finite():
            if not e["finite"]:
                raise AssertionError("non-finite logits")
        check("client_logits_finite", finite)
    write(args, client, t0)
    # Last, so that a slow compile cannot keep the client from running; in two runs (the
    # compile and graph tests apart), each with its own time limit and junit report, and the
    # results file rewritten after each.
    tests = repo / "tests" / "python"
    groups = [("api", [tests / f for f in ("test_abi.py", "test_no_torch.py",
                                          "test_validation.py", "test_validation_rope.py",
                                          "test_gpu_api.py")], 90),
              ("compile", [tests / "test_gpu_compile.py"], args.pytest_timeout)]
    for tag, files, limit in groups:
        try:
            run_pytest(files, args.out.with_suffix(f".{tag}.junit.xml"), limit)
        except subprocess.TimeoutExpired:
            RESULTS.append({"check": f"pytest:{tag}", "passed": False,
                            "detail": f"timed out after {limit} s"})
        write(args, client, t0)
    failed = sum(r["passed"] is False for r in RESULTS)
    passed = sum(r["passed"] is True for r in RESULTS)
    return int(failed > 0 or passed == 0)


def write(args, client: dict, t0: float) -> None:
    import torch
    passed = sum(r["passed"] is True for r in RESULTS)
    failed = sum(r["passed"] is False for r in RESULTS)
    skipped = sum(r["passed"] is None for r in RESULTS)
    res = {"binding": RESULTS, "client": client,
           "summary": {"passed": passed, "failed": failed, "skipped": skipped,
                       "seconds": round(time.time() - t0, 1)},
           "command": " ".join([sys.executable, *sys.argv]), "commit": args.commit,
           "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
           "torch": torch.__version__}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    print(f"wrote {args.out}")
    print(f"check_package: {passed} passed, {failed} failed, {skipped} skipped")


if __name__ == "__main__":
    sys.exit(main())
