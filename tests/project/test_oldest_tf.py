"""The oldest supported TensorFlow (2.15): the core tests, in a second virtual environment.

Runs ``.ci/oldest_tf.sh`` (which builds ``.venv-tf215`` with tensorflow-cpu 2.15 and runs the
core test files there). Installing TensorFlow takes minutes, so this runs in CI (``CI=true``) or
when ``TFGL_OLDEST_TF=1``; elsewhere it is skipped with that reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "oldest_tf.sh"
WANTED = os.environ.get("CI") == "true" or os.environ.get("TFGL_OLDEST_TF") == "1"


@pytest.mark.slow
@pytest.mark.timeout(2700)  # above the script's own 2400 s: its output, not a thread dump
@pytest.mark.skipif(not WANTED, reason="installs TensorFlow 2.15: set TFGL_OLDEST_TF=1 (CI runs it)")
@pytest.mark.skipif(sys.version_info >= (3, 12), reason="TensorFlow 2.15 has wheels for Python ≤ 3.11 only")
def test_core_tests_pass_on_the_oldest_supported_tensorflow() -> None:
    env = dict(os.environ, PYTHON=sys.executable)
    proc = subprocess.run(
        ["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=2400
    )
    # stderr (pip's notes) first, pytest's summary on stdout last: what a CI log reader needs
    tail = proc.stderr[-2000:] + "\n--- stdout ---\n" + proc.stdout[-4000:]
    assert proc.returncode == 0, tail
    assert "TensorFlow 2.15." in proc.stdout, tail
    # the project was installed with its dependencies over TF 2.15: still exactly that one
    assert re.search(r"TensorFlow distributions: tensorflow-cpu==2\.15\.\S+\n", proc.stdout), tail
    assert "IPython 8." in proc.stdout, tail
    # counts, not words: a skip's reason may say "failed" ("after a fit whose step's trace failed")
    assert re.search(r"\b\d+ passed\b", proc.stdout) and not re.search(r"\b\d+ failed\b", proc.stdout), tail
    # the Keras callback ran on Keras 2 (-ra lists every skip; test_keras2 skips only on Keras 3)
    assert not re.search(r"SKIPPED .*test_keras2\.py", proc.stdout), tail
