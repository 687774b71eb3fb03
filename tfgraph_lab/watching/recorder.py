"""The trace recorder: ``TraceRecorder`` and ``watch()``, the public face of the hub.

A recorder attaches to the hub (:mod:`tfgraph_lab.recording.hub`, which owns the hooks in TensorFlow),
keeps the :class:`~tfgraph_lab.recording.calllog.WatchLog` it gets back (where its watch begins in the
shared log) and, when asked, builds the :class:`~tfgraph_lab.report.TraceReport` from that
slice through :mod:`tfgraph_lab.recording.aggregate`. Imports TensorFlow only through the hub; never
IPython (``live=True`` loads the live view lazily).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..explain.trace import NOT_RETRACES
from ..model.counts import Selection
from ..model.errors import TraceBudgetExceeded, UnknownBudgetName
from ..model.records import Event, FunctionSummary
from ..model.view import ViewOptions
from ..recording.aggregate import aggregate, stale_capture_hints
from ..recording.calllog import CallRecord, FunctionState, LiveCounters, LogEntry, WatchLog
from ..recording.frames import tool_frames_hidden
from ..recording.hub import HUB as _HUB
from ..recording.hub import hooks_installed
from ..recording.tally import Tally
from ..recording.xla_log import LOG as XLA_LOG
from ..recording.xla_log import LogWindow
from ..report.trace_report import TraceReport
from .budget import TraceBudget
from .lifecycle import Finished, Lifecycle
from .livelog import LIVE_LOG, log_retrace_record
from .options import WatchOptions
from .outputs import check_outputs

__all__ = [
    "NOT_RETRACES",
    "CallRecord",
    "LiveCounters",
    "TraceRecorder",
    "is_patched",
    "reset_recording",
    "tool_frames_hidden",
    "watch",
]

_perf = time.perf_counter
_HUB.retrace_sink = log_retrace_record  # every watch and monitor logs retraces as they happen


def _open_xla_log() -> tuple[int, int] | None:
    """Read TensorFlow's XLA compile log during the watch, when it was asked for before
    TensorFlow loaded (see :mod:`tfgraph_lab.recording.xla_log`); never fails the watch."""
    try:
        return XLA_LOG.open()
    except Exception:  # fd 2 cannot be read here: the XLA count stays modelled
        return None


def reset_recording() -> None:
    """Forget what the recording keeps between watches: which code earlier function objects
    traced (``new-function-object``), the XLA cache keys seen, cell labels. The one reset of the
    recording state (tests, a lab starting afresh); only while no watch is active."""
    _HUB.reset()


def is_patched() -> bool:
    """True while any tfgraph_lab hook is installed: in TensorFlow, its logger, or Python's
    ``gc.callbacks``."""
    return hooks_installed()


class TraceRecorder:
    """Records every tf.function call and trace between :meth:`start` and :meth:`stop`.

    Use :func:`watch` (a context manager) rather than this class directly. ``view`` is how its
    report shows itself (and whether the live log lists the framework's retraces one by one
    while it records).
    """

    def __init__(
        self,
        max_traces: TraceBudget | int | str | None = None,
        max_xla_compiles: TraceBudget | int | str | None = None,
        view: ViewOptions | None = None,
    ) -> None:
        self.budget = TraceBudget.parse(max_traces)
        self.xla_budget = TraceBudget.parse(max_xla_compiles, measure="xla_compiles")
        self.view = view or ViewOptions()
        self.hints: dict[tuple[str, str], list[str]] = {}
        self._log: WatchLog | None = None
        self._end = 0
        self._entries: list[LogEntry] | None = None
        self._warnings: list[str] = []
        self._own = 0.0  # the log's own_seconds over the watch (read at stop)
        self._report: TraceReport | None = None
        self._tally = Tally()
        self.active = False
        self.started_at = 0.0
        self.seconds = 0.0
        self.tf_version = ""
        self.degraded: tuple[str, ...] = ()
        self.eager_at_start = False
        self._xla_mark: tuple[int, int] | None = None  # where TF's compile log stood at start
        self._xla_window: LogWindow | None = None

    def start(self) -> TraceRecorder:
        if self.active:
            raise RuntimeError("this TraceRecorder is already recording")
        mark = _open_xla_log()  # first: TensorFlow may load now, and its start-up lines with it
        try:
            log = self._log = _HUB.attach()
        except BaseException:
            if mark is not None:
                XLA_LOG.close(mark)
            raise
        XLA_LOG.give_back_environment()  # TensorFlow has loaded: it read its log switches
        h = log.handles
        self.tf_version = h.version
        self.degraded = h.missing
        self.eager_at_start = h.run_functions_eagerly()
        self._entries = None
        self._report = None
        self._tally = Tally()
        self._xla_window = None
        self._xla_mark = mark
        self.started_at = _perf()
        self.active = True
        if self.view.framework:
            LIVE_LOG.list_framework(self)
        return self

    def stop(self) -> None:
        if not self.active:
            return
        self.seconds = _perf() - self.started_at
        log = self._log
        assert log is not None
        try:
            self._end = log.position()
            self._entries = log.entries()
            self.hints = stale_capture_hints(self._entries)
            self._warnings = log.warnings()
            self._own = log.own_seconds()
        finally:
            self.active = False
            _HUB.detach(log)
            LIVE_LOG.list_framework(self, listed=False)
            LIVE_LOG.flush_folded()  # one line for TF's/Keras's own retraces of the watch
            if self._xla_mark is not None:
                self._xla_window = XLA_LOG.close(self._xla_mark)
                self._xla_mark = None

    def entries(self) -> list[LogEntry]:
        """The log entries of this watch so far (a copy)."""
        if self._entries is not None:
            return list(self._entries)
        return self._log.entries() if self._log is not None else []

    @property
    def log_end(self) -> int:
        """Logical position in the shared log just past this watch's last entry."""
        if self.active and self._log is not None:
            return self._log.position()
        return self._end

    def live_counters(self, recent: int = 120, selection: Selection | str = Selection.USER) -> LiveCounters:
        """Running totals of this watch without rebuilding the report: the report's numbers for
        ``selection`` (``"user"``: the user's functions; ``"all"``: TF's and Keras's too), read
        in O(entries since the last read); ``recent`` calls' ``(seconds, traced)`` for a chart."""
        selection = Selection(selection)
        if not self.active or self._log is None:
            report = self.report
            done = report.totals(selection)
            last = next(
                (e for e in reversed(report.events) if e.retrace and report.selects(e, selection)), None
            )
            return LiveCounters(
                calls=done.calls,
                traces=done.traces,
                retraces=done.retraces,
                trace_seconds=done.trace_seconds,
                last_retrace=None if last is None else (last.label, last.reasons),
                selection=selection,
            )
        again, new = self._log.read_new()
        if again:
            self._tally = Tally()
        self._tally.add(new)
        now = self._tally.totals(selection)
        return LiveCounters(
            calls=now.calls,
            traces=now.traces,
            retraces=now.retraces,
            trace_seconds=now.trace_seconds,
            last_retrace=self._tally.last_retrace.get(selection),
            recent=self._log.recent(recent),
            selection=selection,
        )

    def name_function(self, target: Any, name: str, owner: str = "", role: str = "") -> Any:
        """Report a tf.function (e.g. Keras's train step) as ``name``, a function of the user's
        (shown by default); ``owner`` (e.g. its Keras model) keys its history, so another
        owner's first trace is no retrace; ``role`` picks its fixes (``"train"``, ``"test"``,
        ``"predict"``). ``target`` is the function or the handle an earlier call returned (to
        rename it after the object is gone). Returns that handle. A function needs a recording
        watch; reports built before keep the old name until :meth:`rebuild_report`."""
        if isinstance(target, FunctionState):
            state = target
        elif self.active:
            state = _HUB.state_for(target)
        else:
            raise RuntimeError("name_function needs a recording TraceRecorder")
        state.rename(name, owner, role)
        return state

    def rebuild_report(self) -> TraceReport:
        """The report built again from this watch's log (after :meth:`name_function`)."""
        self._report = None
        return self.report

    def _own_seconds(self) -> float:
        """The watch's own work that belongs to no record, over the watch (so far)."""
        if self.active and self._log is not None:
            return self._log.own_seconds()
        return self._own

    def warnings(self) -> list[str]:
        if self.active and self._log is not None:
            return self._log.warnings()
        return list(self._warnings)

    @property
    def report(self) -> TraceReport:
        """The :class:`~tfgraph_lab.report.TraceReport` (a live snapshot while recording)."""
        if self.active:
            return self._build_report()
        if self._report is None:
            self._report = self._build_report()
        return self._report

    def _build_report(self) -> TraceReport:
        window = self._xla_window
        if self.active and self._xla_mark is not None:
            window = XLA_LOG.window(self._xla_mark)
        agg = aggregate(self.entries(), self.log_end, self.hints, self.started_at, window, _HUB.labels)
        return TraceReport(
            functions=agg.functions,
            events=agg.events,
            runs=agg.runs,
            warnings=tuple(self.warnings()),
            seconds=self.seconds,
            tf_version=self.tf_version,
            eager_calls=sum(f.eager_calls for f in agg.functions),
            degraded=self.degraded,
            budget=self._budget_text(),
            budget_warnings=tuple(
                w
                for b in (self.budget, self.xla_budget)
                if b is not None
                for w in b.unknown_names(agg.functions)
            ),
            labels=_labels_for(agg.functions, agg.events, _HUB.labels),
            watch_seconds=agg.watch_seconds + self._own_seconds(),
            view=self.view,
        )

    def _budget_text(self) -> str | None:
        parts = [] if self.budget is None else [self.budget.describe()]
        if self.xla_budget is not None:
            parts.append(f"XLA compiles: {self.xla_budget.describe()}")
        return "; ".join(parts) or None

    def overruns(self) -> tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]]:
        """``(label, count, budget)`` of the functions over their trace budget, and over
        their XLA compile budget."""
        functions = self.report.functions
        traces = self.budget.overruns(functions) if self.budget is not None else []
        xla = self.xla_budget.overruns(functions) if self.xla_budget is not None else []
        return traces, xla

    def check_budget(self) -> None:
        """Raise :class:`TraceBudgetExceeded` when a function traced (or XLA compiled) more
        than allowed."""
        if self.budget is None and self.xla_budget is None:
            return
        traces, xla = self.overruns()
        if traces or xla:
            raise TraceBudgetExceeded(traces, self.report, xla)

    def __enter__(self) -> TraceRecorder:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop()
        for text in self.report.budget_warnings:  # as pytest warns of an unknown marker
            warnings.warn(text, UnknownBudgetName, stacklevel=3)
        if exc_type is None:
            self.check_budget()


