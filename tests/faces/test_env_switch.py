"""``TFGRAPH_LAB=watch``: the project's real ``tfgraph_lab.pth`` line, run by Python's ``site`` in
fresh interpreters (``site.addsitedir`` on a folder holding it, as site-packages would), over
scripts that never mention tfgraph_lab. Counts are checked against TensorFlow's own
``experimental_get_tracing_count()``, printed by the script itself. The install into a real
site-packages (wheel and editable) is ``tests/project/test_env_switch_install.py``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PTH = ROOT / "tfgraph_lab.pth"

TRAIN = """
import os
import tensorflow as tf

@tf.function
def train_step(x, step):
    return tf.reduce_sum(x) * tf.cast(step, tf.float32)

for step in range(int(os.environ.get("STEPS", "3"))):
    train_step(tf.ones([2]), step)
print(json.dumps({"pid": os.getpid(), "tf_count": train_step.experimental_get_tracing_count()}))
raise SystemExit(int(os.environ.get("EXIT", "0")))
"""


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "site-packages"
    folder.mkdir()
    shutil.copy(PTH, folder / PTH.name)
    return folder


def run(site_dir: Path, code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter whose start-up ran ``site_dir``'s ``.pth`` files, as
    site-packages' are (the package itself found through PYTHONPATH: this checkout)."""
    boot = f"import site; site.addsitedir({str(site_dir)!r})\nimport json, sys\n"
    full = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3", **env)
    for name in ("TFGRAPH_LAB", "TFGRAPH_LAB_JSON"):
        if name not in env:
            full.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", boot + textwrap.dedent(code)],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


PROBE = """
print(json.dumps({"imported": sorted(m for m in sys.modules if m.split(".")[0] in ("tfgraph_lab", "tensorflow")),
                  "finders": [type(f).__name__ for f in sys.meta_path]}))
"""


