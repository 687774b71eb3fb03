"""A tf.function traced inside another's trace is timed once (issue 32.6).

Calling a tf.function while another traces traces it inside that trace: the outer call's span
holds the inner one's. Each row keeps its own cost (the inner function's tracing is its), but
the totals count the inner time once, in the outer's, and the inner event says where it ran
(``inside``). TF 2.21 traces the inner function on the outer's first trace and on every
retrace of the outer that reaches it with a new signature.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.model.counts import CountRow, Selection, totals  # noqa: E402
from tfgraph_lab.report.trace_report import TraceReport  # noqa: E402


def heavy_inner_and_light_outer() -> tuple[Any, Any]:
    @tf.function
    def inner(x: Any) -> Any:
        for _ in range(150):  # most of the outer's trace is this one's
            x = tf.sin(x) * 1.5
        return x

    @tf.function
    def outer(x: Any) -> Any:
        return inner(x) + 1

    return inner, outer


@pytest.mark.usefixtures("fresh_recording")
def test_a_nested_trace_is_counted_once_and_said_inside_the_outer() -> None:
    inner, outer = heavy_inner_and_light_outer()
    began = time.perf_counter()
    with tfgraph_lab.watch() as w:
        outer(tf.ones([2]))
        outer(tf.ones([3]))
    wall = time.perf_counter() - began
    report = w.report
    assert outer.experimental_get_tracing_count() == 2 and inner.experimental_get_tracing_count() == 2
    row = {f.qualname.rsplit(".", 1)[-1]: f for f in report.functions}
    assert row["inner"].traces == 2 and row["outer"].traces == 2
    traced = [e for e in report.events if e.traced]
    nested = [e for e in traced if e.qualname.endswith("inner")]
    assert len(nested) == 2 and all(e.inside and e.inside.endswith("outer") for e in nested)
    assert all(e.inside is None for e in traced if e.qualname.endswith("outer"))
    # the inner row keeps its cost; it is the part of the outer's the totals do not add again
    assert row["inner"].nested_trace_seconds == pytest.approx(row["inner"].trace_seconds)
    assert row["inner"].trace_seconds > 0 and row["outer"].nested_trace_seconds == 0
    for selection in ("user", "all"):
        assert report.totals(selection).trace_seconds == pytest.approx(row["outer"].trace_seconds)
    assert report.trace_seconds <= wall  # the total never exceeds the time the block took
    text = str(report)
    assert "traced inside" in text and "counted once in the total" in text
    assert "inside " in text and "'s trace (in its cost too)" in text
    assert "counted once in the total" in report._repr_html_()
    again = TraceReport.from_json(report.to_json())
    assert again.trace_seconds == pytest.approx(report.trace_seconds)
    assert [e.inside for e in again.events] == [e.inside for e in report.events]


@pytest.mark.usefixtures("fresh_recording")
def test_a_function_traced_alone_has_no_nested_time_in_its_json() -> None:
    @tf.function
    def alone(x: Any) -> Any:
        return x + 1

    with tfgraph_lab.watch() as w:
        alone(tf.ones([2]))
    data = json.loads(w.report.to_json())
    (fn,) = data["functions"]
    assert "nested_trace_seconds" not in fn and all("inside" not in e for e in data["events"])
    assert w.report.trace_seconds == pytest.approx(fn["trace_seconds"])


def row(qualname: str, framework: bool, seconds: float, nested: float = 0.0, hidden_outer: float = 0.0) -> CountRow:
    r = CountRow(qualname, framework, "")
    r.traces, r.trace_seconds = 1, seconds
    r.nested_trace_seconds, r.nested_framework_seconds = nested, hidden_outer
    return r


def test_a_trace_inside_a_hidden_function_counts_in_the_users_total() -> None:
    # a user's function traced inside Keras's own (hidden) step: the user's total has no row
    # holding its time but its own
    rows = [row("keras step", True, 3.0), row("user fn", False, 2.0, nested=2.0, hidden_outer=2.0)]
    assert totals(rows, Selection.USER).trace_seconds == pytest.approx(2.0)
    assert totals(rows, Selection.ALL).trace_seconds == pytest.approx(3.0)
    # inside a user's function: counted in that function's time only
    rows = [row("outer", False, 3.0), row("inner", False, 2.0, nested=2.0)]
    assert totals(rows, Selection.USER).trace_seconds == pytest.approx(3.0)


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_recording")
def test_keras_fit_tracing_total_is_within_the_fits_wall_time() -> None:
    """Keras 3.15's fit traces its train step inside its train loop's trace (the issue's cell:
    "tracing took 10.19 s" for a cell that ran 8.8 s)."""
    keras = pytest.importorskip("keras")
    import numpy as np

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    x = np.random.default_rng(0).random((40, 4), dtype=np.float32)
    began = time.perf_counter()
    with tfgraph_lab.watch() as w:
        model.fit(x, x[:, :1], batch_size=16, epochs=2, verbose=0)  # a short last batch: a retrace
    wall = time.perf_counter() - began
    report = w.report
    step = next(f for f in report.functions if f.label.endswith("train step"))
    loop = next(f for f in report.functions if f.label.endswith("train loop"))
    from tfgraph_lab.keras.names import step_functions

    tf_counts = {part: fn.experimental_get_tracing_count() for fn, part in step_functions(model, "train")}
    assert (step.traces, loop.traces) == (tf_counts["step"], tf_counts["loop"])
    inside = {e.inside for e in report.events if e.traced and e.key == step.key}
    assert inside == {loop.label}  # the outer row as people read it (its qualname is Keras's)
    assert f"inside {loop.label}'s trace" in str(report) and f"{step.label} traced inside {loop.label}'s trace" in str(report)
    assert step.nested_trace_seconds == pytest.approx(step.trace_seconds)
    assert report.trace_seconds == pytest.approx(loop.trace_seconds)
    assert report.trace_seconds <= wall
