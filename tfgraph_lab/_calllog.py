"""The shared call log and how it stays bounded: runs of cache hits fold into ``HitRun``s.

The recorder's hot path appends one tuple ``(state, seconds, graph)`` per cache hit and a
``CallRecord`` for every call that traced, failed or ran eagerly. Past a budget, consecutive
hits are folded into ``HitRun`` entries of up to ``BLOCK`` calls each: exact counts, time and
per-graph hits are kept; the per-call detail is not. Records of traces are never folded, so
every retrace stays explained. Positions are *logical* (``len(entries) + removed``) so graph
positions and watch boundaries survive folding. Plain Python only: no TensorFlow.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["BLOCK", "KEEP_FIRST", "CallLog", "HitRun"]

KEEP_FIRST = 20_000  # per-call events kept in full at the start of the newest watch
BLOCK = 1_000  # cache hits per HitRun: the timeline keeps one point per block
WINDOW = 50_000  # fold again once this many new entries arrived


class HitRun:
    """Consecutive cache hits folded into one entry."""

    __slots__ = ("calls", "graphs", "max_seconds", "seconds", "states")

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self.max_seconds = 0.0
        self.states: dict[int, list[Any]] = {}  # id(state) -> [state, calls, seconds]
        self.graphs: dict[int, list[Any]] = {}  # id(graph) -> [graph, hits]

    def add(self, state: Any, seconds: float, graph: Any) -> None:
        self.calls += 1
        self.seconds += seconds
        if seconds > self.max_seconds:
            self.max_seconds = seconds
        slot = self.states.get(id(state))
        if slot is None:
            self.states[id(state)] = [state, 1, seconds]
        else:
            slot[1] += 1
            slot[2] += seconds
        if graph is not None:
            gslot = self.graphs.get(id(graph))
            if gslot is None:
                self.graphs[id(graph)] = [graph, 1]
            else:
                gslot[1] += 1


class CallLog:
    """An append-only list of entries that folds old cache hits when it grows."""

    def __init__(self) -> None:
        self.entries: list[Any] = []
        self.append = self.entries.append  # the hot path's one call
        self.removed = 0
        self.folded_upto = 0
        self.fold_at = KEEP_FIRST + WINDOW
        self._lock = threading.Lock()

    def position(self) -> int:
        """The logical position of the next entry."""
        return len(self.entries) + self.removed

    def maybe_fold(self, newest_start: int) -> None:
        """Fold hits between the kept head of the newest watch and the end of the log.

        ``newest_start`` is the list index where the newest active watch began. Folding only
        touches entries after it, so the list index where any active watch began never moves.
        """
        if len(self.entries) < self.fold_at:
            return
        with self._lock:
            entries = self.entries
            floor = max(newest_start + KEEP_FIRST, self.folded_upto)
            end = len(entries)
            if end - floor < BLOCK:
                self.fold_at = end + WINDOW
                return
            out: list[Any] = []
            run: HitRun | None = None
            for entry in entries[floor:end]:
                if type(entry) is tuple:
                    if run is None or run.calls >= BLOCK:
                        run = HitRun()
                        out.append(run)
                    run.add(*entry)
                else:
                    out.append(entry)
                    run = None
            entries[floor:end] = out  # one list operation: appends from other threads survive
            self.removed += (end - floor) - len(out)
            self.folded_upto = floor + len(out)
            self.fold_at = len(entries) + WINDOW
