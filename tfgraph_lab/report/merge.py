"""Merging the reports of several processes (workers of one job, test shards) into one.

``merge_reports`` sums each function's counts and times over the processes (a function is the
same in two processes when its label and file are) and keeps a per-process breakdown. The
merged report is an ordinary :class:`~tfgraph_lab.report.TraceReport`, so every renderer reads
it; its JSON adds ``processes`` (the breakdown) to JSON version 1. Events keep their process:
``process`` names it, and their ``thread`` becomes ``"<process>"`` or ``"<process>/<thread>"``
(as before ``process`` was stored), so the timeline shows a process per report and a track
per thread in it. Pure data: no TensorFlow, no IPython.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..model.records import CallRun, Event, FunctionSummary, GraphSummary
from ..render.xla import xla_kind
from .trace_report import TraceReport

__all__ = ["MergedReport", "ProcessCounts", "merge_reports", "process_names"]


@dataclass(frozen=True, slots=True)
class ProcessCounts:
    """One function's counts in one process (``qualname`` and ``label`` as the function's)."""

    process: str
    qualname: str
    filename: str
    calls: int
    traces: int
    retraces: int
    trace_seconds: float
    call_seconds: float
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.qualname)

    def to_dict(self) -> dict[str, object]:
        return {
            "qualname": self.qualname,
            "label": self.label,
            "filename": self.filename,
            "calls": self.calls,
            "traces": self.traces,
            "retraces": self.retraces,
            "trace_seconds": self.trace_seconds,
            "call_seconds": self.call_seconds,
        }


@dataclass(frozen=True)
class MergedReport:
    """The summed report and, per process, what each function did there."""

    report: TraceReport
    processes: tuple[str, ...]
    breakdown: tuple[ProcessCounts, ...]

    def counts_of(self, label: str, filename: str) -> list[ProcessCounts]:
        """The per-process counts of the row ``(label, filename)`` (a function's ``key``)."""
        return [c for c in self.breakdown if c.label == label and c.filename == filename]

    def to_dict(self) -> dict[str, Any]:
        data = self.report.to_dict()
        data["processes"] = [
            {"name": name, "functions": [c.to_dict() for c in self.breakdown if c.process == name]}
            for name in self.processes
        ]
        return data


def process_names(paths: Sequence[str]) -> list[str]:
    """Short, distinct names for the inputs: file names, with folders only where needed."""
    names = [os.path.basename(p) or p for p in paths]
    if len(set(names)) == len(names):
        return names
    return [os.path.normpath(p) for p in paths]


def merge_reports(
    named: Sequence[tuple[str, TraceReport]],
    start_offsets: Sequence[float] | None = None,
    label_tracks: bool = True,
) -> MergedReport:
    """Sum the reports (in the order given) per function; keep a per-process breakdown.

    ``start_offsets`` (seconds, one per report) shift each report's event start times, for
    reports of one process taken one after the other (the Keras callback's calls);
    ``label_tracks=False`` keeps the events' threads as they are (one process).
    """
    if not named:
        raise ValueError("merge_reports needs at least one report")
    order: list[tuple[str, str]] = []
    parts: dict[tuple[str, str], list[FunctionSummary]] = {}
    breakdown: list[ProcessCounts] = []
    events: list[Event] = []
    runs: list[CallRun] = []
    offset = 0
    for number, (name, report) in enumerate(named):
        shift = start_offsets[number] if start_offsets is not None else 0.0
        label = name if label_tracks else None

        for fn in report.functions:
            key = fn.key
            if key not in parts:
                order.append(key)
                parts[key] = []
            parts[key].append(fn)
            breakdown.append(
                ProcessCounts(
                    name,
                    fn.qualname,
                    fn.filename,
                    fn.calls,
                    fn.traces,
                    fn.retraces,
                    fn.trace_seconds,
                    fn.call_seconds,
                    fn.label,
                )
            )
        for e in report.events:
            events.append(
                replace(
                    e,
                    index=e.index + offset,
                    thread=_track(label, e.thread),
                    start=_moved(e.start, shift),
                    process=label or e.process,
                )
            )
        for r in report.runs:
            runs.append(
                replace(
                    r,
                    first=r.first + offset,
                    thread=_track(label, r.thread),
                    start=_moved(r.start, shift),
                    process=label or r.process,
                )
            )
        offset += _calls_in(report)
    functions = tuple(_sum_functions(parts[key]) for key in order)
    functions = tuple(sorted(functions, key=lambda f: (f.framework, -f.retraces, -f.traces, f.label)))
    reports = [r for _, r in named]
    merged = TraceReport(
        functions=functions,
        events=tuple(events),
        runs=tuple(runs),
        warnings=tuple(w for r in reports for w in r.warnings),
        seconds=max(r.seconds for r in reports) if label_tracks else sum(r.seconds for r in reports),
        tf_version=", ".join(dict.fromkeys(r.tf_version for r in reports if r.tf_version)),
        eager_calls=sum(r.eager_calls for r in reports),
        degraded=tuple(dict.fromkeys(d for r in reports for d in r.degraded)),
        # cells of different processes share no file name (ipykernel's include the pid)
        labels={k: v for r in reports for k, v in r.labels.items()},
        watch_seconds=sum(r.watch_seconds for r in reports),
    )
    return MergedReport(merged, tuple(name for name, _ in named), tuple(breakdown))


def _track(process: str | None, thread: str | None) -> str | None:
    if process is None:
        return thread
    return process if thread is None else f"{process}/{thread}"


def _moved(start: float | None, shift: float) -> float | None:
    return None if start is None else start + shift


def _calls_in(report: TraceReport) -> int:
    """How many call indices a report used (events and summarised runs number them)."""
    last = [e.index + 1 for e in report.events] + [r.first + r.calls for r in report.runs]
    return max(last, default=0)


def _sum_functions(parts: list[FunctionSummary]) -> FunctionSummary:
    first = parts[0]
    graphs: dict[str, GraphSummary] = {}
    for fn in parts:
        for g in fn.graphs:
            seen = graphs.get(g.signature)
            if seen is None:
                graphs[g.signature] = g
            else:
                graphs[g.signature] = replace(
                    seen,
                    hits=seen.hits + g.hits,
                    traced_in_watch=seen.traced_in_watch or g.traced_in_watch,
                    generalised=seen.generalised or g.generalised,
                )
    return replace(
        first,
        calls=sum(f.calls for f in parts),
        traces=sum(f.traces for f in parts),
        failed_traces=sum(f.failed_traces for f in parts),
        trace_seconds=sum(f.trace_seconds for f in parts),
        call_seconds=sum(f.call_seconds for f in parts),
        graphs=tuple(graphs.values()),
        function_objects=sum(f.function_objects for f in parts),
        objects_traced=sum(f.objects_traced for f in parts),
        traced_calls=sum(f.traced_calls for f in parts),
        retraces=sum(f.retraces for f in parts),
        eager_calls=sum(f.eager_calls for f in parts),
        wasted_retraces=sum(f.wasted_retraces for f in parts),
        hints=tuple(dict.fromkeys(h for f in parts for h in f.hints)),
        suggestion=next((f.suggestion for f in parts if f.suggestion), None),
        jit_compile=any(f.jit_compile for f in parts),
        xla_compiles=sum(f.xla_compiles for f in parts),
        xla_estimated=sum(f.xla_estimated for f in parts),
        xla_compiles_kind=_xla_kind([xla_kind(f) for f in parts if f.xla_compiles or f.xla_compiles_kind]),
        xla_seconds=sum(f.xla_seconds for f in parts),
        xla_cost_calls=sum(f.xla_cost_calls for f in parts if f.xla_cost_calls) or None,
        xla_slow_calls=sum(f.xla_slow_calls for f in parts),
        xla_slow_seconds=sum(f.xla_slow_seconds for f in parts),
        nested_trace_seconds=sum(f.nested_trace_seconds for f in parts),
        nested_framework_seconds=sum(f.nested_framework_seconds for f in parts),
    )


def _xla_kind(kinds: list[str]) -> str:
    """Merged XLA counts are exact only when every part's was."""
    kinds = [k for k in kinds if k]
    if not kinds:
        return ""
    if "about" in kinds:
        return "about"
    return "exact" if all(k == "exact" for k in kinds) else "at-least"
