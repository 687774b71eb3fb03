"""Every count, defined once: which trace is a retrace, which rows a total adds, the mean
cached call.

* A **retrace** is a trace whose first reason is not in :data:`NOT_RETRACES` (a first trace, the
  one-off second trace of a first call that created variables). The hub decides it once, when
  the graph is recorded (:func:`is_retrace`), and stores it on the graph; events and summaries
  carry the count (``Event.retraces``, ``FunctionSummary.retraces``). Readers never decide it
  again from reason codes.
* A **selection** says which functions a total adds: :attr:`Selection.USER` (the default: the
  functions the user wrote) or :attr:`Selection.ALL` (TensorFlow's and Keras's own too). In
  either, graphs TF built around a function (tf.data wrappers, replica clones: rows with
  ``wraps`` set) are no traces of it: they are counted apart (:attr:`Totals.wrapper_graphs`);
  their calls and tracing time still count.
* :func:`totals` adds rows (the report's ``FunctionSummary`` objects, or the live
  :class:`CountRow` objects a running watch keeps) for a selection: the report's numbers and
  the live counters are one computation.
* :func:`mean_cached_seconds`: the mean time of a call that neither traced nor compiled with XLA.

Plain data; imports nothing from the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from .vocab import ReasonCode

__all__ = [
    "NOT_RETRACES",
    "CountRow",
    "Counted",
    "Selection",
    "Totals",
    "is_retrace",
    "mean_cached_seconds",
    "selected",
    "totals",
]

# Reason codes of a trace that is not a retrace.
NOT_RETRACES = (ReasonCode.FIRST_TRACE, ReasonCode.VARIABLE_CREATION)


def is_retrace(codes: Sequence[str]) -> bool:
    """Whether a graph traced for these reasons (in order) is a retrace: its first reason is
    neither a first trace nor the variable-creating first call's second trace."""
    return bool(codes) and codes[0] not in NOT_RETRACES


class Selection(str, Enum):
    """Which functions a total adds: the user's (default) or every one (TF's and Keras's too)."""

    USER = "user"
    ALL = "all"


class Counted(Protocol):
    """What :func:`totals` reads of a row (``FunctionSummary`` and :class:`CountRow` have it)."""

    @property
    def label(self) -> str: ...
    @property
    def framework(self) -> bool: ...
    @property
    def wraps(self) -> str: ...
    @property
    def calls(self) -> int: ...
    @property
    def traces(self) -> int: ...
    @property
    def retraces(self) -> int: ...
    @property
    def traced_calls(self) -> int: ...
    @property
    def trace_seconds(self) -> float: ...
    @property
    def call_seconds(self) -> float: ...
    @property
    def nested_trace_seconds(self) -> float: ...
    @property
    def nested_framework_seconds(self) -> float: ...
    @property
    def xla_slow_calls(self) -> int: ...
    @property
    def xla_slow_seconds(self) -> float: ...
    @property
    def xla_compiles(self) -> int: ...


class CountRow:
    """The running counts of one function in a watch in progress (see ``_aggregate.Tally``)."""

    __slots__ = (
        "call_seconds",
        "calls",
        "eager_calls",
        "failed_traces",
        "framework",
        "label",
        "nested_framework_seconds",
        "nested_trace_seconds",
        "retraces",
        "trace_seconds",
        "traced_calls",
        "traces",
        "wasted_retraces",
        "wraps",
        "xla_compiles",
        "xla_slow_calls",
        "xla_slow_seconds",
    )

    def __init__(self, label: str, framework: bool, wraps: str) -> None:
        self.label = label
        self.framework = framework
        self.wraps = wraps
        self.calls = self.traces = self.retraces = self.traced_calls = 0
        self.failed_traces = self.eager_calls = self.wasted_retraces = 0
        self.xla_slow_calls = self.xla_compiles = 0
        self.trace_seconds = self.call_seconds = self.xla_slow_seconds = 0.0
        self.nested_trace_seconds = self.nested_framework_seconds = 0.0


@dataclass(frozen=True)
class Totals:
    """The numbers of one selection of functions."""

    selection: Selection
    functions: int = 0  # functions counted (graphs built around a function apart)
    calls: int = 0
    traces: int = 0
    retraces: int = 0
    trace_seconds: float = 0.0
    xla_compiles: int = 0
    mean_cached_seconds: float | None = None
    # {"tf.data wrapper": 2}: graphs TF built around the selected functions, by kind
    wrapper_graphs: dict[str, int] = field(default_factory=dict)


def selected(rows: Iterable[Counted], selection: Selection) -> list[Counted]:
    """The rows a selection adds (graphs built around a function included)."""
    if selection is Selection.ALL:
        return list(rows)
    return [r for r in rows if not r.framework]


def totals(rows: Iterable[Counted], selection: Selection = Selection.USER) -> Totals:
    """The totals of ``rows`` for ``selection``: the one sum every consumer uses."""
    chosen = selected(rows, selection)
    own = [r for r in chosen if not r.wraps]
    wrappers: dict[str, int] = {}
    for r in chosen:
        if r.wraps and r.traces:
            kind = r.label[: -len(r.wraps)].rsplit(" ", 2)[0]  # "tf.data wrapper around x"
            wrappers[kind] = wrappers.get(kind, 0) + r.traces
    return Totals(
        selection=selection,
        functions=len(own),
        calls=sum(r.calls for r in chosen),
        traces=sum(r.traces for r in own),
        retraces=sum(r.retraces for r in own),
        trace_seconds=sum(r.trace_seconds - _counted_outside(r, selection) for r in chosen),
        xla_compiles=sum(r.xla_compiles for r in chosen),
        mean_cached_seconds=mean_cached_seconds(chosen),
        wrapper_graphs=wrappers,
    )


def _counted_outside(row: Counted, selection: Selection) -> float:
    """The part of ``row``'s tracing time a function of ``selection`` holds already: its traces
    made inside another function's trace. The user's selection counts those made inside TF's
    or Keras's own functions only (hidden, their time in no row it sums) in the nested row."""
    if selection is Selection.ALL:
        return row.nested_trace_seconds
    return row.nested_trace_seconds - row.nested_framework_seconds


def mean_cached_seconds(rows: Iterable[Counted]) -> float | None:
    """Mean time of a call that neither traced nor compiled with XLA (None: none such).

    A row's cached time is its call time less its tracing and XLA-compiling calls' time
    (never below 0: a trace made without a call has time but no call).
    """
    hits = 0
    seconds = 0.0
    for r in rows:
        hits += r.calls - r.traced_calls - r.xla_slow_calls
        seconds += max(0.0, r.call_seconds - r.trace_seconds - r.xla_slow_seconds)
    return seconds / hits if hits > 0 else None
