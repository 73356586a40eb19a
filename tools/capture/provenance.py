"""Who made a results file: the command, the git commit, the machine and the date."""
from __future__ import annotations

import datetime
import os
import platform
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def record(argv: list[str]) -> dict:
    from importlib.metadata import version
    dirty = _git("status", "--porcelain", "--", "tools/capture")
    return {
        "command": "python " + " ".join(os.path.relpath(a, REPO) if a.endswith(".py") else a
                                        for a in argv),
        "git_commit": _git("rev-parse", "HEAD") + (" (tools/capture modified)" if dirty else ""),
        "machine": f"{platform.node()}: {_cpu()}, {os.cpu_count()} cores, {platform.system()} "
                   f"{platform.release()}",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": {"python": platform.python_version(),
                     **{p: version(p) for p in ("numpy", "gguf", "tokenizers")}},
    }
