"""One registry of outputs (output.OUTPUTS) written by one finish(): the magic and
`tfgraph-lab run` offer the same flags and write the same files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow")

from _cli import run_cli

from tfgraph_lab.watching.outputs import OUTPUTS
from tfgraph_lab.watching.recorder import is_patched

CELL = "f(tf.ones([1]))\nf(tf.ones([2]))\n"


def _flags(text: str) -> set[str]:
    return {spec.flag for spec in OUTPUTS.values() if spec.flag in text}


def _scalars(log_dir: Path) -> dict[str, list[float]]:
    import tensorflow as tf

    out: dict[str, list[float]] = {}
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                out.setdefault(value.tag, []).append(float(tf.make_ndarray(value.tensor)))
    return out


@pytest.mark.slow
def test_the_magic_and_the_cli_write_every_output_of_the_registry(shell: Any, tmp_path: Path) -> None:
    ip = shell
    # A cell of its own (the shared shell names an unnumbered cell by its source: the same
    # definition run by another test would make this `f` a new-function-object retrace).
    ip.run_cell(f"# {tmp_path}\nimport tensorflow as tf\n@tf.function\ndef f(x):\n    return x + 1\n")
    options = " ".join(f"{s.flag} {tmp_path / ('cell-' + name)}" for name, s in OUTPUTS.items())
    assert ip.run_cell(f"%%tracewatch -q {options}\n{CELL}").success
    assert not is_patched()
    (tmp_path / "s.py").write_text(
        f"import tensorflow as tf\n@tf.function\ndef f(x):\n    return x + 1\n{CELL}"
    )
    options = [a for name, s in OUTPUTS.items() for a in (s.flag, str(tmp_path / f"run-{name}"))]
    done = run_cli("run", *options, "-q", "s.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for who in ("cell", "run"):
        assert json.loads((tmp_path / f"{who}-json").read_text())["functions"][0]["traces"] == 2
        assert json.loads((tmp_path / f"{who}-trace").read_text())["otherData"]["retraces"] == 1
        assert _scalars(tmp_path / f"{who}-tensorboard")["tfgraph_lab/retraces"][-1] == 1
    help_text = run_cli("run", "--help", cwd=tmp_path).stdout
    assert _flags(help_text) == {s.flag for s in OUTPUTS.values()}
