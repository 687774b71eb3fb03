"""A call-site fix runs as printed against the user's own code (issue 32).

The fix for a Python value that retraces used to be printed as a template,
``train_step(..., lr=tf.constant(lr))  # at every call``, which does not run against the user's
``train_step(x, y, lr, True)`` or ``h(i)``. Now the report prints each call that traced,
rewritten (``loop.py:17   train_step(x, y, tf.constant(lr), True)  # was: train_step(x, y, lr,
True)``). Each test here takes those lines exactly as printed, puts the new call in place of the
old one in the user's source (the file, or the notebook cell), runs the result under TensorFlow
and checks ``experimental_get_tracing_count()`` against the promise printed beside the fix.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _cli import run_cli

# a printed call edit: "WHERE   NEW CALL  # was: OLD CALL" under a fix of the plan
EDIT = re.compile(r"^\s+(?P<where>\S.*?)   (?P<code>\S.*?)  # was: (?P<was>.+)$")
PROMISE = re.compile(r"→ \d+ fewer graphs?: (?P<graphs>\d+) graphs? instead of (?P<before>\d+)")

LOOP = """\
import tensorflow as tf

layer = tf.keras.layers.Dense(4)
drop = tf.keras.layers.Dropout(0.5)


@tf.function
def train_step(x, y, lr, training):
    h = drop(layer(x), training=training)
    return tf.reduce_mean((h - y) ** 2) * lr


data = [(tf.ones([8, 3]), tf.ones([8, 4])), (tf.ones([8, 3]), tf.ones([8, 4]))]
lr = 0.1
for epoch in range(4):
    for x, y in data:
        loss = train_step(x, y, lr, True)
    lr = lr * 0.5
print("traces", train_step.experimental_get_tracing_count())
"""

INTS = """\
import tensorflow as tf


@tf.function
def h(i):
    return tf.square(i)


for i in range(5):
    h(i)
print("traces", h.experimental_get_tracing_count())
"""

KEYWORD = """\
import tensorflow as tf


@tf.function
def f(x, training=False):
    if training:
        return x * 2.0
    return x


x = tf.ones([3])
for flag in [True, False, True, False]:
    y = f(x, training=flag)
print("traces", f.experimental_get_tracing_count())
"""


def first_fix(report: str) -> tuple[list[dict[str, str]], int]:
    """The call edits printed under the plan's first fix, and the graphs it promises."""
    lines = report.splitlines()
    at = next(i for i, line in enumerate(lines) if re.match(r"^\s+1\. ", line))
    promise = PROMISE.search(lines[at])
    assert promise is not None, lines[at]
    edits = []
    for line in lines[at + 1 :]:
        match = EDIT.match(line)
        if match is None:
            break
        edits.append(match.groupdict())
    return edits, int(promise["graphs"])


def applied(source: str, edits: list[dict[str, str]], line_of: Any) -> str:
    """``source`` with each printed edit applied: at its line, the old call replaced by the new."""
    lines = source.splitlines(keepends=True)
    for edit in edits:
        number = line_of(edit["where"])
        assert lines[number - 1].count(edit["was"]) == 1, (edit, lines[number - 1])
        lines[number - 1] = lines[number - 1].replace(edit["was"], edit["code"])
    return "".join(lines)


