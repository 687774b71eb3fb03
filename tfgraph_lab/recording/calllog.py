"""The log entries of a watch, in one place: what the hooks append and what the report reads.

* :class:`FunctionState` — one tf.function object the hooks have seen (held weakly), with its
  :class:`GraphState` objects (one per graph in its cache);
* a cache hit is a :class:`Hit` (a named tuple: ``state``, ``seconds``, ``graph`` or None,
  ``start`` the ``perf_counter`` reading the hook took anyway, ``stack`` the calling thread's
  :class:`ThreadStack`, which names the thread), built only by :data:`new_hit`; everything else (a
  call that traced, raised or ran eagerly, or a trace made without a call) is a
  :class:`CallRecord`;
* :class:`CallLog` — the shared list of those entries, appended to. Past a budget, runs of
  consecutive hits are summarised into :class:`HitRun` entries of up to ``BLOCK`` calls each:
  exact counts, time and per-graph hits are kept; the per-call detail is not. Records of traces
  are never summarised, so every retrace stays explained. Positions are *logical*
  (``len(entries) + removed``) so graph positions and watch boundaries survive summarising;
* :class:`LiveCounters` — running totals for live displays;
* :class:`WatchLog` — one watch's view of the shared log (where it began, what came since).

Writers: the hub and its hooks (:mod:`tfgraph_lab.recording.hub`, :mod:`tfgraph_lab.recording.hooks`, and
:mod:`tfgraph_lab.recording.xla` for calls under XLA). Readers: :mod:`tfgraph_lab.recording.tally` (the counting
rule of each entry), :mod:`tfgraph_lab.recording.aggregate` (the report) and ``_xla.judge_by_time``. Plain Python: imports no TensorFlow, no IPython; holds no
strong reference to a user argument, a ``Function`` or a concrete function.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from ..model.counts import Selection
from ..model.records import Reason
from ..model.signatures import Signature
from ..model.vocab import Scope, Via

if TYPE_CHECKING:
    from ..adapter import FunctionInfo, TFHandles

__all__ = [
    "BLOCK",
    "KEEP_FIRST",
    "NOT_READ",
    "CallLog",
    "CallRecord",
    "FunctionState",
    "GraphHits",
    "GraphState",
    "Hit",
    "HitRun",
    "LiveCounters",
    "LogEntry",
    "StateHits",
    "ThreadStack",
    "WatchLog",
    "new_hit",
]

KEEP_FIRST = 20_000  # per-call events kept in full at the start of the newest watch
BLOCK = 1_000  # cache hits per HitRun: the timeline keeps one point per block
WINDOW = 50_000  # summarise again once this many new entries arrived


class FunctionState:
    """What the recorder knows of one tf.function object (held weakly)."""

    __slots__ = (
        "__weakref__",
        "code_key",
        "collected",
        "graph_list",
        "graphs",
        "hit_graph",
        "info",
        "key",
        "object_no",
        "ref",
        "register_seconds",
        "registered_at",
        "scope_counts",
        "self_nested",
        "traced",
        "xla",
    )

    def __init__(self, info: FunctionInfo, ref: Any, object_no: int) -> None:
        self.info = info
        # Calls take the XLA path (_Hub.xla_call): a jit_compile=True function, or one whose
        # graphs call such a function
        self.xla = info.jit_compile
        self.key = info.key
        self.ref = ref
        self.object_no = object_no
        self.graphs: dict[int, GraphState] = {}
        self.graph_list: list[GraphState] = []
        self.traced = False
        self.collected = False
        # The graph every cache hit runs, when that is certain (see _Hub.pin_hit_graph); else
        # None and only the _call_flat hook can tell which graph ran.
        self.hit_graph: GraphState | None = None
        # How many of its live graphs were traced in each scope (None: a scope not known, a
        # graph of an older TF's cache), kept as graphs come and go (_Hub._add_graph): deciding
        # the hit graph costs O(1) in a loop that retraces, not a pass over every graph
        self.scope_counts: dict[Scope | None, int] = {}
        # (info, key) of the history's key for its code (recording.history), read once per info
        self.code_key: tuple[Any, Any] | None = None
        # The watch's own work describing it when first seen (_Hub.state_for): in "the watch
        # itself" of the watches it began in (perf_counter reading ``registered_at``)
        self.register_seconds = 0.0
        self.registered_at = 0.0
        # The places in graph_list of the graphs it traced while its own trace was in progress
        # (it calls itself, recursion): see recording.history.recursion_paths
        self.self_nested: list[int] = []

    def rename(self, name: str, owner: str, role: str) -> None:
        """Show this function as ``name``, one of the user's (see ``TraceRecorder.name_function``):
        its label; ``info.qualname`` stays the code's own and the label it had is kept in
        ``info.origin`` for the history's key. ``info.framework`` still says whose code it is (the
        report shows a named function all the same)."""
        info = self.info
        origin = info.origin or info.label
        self.info = replace(info, label=name, origin=origin, owner=owner, role=role)
        self.key = self.info.key


NOT_READ = object()  # GraphState.fingerprint before it is read (None: it cannot be)


class GraphState:
    """One graph (concrete function) of a function object."""

    __slots__ = (
        "captures",
        "cf_ref",
        "fingerprint",
        "generalised",
        "in_watch",
        "log_pos",
        "retrace",
        "scope",
        "scope_known",
        "seq",
        "signature",
        "state",
        "tool_seconds",
        "via",
        "wasted_of",
        "xla_keys",
        "xla_last",
        "xla_sites",
        "xla_tracked",
    )

    def __init__(
        self, state: FunctionState, signature: Signature, via: Via, scope: Scope, in_watch: bool
    ) -> None:
        self.state = state
        self.signature = signature
        self.via = via
        self.scope = scope
        self.scope_known = True  # False for a graph found in the cache of an older TF
        self.in_watch = in_watch
        self.seq = len(state.graph_list)
        self.cf_ref: Any = None
        self.retrace = False
        self.log_pos = 0  # logical position in the shared log when the graph appeared
        self.generalised = False  # reduce_retracing relaxed the call's signature for it
        self.wasted_of: int | None = None  # same graph as this cached one but for constants
        self.fingerprint: Any = NOT_READ  # its graph's adapter.graph_fingerprint, read once
        self.captures: dict[str, str] = {}  # Python scalars the body read from closure/globals
        self.xla_keys: Any = None  # _xla.XlaMemory: the XLA cache keys it compiled for
        self.xla_last: Any = None  # (device, leaves) of its last XLA compilation
        self.xla_sites: Any = None  # XLA functions called inside this graph (_xla.Site)
        self.xla_tracked = False  # its runs' concrete sizes are seen (_xla.XlaModel.ran)
        self.tool_seconds = 0.0  # the watch's own work when TF reported it (the trace callback)


@dataclass(slots=True, eq=False)
class CallRecord:
    """A call (or a trace without a call) that needs more than the hot path's Hit."""

    state: FunctionState
    via: Via
    seconds: float
    start: float = 0.0  # perf_counter when the call began (when the trace was made: no call)
    traces: list[GraphState] = field(default_factory=list)
    graph: GraphState | None = None  # the graph that ran, when known
    eager: bool = False
    error: str | None = None
    failed_trace: bool = False
    caller: str | None = None
    # the caller's code object and instruction when it called the tf.function directly (the
    # call's source is read from them when the report is built: model.places.call_source)
    call_code: Any = None
    call_lasti: int = -1
    thread: str | None = None
    # The reasons, once built (see ``reasons``); until then ``explain`` builds them from what
    # was noted at trace time (``recording.history.note_new_graph``)
    explained: tuple[Reason, ...] = ()
    explain: Callable[[], tuple[Reason, ...]] | None = None
    xla: Any = None  # an _xla.XlaOutcome: what XLA compiled on this call
    # a trace whose call began before the hooks were in (another thread traced when the watch
    # started): its cost is not measured, and ``seconds`` (0) is not it
    began_before_watch: bool = False
    # The watch's own work making this record (explaining its traces, the live log), after the
    # call's span. What the watch did inside the span (each graph's trace callback, the records
    # of the calls the trace made: a nested function's explaining) is out of ``seconds``, so a
    # trace's cost is TensorFlow's; the callbacks' time is on the graphs (``tool_seconds``).
    tool_seconds: float = 0.0
    # The functions whose calls were in progress on this thread when this call was made,
    # outermost first: a tf.function called while another traces is traced inside that trace,
    # whose span (and so its ``seconds``) holds this call's (tally.count_record counts it once).
    inside: tuple[FunctionState, ...] = ()

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Why its traces happened (and why a failed trace failed), built the first time they
        are read: a live line written, the report built. Never inside a call's span."""
        explain = self.explain
        if explain is not None:
            self.explained = explain()
            self.explain = None
        return self.explained

    @reasons.setter
    def reasons(self, reasons: tuple[Reason, ...]) -> None:
        self.explained = tuple(reasons)
        self.explain = None


