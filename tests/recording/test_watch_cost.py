"""A trace's cost is TensorFlow's own tracing time, not the watch's (issue 36.3).

The watch's own work on the slow path (the trace callback, noting a new graph for its
explanation, the record) happens inside the span of every call still in progress: an outer
function's trace holds the records of the nested calls it makes. That work is taken out of each
trace's cost and stated once, as ``report.watch_seconds``. Checked with a clock that jumps 100 s
whenever the watch notes a new graph, so no wall-clock time is asserted: a cost that held the
watch's work would be over 100 s. (The reasons themselves are built outside every span:
``test_explain_outside.py``.) The other way round, a garbage collection that runs inside the
watch's work is not the watch's: the clock jumps during a collection.
"""

from __future__ import annotations

import gc
import time
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.recording import hooks, hub  # noqa: E402
from tfgraph_lab.report.trace_report import TraceReport  # noqa: E402
from tfgraph_lab.watching import recorder  # noqa: E402

JUMP = 100.0


def _jump_on(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """The recording's clock (and a watch's start) jumps ``JUMP`` seconds each time
    ``owner.name`` runs; returns the list of jumps made (one per run)."""
    offset = [0.0]
    jumps: list[int] = []
    real = getattr(owner, name)

    def clock() -> float:
        return time.perf_counter() + offset[0]

    def slow(*args: Any, **kwargs: Any) -> Any:
        offset[0] += JUMP
        jumps.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hooks, "_perf", clock)  # the hooks bind it when a watch installs them
    monkeypatch.setattr(hub, "_perf", clock)
    monkeypatch.setattr(recorder, "_perf", clock)  # a watch's start, on the same clock
    monkeypatch.setattr(owner, name, slow)
    return jumps


def nested_pair() -> tuple[Any, Any]:
    """``(outer, inner)``: two new tf.functions, ``inner`` called (and traced) inside ``outer``'s
    trace, so inner's record is made in outer's span."""

    @tf.function
    def inner(x: Any) -> Any:
        return x * 2

    @tf.function
    def outer(x: Any) -> Any:
        return inner(x) + 1

    return outer, inner


def watched_at_two_shapes() -> Any:
    """The report of a watch in which a new tf.function is called at two shapes: two traces."""

    @tf.function
    def step(x: Any) -> Any:
        return x + 1

    with tfgraph_lab.watch() as w:
        step(tf.ones([2]))
        step(tf.ones([3]))
    return w.report


def assert_no_watch_work_in(traced: list[Any]) -> None:
    for e in traced:
        assert e.seconds < JUMP, f"{e.qualname}'s cost holds the watch's work: {e.seconds:.1f} s"


def assert_traces_kept_apart(report: Any, names: set[str]) -> None:
    """The report traced exactly the functions ``names`` (by their last name), no trace's cost
    holds the watch's work, and the report states that work apart."""
    traced = [e for e in report.events if e.traced]
    assert {e.qualname.rsplit(".", 1)[-1] for e in traced} == names
    assert_no_watch_work_in(traced)
    assert report.watch_seconds >= JUMP


@pytest.fixture
def jumping_clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The clock jumps each time the watch notes a new graph (one jump per graph noted)."""
    return _jump_on(monkeypatch, hub, "note_new_graph")


def test_a_nested_functions_records_are_not_in_the_outer_traces_cost(jumping_clock: list[int]) -> None:
    outer, inner = nested_pair()
    with tfgraph_lab.watch() as w:
        outer(tf.ones([2]))
        outer(tf.ones([3]))  # both retrace: four graphs noted, four jumps
    report = w.report
    assert len(jumping_clock) == 4
    traced = [e for e in report.events if e.traced]
    assert {e.qualname.rsplit(".", 1)[-1] for e in traced} == {"inner", "outer"}
    assert_no_watch_work_in(traced)
    assert report.trace_seconds < JUMP
    assert report.watch_seconds >= 4 * JUMP  # stated once, apart
    assert outer.experimental_get_tracing_count() == 2 and inner.experimental_get_tracing_count() == 2


def test_the_watch_cost_is_said_once_and_kept_in_the_json(jumping_clock: list[int]) -> None:
    report = watched_at_two_shapes()
    text = str(report)
    assert text.count("the watch itself:") == 1 and "over 2 traces" in text
    assert report._repr_html_().count("the watch itself:") == 1
    again = TraceReport.from_json(report.to_json())
    assert again.watch_seconds == pytest.approx(report.watch_seconds) and again.watch_seconds >= 2 * JUMP


@pytest.fixture
def slow_describing(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The clock jumps each time the watch describes a function object it sees for the first
    time (``Hub._register``; one jump per function described)."""
    return _jump_on(monkeypatch, hub.Hub, "_register")


