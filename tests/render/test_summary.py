"""The summary view (issue 32.7): the headline, then one line per function with its plan's best
fix and what it saves — through the API, ``%%tracewatch --summary`` and ``tfgraph-lab run --summary``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf
from _cli import run_cli

import tfgraph_lab


def scaled(x, k):  # type: ignore[no-untyped-def]
    return tf.reduce_sum(x) * k


@pytest.mark.usefixtures("fresh_recording")
def test_summary_is_the_headline_and_one_line_per_function_with_its_best_fix() -> None:
    fn = tf.function(scaled)
    calm = tf.function(lambda x: x + 1.0)
    with tfgraph_lab.watch() as w:
        for k in (1.0, 2.0, 3.0):
            fn(tf.ones([2]), k)
        calm(tf.ones([2]))
    summary = w.report.with_view(brevity="summary")
    text = str(summary)
    lines = text.splitlines()
    assert lines[0] == "tracewatch · " + w.report.headline()
    best = w.report.plan("scaled").best
    assert best is not None and best.graphs == 1  # tf.constant(k): TF's count is checked in test_plan_e2e
    flat = " ".join(" ".join(lines[1:]).split())  # a long line wraps
    assert flat == " ".join(
        f"scaled: 3 traces · 3 graphs · best fix: {best.one_line('scaled')} "
        f"{w.report.functions[1].qualname}: 1 trace · 1 graph · no retrace".split()
    ), text
    assert "fn(tf.ones([2]), tf.constant(k))" in best.one_line("scaled")  # the call as written, rewritten
    assert len(lines) < len(str(w.report).splitlines())  # between everything and nothing
    assert best.one_line("scaled") in summary._repr_html_().replace("&#x27;", "'").replace("&gt;", ">")


def test_magic_summary_flag(shell: Any, capsys: Any) -> None:
    shell.run_cell("import tensorflow as tf\ng = tf.function(lambda x, k: x * k)")
    result = shell.run_cell("%%tracewatch --summary -v srep\nfor k in (1.0, 2.0):\n    g(tf.ones([2]), k)\n")
    assert result.success
    shown = capsys.readouterr().out
    # the user's own call, rewritten (the lambda is called g), not a template named f
    fix = re.search(r"best fix: g\(tf.ones\(\[2\]\), tf.constant\(k\)\)  # In \[\d+\], line 3, was: g\(tf.ones\(\[2\]\), k\) → ", shown)
    assert fix and "graph cache:" not in shown, shown


@pytest.mark.slow
def test_cli_run_summary_flag(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(
        "import tensorflow as tf\n@tf.function\ndef step(x, n):\n    return x * n\n"
        "for n in (1.0, 2.0, 3.0):\n    step(tf.ones([2]), n)\n"
    )
    proc = run_cli("run", "--summary", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    fix = "best fix: step(tf.ones([2]), tf.constant(n))  # s.py:6, was: step(tf.ones([2]), n) → "
    assert "  step: 3 traces · 3 graphs · " + fix in proc.stderr, proc.stderr
    assert "graph cache:" not in proc.stderr


@pytest.mark.usefixtures("fresh_recording")
def test_a_recompile_that_changed_only_the_learning_rate_is_summarised_with_its_advice() -> None:
    """The summary said 'no change saves a graph for these calls' where the whole report
    advised model.optimizer.learning_rate.assign(0.001) instead of the second compile."""
    import keras
    import numpy as np

    x, y = np.ones((20, 4), "float32"), np.ones((20, 1), "float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    with tfgraph_lab.watch() as w:
        model.compile(keras.optimizers.Adam(0.01), "mse")
        model.fit(x, y, batch_size=20, epochs=1, verbose=0)
        model.compile(keras.optimizers.Adam(0.001), "mse")
        model.fit(x, y, batch_size=20, epochs=1, verbose=0)
    text = str(w.report.with_view(brevity="summary"))
    step = next(line for line in text.splitlines() if "train step" in line)
    assert "model.optimizer.learning_rate.assign(0.001)" in step, text
    assert "no change saves a graph" not in step, text
    assert "model.optimizer.learning_rate.assign(0.001)" in str(w.report)  # the whole report's advice