@dataclass
class LiveCounters:
    """Running totals of a watch in progress, for live displays and budgets between batches.

    ``calls``/``traces``/``retraces``/``trace_seconds`` are the report's numbers for
    ``selection`` at this moment (both come from :func:`tfgraph_lab.model.counts.totals`).
    ``recent`` holds ``(seconds, traced)`` of the latest calls, oldest first.
    """

    calls: int = 0
    traces: int = 0
    retraces: int = 0
    trace_seconds: float = 0.0
    last_retrace: tuple[str, tuple[Reason, ...]] | None = None
    recent: list[tuple[float, bool]] = field(default_factory=list)
    selection: Selection = Selection.USER


class Hit(NamedTuple):
    """A cache hit: the hot path's one entry (see :data:`new_hit`)."""

    state: FunctionState
    seconds: float
    graph: GraphState | None  # the graph that ran, when known
    start: float  # perf_counter when the call began (the reading the hook took anyway)
    stack: ThreadStack  # the calling thread's frames, which name the thread


# A Hit from a plain tuple at the cost of the tuple (two C calls, no Python frame, unlike
# Hit(...)): ``new_hit((state, seconds, graph, start, stack))``.
new_hit: Callable[[tuple[Any, float, Any, float, Any]], Hit] = partial(tuple.__new__, Hit)  # type: ignore[assignment]

