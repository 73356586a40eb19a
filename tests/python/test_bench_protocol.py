"""bench/test_protocol.py's checks of the harness's plan, protocols and report verdicts (no GPU,
torch or numpy), each as a pytest test, so that the README's test command runs them."""
from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import test_protocol  # noqa: E402

CHECKS = [getattr(test_protocol, n) for n in dir(test_protocol) if n.startswith("check_")]


def test_every_check_is_collected():
    assert len(CHECKS) >= 5


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_protocol_check(check):
    check()
