"""The tfgraph-lab command line, through subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli import run_cli as cli

pytest.importorskip("tensorflow")

SCRIPT = """
import sys
import tensorflow as tf

@tf.function
def step(x, n):
    return x * n

for n in range(3):
    step(tf.ones([2]), n)
print("script output", sys.argv[1:])
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


@pytest.mark.slow
def test_run_passes_stdout_and_status_and_writes_json(script: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = cli("run", "--json", str(out), str(script), "0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "script output ['0']" in proc.stdout
    assert "tracewatch ·" in proc.stderr and "python-value-changed" in proc.stderr
    data = json.loads(out.read_text())
    (fn,) = [f for f in data["functions"] if f["qualname"] == "step"]
    assert fn["traces"] == 3 and fn["calls"] == 3


@pytest.mark.slow
def test_script_exit_status_passes_through(script: Path, tmp_path: Path) -> None:
    assert cli("run", "-q", str(script), "7", cwd=tmp_path).returncode == 7


@pytest.mark.slow
def test_broken_budget_has_its_own_exit_code(script: Path, tmp_path: Path) -> None:
    proc = cli("run", "--max-traces", "step=1", str(script), cwd=tmp_path)
    assert proc.returncode == 3
    assert "trace budget exceeded: step traced 3× (budget 1)" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "missing.py"], "no such script"),
        (["run", "--max-traces", "x", "train.py"], "not a whole number"),
        (["frobnicate"], "invalid choice"),
        (["report", "missing.json"], "cannot read"),
    ],
)
def test_bad_input_is_a_usage_error(script: Path, tmp_path: Path, args: list[str], message: str) -> None:
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_report_command_renders_saved_json(script: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    cli("run", "-q", "--json", str(out), str(script), cwd=tmp_path)
    proc = cli("report", str(out), cwd=tmp_path)
    assert proc.returncode == 0
    assert "step" in proc.stdout and "graph cache" in proc.stdout


@pytest.mark.slow
def test_demo_shows_trap_and_cure(tmp_path: Path) -> None:
    out = tmp_path / "demo.json"
    proc = cli("demo", "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "THE TRAP" in proc.stdout and "THE CURE" in proc.stdout
    long = [line for line in (proc.stdout + proc.stderr).splitlines() if len(line) > 200]
    assert not long, f"every line the demo prints is at most 200 characters: {long}"
    assert "WARNING:tensorflow" not in proc.stderr  # TF's retracing warning: explained, so quiet
    assert "    … 15 more graphs (--all lists them)" in proc.stdout  # 22 rows were 22 lines
    assert "cure: 1 trace," in proc.stdout
    trap = json.loads(out.read_text())
    (fn,) = [f for f in trap["functions"] if f["qualname"].endswith("train_step")]
    from tfgraph_lab.faces.demo import EPOCHS

    # (one learning rate per epoch + the eval flag) x (full batch + last partial batch)
    assert fn["traces"] == (EPOCHS + 1) * 2


def test_a_run_whose_module_is_missing_ends_the_relay_it_started(tmp_path: Path) -> None:
    """``run`` starts the stderr relay before it looks for ``-m``'s module (finding it imports its
    package, which may import TensorFlow): a module that is not there ends the relay too, so
    Python's development mode finds no subprocess left running and says only the error."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-m", "tfgraph_lab", "run", "-m", "no_such_module_here"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == "tfgraph-lab: no module named 'no_such_module_here' (as python -m would find it)\n"
