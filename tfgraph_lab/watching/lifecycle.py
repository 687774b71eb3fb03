"""One watch from start to finish, the same for every front end (``%%tracewatch``,
``tfgraph-lab run``, ``watch()``).

:class:`Lifecycle` starts the recording (and a live view when asked), runs the user's code,
stops, then finishes: the report (shown as the recorder's view says, with the magic's
``compare_eager`` timings when it has them), its budgets applied, every output asked for written through the one
registry (:data:`tfgraph_lab.watching.outputs.OUTPUTS`). What is left to a front end is its own: parsing
flags, and showing the :class:`Finished` outcome its way (the magic displays the report and
raises, the CLI prints to stderr and returns an exit status, ``watch()`` raises and warns).

The front end hands in its recorder (a :class:`~tfgraph_lab.watching.recorder.TraceRecorder`): this
module imports neither the recorder (``recorder.watch`` is built on it) nor anything of the
recording side, TensorFlow or IPython.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ..model.errors import TfgraphLabError, TraceBudgetExceeded
from ..report.trace_report import TraceReport
from .outputs import finish as write_outputs

__all__ = ["Finished", "Lifecycle", "LiveView", "Ran", "Recording"]

Overrun = tuple[str, int, int]  # (label, count, budget)


class Recording(Protocol):
    """What a lifecycle needs of a recorder (:class:`~tfgraph_lab.watching.recorder.TraceRecorder`)."""

    def start(self) -> Any: ...

    def stop(self) -> None: ...

    @property
    def report(self) -> TraceReport: ...

    def overruns(self) -> tuple[list[Overrun], list[Overrun]]: ...


class LiveView(Protocol):
    """A view that updates while the code runs (``live_display.LiveDisplay``)."""

    def close(self, report: Any = None) -> None: ...


class Ran(NamedTuple):
    """What the user's code did: its value, what it raised (None when it returned), and how
    long it ran (the recording's start and stop left out)."""

    value: Any
    error: BaseException | None
    seconds: float


@dataclass(frozen=True)
class Finished:
    """A finished watch: the report as the front end shows it, the outputs that could not be
    written (each an error naming its path; the others were written), the budgets broken."""

    report: TraceReport
    problems: tuple[TfgraphLabError, ...] = ()
    overruns: tuple[Overrun, ...] = ()
    xla_overruns: tuple[Overrun, ...] = ()

    @property
    def over_budget(self) -> bool:
        return bool(self.overruns or self.xla_overruns)

    def check_budget(self) -> None:
        """Raise :class:`TraceBudgetExceeded` when a ``--max-traces`` or ``--max-xla-compiles``
        budget was broken."""
        if self.over_budget:
            raise TraceBudgetExceeded(list(self.overruns), self.report, list(self.xla_overruns))


class Lifecycle:
    """Start → run → stop → finish for one recorder.

    ``outputs`` is ``{name in OUTPUTS: path}``, checked before the code runs
    (``output.check_outputs``); ``live`` makes a view of the running recorder, opened after
    the recording starts and closed (emptied) before it stops.
    """

    def __init__(
        self,
        recorder: Recording,
        outputs: Mapping[str, str] | None = None,
        live: Callable[[Any], LiveView] | None = None,
    ) -> None:
        self.recorder = recorder
        self.outputs = dict(outputs or {})
        self._live = live
        self.view: LiveView | None = None
        self._running = False

    def start(self) -> None:
        """Start the recording, then the live view (a view that fails stops the recording)."""
        self.recorder.start()
        self._running = True
        if self._live is not None:
            try:
                self.view = self._live(self.recorder)
            except BaseException:
                self.stop()
                raise

    def stop(self) -> None:
        """Stop the live view's updates, then the recording (once; later calls do nothing)."""
        if not self._running:
            return
        self._running = False
        try:
            if self.view is not None:
                self.view.close()
        finally:
            self.recorder.stop()

    def run(self, code: Callable[[], Any]) -> Ran:
        """Start, run ``code``, stop. What ``code`` raises (also KeyboardInterrupt, SystemExit)
        is caught into :attr:`Ran.error` for the front end to show after the report; what
        starting raises propagates (nothing ran)."""
        __tracebackhide__ = True
        self.start()
        value: Any = None
        error: BaseException | None = None
        t0 = time.perf_counter()
        try:
            value = code()
        except BaseException as exc:
            error = exc
        seconds = time.perf_counter() - t0
        self.stop()
        return Ran(value, error, seconds)

    def finish(self, replace_view: bool = False, compare_eager: dict[str, Any] | None = None) -> Finished:
        """Stop if still running, build the report (with ``compare_eager``'s timings, the
        magic's ``--compare-eager``), write every output and apply the budgets.
        ``replace_view``: the report takes the live view's place (``watch(live=True)``)."""
        self.stop()
        report = self.recorder.report
        if compare_eager is not None:
            report = report.with_timings(compare_eager)
        if replace_view and self.view is not None:
            self.view.close(report)
        problems = tuple(write_outputs(report, self.outputs))
        traces, xla = self.recorder.overruns()
        return Finished(report, problems, tuple(traces), tuple(xla))
