"""The lab probes' result file: command, commit (.carry/COMMIT), GPU, date and the records."""
from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def write(out_dir: str, name: str, records: list, gpu: str) -> Path:
    commit_file = ROOT / ".carry" / "COMMIT"
    doc = {"command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
           "commit": commit_file.read_text().strip() if commit_file.exists() else "unknown", "gpu": gpu,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "records": records}
    path = Path(out_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path
