"""Red team, the Python API and the renderings (issue 23): invisible characters in user names
(item 11). Each case failed before its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402

INVISIBLE = {"\u202e": "\\u202e", "\u200b": "\\u200b", "\u2066": "\\u2066", "\ufeff": "\\ufeff"}
# A name that reads "step_cheap" in an editor that obeys the override, and hides a zero-width space.
SNEAKY = "step\u200b_\u202epaehc"


@pytest.fixture(scope="module")
def sneaky_report() -> Any:
    def step(x: Any) -> Any:
        return x * 2

    step.__name__ = step.__qualname__ = SNEAKY  # what a decorator or generated code can set
    fn = tf.function(step)
    with tfgraph_lab.watch() as w:
        fn(tf.ones([1]))
        fn(tf.ones([2]))
    return w.report


def _visible(shown: str) -> None:
    for char, written in INVISIBLE.items():
        assert char not in shown, f"{written} passed raw"
    assert "\\u202e" in shown and "\\u200b" in shown


def test_the_data_keeps_the_name_verbatim(sneaky_report: Any) -> None:
    assert sneaky_report.functions[0].qualname == SNEAKY  # JSON and data: the truth, unchanged


def test_text_and_html_show_invisible_characters(sneaky_report: Any) -> None:
    _visible(str(sneaky_report))
    _visible(sneaky_report._repr_html_())


def test_the_retrace_notice_shows_them_too(sneaky_report: Any) -> None:
    from tfgraph_lab.render.notice import RetraceNotice

    notice = RetraceNotice(sneaky_report)
    _visible(str(notice))
    _visible(notice._repr_mimebundle_()["text/html"])


def test_the_explorer_widget_shows_them(sneaky_report: Any) -> None:
    pytest.importorskip("ipywidgets")
    from tfgraph_lab.widgets.explorer import ReportExplorer

    explorer = ReportExplorer(sneaky_report)
    labels = [label if isinstance(label, str) else label[0] for label in explorer.function.options]
    _visible(" ".join(labels))
    _visible(" ".join(label for label, _ in explorer.calls.options))
    explorer.function.value = SNEAKY  # the filter still selects by the real name
    assert len(explorer.calls.options) == 2


# ------------------------------------------------ 3. reading user objects never changes a call


class NoRepr:
    """Hashable, compared by value, not weak-referenceable, and its __repr__ raises."""

    __slots__ = ("v",)

    def __init__(self, v: int) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoRepr) and other.v == self.v

    def __hash__(self) -> int:
        return hash(self.v)

    def __repr__(self) -> str:
        raise RuntimeError("hostile __repr__")


class WeakNoRepr:
    """The same, weak-referenceable (TF 2.21 keys it through a weakref)."""

    def __init__(self, v: int) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WeakNoRepr) and other.v == self.v

    def __hash__(self) -> int:
        return hash(self.v)

    def __repr__(self) -> str:
        raise RuntimeError("hostile __repr__")


@pytest.mark.parametrize("kind", [NoRepr, WeakNoRepr])
@pytest.mark.parametrize("traced_before", [True, False])
def test_a_hostile_repr_changes_neither_the_call_nor_the_count(kind: type, traced_before: bool) -> None:
    @tf.function
    def scaled(x: Any, cfg: Any) -> Any:
        return x * cfg.v

    arg = kind(3)
    if traced_before:
        scaled(tf.ones([1]), arg)
    before = scaled.experimental_get_tracing_count()
    with tfgraph_lab.watch() as w:
        out = scaled(tf.ones([1]), arg)
        scaled(tf.ones([1]), kind(4))
    assert float(out[0]) == 3.0
    assert w.report.function("scaled").traces == scaled.experimental_get_tracing_count() - before
    assert str(w.report) and w.report._repr_html_()


class NoStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("hostile __str__")


def test_an_exception_whose_str_raises_propagates_unchanged() -> None:
    @tf.function(autograph=False)
    def fails(x: Any) -> Any:
        raise NoStr()

    with pytest.raises(NoStr), tfgraph_lab.watch() as w:
        fails(tf.ones([1]))
    event = w.report.events[0]
    assert event.error and event.error.startswith("NoStr")


# ------------------------------------------------ 4. a trace already running when the watch starts


def _watch_a_trace_begun_before(earlier_watch: bool = False) -> Any:
    """A watch that starts while another thread traces (a shape-changed retrace); the first
    shape traced before, or inside an earlier watch (which said new-function-object)."""
    import threading

    started, go = threading.Event(), threading.Event()

    @tf.function
    def slow_trace(x: Any) -> Any:
        if x.shape[0] == 3:  # Python, at trace time: the second shape's trace waits
            started.set()
            go.wait(30)
        return x * 2

    if earlier_watch:
        with tfgraph_lab.watch():
            slow_trace(tf.ones([2]))
    else:
        slow_trace(tf.ones([2]))  # traced before: the next shape is a shape-changed retrace
    worker = threading.Thread(target=slow_trace, args=(tf.ones([3]),))
    worker.start()
    assert started.wait(30)
    with tfgraph_lab.watch() as w:
        go.set()
        worker.join(30)
    assert slow_trace.experimental_get_tracing_count() == 2
    return w.report


@pytest.mark.parametrize("earlier_watch", [False, True])
def test_a_trace_begun_before_the_watch_is_reported_as_what_it_is(earlier_watch: bool) -> None:
    report = _watch_a_trace_begun_before(earlier_watch)
    codes = [r.code for e in report.events if e.traced for r in e.reasons]
    assert codes == ["shape-changed"], codes
    assert [e.began_before_watch for e in report.events if e.traced] == [True]


def test_a_trace_begun_before_the_watch_is_marked_never_a_false_cost(caplog: Any) -> None:
    from tfgraph_lab.report import TraceReport

    with caplog.at_level("WARNING", logger="tfgraph_lab"):
        report = _watch_a_trace_begun_before()
    (line,) = [r for r in caplog.records if r.name == "tfgraph_lab"]
    assert "began before the watch" in line.getMessage()  # long names clip the rest
    assert "cost 0 µs" not in line.getMessage()
    assert line.tfgraph_lab["began_before_watch"] is True  # type: ignore[attr-defined]
    (event,) = [e for e in report.events if e.traced]
    assert event.began_before_watch  # was: nothing marked it, its cost read "0 µs"
    data = report.to_dict()
    assert [e.get("began_before_watch") for e in data["events"]] == [True]
    assert TraceReport.from_dict(data).events[0].began_before_watch
    for shown in (str(report), report._repr_html_()):
        assert "began before the watch; cost not measured" in shown
        assert "cost 0 µs" not in shown
        assert "tracing took 0 µs" not in shown  # the headline's total leaves it out, and says so
    assert "1 trace begun before the watch not timed" in str(report)
    from tfgraph_lab.render.chrome_trace import render_chrome_trace
    from tfgraph_lab.render.notice import RetraceNotice

    assert "cost: not measured (the trace began before the watch)" in str(RetraceNotice(report))
    traced = [e for e in render_chrome_trace(report)["traceEvents"] if e.get("cat") == "trace"]
    assert [e["args"].get("began_before_watch") for e in traced] == [True]
    pytest.importorskip("ipywidgets")
    from tfgraph_lab.widgets.explorer import ReportExplorer

    explorer = ReportExplorer(report)
    (label,) = [label for label, _ in explorer.calls.options]
    assert "began before the watch; cost not measured" in label and "0 µs" not in label


# ------------------------------------------------ issue 33.6: a saved report read through the API

BAD_JSON = [
    ('{"version": 1, "functions": [{"qualname": "f", "calls": 1%s, "traces": 1}]}' % ("0" * 400),
     "$.functions[0].calls: expected a number of at most 2**53"),  # was OverflowError when shown
    ('{"version": 1, "compare_eager": {"graph_seconds": "x"}}',
     "$.compare_eager.graph_seconds: expected a number >= 0, got 'x'"),  # was TypeError when shown
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD_JSON, ids=["calls 10**400", "compare_eager text"])
def test_from_json_names_the_bad_field_on_load(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="not the shape of a report") as caught:
        tfgraph_lab.TraceReport.from_json(text)
    assert message in str(caught.value)


CONTROL = {"\x00": "\\x00", "\u2028": "\\u2028", "\u202e": "\\u202e", "\ud800": "\\ud800", "\x1b": "\\x1b"}


def test_control_characters_and_lone_surrogates_are_written_out_in_every_rendering() -> None:
    from tfgraph_lab.render.merged import render_breakdown_html, render_breakdown_text, render_page
    from tfgraph_lab.report.merge import merge_reports

    name = "a" + "".join(CONTROL) + "z"  # JSON's "\ud800" reads as a lone surrogate
    text = '{"version": 1, "functions": [{"qualname": %s, "calls": 1, "traces": 1}]}'
    report = tfgraph_lab.TraceReport.from_json(text % json.dumps(name))
    merged = merge_reports([("p\u202e0", report), ("p1", report)])
    renderings = {
        "text": str(report),
        "html": report._repr_html_(),
        "merged table": render_breakdown_text(merged, report.view),
        "merged html": render_breakdown_html(merged, report.view),
        "page": render_page(merged.report, report.view, "t", merged),
    }
    for what, shown in renderings.items():
        shown.encode("utf-8")  # a lone surrogate raw: UnicodeEncodeError on printing
        for char, written in CONTROL.items():
            assert char not in shown, f"{what}: {written} passed raw"
            assert written in shown, what
    assert report.functions[0].qualname == name  # the data keeps it verbatim


# Issue 33.2: TensorFlow's retracing warning still reaches the user's handlers during a watch.


def _reinstantiate_five_times() -> None:
    """TensorFlow's own test_frequent_retracing_warning_on_reinstantiation (TF 2.21's
    polymorphic_function_test.py): a new tf.function per iteration warns on the fifth trace."""
    for i in range(5):

        @tf.function
        def f(x: Any) -> Any:
            return x

        f(tf.constant([i]))


def test_tfs_own_retracing_warning_test_passes_inside_a_watch() -> None:
    import logging
    import unittest

    case = unittest.TestCase()
    tf_logger = logging.getLogger("tensorflow")
    with tfgraph_lab.watch() as w, case.assertLogs(level="WARN", logger=tf_logger) as logs:
        _reinstantiate_five_times()
    assert len(logs.output) == 1 and "Tracing is expensive" in logs.output[0], logs.output
    assert len(w.report.warnings) == 1 and "Tracing is expensive" in w.report.warnings[0]


def test_a_handler_on_tfs_logger_gets_the_warning_and_tfs_default_handler_prints_none() -> None:
    import logging

    from tfgraph_lab.recording.tf_warnings import tf_default_handlers

    logger = tf.get_logger()
    got: list[str] = []
    mine = logging.Handler()
    mine.emit = lambda record: got.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(mine)
    defaults = tf_default_handlers(logger)
    before = [list(h.filters) for h in defaults]
    try:
        with tfgraph_lab.watch():
            _reinstantiate_five_times()
            record = logging.LogRecord("tensorflow", logging.WARNING, "f.py", 1, got[0], None, None)
            # TF's default handler (present when the root logger had none) does not print it
            assert all(not h.filter(record) for h in defaults)
        assert [m for m in got if "triggered tf.function retracing" in m], got
        assert [list(h.filters) for h in defaults] == before  # restored exactly
    finally:
        logger.removeHandler(mine)


def test_the_report_quotes_tfs_warning_once_per_function() -> None:
    @tf.function
    def warned_twice(x: Any) -> Any:
        return x

    with tfgraph_lab.watch() as w:
        for n in range(1, 12):  # TF warns at the 5th and the 6th trace in a row
            warned_twice(tf.ones([n]))
    assert len(w.report.warnings) == 2, w.report.warnings  # the data keeps both, as TF said them
    text = str(w.report)
    assert text.count("warned_twice triggered tf.function retracing") == 1, text
