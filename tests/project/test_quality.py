"""The code stays lint-clean (ruff) and type-checked (mypy, strict for the package)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=540
    )


@pytest.mark.skipif(
    shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
    reason="ruff not installed",
)
def test_ruff_lint_is_clean() -> None:
    proc = run("ruff", "check", "tfgraph_lab", "tests", "benchmarks", "tools", "lessons/_build")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_mypy_strict_is_clean() -> None:
    pytest.importorskip("mypy")
    proc = run("mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
