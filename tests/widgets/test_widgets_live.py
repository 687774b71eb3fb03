"""The live display (rate bound, content, close) and the report explorer, headless."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("ipywidgets")
tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.faces.live_view import LiveDisplay  # noqa: E402
from tfgraph_lab.widgets import ReportExplorer  # noqa: E402


def _loop_for(seconds: float, fn: object, shapes: list[int]) -> int:
    calls, end, i = 0, time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        fn(tf.ones((shapes[i % len(shapes)], 3)))  # type: ignore[operator]
        calls += 1
        i += 1
    return calls


def test_live_display_updates_at_a_bounded_rate_and_closes() -> None:
    @tf.function
    def live_step(x):  # type: ignore[no-untyped-def]
        return tf.reduce_sum(x)

    published: list[dict[str, str]] = []
    with tfgraph_lab.watch() as recorder:
        live_step(tf.ones((4, 3)))  # so that every beat has something to show
        dash = LiveDisplay(recorder, publish=published.append).start()
        t0 = time.perf_counter()
        calls = _loop_for(1.5, live_step, [4, 4, 4, 5])
        elapsed = time.perf_counter() - t0
        dash.close()
    assert "waiting for the first" in published[0]["text/plain"]
    assert dash.snapshot_errors == 0, dash.last_error
    live = published[1:-1]
    assert 1 <= len(live) <= 5 * elapsed + 1, (len(live), elapsed)
    assert dash.updates == len(live)
    last = live[-1]
    assert "tfgl-trace-count" in last["text/html"] and "tfgl-calls" in last["text/html"]
    assert "live_step" in last["text/html"]
    assert "2 traces" in last["text/plain"]  # shapes (4, 3) and (5, 3), as TF says:
    assert live_step.experimental_get_tracing_count() == 2
    assert published[-1] == {"text/plain": "", "text/html": ""}  # the final report replaces it
    assert calls > 0


def test_close_with_report_shows_it_in_place() -> None:
    @tf.function
    def other_step(x):  # type: ignore[no-untyped-def]
        return x * 2

    published: list[dict[str, str]] = []
    with tfgraph_lab.watch() as recorder:
        dash = LiveDisplay(recorder, publish=published.append).start()
        other_step(tf.ones(2))
    dash.close(recorder.report)
    assert "tfgl-report" in published[-1]["text/html"]
    assert "other_step" in published[-1]["text/plain"]


@pytest.mark.parametrize(("interval", "budget"), [(0.05, 0.02), (0.2, 0.0), (0.2, 1.5)])
def test_live_display_rejects_unbounded_settings(interval: float, budget: float) -> None:
    with pytest.raises(ValueError, match=r"interval|budget"):
        LiveDisplay(object(), interval=interval, budget=budget)


def test_report_explorer_filters_and_shows_reasons() -> None:
    @tf.function
    def explored(x):  # type: ignore[no-untyped-def]
        return x + 1

    @tf.function
    def quiet(x):  # type: ignore[no-untyped-def]
        return x - 1

    with tfgraph_lab.watch() as w:
        explored(tf.ones((2, 2)))
        explored(tf.ones((2, 2)))
        explored(tf.ones((3, 2)))
        quiet(tf.ones(1))
    report = w.report
    ex = ReportExplorer(report)
    assert len(ex.calls.options) == 4
    # options are (shown label, name) pairs: labels show invisible characters, values stay verbatim
    ex.function.value = next(n for _, n in ex.function.options if n.endswith(".explored"))
    assert len(ex.calls.options) == 3
    ex.traced_only.value = True
    assert len(ex.calls.options) == explored.experimental_get_tracing_count() == 2
    ex.calls.value = 1
    assert "tfgl-reason-shape-changed" in ex.detail.value
    assert "(3, 2)" in ex.detail.value
    ex.traced_only.value = False
    ex.calls.value = 1  # the cached second call: its graph and hits
    assert "a cached graph ran" in ex.detail.value and "2 hits" in ex.detail.value
    rebuilt = ReportExplorer(type(report).from_json(report.to_json()))
    assert len(rebuilt.calls.options) == 4


def test_report_explorer_leaves_the_report_in_saved_notebooks() -> None:
    @tf.function
    def saved(x):  # type: ignore[no-untyped-def]
        return x * 3

    with tfgraph_lab.watch() as w:
        saved(tf.ones(2))
        saved(tf.ones(3))
    bundle = ReportExplorer(w.report)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "2 traces" in bundle["text/plain"] and "saved" in bundle["text/plain"]
    assert "tfgl-report" in bundle["text/html"] and "tfgl-reason-shape-changed" in bundle["text/html"]
