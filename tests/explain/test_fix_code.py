"""Every line of code a fix prints is valid Python, and no label is ever written into it (issue
32, item 2: ``sequential · fit · train step = tf.function(sequential · fit · train step)`` was
printed four times per Keras cell, and ``--try-fix`` announced it).

The code a report prints: each reason's short fix (its code and the other ways, as the text
report, the HTML report and ``--try-fix`` show them, all from ``FixPlan.code``) and each
function's suggestion. A decorator line is checked as it is pasted, above a ``def``. Keras's own
functions get no "create it once" code at all: their fixes are about the user's call.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tfgraph_lab.explain.fix_text import short_fix
from tfgraph_lab.explain.fixes import code_name
from tfgraph_lab.model.records import FixPlan
from tfgraph_lab.report import TraceReport

ROOT = Path(__file__).resolve().parents[2]


def printed_code(report: TraceReport) -> Iterator[tuple[str, str]]:
    """``(label, code)`` for every piece of code the report prints."""
    for e in report.events:
        for r in e.reasons:
            if r.fix:
                short = short_fix(r, code_name(e.qualname))
                for code in (short.code, *short.others):
                    if code:
                        yield e.label, code
    for f in report.functions:
        if f.suggestion:
            yield f.label, f.suggestion


def is_python(code: str) -> bool:
    """``code`` compiles, a decorator line standing above a ``def`` as it is pasted."""
    lines = code.splitlines()
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if line.lstrip().startswith("@"):
            rest = [x.strip() for x in lines[i + 1 :] if x.strip() and not x.strip().startswith("#")]
            if not rest or not rest[0].startswith(("def ", "@", "class ")):
                out.append(line[: len(line) - len(line.lstrip())] + "def _pasted_above(): pass")
    try:
        compile(textwrap.dedent("\n".join(out)), "<fix>", "exec")
    except SyntaxError:
        return False
    return True


def assert_code_is_python_without_labels(report: TraceReport) -> int:
    labels = {f.label for f in report.functions if f.label != f.qualname}
    checked = 0
    for label, code in printed_code(report):
        assert is_python(code), f"{label}: not Python:\n{code}"
        assert not any(lb in code for lb in labels), f"{label}: a label in the code:\n{code}"
        checked += 1
    return checked


@pytest.mark.parametrize(
    "plan",
    [
        FixPlan(hoist=True),
        FixPlan(decorator="reduce_retracing=True"),
        FixPlan(call=(("lr", "tf.constant(lr)"),)),
        FixPlan(call=(("args_0", "tf.cast(args_0, tf.float32)"), ("k", "tf.constant(k)"))),
        FixPlan(decorator="input_signature=[tf.TensorSpec([None], tf.float32)]", call=(("x", "tf.cast(x, tf.float32)"),)),
    ],
)
def test_every_kind_of_plan_prints_python(plan: FixPlan) -> None:
    code = plan.code("step")
    assert is_python(code) and is_python(plan.text("step")), code
    if plan.call:  # the call is there to read, with the rewritten arguments
        assert all(e in code for _, e in plan.call) and "step(" in code


def test_a_saved_report_whose_qualname_is_a_label_prints_no_label_in_code() -> None:
    """JSON written before labels held "sequential · fit · train step" as the qualname, with a
    hoist plan: no rendering writes it into code (the code calls the function ``f``)."""
    label = "sequential · fit · train step"
    reason = {"code": "new-function-object", "fix": "create it once", "fix_plans": [{"hoist": True}]}
    data = {
        "version": 1,
        "functions": [{"qualname": label, "calls": 2, "traces": 2, "retraces": 1}],
        "events": [{"qualname": label, "traced": True, "retraces": 1, "reasons": [reason]}],
    }
    report = TraceReport.from_dict(data)
    assert assert_code_is_python_without_labels(TraceReport.from_dict({**data, "functions": []})) >= 1
    for text in (str(report), report._repr_html_()):
        assert f"{label} = tf.function" not in text and f"tf.function({label})" not in text


tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402


def test_custom_loop_fixes_are_python() -> None:
    """A custom loop's traps: shapes, a Python learning rate, a dtype change, tf.function
    re-created in a loop, a tf.data map of a tf.function."""

    @tf.function
    def step(x, lr):
        return x * lr

    @tf.function
    def preprocess(x):
        return x * 2

    with tfgraph_lab.watch() as w:
        for n in (1, 2, 3):
            step(tf.ones([n]), 0.1 * n)
        step(tf.ones([3], tf.float64), 1.0)
        for _ in range(3):
            g = tf.function(lambda x: x + 1)
            g(tf.ones([2]))
        preprocess(tf.constant(1, tf.int64))
        list(tf.data.Dataset.range(4).map(preprocess))
    report = w.report
    assert any(f.label.startswith("tf.data wrapper around") for f in report.functions)
    assert assert_code_is_python_without_labels(report) >= 4


SCENARIOS = """
import json
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import numpy as np, keras
import tfgraph_lab

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

@tf.function
def replica_fn(x):
    return x * 2.0

x = np.random.rand(37, 8).astype("float32")
y = np.random.rand(37, 1).astype("float32")
with tfgraph_lab.watch() as w:
    for n in (1, 2, 3, 3):
        strategy.run(replica_fn, args=(tf.ones([n]),))
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    model.fit(x, y, batch_size=16, epochs=2, validation_split=0.2, verbose=0)
    model.compile("adam", "mse")  # again: Keras makes new step functions
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    model.evaluate(x, y, verbose=0)
    model.predict(x[:10], verbose=0)
    model.predict(x, verbose=0)
print("REPORT " + w.report.with_options(show_framework=True).to_json())
"""


@pytest.mark.slow
def test_keras_fit_evaluate_predict_and_a_replica_clone_print_python_and_no_labels(tmp_path: Path) -> None:
    script = tmp_path / "scenarios.py"
    script.write_text(SCENARIOS)
    env = {"PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report: Any = TraceReport.from_json(done.stdout.split("REPORT ", 1)[1])
    text = str(report)  # as the user reads it: no label in code (it printed a SyntaxError, 4 times)
    assert "= tf.function(sequential" not in text and "tf.function(replica clone" not in text, text
    labels = {f.label for f in report.functions}
    assert {"replica clone of replica_fn", "sequential · fit · train step", "sequential · predict step"} <= labels
    assert any(e.label == "sequential · fit · train step" and e.reasons for e in report.events)
    assert assert_code_is_python_without_labels(report) >= 3
    keras_rows = {f.key for f in report.functions if " · " in f.label}
    for e in report.events:
        if e.key in keras_rows:  # Keras makes these functions: nothing to create once
            assert not any(p.hoist for r in e.reasons for p in r.plans), e
    for f in report.functions:
        if f.key in keras_rows and f.suggestion:
            assert "tf.function(" not in f.suggestion, f.suggestion
    assert "sequential · fit · train step  (" in text  # the label is shown, in prose
    json.loads(report.to_json())  # and it is still JSON version 1
