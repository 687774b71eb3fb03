"""The pytest plugin (entry point ``pytest11``: ``tfgraph_lab``): retracing caught in a test suite.

- ``@pytest.mark.max_traces(N)`` / ``max_traces(train_step=2)`` / ``max_traces(1, eval_step=0)``:
  the test fails when a tf.function traced more often during the test's call, with the report's
  reason and fix (the argument responsible, before → after) — :func:`tfgraph_lab.assert_max_traces`'s
  message. ``@pytest.mark.max_xla_compiles(N)`` / ``(step=2)``: the same for XLA compilations.
- The ``tracewatch`` fixture: a :class:`~tfgraph_lab.watching.recorder.TraceRecorder` watching
  the test (``tracewatch.report`` is the report so far).
- ``pytest --tracewatch``: every test's call is watched; the terminal summary lists each test that
  retraced with its retraces, and each test's counts go into the JUnit XML as properties
  (``tracewatch.traces``, ``tracewatch.retraces``, one ``tracewatch.retrace`` per retrace).
  The figures travel in the test reports (``user_properties``), so under pytest-xdist each
  worker watches its own tests and the controller prints the one merged summary.
  ``--tracewatch-json PATH`` also writes one JSON report of every watched test: each worker
  writes its own, the controller merges them into PATH (``tfgraph-lab report``'s merge).

Off unless asked: loading the plugin imports neither TensorFlow nor the recording; a watch (and
with it TensorFlow) starts only for a marked test, the fixture, or ``--tracewatch``.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["tracewatch"]

PROPERTY = "tracewatch."
_PART = ".tracewatch-part-"  # a worker's report beside --tracewatch-json's path


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tfgraph_lab", "tf.function retracing (tfgraph_lab)")
    group.addoption(
        "--tracewatch",
        action="store_true",
        default=False,
        help="watch every test's tf.function calls: a summary of the retraces per test at the end, "
        "and each test's counts as JUnit XML properties",
    )
    group.addoption(
        "--tracewatch-json",
        metavar="PATH",
        default=None,
        help="with --tracewatch: write the watched tests' report as JSON (under xdist, merged from every worker)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "max_traces(n=None, **per_function): fail the test when a tf.function traces more than n times "
        "(or FN=N: train_step=2), with the reason and the fix (tfgraph_lab)",
    )
    config.addinivalue_line(
        "markers",
        "max_xla_compiles(n=None, **per_function): fail the test when XLA compiles a function more "
        "than n times, with the reason and the fix (tfgraph_lab)",
    )
    if config.getoption("--tracewatch") or config.getoption("--tracewatch-json"):
        config.pluginmanager.register(SessionWatch(config), "tfgraph_lab-session")


def _budgets(item: pytest.Item) -> tuple[Any, Any] | None:
    """The trace and XLA budgets the test's markers ask for (None: no marker)."""
    traces = item.get_closest_marker("max_traces")
    xla = item.get_closest_marker("max_xla_compiles")
    if traces is None and xla is None:
        return None
    from ..watching.budget import TraceBudget

    def budget(marker: pytest.Mark | None, measure: str) -> TraceBudget | None:
        if marker is None:
            return None
        args, kwargs = list(marker.args), dict(marker.kwargs)
        default = kwargs.pop("n", args.pop(0) if args else None)
        if args:
            raise pytest.UsageError(f"@pytest.mark.{marker.name}: takes one number and FN=N keywords, got {marker.args!r}")
        parsed = TraceBudget.parse({str(k): v for k, v in kwargs.items()}, measure) if kwargs else None
        if default is not None:
            number = TraceBudget.parse(default, measure)
            assert number is not None
            limits = parsed.per_function if parsed is not None else {}
            parsed = TraceBudget(number.default, limits, number.include_framework, measure)
        if parsed is None:
            raise pytest.UsageError(f"@pytest.mark.{marker.name} needs a number or FN=N, e.g. {marker.name}(1)")
        return parsed

    return budget(traces, "traces"), budget(xla, "xla_compiles")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    budgets = _budgets(item)
    session = item.config.pluginmanager.get_plugin("tfgraph_lab-session")
    if budgets is None and session is None:
        return (yield)
    from ..model.errors import TraceAssertionError
    from ..watching.assertion import TraceAssertion

    guard = TraceAssertion(None, None, *(budgets or (None, None)))
    recorder = None
    failure = None
    try:
        with guard as recorder:
            result = yield
    except TraceAssertionError as error:
        failure = str(error)
    finally:
        if session is not None and recorder is not None:
            session.record(item, recorder.report)
    if failure is not None:
        # the budget is the test's own check: its message is the failure, not the plugin's frames
        pytest.fail(failure, pytrace=False)
    return result


