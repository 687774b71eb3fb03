"""Each count defined once (tfgraph_lab.model.counts): the retrace flag decided when recorded, one
``totals(selection)`` for every consumer, live counters equal to the report at every moment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.adapter.keras_steps import step_functions  # noqa: E402
from tfgraph_lab.model.counts import Selection, is_retrace, totals  # noqa: E402
from tfgraph_lab.model.records import Event, FunctionSummary, Reason  # noqa: E402
from tfgraph_lab.report import TraceReport  # noqa: E402


@pytest.mark.parametrize(
    ("codes", "retrace"),
    [
        ((), False),
        (("first-trace",), False),
        (("first-trace", "variable-creation"), False),
        (("variable-creation",), False),
        (("shape-changed",), True),
        (("new-function-object",), True),
        # the first reason decides: a first trace that also names a changed argument is none
        (("first-trace", "shape-changed"), False),
        (("shape-changed", "dtype-changed"), True),
    ],
)
def test_a_retrace_is_decided_by_the_first_reason(codes: tuple[str, ...], retrace: bool) -> None:
    assert is_retrace(codes) is retrace


def _numbers(t: Any) -> tuple[int, int, int]:
    return (t.calls, t.traces, t.retraces)


def _assert_live_equals_report(w: Any) -> None:
    report = w.report  # a live snapshot while recording
    for selection in Selection:
        live = w.live_counters(recent=0, selection=selection)
        done = report.totals(selection)
        assert _numbers(live) == _numbers(done), selection
        assert live.trace_seconds == pytest.approx(done.trace_seconds)


class _CheckEveryBatch(keras.callbacks.Callback):  # type: ignore[misc]
    def __init__(self, w: Any) -> None:
        super().__init__()
        self.w = w
        self.checked = 0

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        _assert_live_equals_report(self.w)
        self.checked += 1


def test_live_counters_equal_the_report_for_a_user_function_and_a_keras_fit() -> None:
    """Issue 19's measurement: live counters said 8 calls / 8 traces / 2 retraces, the report
    4 / 3 / 2, inside one watch with a user function and a Keras fit."""

    @tf.function
    def step(x):  # type: ignore[no-untyped-def]
        return x * 2

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.random.rand(8, 3).astype("float32")
    y = np.random.rand(8, 1).astype("float32")
    with tfgraph_lab.watch() as w:
        for n in (1, 2, 3, 3):
            step(tf.ones([n]))
            _assert_live_equals_report(w)
        check = _CheckEveryBatch(w)
        model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[check])
        _assert_live_equals_report(w)
    assert check.checked == 2
    _assert_live_equals_report(w)  # after the watch: from the finished report
    report = w.report
    # Keras's train step and loop are the user's rows too, in any watch (named by keras_steps)
    keras_traces = sum(fn.experimental_get_tracing_count() for fn, _ in step_functions(model, "train"))
    assert f"{model.name} · fit · train step" in {f.label for f in report.functions}
    assert report.traces == step.experimental_get_tracing_count() + keras_traces == 3 + keras_traces
    assert report.retraces == 2  # the user's two shape changes; Keras's variable-creation trace is none
    every = report.totals("all")
    assert every.traces > report.traces  # Keras's tf.data helpers traced, hidden
    # show_framework is a rendering option only
    shown = report.with_options(show_framework=True)
    assert _numbers(shown.totals()) == _numbers(report.totals())
    assert (shown.calls, shown.traces, shown.retraces) == (report.calls, report.traces, 2)
    assert _numbers(shown.shown_totals) == _numbers(every)


@pytest.mark.usefixtures("small_call_log")
def test_live_counters_stay_equal_to_the_report_while_hits_are_summarised() -> None:
    @tf.function
    def f(x):  # type: ignore[no-untyped-def]
        return x + 1

    with tfgraph_lab.watch() as w:
        for i in range(260):
            f(tf.constant(1.0) if i % 97 else tf.ones([i % 5 + 1]))
            if i % 40 == 0:
                _assert_live_equals_report(w)
        assert w.report.runs, "hits were summarised"
        _assert_live_equals_report(w)
    assert w.live_counters().calls == 260


def test_every_consumer_reads_the_retrace_flag_stored_on_the_event(tmp_path: Path) -> None:
    @tf.function
    def g(x):  # type: ignore[no-untyped-def]
        return x - 1

    with tfgraph_lab.watch(tensorboard_dir=tmp_path / "tb") as w:
        for n in (1, 2, 2, 3):
            g(tf.ones([n]))
    report = w.report
    flagged = [e.index for e in report.events if e.retrace]
    assert len(flagged) == report.retraces == 2
    trace = report.to_chrome_trace()
    calls = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [e["args"]["index"] for e in calls if e["args"].get("retrace")] == flagged
    assert trace["otherData"]["retraces"] == report.totals("all").retraces == 2
    assert [e.index for e in report.retrace_events] == flagged
    from _tensorboard import read_scalars

    assert read_scalars(tmp_path / "tb")["tfgraph_lab/retraces"][-1][1] == 2
    back = TraceReport.from_json(report.to_json())
    assert [e.retraces for e in back.events] == [e.retraces for e in report.events]


def _event(index: int, codes: tuple[str, ...], **fields: Any) -> Event:
    return Event(
        index, "f", "f.py", 0, "call", True, 1, 0.01, reasons=tuple(Reason(c) for c in codes), **fields
    )


def test_the_stored_flag_wins_over_reason_codes_and_old_json_falls_back_to_the_rule() -> None:
    # A flag stored at record time is the truth; readers never decide it again from codes.
    stored = _event(0, ("shape-changed",), retraces=0)
    assert not stored.retrace
    assert Event.from_dict(stored.to_dict()).retraces == 0
    # JSON written before the flag was stored: the same rule (first reason), applied once
    old = _event(1, ("first-trace", "shape-changed")).to_dict()
    del old["retraces"]
    assert Event.from_dict(old).retraces == 0
    old = {**old, "reasons": [{"code": "shape-changed"}]}
    assert Event.from_dict(old).retraces == 1


def test_one_mean_cached_call_for_a_function_and_a_report() -> None:
    rows = [
        FunctionSummary("a", "a.py", 1, calls=11, traces=1, failed_traces=0, trace_seconds=0.5,
                        call_seconds=0.6, framework=False, traced_calls=1),
        FunctionSummary("k", "k.py", 1, calls=5, traces=1, failed_traces=0, trace_seconds=0.2,
                        call_seconds=0.25, framework=True, traced_calls=1, xla_slow_calls=2,
                        xla_slow_seconds=0.03),
    ]  # fmt: skip
    assert rows[0].mean_cached_seconds == pytest.approx(0.1 / 10)
    assert rows[1].mean_cached_seconds == pytest.approx(0.02 / 2)
    report = TraceReport(functions=tuple(rows))
    assert report.mean_cached_seconds == pytest.approx(0.01)  # the user's only
    assert report.totals("all").mean_cached_seconds == pytest.approx(0.12 / 12)
    assert totals(rows, Selection.ALL) == report.totals("all")
    assert json.loads(report.to_json())["functions"][0]["calls"] == 11
