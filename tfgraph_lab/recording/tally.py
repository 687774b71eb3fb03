"""Counting log entries: the one rule per entry that the report and the live counters share.

:func:`count_hits` and :func:`count_record` add an entry to a :class:`~tfgraph_lab.model.counts.CountRow`
(``_aggregate.aggregate`` builds the report with them); :class:`Tally` keeps rows for a running
watch (``TraceRecorder.live_counters``), totalled by the same :func:`tfgraph_lab.model.counts.totals`.
Reads entries of :mod:`tfgraph_lab.recording.calllog`; imports no TensorFlow, no IPython.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..model.counts import CountRow, Selection, Totals, totals
from ..model.records import Reason
from ..model.vocab import Via
from .calllog import CallRecord, FunctionState, Hit, HitRun, LogEntry

if TYPE_CHECKING:
    from ..adapter import FunctionInfo

__all__ = ["Tally", "count_hits", "count_record", "users"]


def count_hits(row: CountRow, calls: int, seconds: float) -> None:
    """Cache hits of one function: calls and their time."""
    row.calls += calls
    row.call_seconds += seconds


def count_record(row: CountRow, record: CallRecord) -> int:
    """A slow-path record's counts (the one rule for the report and the live counters);
    returns how many of its graphs are retraces (decided when they were recorded)."""
    is_call = record.via == Via.CALL
    if is_call:
        row.calls += 1
        row.call_seconds += record.seconds
    retraces = 0
    traced = bool(record.traces) or record.failed_trace
    if traced and record.inside:  # traced inside an outer function's trace: its time is there too
        row.nested_trace_seconds += record.seconds
        if not any(users(s.info) for s in record.inside):
            row.nested_framework_seconds += record.seconds
    if record.traces:
        row.traces += len(record.traces)
        row.trace_seconds += record.seconds
        row.traced_calls += is_call
        retraces = sum(1 for g in record.traces if g.retrace)
        row.retraces += retraces
        row.wasted_retraces += sum(1 for g in record.traces if g.wasted_of is not None)
    if record.failed_trace:
        row.failed_traces += 1
        if not record.traces:
            row.trace_seconds += record.seconds
            row.traced_calls += is_call
    if record.eager:
        row.eager_calls += 1
    return retraces


def users(info: FunctionInfo) -> bool:
    """Whether a function is the user's: not TF's or Keras's own, or one a front end named
    (Keras's train step in a TraceCallback: ``TraceRecorder.name_function``)."""
    return not info.framework or bool(info.origin)


class Tally:
    """Counts per function object of a running watch, fed its new log entries (``live_counters``)
    by the rules the report is built with, totalled by the same ``counts.totals``: the numbers
    are the report's. Names and flags are read when totalled (a function named after its first
    calls)."""

    __slots__ = ("last_retrace", "rows")

    def __init__(self) -> None:
        self.rows: dict[int, tuple[FunctionState, CountRow]] = {}  # id(state) ->
        # per selection: (label, reasons) of the latest call that retraced
        self.last_retrace: dict[Selection, tuple[str, tuple[Reason, ...]]] = {}

    def _row(self, state: FunctionState) -> CountRow:
        slot = self.rows.get(id(state))
        if slot is None:
            slot = self.rows[id(state)] = (state, CountRow("", False, ""))
        return slot[1]

    def add(self, entries: Iterable[LogEntry]) -> None:
        for entry in entries:
            if isinstance(entry, Hit):
                count_hits(self._row(entry.state), 1, entry.seconds)
            elif isinstance(entry, HitRun):
                for share in entry.states.values():
                    count_hits(self._row(share.state), share.calls, share.seconds)
            elif count_record(self._row(entry.state), entry) and not entry.state.info.wraps:
                last = (entry.state.info.label, entry.reasons)
                self.last_retrace[Selection.ALL] = last
                if users(entry.state.info):
                    self.last_retrace[Selection.USER] = last

    def totals(self, selection: Selection) -> Totals:
        for state, row in self.rows.values():
            info = state.info
            row.label, row.framework, row.wraps = info.label, not users(info), info.wraps
        return totals([row for _, row in self.rows.values()], selection)
