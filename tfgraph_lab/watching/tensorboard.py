"""TensorBoard scalars of a watch: traces per function, retraces and tracing seconds.

``TraceScalars`` writes, for one report at one step, ``tfgraph_lab/traces/<function>`` (graphs
each function traced so far), ``tfgraph_lab/retraces`` and ``tfgraph_lab/tracing_seconds``
with ``tf.summary.write`` (no tensorboard package needed to write them), so retraces sit beside
the loss. The numbers are the report's for ``Selection.ALL`` (:mod:`tfgraph_lab.model.counts`):
framework (Keras) functions are included, since a recompiled model's new train function is
exactly what a user looks for there; graphs TF built around a function are no traces of it. Used by
``watch(tensorboard_dir=...)`` and ``tfgraph_lab.keras.TraceCallback(log_dir=...)``.
TensorFlow writes the events (:class:`tfgraph_lab.adapter.tensorboard.ScalarWriter`, made on the
first write); this module imports neither TensorFlow nor IPython.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..adapter.tensorboard import ScalarWriter
from ..model.counts import Selection
from ..model.errors import TfgraphLabError, UsageProblem

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = ["TAG_PREFIX", "TraceScalars", "check_log_dir", "write_watch_scalars"]

TAG_PREFIX = "tfgraph_lab"


class TraceScalars:
    """A summary writer for one log directory (created on first write)."""

    def __init__(self, log_dir: str | os.PathLike[str]) -> None:
        self.log_dir = os.fspath(log_dir)
        self._writer: ScalarWriter | None = None

    def write(self, report: TraceReport, step: int) -> None:
        """The report's running totals at ``step`` (cumulative values, all functions)."""
        self.write_values(_totals(report), step)

    def write_values(self, values: dict[str, float], step: int) -> None:
        """Write one point per tag; any failure (TF's NotFoundError, PermissionDeniedError, a
        full disk) is a TfgraphLabError naming the directory."""
        try:
            self._write_values(values, step)
        except Exception as exc:
            self.close_quietly()
            raise TfgraphLabError(
                f"TensorBoard scalars could not be written to {self.log_dir!r}: "
                f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
            ) from exc

    def _write_values(self, values: dict[str, float], step: int) -> None:
        if self._writer is None:
            self._writer = ScalarWriter(self.log_dir)
        self._writer.write(values, step)

    def close_quietly(self) -> None:
        """Close the writer, ignoring the errors of a directory that went away."""
        try:
            self.close()
        except Exception:
            self._writer = None

    def close(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()


def check_log_dir(log_dir: str | os.PathLike[str], name: str) -> str:
    """``log_dir`` as given, once it is clear TensorBoard files can be written there (checked
    before the watch or training starts: TF's summary writer says so only at the first write,
    as a NotFoundError). The folder may be missing (the writer creates it); what exists of its
    path must be folders and writable. Paths with a scheme (``gs://``, ``s3://``) are TF's
    filesystems and are left to TF."""
    path = os.fspath(log_dir)
    if not path:
        raise UsageProblem(f"{name} needs a folder path, got {path!r}")
    if "://" in path:
        return path
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageProblem(
            f"{name} {path!r} cannot hold TensorBoard logs: {existing!r} is a file, not a directory; "
            "choose a folder path such as logs/run1"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageProblem(f"{name} {path!r} cannot hold TensorBoard logs: {existing!r} is not writable")
    return path


def _totals(report: TraceReport) -> dict[str, float]:
    values: dict[str, float] = {}
    for fn in report.functions:
        if not fn.wraps:
            tag = f"{TAG_PREFIX}/traces/{fn.label}"
            values[tag] = values.get(tag, 0) + fn.traces
    done = report.totals(Selection.ALL)
    values[f"{TAG_PREFIX}/retraces"] = done.retraces
    values[f"{TAG_PREFIX}/tracing_seconds"] = done.trace_seconds
    return values


def write_watch_scalars(report: TraceReport, log_dir: str | os.PathLike[str]) -> None:
    """A finished watch's series: one point per call that traced, at step = its call number
    within the watch (then the totals at the last call), values cumulative."""
    wrappers = {f.key for f in report.functions if f.wraps}
    traces: dict[str, float] = {
        f"{TAG_PREFIX}/traces/{f.label}": 0 for f in report.functions if not f.wraps
    }
    retraces = 0
    seconds = 0.0
    scalars = TraceScalars(log_dir)
    try:
        last = -1
        for event in report.events:
            last = max(last, event.index)
            if not event.traced:
                continue
            seconds += event.seconds
            if event.key not in wrappers:
                tag = f"{TAG_PREFIX}/traces/{event.label}"
                traces[tag] = traces.get(tag, 0) + event.traces
                retraces += event.retraces
            scalars.write_values(
                {**traces, f"{TAG_PREFIX}/retraces": retraces, f"{TAG_PREFIX}/tracing_seconds": seconds},
                event.index,
            )
        end = max([last, *(r.first + r.calls - 1 for r in report.runs)])
        scalars.write(report, max(end, 0))
    finally:
        scalars.close()