@pytest.fixture
def tracewatch() -> Iterator[Any]:
    """A watch over the test: the :class:`~tfgraph_lab.watching.recorder.TraceRecorder`
    (``tracewatch.report``: what it saw so far; ``tracewatch.live_counters()``)."""
    from ..watching.recorder import TraceRecorder

    recorder = TraceRecorder().start()
    try:
        yield recorder
    finally:
        recorder.stop()


def _retrace_lines(report: Any) -> list[str]:
    from ..render.overrun import value_chains

    out = []
    for event in report.retrace_events:
        if not report.selects(event):
            continue
        change = "; ".join(value_chains(event.reasons)) or ""
        codes = ", ".join(r.code for r in event.reasons)
        where = f" at {event.caller}" if event.caller else ""
        out.append(f"{event.label}: {codes} {change}{where}".replace("  ", " ").strip())
    return out


class SessionWatch:
    """``--tracewatch``: records every test's figures in its report; prints the summary where
    the reports arrive (the controller under xdist); ``--tracewatch-json`` writes the reports."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tests: list[tuple[str, int, int, list[str]]] = []  # nodeid, traces, retraces, lines
        self.reports: list[tuple[str, Any]] = []  # (nodeid, TraceReport) watched here, for the JSON
        self.worker = getattr(config, "workerinput", {}).get("workerid")

    def record(self, item: pytest.Item, report: Any) -> None:
        item.user_properties.append((PROPERTY + "traces", report.traces))
        item.user_properties.append((PROPERTY + "retraces", report.retraces))
        for line in _retrace_lines(report):
            item.user_properties.append((PROPERTY + "retrace", line))
        if self.config.getoption("--tracewatch-json"):
            self.reports.append((item.nodeid, report))

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        mine = [(k, v) for k, v in report.user_properties if str(k).startswith(PROPERTY)]
        if not mine:
            return
        values = {str(k): str(v) for k, v in mine}
        lines = [str(v) for k, v in mine if k == PROPERTY + "retrace"]
        traces, retraces = int(values[PROPERTY + "traces"]), int(values[PROPERTY + "retraces"])
        self.tests.append((report.nodeid, traces, retraces, lines))

    def _json_path(self) -> Path | None:
        path = self.config.getoption("--tracewatch-json")
        return None if not path else Path(path).resolve()

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self._json_path()
        if path is None:
            return
        import json

        from ..report.merge import merge_reports
        from ..report.trace_report import TraceReport

        if self.worker is not None:  # a worker writes its own report; the controller merges
            if self.reports:
                part = path.with_name(path.name + _PART + self.worker)
                part.write_text(json.dumps(merge_reports(self.reports).to_dict()), encoding="utf-8")
            return
        parts = sorted(path.parent.glob(path.name + _PART + "*"))
        named = [(p.name[len(path.name + _PART) :], TraceReport.from_json(p.read_text(encoding="utf-8"))) for p in parts]
        named += self.reports  # without xdist: one entry per test
        if named:
            path.write_text(json.dumps(merge_reports(named).to_dict(), indent=1), encoding="utf-8")
        for p in parts:
            os.unlink(p)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker is not None or not self.config.getoption("--tracewatch"):
            return
        tr = terminalreporter
        tr.write_sep("=", "tfgraph_lab: retraces per test")
        from ..render.format import plural

        retraced = [t for t in self.tests if t[2]]
        for nodeid, traces, retraces, lines in sorted(retraced):
            tr.write_line(f"{nodeid}: {plural(traces, 'trace')}, {plural(retraces, 'retrace')}")
            for line in lines:
                tr.write_line(f"    {line}")

        traces = sum(t[1] for t in self.tests)
        retraces = sum(t[2] for t in self.tests)
        tr.write_line(
            f"{plural(len(self.tests), 'test')} watched: {plural(traces, 'trace')}, "
            f"{plural(retraces, 'retrace')} in {plural(len(retraced), 'test')}"
        )