# What the shared log holds; read by type (``type(entry) is Hit``), then by attribute.
LogEntry = Union["Hit", "CallRecord", "HitRun"]


class ThreadStack(list):  # type: ignore[type-arg]
    """A thread's stack of call frames (see :mod:`tfgraph_lab.recording.hooks`), naming its thread.

    A list subclass with slots: ``append``/``pop`` cost what a list's do, and a Hit can
    say which thread ran it without a lookup on the hot path. ``thread`` is None on the main
    thread.
    """

    __slots__ = ("lines", "spent", "thread")

    def __init__(self) -> None:
        super().__init__()
        # seconds of the watch's own work inside each call in progress (the slow path's only)
        self.spent: dict[Any, float] = {}
        # retraces recorded inside a call's span (or a trace's), for the live log once none is
        self.lines: list[CallRecord] = []
        current = threading.current_thread()
        self.thread: str | None = None if current is threading.main_thread() else current.name


class HitRun:
    """Consecutive cache hits of one thread summarised into one entry (``start``: the
    ``perf_counter`` reading when its first call began)."""

    __slots__ = ("calls", "graphs", "max_seconds", "seconds", "start", "states", "thread")

    def __init__(self, start: float, thread: str | None) -> None:
        self.calls = 0
        self.seconds = 0.0
        self.max_seconds = 0.0
        self.start = start
        self.thread = thread
        self.states: dict[int, StateHits] = {}  # by id(state)
        self.graphs: dict[int, GraphHits] = {}  # by id(graph)

    def add(self, hit: Hit) -> None:
        seconds = hit.seconds
        self.calls += 1
        self.seconds += seconds
        if seconds > self.max_seconds:
            self.max_seconds = seconds
        share = self.states.get(id(hit.state))
        if share is None:
            share = self.states[id(hit.state)] = StateHits(hit.state)
        share.calls += 1
        share.seconds += seconds
        if hit.graph is not None:
            graph = self.graphs.get(id(hit.graph))
            if graph is None:
                graph = self.graphs[id(hit.graph)] = GraphHits(hit.graph)
            graph.hits += 1


class StateHits:
    """One function object's share of a :class:`HitRun`: its calls and their time."""

    __slots__ = ("calls", "seconds", "state")

    def __init__(self, state: FunctionState) -> None:
        self.state = state
        self.calls = 0
        self.seconds = 0.0


class GraphHits:
    """One graph's share of a :class:`HitRun`: the cached calls it served."""

    __slots__ = ("graph", "hits")

    def __init__(self, graph: GraphState) -> None:
        self.graph = graph
        self.hits = 0


