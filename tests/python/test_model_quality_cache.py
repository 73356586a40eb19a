"""tools/model_quality/cache_guard.py: a scheme's checkpoints are reused only by the emulation that
made them (a scheme name whose meaning changed, or a folder from before summaries were recorded,
runs again instead of resuming from another computation's layers)."""
from __future__ import annotations

import json
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools" / "model_quality"))
import cache_guard  # noqa: E402


def test_reuse_only_with_the_same_summary(tmp_path):
    work = tmp_path / "fp8attn-accurate"
    logs = []
    assert cache_guard.claim(str(work), "prepass(v=channel) p=fp16", logs.append) is False
    (work / "metrics.json").write_text('{"ppl": 1.0}')
    assert cache_guard.claim(str(work), "prepass(v=channel) p=fp16", logs.append) is True
    assert (work / "metrics.json").exists() and not logs
    # The name now means another emulation: the old folder is kept aside, the new one is empty.
    assert cache_guard.claim(str(work), "prepass(v=channel vt=fp16) p=fp16", logs.append) is False
    stale = tmp_path / "fp8attn-accurate.stale-1"
    assert json.loads((stale / "metrics.json").read_text()) == {"ppl": 1.0}
    assert not (work / "metrics.json").exists()
    assert json.loads((work / cache_guard.STAMP).read_text())["summary"].endswith("vt=fp16) p=fp16")
    assert len(logs) == 1 and "another emulation" in logs[0]


def test_unstamped_folder_is_not_trusted(tmp_path):
    work = tmp_path / "fa3-fp8"
    work.mkdir()
    (work / "state.json").write_text('{"layers_done": 7}')  # a checkpoint from before the stamps
    (tmp_path / "fa3-fp8.stale-1").mkdir()                  # an earlier stale copy stays as it is
    logs = []
    assert cache_guard.claim(str(work), "q=e4m3.head", logs.append) is False
    assert (tmp_path / "fa3-fp8.stale-2" / "state.json").exists()
    assert not (work / "state.json").exists()
    assert "unrecorded" in logs[0]
