"""``tfgraph_lab.pth`` really lands in site-packages, from a wheel and from ``pip install -e .``,
and ``TFGRAPH_LAB=watch python train.py`` then writes the report with no code change.

Each install goes into a fresh virtual environment (no pip of its own: this environment's pip
installs into it with ``--python``, ``--no-deps``): the wheel from a folder of built wheels only
(``--no-index --find-links``); the build backend (setuptools) comes from the environment's
configured index, as every build here does. TensorFlow is this environment's: a path line in the
fresh environment points at this site-packages after its own, so the fresh ``tfgraph_lab`` (and
its ``.pth``) is the one found. The project is copied first: an editable build writes into its
source folder (``build/``, ``*.egg-info``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

ROOT = Path(__file__).resolve().parents[2]
WANTED = os.environ.get("CI") == "true" or os.environ.get("TFGL_INSTALL_TEST") == "1"
SOURCES = ["pyproject.toml", "setup.py", "MANIFEST.in", "tfgraph_lab.pth", "README.md", "LICENSE", "tfgraph_lab"]

TRAIN = """\
import json, os
import tensorflow as tf

@tf.function
def train_step(x, step):
    return tf.reduce_sum(x) * tf.cast(step, tf.float32)

for step in range(3):
    train_step(tf.ones([2]), step)
import tfgraph_lab
print(json.dumps({"pid": os.getpid(), "tf_count": train_step.experimental_get_tracing_count(),
                  "package": tfgraph_lab.__file__}))
"""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not WANTED, reason="builds the project with setuptools from the index: CI=true or TFGL_INSTALL_TEST=1"),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("project") / "tfgraph-lab"
    copy.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, copy / name)
    return copy


def fresh_venv(root: Path) -> tuple[Path, Path]:
    """A new virtual environment: its Python and its site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    return python, purelib


def see_this_tensorflow(purelib: Path) -> None:
    """A path line to this environment's site-packages (TensorFlow), after the fresh one's own;
    written after the install, or pip would find this environment's tfgraph-lab installed."""
    (purelib / "zz_outer_site_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")


def pip(python: Path, *args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def watched_run(python: Path, tmp: Path) -> tuple[dict[str, object], dict[str, object], str]:
    (tmp / "train.py").write_text(TRAIN)
    env = dict(os.environ, TFGRAPH_LAB="watch", TFGRAPH_LAB_JSON=str(tmp / "w-{pid}.json"), TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(python), "train.py"], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.splitlines()[-1])
    report = json.loads((tmp / f"w-{seen['pid']}.json").read_text())
    return seen, report, proc.stderr


def check_watched(python: Path, purelib: Path, tmp: Path, package_under: Path) -> None:
    see_this_tensorflow(purelib)
    seen, report, stderr = watched_run(python, tmp)
    assert Path(str(seen["package"])).is_relative_to(package_under), seen["package"]
    (row,) = [f for f in report["functions"] if f["qualname"] == "train_step"]
    assert row["traces"] == seen["tf_count"] == 3
    assert "tf.function train_step retraced (python-value-changed step: 0 → 1)" in stderr


def test_from_the_wheel(project: Path, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(project)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    python, purelib = fresh_venv(tmp_path / "env")
    pip(python, "--no-index", "--find-links", str(wheels), "tfgraph-lab")
    assert (purelib / "tfgraph_lab.pth").read_text() == (ROOT / "tfgraph_lab.pth").read_text()
    check_watched(python, purelib, tmp_path, purelib)


def test_from_an_editable_install(project: Path, tmp_path: Path) -> None:
    python, purelib = fresh_venv(tmp_path / "env")
    pip(python, "-e", str(project))
    assert (purelib / "tfgraph_lab.pth").read_text() == (ROOT / "tfgraph_lab.pth").read_text()
    check_watched(python, purelib, tmp_path, project)
