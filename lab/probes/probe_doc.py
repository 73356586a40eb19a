"""The lab probes' result file: command, commit (.carry/COMMIT, else the tree's HEAD), GPU, date,
the records, and optionally the carried libraries' own commits (`builds`)."""
from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tree_commit() -> str:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"


def lib_commits(libs: dict) -> dict:
    """{tag: the COMMIT file beside that library (carry_stage writes one), or "unknown"}."""
    out = {}
    for tag, lib in libs.items():
        f = Path(lib).parent / "COMMIT"
        out[tag] = f.read_text().strip() if f.exists() else "unknown"
    return out


def write(out_dir: str, name: str, records: list, gpu: str, builds: dict | None = None) -> Path:
    commit_file = ROOT / ".carry" / "COMMIT"
    doc = {"command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
           "commit": commit_file.read_text().strip() if commit_file.exists() else tree_commit(), "gpu": gpu,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "records": records}
    if builds:
        doc["builds"] = builds
    path = Path(out_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path
