"""Which emulation a checkpoint of tools/model_quality/run.py was made with.

A scheme's name can change meaning (fp8attn-accurate became V in FP16 when the library's accurate
mode did), and run.py resumes a scheme from data/cache/model-quality/.../<scheme>/ by name. So
each scheme's folder records the model's own one-line summary of the scheme it ran
(Scheme::summary(), every option spelled out; scheme.json); a folder whose summary differs or
was never recorded is moved aside (<folder>.stale-<n>) and the scheme runs again from layer 0.
"""
from __future__ import annotations

import json
import os

STAMP = "scheme.json"


def claim(work: str, summary: str, log=print) -> bool:
    """Makes `work` the checkpoint folder of the emulation `summary`. Returns True when it already
    was (resume or reuse it), False when it is new (a stale folder moved aside first)."""
    stamp = os.path.join(work, STAMP)
    if os.path.isdir(work):
        try:
            with open(stamp) as f:
                if json.load(f).get("summary") == summary:
                    return True
            why = "made by another emulation of this name"
        except (OSError, ValueError):
            why = "of an unrecorded emulation"
        n = 1
        while os.path.exists(f"{work}.stale-{n}"):
            n += 1
        os.replace(work, f"{work}.stale-{n}")
        log(f"  {os.path.basename(work)}: checkpoints {why}: moved to {work}.stale-{n}, running again")
    os.makedirs(work, exist_ok=True)
    with open(stamp, "w") as f:
        json.dump({"summary": summary}, f)
    return False
