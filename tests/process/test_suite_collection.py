"""Collecting the test suite imports no model runtime: a newcomer's `pytest -k NAME` or `--collect-only`
starts in seconds, and a skip decided by the hardware is decided inside its test (tests/process/test_embeddings.py)."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO_ROOT

HEAVY = ("torch", "sentence_transformers", "transformers", "onnxruntime")


def test_collecting_the_suite_imports_no_model_runtime():
    probe = (
        "import sys, pytest\n"
        "code = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', 'tests'])\n"
        f"print('IMPORTED', sorted(m for m in {HEAVY!r} if m in sys.modules), int(code))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    said = [line for line in out.stdout.splitlines() if line.startswith("IMPORTED")]
    assert said == ["IMPORTED [] 0"], out.stdout[-2000:] + out.stderr[-2000:]
