"""Always-on monitoring: watch every cell (or a whole script) and speak up only on retraces.

``%tracewatch on`` and :func:`monitor` use the same :class:`Monitor`. In IPython it hooks the
``pre_run_cell``/``post_run_cell`` events and displays a :class:`RetraceNotice` under each cell
that retraced; outside IPython it watches until :meth:`Monitor.stop` (or exit) and prints the
notice to stderr. Never throttled, never lost in a log. No ipywidgets.
"""

from __future__ import annotations

import atexit
import sys
from typing import Any

from ..render.notice import RetraceNotice
from ..watching.recorder import TraceRecorder

__all__ = ["Monitor", "monitor", "resume_after_reload", "shell_monitor", "stop_for_unload"]


class Monitor:
    """Watches cell after cell (IPython) or one long stretch (scripts)."""

    def __init__(self, shell: Any = None) -> None:
        self.shell = shell
        self.recorder: TraceRecorder | None = None
        self.on = False
        self.cells = 0
        self.cells_with_retraces = 0

    def start(self, keep_counts: bool = False) -> Monitor:
        """Turn monitoring on; ``status`` then counts from here, unless ``keep_counts`` (a
        ``%reload_ext`` that resumes it)."""
        if self.on:
            return self
        self.on = True
        if not keep_counts:
            self.cells = self.cells_with_retraces = 0
        if self.shell is not None:
            self.shell.events.register("pre_run_cell", self._pre_run_cell)
            self.shell.events.register("post_run_cell", self._post_run_cell)
        else:
            self.recorder = TraceRecorder().start()
            atexit.register(self.stop)
        return self

    def stop(self) -> None:
        if not self.on:
            return
        self.on = False
        if self.shell is not None:
            for name, hook in (("pre_run_cell", self._pre_run_cell), ("post_run_cell", self._post_run_cell)):
                try:
                    self.shell.events.unregister(name, hook)
                except ValueError:
                    pass
        if self.recorder is not None:
            self._finish(print_to_stderr=self.shell is None)
        if self.shell is None:
            atexit.unregister(self.stop)

    def status(self) -> str:
        if not self.on:
            return "tracewatch monitoring is off (%tracewatch on turns it on)."
        return (
            f"tracewatch monitoring is on: {self.cells} cells watched, "
            f"{self.cells_with_retraces} with retraces."
        )

    def end_cell_watch(self) -> None:
        """Stop watching the running cell now (IPython): what runs after it in the same cell is
        the tool's — ``--try-fix``'s re-runs — and the cell's notice covers the cell's own run."""
        if self.shell is not None and self.recorder is not None:
            self.recorder.stop()

    # ----------------------------------------------------------------- IPython hooks
    def _pre_run_cell(self, *_: Any) -> None:
        if self.recorder is None:
            self.recorder = TraceRecorder().start()

    def _post_run_cell(self, *_: Any) -> None:
        if self.recorder is not None:
            self._finish(print_to_stderr=False)

    def _finish(self, print_to_stderr: bool) -> None:
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            return
        recorder.stop()
        self.cells += 1
        report = recorder.report
        if not report.retrace_events:
            return
        self.cells_with_retraces += 1
        notice = RetraceNotice(report)
        if print_to_stderr:
            print(str(notice), file=sys.stderr)
        else:
            from IPython.display import display

            display(notice)


_SHELL_MONITORS: dict[int, Monitor] = {}


def shell_monitor(shell: Any) -> Monitor:
    """The one Monitor of an IPython shell (created on first use)."""
    found = _SHELL_MONITORS.get(id(shell))
    if found is None or found.shell is not shell:
        found = _SHELL_MONITORS[id(shell)] = Monitor(shell)
    return found


# Shells whose monitoring the extension's unload stopped, with the cell it happened in: a load
# in that same cell (%reload_ext unloads, then loads) turns it back on.
_STOPPED_BY_UNLOAD: dict[int, int] = {}


def stop_for_unload(shell: Any) -> None:
    """``%unload_ext``: stop the shell's monitoring, and say so."""
    found = shell_monitor(shell)
    if found.on:
        found.stop()
        _STOPPED_BY_UNLOAD[id(shell)] = shell.execution_count
        print("tracewatch monitoring is off: the extension was unloaded.")


def resume_after_reload(shell: Any) -> None:
    """``%load_ext`` in the cell that unloaded (``%reload_ext``): monitoring goes on."""
    stopped_in = _STOPPED_BY_UNLOAD.pop(id(shell), None)
    if stopped_in is not None and stopped_in == shell.execution_count:
        shell_monitor(shell).start(keep_counts=True)
        print("tracewatch monitoring is on again (kept across the extension's reload).")


def monitor() -> Monitor:
    """Turn on always-on monitoring: in IPython like ``%tracewatch on``; in a script until
    ``.stop()`` or exit, printing retrace notices to stderr. Returns the Monitor."""
    shell = None
    if "IPython" in sys.modules:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is not None:
        return shell_monitor(shell).start()
    return Monitor().start()
