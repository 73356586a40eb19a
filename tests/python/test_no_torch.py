"""`import fp8attn` without torch: one clear ImportError, not a traceback from inside."""
from __future__ import annotations

import subprocess
import sys

from conftest import PACKAGE_DIR

SCRIPT = f"""
import sys
sys.modules["torch"] = None  # makes `import torch` raise ImportError, as without torch
sys.path.insert(0, {str(PACKAGE_DIR.parent)!r})
try:
    import fp8attn
except ImportError as e:
    print("MESSAGE:", e)
    print("CAUSE:", e.__cause__, "CONTEXT_SUPPRESSED:", e.__suppress_context__)
else:
    print("IMPORTED")
"""


def test_import_without_torch_says_what_to_install():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "IMPORTED" not in r.stdout
    assert "fp8attn needs PyTorch" in r.stdout and "pip install torch" in r.stdout
    assert "CAUSE: None CONTEXT_SUPPRESSED: True" in r.stdout
