"""``tfgraph-lab report --format github|junit`` and ``--sort cost`` on a report a real run wrote:
the annotations point at the lines of the user's script that retraced, with TensorFlow's own
counts; a broken budget is an ``::error`` and exit status 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

MODEL = """\
import tensorflow as tf


@tf.function
def train_step(x, step):
    return tf.reduce_sum(x) * tf.cast(step, tf.float32)


@tf.function
def predict(x):
    return x * 2.0
"""

TRAIN = """\
import tensorflow as tf
from model import predict, train_step

for step in range(4):
    train_step(tf.ones([4]), step)  # STEP LINE
for n in (2, 3, 5):
    predict(tf.ones([n]))  # PREDICT LINE
print("counts", train_step.experimental_get_tracing_count(), predict.experimental_get_tracing_count())
"""


def _cli(*args: str, cwd: Path, workspace: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0", GITHUB_WORKSPACE=str(workspace))
    env.pop("TFGRAPH_LAB", None)
    return subprocess.run(
        [sys.executable, "-m", "tfgraph_lab", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def _line(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if marker in line)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, tuple[int, int]]:
    """A repository with src/model.py and src/train.py, run once under tfgraph-lab run."""
    repo = tmp_path_factory.mktemp("repo")
    src = repo / "src"
    src.mkdir()
    (src / "model.py").write_text(MODEL)
    (src / "train.py").write_text(TRAIN)
    proc = _cli("run", "-q", "--json", "r.json", "train.py", cwd=src, workspace=repo)
    assert proc.returncode == 0, proc.stderr
    counts = next(line for line in proc.stdout.splitlines() if line.startswith("counts"))
    step_count, predict_count = (int(n) for n in counts.split()[1:])
    return repo, src / "r.json", (step_count, predict_count)


@pytest.mark.slow
def test_github_annotations_point_at_the_users_lines(project: tuple[Path, Path, tuple[int, int]]) -> None:
    repo, report, (step_count, predict_count) = project
    assert (step_count, predict_count) == (4, 3)  # TensorFlow's own counts
    proc = _cli("report", str(report), "--format", "github", cwd=repo / "src", workspace=repo)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("::warning ") for line in lines), proc.stdout
    train = (repo / "src" / "train.py").read_text()
    wanted = {
        f"file=src/train.py,line={_line(train, 'STEP LINE')}": f"train_step retraced {step_count - 1}×",
        f"file=src/train.py,line={_line(train, 'PREDICT LINE')}": f"predict retraced {predict_count - 1}×",
    }
    for where, title in wanted.items():
        (line,) = [line for line in lines if where + ",title=" in line]
        assert f"title={title} here (" in line
    step_line = next(line for line in lines if "train_step" in line.split("::")[1])
    assert "step: 0 → 1 → 2 → 3" in step_line and "tf.constant(step)" in step_line
    assert "docs/reasons/python-value-changed.md" in step_line


@pytest.mark.slow
def test_a_broken_budget_is_an_error_at_the_def_and_exit_3(project: tuple[Path, Path, tuple[int, int]]) -> None:
    repo, report, _ = project
    model = (repo / "src" / "model.py").read_text()
    args = ("report", str(report), "--max-traces", "train_step=1", "--max-traces", "predikt=9")
    proc = _cli(*args, "--format", "github", cwd=repo, workspace=repo)
    assert proc.returncode == 3, proc.stderr
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 1
    decorated = _line(model, "def train_step") - 1  # the function's first line: its decorator's
    assert errors[0].startswith(f"::error file=src/model.py,line={decorated},")
    assert "train_step traced 4× (budget 1)" in errors[0]
    assert "predikt" in proc.stdout and "did you mean 'predict'?" in proc.stdout  # the budget that never applied
    assert "trace budget exceeded: train_step traced 4× (budget 1)" in proc.stderr
    junit = _cli(*args, "--format", "junit", cwd=repo, workspace=repo)
    assert junit.returncode == 3
    suite = ET.fromstring(junit.stdout).find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("2", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["train_step"].find("failure") is not None and cases["predict"].find("failure") is None
    props = {p.get("name"): p.get("value") for p in cases["predict"].iter("property")}
    assert props["tracewatch.traces"] == "3" and props["tracewatch.retraces"] == "2"
    assert "did you mean 'predict'?" in junit.stderr


@pytest.mark.slow
def test_sort_cost_and_the_json_cost_per_call_site(project: tuple[Path, Path, tuple[int, int]]) -> None:
    repo, report, _ = project
    data = json.loads(report.read_text())
    sites = {s["label"]: s for s in data["call_sites"]}
    assert (sites["train_step"]["traces"], sites["train_step"]["retraces"]) == (4, 3)
    assert (sites["predict"]["traces"], sites["predict"]["retraces"]) == (3, 2)
    for fn in data["functions"]:  # each site's time is its function's calls that traced
        assert sites[fn["label"]]["trace_seconds"] <= fn["call_seconds"] + 1e-9
        assert 0 < sites[fn["label"]]["retrace_seconds"] < sites[fn["label"]]["trace_seconds"]
    proc = _cli("report", str(report), "--sort", "cost", "--html", "r.html", cwd=repo / "src", workspace=repo)
    assert proc.returncode == 0, proc.stderr
    costliest = max(sites.values(), key=lambda s: s["retrace_seconds"])["label"]
    table = proc.stdout.split("\n\n")[1].splitlines()
    assert table[1].startswith(costliest), proc.stdout
    block = proc.stdout.split("retraces by the line that called, costliest first:\n")[1]
    assert block.splitlines()[0].split()[4] == costliest  # "134 ms  3 retraces  train_step  ← …"
    page = (repo / "src" / "r.html").read_text()
    assert "<table class='tfgl-sites'>" in page and "docs/reasons/shape-changed.md" in page
