"""The trace recorder: ``TraceRecorder`` and ``watch()``, the public face of the hub.

A recorder marks where its watch begins and ends in the hub's shared log (see
:mod:`tfgraph_lab._hub`, which owns the hooks in TensorFlow) and builds the
:class:`~tfgraph_lab.report.TraceReport` from that slice. Imports TensorFlow only through the
hub and :mod:`tfgraph_lab._tf_adapter`; never IPython (``live=True`` loads the live view lazily).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import _tf_adapter as tfa
from ._hub import HUB as _HUB
from ._hub import NOT_RETRACES, CallRecord, GraphState, LiveCounters, LogEntry, RetraceWarningHandler
from .budget import TraceBudget
from .errors import TraceBudgetExceeded

__all__ = ["NOT_RETRACES", "CallRecord", "LiveCounters", "TraceRecorder", "is_patched", "watch"]

_perf = time.perf_counter


def stale_capture_hints(entries: list[LogEntry]) -> dict[tuple[str, str], list[str]]:
    """Python scalars a traced body read (closure, globals, ``self``) that have changed since:
    the graph still holds the old value. A hint, never a retrace."""
    latest: dict[int, GraphState] = {}
    for entry in entries:
        if type(entry) is CallRecord:
            for graph in entry.traces:
                if graph.captures:
                    latest[id(entry.state)] = graph
    hints: dict[tuple[str, str], list[str]] = {}
    for graph in latest.values():
        fn = graph.state.ref()
        if fn is None:
            continue
        now = tfa.scalar_captures(fn)
        for name, old in graph.captures.items():
            if name in now and now[name] != old:
                hints.setdefault(graph.state.key, []).append(
                    f"`{name}` was {old} when {graph.state.info.qualname} was traced and is "
                    f"{now[name]} now, but the graph still uses {old}: closures, globals and "
                    f"attributes are not part of the cache key, so this did not retrace. Pass "
                    f"`{name}` as an argument (a tensor or tf.Variable) if it changes."
                )
    return hints


def is_patched() -> bool:
    """True while any tfgraph_lab hook is installed in TensorFlow."""
    h = tfa._HANDLES
    if h is None:
        return False
    hooked = [h.function_class.__dict__.get("__call__")]
    hooked.append(h.function_class.__dict__.get("_get_concrete_function_garbage_collected"))
    if h.concrete_function_class is not None:
        hooked.append(h.concrete_function_class.__dict__.get("_call_flat"))
    if any(getattr(x, "_tfgraph_lab_hook", False) for x in hooked):
        return True
    if h.callbacks is not None and any(getattr(cb, "__self__", None) is _HUB for cb in h.callbacks):
        return True
    return any(isinstance(x, RetraceWarningHandler) for x in logging.getLogger("tensorflow").handlers)


class TraceRecorder:
    """Records every tf.function call and trace between :meth:`start` and :meth:`stop`.

    Use :func:`watch` (a context manager) rather than this class directly.
    """

    def __init__(self, max_traces: TraceBudget | int | str | None = None) -> None:
        self.budget = TraceBudget.parse(max_traces)
        self.hints: dict[tuple[str, str], list[str]] = {}
        self._start = 0
        self._start_pos = 0
        self._counters_start = LiveCounters()
        self._end = 0
        self._warnings_start = 0
        self._entries: list[LogEntry] | None = None
        self._warnings: list[str] = []
        self._report: Any = None
        self.active = False
        self.started_at = 0.0
        self.seconds = 0.0
        self.tf_version = ""
        self.degraded: tuple[str, ...] = ()
        self.eager_at_start = False

    def start(self) -> TraceRecorder:
        if self.active:
            raise RuntimeError("this TraceRecorder is already recording")
        _HUB.attach(self)
        h = _HUB.handles
        assert h is not None
        self.tf_version = h.version
        self.degraded = h.missing
        self.eager_at_start = h.run_functions_eagerly()
        self.started_at = _perf()
        self.active = True
        return self

    def stop(self) -> None:
        if not self.active:
            return
        self.seconds = _perf() - self.started_at
        try:
            self._end = _HUB.calllog.position()
            self._entries = _HUB.log[self._start :]
            self.hints = stale_capture_hints(self._entries)
            self._warnings = _HUB.warnings[self._warnings_start :]
        finally:
            self.active = False
            _HUB.detach(self)

    def entries(self) -> list[LogEntry]:
        """The log entries of this watch so far (a copy)."""
        if self._entries is not None:
            return list(self._entries)
        return _HUB.log[self._start :]

    @property
    def log_end(self) -> int:
        """Logical position in the shared log just past this watch's last entry."""
        return self._end if not self.active else _HUB.calllog.position()

    def live_counters(self, recent: int = 120) -> LiveCounters:
        """Running totals of this watch without rebuilding the report (cheap: O(recent))."""
        if not self.active:
            report = self.report
            return LiveCounters(
                calls=report.calls,
                traces=report.traces,
                retraces=report.retraces,
                trace_seconds=report.trace_seconds,
            )
        counters = _HUB.counters.minus(self._counters_start)
        counters.calls = _HUB.calllog.position() - self._start_pos - counters.non_calls
        tail = _HUB.log[max(self._start, len(_HUB.log) - recent) :]
        counters.recent = [
            (entry[1], False) if type(entry) is tuple else (entry.seconds, bool(entry.traces))
            for entry in tail
            if type(entry) is tuple or getattr(entry, "via", "") == "call"
        ]
        return counters

    def warnings(self) -> list[str]:
        if self.active:
            return _HUB.warnings[self._warnings_start :]
        return list(self._warnings)

    @property
    def report(self) -> Any:
        """The :class:`~tfgraph_lab.report.TraceReport` (a live snapshot while recording)."""
        from .report import TraceReport

        if self.active:
            return TraceReport.from_recorder(self)
        if self._report is None:
            self._report = TraceReport.from_recorder(self)
        return self._report

    def check_budget(self) -> None:
        """Raise :class:`TraceBudgetExceeded` when a function traced more than allowed."""
        if self.budget is None:
            return
        report = self.report
        overruns = self.budget.overruns(report.functions)
        if overruns:
            raise TraceBudgetExceeded(overruns, report)

    def __enter__(self) -> TraceRecorder:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop()
        if exc_type is None:
            self.check_budget()


@contextmanager
def watch(max_traces: TraceBudget | int | str | None = None, live: bool = False) -> Iterator[TraceRecorder]:
    """Watch every tf.function call in the process; ``w.report`` is the TraceReport.

    ``max_traces`` is a budget: ``3`` (every function), ``"train_step=1"``, or a mapping/list of
    such; a function over budget raises :class:`TraceBudgetExceeded` when the block ends.
    ``live=True`` (in a notebook) shows counters and a timing chart that update while the block
    runs (at most 5 updates/s), replaced by the report when it ends.
    """
    recorder = TraceRecorder(max_traces)
    with recorder:
        view = _live_view(recorder) if live else None
        try:
            yield recorder
        finally:
            if view is not None:
                view.close()
    if view is not None:
        from IPython.display import display

        display(recorder.report)  # type: ignore[no-untyped-call]


def _live_view(recorder: TraceRecorder) -> Any:
    # The one upward import, lazy and optional: the live view lives with the other views.
    from .widgets import live_view

    return live_view(recorder)
