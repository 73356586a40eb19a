"""Shared fixtures of the Python tests (pytest tests/python).

The package under test is the installed fp8attn when one is importable from outside the
repository, else python/ of this checkout (with $FP8ATTN_LIB naming a built libfp8attn.so, as a
developer runs them). `lib_module` loads python/fp8attn/capi.py without torch, so the ABI tests
run on machines without it (CI)."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _package_dir() -> Path:
    spec = importlib.util.find_spec("fp8attn") if "fp8attn" not in sys.modules else None
    if spec is not None and spec.origin:
        return Path(spec.origin).parent
    return ROOT / "python" / "fp8attn"


PACKAGE_DIR = _package_dir()
if PACKAGE_DIR == ROOT / "python" / "fp8attn":
    sys.path.insert(0, str(ROOT / "python"))


def library_available() -> bool:
    return bool(os.environ.get("FP8ATTN_LIB")) or (PACKAGE_DIR / "libfp8attn.so").exists()


@pytest.fixture(scope="session")
def lib_module():
    """fp8attn/capi.py as a module of its own (no torch, no package __init__)."""
    if not library_available():
        pytest.skip("no libfp8attn.so: set FP8ATTN_LIB or pip install the package")
    spec = importlib.util.spec_from_file_location("fp8attn_lib_standalone", PACKAGE_DIR / "capi.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def lib(lib_module):
    return lib_module.load()


def have_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def dry_harness(out: Path, *extra: str, timeout: int = 900) -> tuple[dict, Path]:
    """bench/harness.py --dry-run into `out` with a fresh seed and `extra` arguments: the results
    dict and its JSON file (the run must succeed and write exactly one)."""
    import json
    import subprocess
    import time
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "harness.py"), "--dry-run", "--out", str(out),
                        "--seed", str(int(time.time_ns() % 2**31)), *extra],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (js,) = Path(out).glob("*.json")
    return json.loads(js.read_text()), js
