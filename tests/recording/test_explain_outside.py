"""No explaining happens inside the timed span of a trace (issue 36.2).

While a call is traced, the watch notes what the reasons will need (``history.note_new_graph``);
the reasons — the signature diff, the wasted-retrace search, a failed trace's explanation, the
live line's text — are built when they are first read: the live line written once no call is in
progress on the thread, the report built. Checked by recording, at every entry point of the
explaining, whether TensorFlow is building a graph (``tf.inside_function()``) or a watched call
is in progress on the thread (the hub's stack), and that each entry point did run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.recording import history  # noqa: E402
from tfgraph_lab.recording.hub import HUB  # noqa: E402
from tfgraph_lab.watching import livelog  # noqa: E402

ENTRY_POINTS = [
    (history, "explain_trace"),  # the signature diff: reasons, fixes
    (history, "mark_wasted"),  # the wasted-retrace search's verdict
    (history, "explain_failure"),  # why a trace failed (runs only for a failed trace)
    (livelog, "format_retrace"),  # the live line's text
]
MUST_RUN = ("explain_trace", "mark_wasted", "format_retrace")


@pytest.fixture
def calls_inside(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[bool]]:
    """Each entry point's calls: True for a call made inside a trace or a watched call."""
    seen: dict[str, list[bool]] = {name: [] for _, name in ENTRY_POINTS}
    for module, name in ENTRY_POINTS:
        real = getattr(module, name, None)
        if real is None:  # not called from there in this version of the recording
            continue

        def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            seen[_name].append(bool(tf.inside_function()) or bool(HUB.stack()))
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    return seen


@pytest.fixture
def live_records() -> Iterator[list[logging.LogRecord]]:
    """A configured handler on the live log: one record per retrace, as applications get."""
    got: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            got.append(record)

    handler = Keep(logging.WARNING)
    logger = logging.getLogger("tfgraph_lab")
    logger.addHandler(handler)
    try:
        yield got
    finally:
        logger.removeHandler(handler)


def test_no_explaining_inside_a_trace_or_a_watched_call(
    calls_inside: dict[str, list[bool]], live_records: list[logging.LogRecord]
) -> None:
    @tf.function
    def inner(x: Any, s: float) -> Any:
        return x * s

    @tf.function
    def outer(x: Any, s: float) -> Any:
        return inner(x, s) + 1.0  # traced inside outer's trace: inner retraces in outer's span

    @tf.function
    def broken(x: Any) -> Any:
        return x * tf.Variable(1.0)  # a variable per trace: the first call's second trace fails

    x = tf.ones([2])
    with tfgraph_lab.watch() as w:
        for s in (1.0, 2.0, 3.0, 1.0):
            outer(x, s)
        with pytest.raises(ValueError):
            broken(x)
    report = w.report
    assert outer.experimental_get_tracing_count() == 3 and inner.experimental_get_tracing_count() == 3
    assert report.function("outer").traces == 3 and report.function("inner").traces == 3
    assert {r.tfgraph_lab["function"].rsplit(".", 1)[-1] for r in live_records} == {"inner", "outer"}
    assert len(live_records) == 4  # two retraces each, every line written
    for name, inside in calls_inside.items():
        assert inside or name not in MUST_RUN, f"{name} never ran: the test would prove nothing"
        assert not any(inside), f"{name} ran inside a trace or a watched call {sum(inside)} of {len(inside)} times"