def traces_of(script: Path) -> int:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=script.parent, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return int(re.search(r"traces (\d+)", proc.stdout)[1])  # type: ignore[index]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("source", "was", "now", "before", "after"),
    [
        (LOOP, "train_step(x, y, lr, True)", "train_step(x, y, tf.constant(lr), True)", 5, 2),
        (INTS, "h(i)", "h(tf.constant(i))", 5, 1),
        (KEYWORD, "f(x, training=flag)", "f(x, training=tf.constant(flag))", 2, 1),
    ],
    ids=["custom-loop-lr", "h-of-int", "keyword"],
)
def test_the_printed_call_runs_as_printed_in_the_script(
    tmp_path: Path, source: str, was: str, now: str, before: int, after: int
) -> None:
    script = tmp_path / "train.py"
    script.write_text(source)
    proc = run_cli("run", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"traces {before}" in proc.stdout
    edits, promised = first_fix(proc.stderr)
    line = source[: source.rindex(was)].count("\n") + 1
    # the user's own call, at its own line, rewritten in place: positional stays positional
    assert edits == [{"where": f"train.py:{line}", "code": now, "was": was}], proc.stderr
    assert promised == after, proc.stderr
    fixed = tmp_path / "fixed.py"
    fixed.write_text(applied(source, edits, lambda where: int(where.rsplit(":", 1)[1])))
    assert traces_of(fixed) == promised  # TensorFlow's own count is the promise


def test_the_printed_call_runs_as_printed_in_a_notebook_cell(shell: Any, capsys: Any) -> None:
    define = "import tensorflow as tf\n@tf.function\ndef h(i):\n    return tf.square(i)\n"
    assert shell.run_cell(define).success
    cell = "%%tracewatch\nfor i in range(4):\n    y = h(i) + 1\n"
    assert shell.run_cell(cell).success
    shown = capsys.readouterr().out
    edits, promised = first_fix(shown)
    assert len(edits) == 1 and re.fullmatch(r"In \[\d+\], line 3", edits[0]["where"]), shown
    assert (edits[0]["code"], edits[0]["was"]) == ("h(tf.constant(i))", "h(i)"), shown
    fixed = applied(cell, edits, lambda where: int(where.rsplit(" ", 1)[1]))
    assert shell.run_cell(define).success  # a fresh tf.function: its count is the fixed cell's
    assert shell.run_cell(fixed.split("\n", 1)[1]).success  # the cell without the magic line
    assert shell.user_ns["h"].experimental_get_tracing_count() == promised == 1


def test_a_call_without_source_gets_the_template_and_says_why(tmp_path: Path) -> None:
    """Code built by exec() from a string has no source to rewrite: the template stays, and the
    report says why; a call through ``*args`` is named with its reason beside the rewritten one."""
    import tensorflow as tf

    import tfgraph_lab

    @tf.function
    def g(a, b):
        return a * b

    namespace = {"g": g, "tf": tf}
    with tfgraph_lab.watch() as w:
        exec("for b in (1.0, 2.0, 3.0):\n    g(tf.ones([2]), b)\n", namespace)
    best = w.report.plan("g").best
    assert best is not None and not best.plan.call_edits
    assert "exec()" in best.plan.call_edits_note
    text = str(w.report)
    assert "g(..., b=tf.constant(b))  # at every call" in text
    assert "(shown as a template: the call at <string>:2: the calling code has no source to read" in text

    args = (tf.ones([2]),)
    with tfgraph_lab.watch() as w:
        for b in (5.0, 6.0):  # new values: the first watch's are cached
            g(tf.ones([2]), b)
        for b in (7.0, 8.0):
            g(*args, b)
    plan = w.report.plan("g").best.plan  # type: ignore[union-attr]
    assert [e.code for e in plan.call_edits] == ["g(tf.ones([2]), tf.constant(b))"]
    assert "it passes arguments with `*`" in plan.call_edits_note


PREDICT = """\
import numpy as np
import keras

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
xs = np.arange(256, dtype="float32").reshape(64, 4)
for n in (10, 37, 64):
    preds = model.predict(xs[:n], verbose=0)  # one length per loop: 10, 37, 64
    assert preds.shape == (n, 2) and np.allclose(preds, model(xs[:n]), atol=1e-5), preds.shape
print("traces", model.predict_function.experimental_get_tracing_count())
"""


@pytest.mark.slow
def test_the_padded_predict_is_written_on_the_users_own_call(tmp_path: Path) -> None:
    """Keras's predict step retraces for a new batch length; the suggestion pads the input (the
    line's comment left out of the code and of "was"). It used to print ``y = model.predict(np.pad(x, …), batch_size=batch_size)[: len(x)]``, names the
    user may not have (NameError as printed); now it is the user's call, padded."""
    script = tmp_path / "predict.py"
    script.write_text(PREDICT)
    proc = run_cli("run", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "traces 2" in proc.stdout
    shown = [line.strip() for line in proc.stderr.splitlines()]
    at = shown.index("import numpy as np")
    code, was = re.fullmatch(r"(.+)  # predict\.py:7, was: (.+)", shown[at + 1]).groups()  # type: ignore[union-attr]
    assert was == "preds = model.predict(xs[:n], verbose=0)", proc.stderr  # the line, as written
    assert code.startswith("preds = model.predict(np.pad(xs[:n], "), code
    assert "#" not in code, code  # the line's own comment, once, after the place: it was printed twice
    fixed = tmp_path / "fixed.py"
    fixed.write_text(PREDICT.replace(was, code))  # numpy is imported as np already
    assert traces_of(fixed) == 1  # one batch shape for every length; the same predictions


def test_the_json_places_each_call_exactly(tmp_path: Path) -> None:
    """``call_edits`` name the call's exact span (a call over two lines, a keyword, a call
    inside an expression): ``was`` is the source between the positions, and replacing it by
    ``code`` there runs with the promised count."""
    import runpy

    import tfgraph_lab
    from tfgraph_lab.model.records import FixPlan
    from tfgraph_lab.report import TraceReport

    source = (
        "import tensorflow as tf\n"
        "@tf.function\n"
        "def f(x, scale=1.0, *, shift=0.0):\n"
        "    return x * scale + shift\n"
        "for s in (1.0, 2.0, 3.0):\n"
        "    tötal = 1 + tf.reduce_sum(f(tf.ones([2]),\n"  # ö: columns count characters, not bytes
        "                             s, shift=0.5))\n"
    )
    script = tmp_path / "multi.py"
    script.write_text(source, encoding="utf-8")
    with tfgraph_lab.watch() as w:
        namespace = runpy.run_path(str(script))
    assert namespace["f"].experimental_get_tracing_count() == 3
    data = json.loads(w.report.to_json())  # read back as another process would
    plan = TraceReport.from_dict(data).plan("f").best.plan  # type: ignore[union-attr]
    assert isinstance(plan, FixPlan) and len(plan.call_edits) == 1, plan
    edit = plan.call_edits[0]
    lines = source.splitlines(keepends=True)
    assert (edit.line, edit.end_line) == (6, 7)
    span = lines[5][edit.col :] + lines[6][: edit.end_col]
    assert span == edit.was == "f(tf.ones([2]),\n                             s, shift=0.5)"
    assert edit.code == "f(tf.ones([2]),\n                             tf.constant(s), shift=0.5)"
    assert edit.where == "multi.py:6" or edit.where.endswith("multi.py:6"), edit.where
    assert edit.text().startswith(f"{edit.where}-7   f(tf.ones([2]), tf.constant(s), shift=0.5)  # was: ")
    offset = sum(len(line) for line in lines[:5])
    start, end = offset + edit.col, sum(len(line) for line in lines[:6]) + edit.end_col
    fixed = source[:start] + edit.code + source[end:]
    (tmp_path / "fixed.py").write_text(fixed, encoding="utf-8")
    again = runpy.run_path(str(tmp_path / "fixed.py"))
    assert again["f"].experimental_get_tracing_count() == plan.graphs == 1


@pytest.mark.parametrize(
    ("body", "floats_only"),
    [
        ("def g(n, step):\n    return tf.ones([n]) * (1.0 / (1 + step))\n", True),
        ("def g(n, step):\n    return -step * 0.5\n", True),
        ("def g(n, step):\n    return tf.ones([n]) * step\n", False),  # no float: int32 serves
        ("def g(n, step):\n    return x[step] * 0.5\n", False),  # an index needs an int
        ("def g(n, step):\n    return tf.range(step) * 0.5 + step * 0.5\n", False),  # range needs an int
        ("def g(n, step):\n    return n * 2.0\n", False),  # no use
    ],
)
def test_a_python_int_meeting_only_floats_is_passed_as_float32(body: str, floats_only: bool) -> None:
    """tf.constant(step) is int32: at ``1.0 / (1 + step)`` TF raises 'Expected int32, but got
    1.0' (TF 2.21), so there the fix passes a float32 tensor; anywhere else it stays int32."""
    from tfgraph_lab.explain.call_edits import meets_floats_only

    assert meets_floats_only("step", body) is floats_only
