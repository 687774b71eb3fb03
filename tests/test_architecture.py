"""The layers of docs/ARCHITECTURE.md hold: `lint-imports` checks the contracts in pyproject.toml.

grimp (import-linter's graph) sees imports inside functions too, so a lazy import across the
layers breaks a contract just like a module-level one; the second test proves it on a copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import importlinter  # noqa: F401  (a test extra: the contracts are checked in CI)

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "lint-imports"
    command = [str(script)] if script.exists() else [shutil.which("lint-imports") or "lint-imports"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [*command, "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_import_contracts_hold() -> None:
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout, proc.stdout


def test_a_lazy_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "tfgraph_lab", tmp_path / "tfgraph_lab", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    explain = tmp_path / "tfgraph_lab" / "explain.py"
    explain.write_text(
        explain.read_text(encoding="utf-8")
        + "\n\ndef _late() -> None:\n    import tensorflow\n    from .report import TraceReport\n",
        encoding="utf-8",
    )
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert "tfgraph_lab.explain -> tfgraph_lab.report" in proc.stdout, proc.stdout
    assert "tfgraph_lab.explain -> tensorflow" in proc.stdout, proc.stdout