class CallLog:
    """The shared list of entries: appended to, old cache hits summarised in place as it grows."""

    def __init__(self) -> None:
        self.entries: list[Any] = []
        self.append = self.entries.append  # the hot path's one call
        self.removed = 0
        self.summarised_upto = 0
        self.summarise_at = KEEP_FIRST + WINDOW
        self.summaries = 0  # times summarise_hits rewrote the list (readers count afresh)
        self.lock = threading.Lock()
        # The watch's own work that belongs to no record, a running total each watch reads over
        # its span (WatchLog.own_seconds): keeping this log bounded (Hub.summarise_log), reading
        # a freed function's graph fingerprints (the hub's weak-reference callback). Its lock is
        # held for the sum only: a callback may come on any thread, holding any other lock.
        self.own_seconds = 0.0
        self._own_lock = threading.RLock()

    def add_own(self, seconds: float) -> None:
        """Count ``seconds`` of the watch's own work that belongs to no record."""
        with self._own_lock:
            self.own_seconds += seconds

    def position(self) -> int:
        """The logical position of the next entry."""
        return len(self.entries) + self.removed

    def summarise_hits(self, newest_start: int) -> None:
        """Summarise hits between the kept head of the newest watch and the end of the log.

        ``newest_start`` is the list index where the newest active watch began. Summarising only
        touches entries after it, so the list index where any active watch began never moves.
        """
        if len(self.entries) < self.summarise_at:
            return
        with self.lock:
            entries = self.entries
            floor = max(newest_start + KEEP_FIRST, self.summarised_upto)
            end = len(entries)
            if end - floor < BLOCK:
                self.summarise_at = end + WINDOW
                return
            out: list[Any] = []
            runs: dict[int, HitRun] = {}  # id(thread stack) -> the run of that thread
            for entry in entries[floor:end]:
                if type(entry) is Hit:
                    run = runs.get(id(entry.stack))
                    if run is None or run.calls >= BLOCK:
                        run = runs[id(entry.stack)] = HitRun(entry.start, entry.stack.thread)
                        out.append(run)
                    run.add(entry)
                else:
                    out.append(entry)
                    runs.clear()
            entries[floor:end] = out  # one list operation: appends from other threads survive
            self.removed += (end - floor) - len(out)
            self.summarised_upto = floor + len(out)
            self.summaries += 1
            self.summarise_at = len(entries) + WINDOW


class WatchLog:
    """One watch's view of the hub's shared log: where it began and what arrived since.

    ``Hub.attach`` returns it; the recorder keeps it and reads through it (the hub never
    touches the recorder). Valid while attached; afterwards the recorder keeps copies.
    """

    __slots__ = (
        "_own_start",
        "_read",
        "_summaries",
        "_warnings",
        "calllog",
        "handles",
        "start",
        "warnings_start",
    )

    def __init__(self, calllog: CallLog, warnings: list[str], handles: TFHandles) -> None:
        self.handles = handles
        self.calllog = calllog
        self._warnings = warnings
        self.start = len(calllog.entries)  # a list index: summarising only happens after it
        self.warnings_start = len(warnings)
        self._read = self.start  # list index up to which read_new() handed entries out
        self._summaries = calllog.summaries
        self._own_start = calllog.own_seconds

    def entries(self) -> list[LogEntry]:
        """This watch's entries so far (a copy of the slice)."""
        return self.calllog.entries[self.start :]

    def read_new(self) -> tuple[bool, list[LogEntry]]:
        """``(again, entries)``: the entries since the last call. ``again`` is True when
        summarising rewrote the log since: ``entries`` are then all of the watch's entries
        (count afresh). Summarising is rare (once per ``WINDOW`` entries), so a reader that
        calls this often pays O(new entries)."""
        calllog = self.calllog
        with calllog.lock:  # summarising holds it: the list cannot move under the slice
            again = calllog.summaries != self._summaries
            if again:
                self._summaries = calllog.summaries
                self._read = self.start
            end = len(calllog.entries)
            new = calllog.entries[self._read : end]
            self._read = end
        return again, new

    def recent(self, n: int) -> list[tuple[float, bool]]:
        """``(seconds, traced)`` of the watch's latest ``n`` calls, oldest first."""
        entries = self.calllog.entries
        tail = entries[max(self.start, len(entries) - n) :] if n else []
        out: list[tuple[float, bool]] = []
        for entry in tail:
            if isinstance(entry, Hit):
                out.append((entry.seconds, False))
            elif isinstance(entry, CallRecord) and entry.via == Via.CALL:
                out.append((entry.seconds, bool(entry.traces)))
        return out

    def position(self) -> int:
        """The logical position in the shared log just past the latest entry."""
        return self.calllog.position()

    def warnings(self) -> list[str]:
        return self._warnings[self.warnings_start :]

    def own_seconds(self) -> float:
        """The watch's own work that belongs to no record, since this watch began
        (:attr:`CallLog.own_seconds`)."""
        return self.calllog.own_seconds - self._own_start