def test_the_pth_file_is_one_import_line() -> None:
    lines = [line for line in PTH.read_text().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("import ")  # site runs only lines starting "import"


def test_unset_the_line_imports_nothing(site_dir: Path, tmp_path: Path) -> None:
    proc = run(site_dir, PROBE, {}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    probe = json.loads(proc.stdout)
    assert probe["imported"] == []
    assert "_WhenTensorFlowLoads" not in probe["finders"]
    assert proc.stderr == ""


@pytest.mark.parametrize("value", ["0", "off", "False"])
def test_switched_off_values_install_nothing(site_dir: Path, tmp_path: Path, value: str) -> None:
    probe = json.loads(run(site_dir, PROBE, {"TFGRAPH_LAB": value}, tmp_path).stdout)
    assert "_WhenTensorFlowLoads" not in probe["finders"]
    assert "tensorflow" not in probe["imported"]


def test_a_value_not_understood_is_said_once_and_watches_nothing(site_dir: Path, tmp_path: Path) -> None:
    proc = run(site_dir, PROBE, {"TFGRAPH_LAB": "wacth"}, tmp_path)
    assert "TFGRAPH_LAB='wacth' is not one of watch, log; not watching" in proc.stderr
    assert "_WhenTensorFlowLoads" not in json.loads(proc.stdout)["finders"]


def test_set_it_waits_for_tensorflow_without_importing_it_or_the_recorder(site_dir: Path, tmp_path: Path) -> None:
    probe = json.loads(run(site_dir, PROBE, {"TFGRAPH_LAB": "watch"}, tmp_path).stdout)
    assert probe["finders"][0] == "_WhenTensorFlowLoads"
    assert probe["imported"] == ["tfgraph_lab", "tfgraph_lab.faces", "tfgraph_lab.faces.env_switch"]


def test_json_path_takes_the_process_id() -> None:
    from tfgraph_lab.faces.env_switch import json_path

    assert json_path("out/w-{pid}.json", pid=4242) == "out/w-4242.json"
    assert json_path("report.json", pid=4242) == "report.json"


@pytest.mark.slow
def test_watch_reports_at_exit_with_no_code_change(site_dir: Path, tmp_path: Path) -> None:
    env = {"TFGRAPH_LAB": "watch", "TFGRAPH_LAB_JSON": str(tmp_path / "w-{pid}.json"), "EXIT": "3"}
    proc = run(site_dir, TRAIN, env, tmp_path)
    assert proc.returncode == 3, proc.stderr  # the script's own exit status passes through
    seen = json.loads(proc.stdout.splitlines()[-1])
    # the live log, as each retrace happens, then the report
    assert proc.stderr.count("tfgraph_lab: tf.function train_step retraced (python-value-changed step:") == 2
    assert "3 calls · 3 traces, 2 of them retraces" in proc.stderr
    written = tmp_path / f"w-{seen['pid']}.json"
    assert f"report written to {written}" in proc.stderr
    report = json.loads(written.read_text())
    (row,) = [f for f in report["functions"] if f["qualname"] == "train_step"]
    assert row["traces"] == seen["tf_count"] == 3
    assert [r["before"] + "→" + r["after"] for e in report["events"] for r in e["reasons"] if e["retraces"]] == [
        "0→1",
        "1→2",
    ]


@pytest.mark.slow
def test_log_is_the_lines_only_and_many_workers_write_one_report_each(site_dir: Path, tmp_path: Path) -> None:
    env = {"TFGRAPH_LAB": "log", "TFGRAPH_LAB_JSON": str(tmp_path / "w-{pid}.json")}
    workers = [run(site_dir, TRAIN, {**env, "STEPS": str(n)}, tmp_path) for n in (2, 3)]
    for proc, retraces in zip(workers, (1, 2)):
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.count("tf.function train_step retraced") == retraces
        assert "function     calls traces" not in proc.stderr  # no report table in log mode
    counts = {}
    for proc in workers:
        seen = json.loads(proc.stdout.splitlines()[-1])
        report = json.loads((tmp_path / f"w-{seen['pid']}.json").read_text())
        counts[seen["pid"]] = (seen["tf_count"], sum(f["traces"] for f in report["functions"]))
    assert sorted(counts.values()) == [(2, 2), (3, 3)]  # two processes, two files


@pytest.mark.slow
def test_keras_importing_tensorflow_is_watched_too(site_dir: Path, tmp_path: Path) -> None:
    code = """
    import keras  # Keras 3 imports TensorFlow while it is itself being imported
    import numpy as np
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    for n in (8, 6):  # 6 rows in batches of 4: a last batch of 2, a new shape
        model.fit(np.ones((n, 3)), np.ones((n, 1)), batch_size=4, epochs=1, verbose=0)
    print(json.dumps({"pid": __import__("os").getpid()}))
    """
    env = {"TFGRAPH_LAB": "log", "TFGRAPH_LAB_JSON": str(tmp_path / "k-{pid}.json")}
    proc = run(site_dir, code, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "could not start watching" not in proc.stderr
    pid = json.loads(proc.stdout.splitlines()[-1])["pid"]
    report = json.loads((tmp_path / f"k-{pid}.json").read_text())
    names = [f"{f['qualname']} {f.get('label') or ''}" for f in report["functions"] if f["traces"]]
    assert any("fit · train step" in name for name in names), names
    assert "fit · train step retraced (shape-changed" in proc.stderr


@pytest.mark.slow
def test_tfgraph_lab_run_with_the_switch_set_watches_once_and_ends(site_dir: Path, tmp_path: Path) -> None:
    # `TFGRAPH_LAB=watch tfgraph-lab run train.py` hung (two watches in one process: the switch's
    # and run's); run's own watch is the one, the switch stands down in the tool's own process.
    script = tmp_path / "train.py"
    script.write_text("import json\n" + TRAIN)
    done = run(
        site_dir,
        f"from tfgraph_lab.faces.cli import main\nraise SystemExit(main(['run', {str(script)!r}]))\n",
        {"TFGRAPH_LAB": "watch", "STEPS": "3"},
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["tf_count"] == 3
    assert done.stderr.count("tracewatch ·") == 1, done.stderr[-3000:]  # one report, run's