def test_describing_a_function_first_seen_is_the_watchs_work(slow_describing: list[int]) -> None:
    outer, _ = nested_pair()  # inner is first seen inside outer's trace: in outer's span
    with tfgraph_lab.watch() as w:
        outer(tf.ones([2]))
    report = w.report
    assert len(slow_describing) == 2  # outer before its call, inner inside outer's trace
    traced = [e for e in report.events if e.traced]
    assert len(traced) == 2
    assert_no_watch_work_in(traced)
    assert report.watch_seconds >= 2 * JUMP  # both descriptions are the watch's own work
    with tfgraph_lab.watch() as again:  # the hooks are installed anew: outer described again
        outer(tf.ones([2]))
        with tfgraph_lab.watch() as nested:  # already described when this one began
            outer(tf.ones([2]))
    assert len(slow_describing) == 3
    assert again.report.watch_seconds >= JUMP and nested.report.watch_seconds < JUMP


@pytest.fixture
def slow_fingerprints(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The clock jumps each time the watch reads the graphs' fingerprints of a function object
    that was freed (``history.keep_fingerprints``, from the hub's weak-reference callback)."""
    return _jump_on(monkeypatch, hub, "keep_fingerprints")


def scaler() -> Any:
    @tf.function
    def scale(x: Any, s: Any) -> Any:
        return x * s

    return scale


def test_reading_a_freed_functions_fingerprints_is_the_watchs_work(slow_fingerprints: list[int]) -> None:
    with tfgraph_lab.watch() as w:
        scale = scaler()
        scale(tf.ones([2]), 0.5)
        scale(tf.ones([2]), 1.5)  # a retrace on a Python float: graphs with a Python value
        del scale  # freed in the watch: its graphs' fingerprints are read now
    assert len(slow_fingerprints) == 1
    report = w.report
    assert_no_watch_work_in([e for e in report.events if e.traced])
    assert report.watch_seconds >= JUMP

    before = scaler()
    before(tf.ones([2]), 0.5)
    with tfgraph_lab.watch() as later:
        before(tf.ones([2]), 1.5)
        step = scaler()
        step(tf.ones([2]), 0.5)
    del before  # freed after the watch: not its work
    assert len(slow_fingerprints) == 2
    assert later.report.watch_seconds < JUMP
    del step


def test_a_watch_inside_another_counts_that_work_in_its_own_span_only(slow_fingerprints: list[int]) -> None:
    with tfgraph_lab.watch() as outer:
        first = scaler()
        first(tf.ones([2]), 0.5)
        del first  # freed in the outer watch only
        with tfgraph_lab.watch() as inner:
            second = scaler()
            second(tf.ones([2]), 0.5)
            del second  # freed in both
        third = scaler()
        third(tf.ones([2]), 0.5)
        del third  # freed in the outer watch only
    assert len(slow_fingerprints) == 3
    assert outer.report.watch_seconds >= 3 * JUMP
    assert JUMP <= inner.report.watch_seconds < 2 * JUMP


def test_a_function_freed_inside_a_trace_is_not_in_that_traces_cost(slow_fingerprints: list[int]) -> None:
    @tf.function
    def outer(x: Any) -> Any:
        inner = scaler()  # a new tf.function in the trace, freed when outer's body returns
        return inner(x, 2.0)

    with tfgraph_lab.watch() as w:
        outer(tf.ones([2]))
    assert len(slow_fingerprints) == 1
    assert_traces_kept_apart(w.report, {"outer", "scale"})


@pytest.fixture
def slow_summaries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The clock jumps each time the hub summarises its log (``CallLog.summarise_hits``, once per
    50 000 calls in a real run: the test lowers the threshold)."""
    from tfgraph_lab.recording import calllog

    return _jump_on(monkeypatch, calllog.CallLog, "summarise_hits")


def test_keeping_the_log_bounded_is_the_watchs_work(slow_summaries: list[int]) -> None:
    @tf.function
    def inner(x: Any) -> Any:
        return x * 2

    @tf.function
    def outer(x: Any) -> Any:  # inner's second and third calls are cache hits inside the trace
        return inner(x) + inner(x) + inner(x)

    x = tf.ones([2])
    with tfgraph_lab.watch() as w:
        hub.HUB.calllog.summarise_at = 0  # summarise at every hit, as a long loop does now and then
        outer(x)
    # at inner's first hit, inside outer's trace (the log then sets its next one 50 000 entries on)
    assert len(slow_summaries) == 1
    assert_traces_kept_apart(w.report, {"inner", "outer"})

    with tfgraph_lab.watch() as later:  # the log kept bounded before this watch: not its work
        outer(x)
    assert later.report.watch_seconds < JUMP


@pytest.fixture
def collecting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Python collects garbage each time the watch notes a new graph (as a full collection
    starts at whichever allocation crosses its threshold, the watch's own included), and the
    clock jumps ``JUMP`` seconds during each collection; returns the collections made."""
    offset = [0.0]
    collections: list[int] = []
    real = hub.note_new_graph

    def clock() -> float:
        return time.perf_counter() + offset[0]

    def jump(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":  # after the GC clock read its start: it was installed first
            offset[0] += JUMP
            collections.append(1)

    def noting(*args: Any, **kwargs: Any) -> Any:
        gc.callbacks.append(jump)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(jump)
        return real(*args, **kwargs)

    monkeypatch.setattr(hooks, "_perf", clock)
    monkeypatch.setattr(hub, "_perf", clock)
    monkeypatch.setattr(recorder, "_perf", clock)
    monkeypatch.setattr(hub.HUB.gc, "_perf", clock)
    monkeypatch.setattr(hub, "note_new_graph", noting)
    return collections


def test_a_garbage_collection_inside_the_watchs_work_is_not_the_watchs(collecting: list[int]) -> None:
    report = watched_at_two_shapes()
    assert len(collecting) == 2
    # tfgraph-lab demo said "the watch itself: 140 ms" for 10 ms of work: a full collection
    assert report.watch_seconds < JUMP
    # each ran after its call returned, while the watch recorded it: in no call's cost either
    traced = [e for e in report.events if e.traced]
    assert len(traced) == 2
    assert_no_watch_work_in(traced)
    assert not recorder.is_patched() and hub.HUB.gc not in gc.callbacks


def test_a_garbage_collection_inside_a_trace_stays_in_that_traces_cost(collecting: list[int]) -> None:
    outer, _ = nested_pair()
    with tfgraph_lab.watch() as w:
        outer(tf.ones([2]))  # inner's graph is noted inside outer's trace, outer's after it
    report = w.report
    assert len(collecting) == 2
    assert report.watch_seconds < JUMP
    cost = {e.qualname.rsplit(".", 1)[-1]: e.seconds for e in report.events if e.traced}
    # the collection made while noting inner's graph ran in outer's trace: outer's time, as it
    # would be unwatched; the one made while noting outer's ran in no call
    assert JUMP <= cost["outer"] < 2 * JUMP and cost["inner"] < JUMP
