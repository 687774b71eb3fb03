"""``show_live`` / ``LiveDisplay``: counters and a timing chart that update while a cell runs.

``show_live(recorder)`` is the one entry point: ``%%tracewatch --live`` and ``watch(live=True)``
both call it. It is a display that updates in place (an IPython display handle), not a widget:
no ipywidgets, no kernel round trip, so it also works in static front ends and stays readable
when the notebook is saved (its last state is plain HTML with a text twin).

A background thread reads the recorder's running totals (``recorder.live_counters()``, cheap:
no report rebuild) and publishes it as HTML (with a text twin) into one display handle. The rate is
bounded twice: at most ``1 / interval`` updates a second (5 by default), and never more often
than keeps the snapshot's own cost under ``budget`` (2 %) of the loop's time — a snapshot of a
long log costs more, so updates slow down instead of the loop. Imports IPython (display handles)
lazily and never ipywidgets, so it works wherever rich output does and degrades to text.
Rendering is the report's own (:mod:`tfgraph_lab.render`): stylesheet, stats, chart, reasons.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
import warnings
from collections.abc import Callable
from html import escape
from typing import Any

from ..render.blocks import count_html, stat_html
from ..render.chart import chart_html
from ..render.format import fmt_seconds, plural, visible
from ..render.reasons import reasons_html
from ..render.style import style_tag
from ..render.timeline import TimelinePoint

__all__ = ["LiveDisplay", "show_live"]

Publisher = Callable[[dict[str, str]], None]
MAX_RATE = 5.0  # updates per second, at most
RECENT = 120  # calls in the timing chart
MAX_WAIT = 10.0  # seconds: even a costly snapshot shows signs of life this often


class LiveDisplay:
    """Polls a running :class:`~tfgraph_lab.watching.recorder.TraceRecorder` and redraws one output.

    ``publish`` receives a mime bundle (``text/plain`` and ``text/html``) at each update; by
    default it updates an IPython display handle created by :meth:`start`.
    """

    def __init__(
        self,
        recorder: Any,
        interval: float = 1 / MAX_RATE,
        budget: float = 0.02,
        publish: Publisher | None = None,
    ) -> None:
        for name, value in (("interval", interval), ("budget", budget)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if interval < 1 / MAX_RATE:
            raise ValueError(
                f"interval must be ≥ {1 / MAX_RATE:.1f} s (≤ {MAX_RATE:.0f} updates/s), got {interval}"
            )
        if not 0 < budget < 1:
            raise ValueError(f"budget is a share of the loop's time in (0, 1), got {budget}")
        self.recorder = recorder
        self.interval = interval
        self.budget = budget
        self._publish = publish
        self._handle: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_key: tuple[int, int] | None = None
        self.updates = 0
        self.snapshot_errors = 0
        self.last_error: str | None = None
        self.broken = False  # publishing failed (the front end went away): no more updates
        self.update_seconds = 0.0  # total time spent taking snapshots and rendering
        self.started_at = 0.0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> LiveDisplay:
        if self._thread is not None:
            raise RuntimeError("this LiveDisplay is already running")
        self.started_at = time.perf_counter()
        first = self._bundle(None)
        if self._publish is None and not _in_ipython():
            # A plain Python process: IPython's display() would print an object's repr once and
            # never update (IPython 8/9). Say so; the watch and its report are the same.
            self.broken = True
            warnings.warn(
                "tfgraph_lab: live=True updates a display in IPython or Jupyter; this process runs "
                "neither, so nothing is shown live (the watch and its report are unaffected)",
                RuntimeWarning,
                stacklevel=4,
            )
            return self
        if self._publish is None:
            from IPython.display import display

            self._handle = display(_Bundle(first), display_id=True)  # type: ignore[no-untyped-call]
        else:
            self._publish(first)
        # Run the thread in the cell's context: ipykernel ≥ 7 keeps the parent message in a
        # contextvar, and outputs without it would not be attributed to this cell.
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._loop,), name="tfgraph_lab-live", daemon=True
        )
        self._thread.start()
        return self

    def close(self, report: Any = None) -> None:
        """Stop updating. With ``report``, show it in place of the live display; else empty it."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        bundle = {"text/plain": "", "text/html": ""}
        if report is not None:
            try:
                bundle = {"text/plain": str(report), "text/html": report._repr_html_()}
            except Exception as exc:  # the report is shown elsewhere too: never fail the block here
                self._failed(exc)
                return
        self._send(bundle)

    def __enter__(self) -> LiveDisplay:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------------- loop
    def _loop(self) -> None:
        wait = self.interval
        costs: list[float] = []
        while not self._stop.wait(wait):
            costs = [*costs[-2:], self.update()]
            # Keep our share of the loop's time under budget: cost / (wait + cost) ≤ budget. The
            # median of the last three costs keeps one slow beat (a GC pause) from stalling it.
            cost = sorted(costs)[len(costs) // 2]
            wait = min(MAX_WAIT, max(self.interval, cost * (1 - self.budget) / self.budget))

    def update(self) -> float:
        """Take one snapshot and publish it if anything changed; returns the seconds it took."""
        t0 = time.perf_counter()
        try:
            counters = self.recorder.live_counters(RECENT)
        except Exception as exc:  # a snapshot racing the recorder: skip this beat, keep the error
            self.snapshot_errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            return time.perf_counter() - t0
        key = (counters.calls, counters.traces)
        if key != self._last_key:
            self._last_key = key
            self._send(self._bundle(counters))
            self.updates += not self.broken
        cost = time.perf_counter() - t0
        self.update_seconds += cost
        return cost

    def _send(self, bundle: dict[str, str]) -> None:
        """Publish, never raising: a display is a side channel of the user's code (a front end
        gone, a broken handle stop the updates with one warning; the watch and its report go on)."""
        if self.broken:
            return
        try:
            if self._publish is not None:
                self._publish(bundle)
            elif self._handle is not None:
                self._handle.update(_Bundle(bundle))
        except Exception as exc:
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        self.broken = True
        self._stop.set()
        self.last_error = f"{type(exc).__name__}: {exc}"
        warnings.warn(
            f"tfgraph_lab: the live display stopped updating ({self.last_error}); the watch and its "
            "report are not affected",
            RuntimeWarning,
            stacklevel=3,
        )

    # ------------------------------------------------------------------- drawing
    def _bundle(self, counters: Any) -> dict[str, str]:
        """Draw :class:`~tfgraph_lab.watching.recorder.LiveCounters` (running totals, no report rebuild)."""
        elapsed = time.perf_counter() - self.started_at if self.started_at else 0.0
        if counters is None:
            text = "tracewatch live: waiting for the first tf.function call…"
            html = (
                f"<div class='tfgl tfgl-live'>{style_tag()}<div class='tfgl-muted'>{escape(text)}</div></div>"
            )
            return {"text/plain": text, "text/html": html}
        rate = counters.calls / elapsed if elapsed > 0 else 0.0
        text = (
            f"tracewatch live · {fmt_seconds(elapsed)}: {plural(counters.calls, 'call')}, "
            f"{plural(counters.traces, 'trace')} ({counters.retraces} retraces)"
        )
        stats = (
            f"<div class='tfgl-trace-count'>"
            f"{count_html(counters.traces, 'trace', 'traces', plural(counters.retraces, 'retrace'), big=True)}</div>"
            f"<div class='tfgl-calls'>{count_html(counters.calls, 'call', 'calls', f'{rate:,.0f}/s')}</div>"
            + stat_html("tracing", fmt_seconds(counters.trace_seconds))
            + stat_html("running", fmt_seconds(elapsed))
        )
        recent = counters.recent[-RECENT:]
        first = max(0, counters.calls - len(recent))
        chart = chart_html(
            [TimelinePoint(first + i, first + i, s, traced, "") for i, (s, traced) in enumerate(recent)],
            f"time of the last {plural(len(recent), 'call')}",
            width=520,
            height=90,
        )
        reason = ""
        if counters.last_retrace is not None:
            label, reasons = counters.last_retrace
            reason = reasons_html(reasons[:2], f"last retrace ({label}):")
        html = (
            f"<div class='tfgl tfgl-live'>{style_tag()}"
            "<div class='tfgl-lab-sub'>tracewatch <b>live</b> — the full report replaces this when "
            f"the cell ends</div><div class='tfgl-stats'>{stats}</div>"
            f"{chart}<div class='tfgl-reason'>{reason}</div></div>"
        )
        # names shown with invisible characters written out (``\\u202e``), as the report does
        return {"text/plain": visible(text), "text/html": visible(html)}


def _in_ipython() -> bool:
    """Whether an IPython shell (a kernel, the terminal) runs in this process."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None  # type: ignore[no-untyped-call]


class _Bundle:
    """A displayable holding a ready mime bundle."""

    def __init__(self, bundle: dict[str, str]) -> None:
        self.bundle = bundle

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return self.bundle


def show_live(recorder: Any, interval: float = 1 / MAX_RATE) -> LiveDisplay:
    """Start a live display over a recording ``recorder``; call ``.close()`` when it stops.

    The hook ``%%tracewatch --live`` calls right after ``recorder.start()``. ``close(report)``
    shows the final report in the display's place; ``close()`` empties it.
    """
    return LiveDisplay(recorder, interval=interval).start()