@contextmanager
def watch(
    max_traces: TraceBudget | int | str | None = None,
    live: bool = False,
    tensorboard_dir: str | os.PathLike[str] | None = None,
    max_xla_compiles: TraceBudget | int | str | None = None,
    *,
    json: str | os.PathLike[str] | None = None,
    trace: str | os.PathLike[str] | None = None,
    view: ViewOptions | None = None,
) -> Iterator[TraceRecorder]:
    """Watch every tf.function call in the process; ``w.report`` is the TraceReport.

    ``max_traces`` is a budget: ``3`` (every function), ``"train_step=1"``, or a mapping/list of
    such; a function over budget raises :class:`TraceBudgetExceeded` when the block ends.
    ``max_xla_compiles`` is the same for XLA compilations (``jit_compile=True``; a plain number
    also covers Keras's own XLA train step).
    ``live=True`` (in a notebook) shows counters and a timing chart that update while the block
    runs (at most 5 updates/s), replaced by the report when it ends. ``tensorboard_dir``: when
    the block ends (also on an error), write TensorBoard scalars there — traces per function,
    retraces and tracing seconds, one point per call that traced at step = its call number in
    the watch (see :mod:`tfgraph_lab.watching.tensorboard`). ``json`` and ``trace`` write the
    report as JSON and the calls as a timeline (Chrome Trace Event Format) when the block ends,
    as ``tfgraph-lab run --json/--trace`` do; every path is checked before the block runs.
    ``view`` (:class:`~tfgraph_lab.model.view.ViewOptions`) is how ``w.report`` shows itself;
    ``ViewOptions.everything()`` is ``--all`` (TensorFlow's and Keras's own functions listed,
    their retraces logged one by one while the block runs).
    """
    options = WatchOptions.build(
        max_traces,
        max_xla_compiles,
        json=None if json is None else os.fspath(json),
        trace=None if trace is None else os.fspath(trace),
        tensorboard=None if tensorboard_dir is None else os.fspath(tensorboard_dir),
        live=live,
    )
    outputs = check_outputs(options.outputs, names={"tensorboard": "tensorboard_dir", "json": "json", "trace": "trace"})
    recorder = TraceRecorder(options.max_traces, options.max_xla_compiles, view)
    life = Lifecycle(recorder, outputs, _live_view if options.live else None)
    life.start()
    try:
        yield recorder
    except BaseException:
        _end_watch(life.finish(), failed=True)
        raise
    if not outputs and not options.live and recorder.budget is None and recorder.xla_budget is None:
        life.stop()  # nothing to write, show or check: the report is built when read (w.report)
        return
    _end_watch(life.finish(replace_view=True), failed=False)


def _end_watch(done: Finished, failed: bool) -> None:
    """How ``watch()`` ends: a budget naming no function seen warns (as pytest warns of an
    unknown marker), a broken budget raises :class:`TraceBudgetExceeded`, an output that could
    not be written raises, unless the block's own exception (or the budget's) leaves the
    ``with``: then it only warns."""
    for text in done.report.budget_warnings:
        warnings.warn(text, UnknownBudgetName, stacklevel=4)
    if done.problems and not (failed or done.over_budget):
        raise done.problems[0]
    for problem in done.problems:
        warnings.warn(f"tfgraph_lab: {problem}", stacklevel=4)
    if not failed:
        done.check_budget()


def _labels_for(
    functions: Sequence[FunctionSummary], events: Sequence[Event], labels: Mapping[str, str]
) -> dict[str, str]:
    """The cell labels (named when recorded) of the files the report names."""
    files = {f.filename for f in functions}
    files.update(e.caller.rsplit(":", 1)[0] for e in events if e.caller)
    return {file: labels[file] for file in sorted(files) if file in labels}


def _live_view(recorder: TraceRecorder) -> Any:
    # The one upward import, lazy and optional: the live display lives with the other views.
    from ..faces.live_view import show_live

    return show_live(recorder)
