"""The hub: the hooks in TensorFlow and the shared log they write, while any watch is active.

One process-wide hub installs the hooks when the first watch starts and removes them when the
last one stops (watches nest; each sees its own slice of one shared log). The hooks are:

* ``Function.__call__`` and ``Function._get_concrete_function_garbage_collected`` at class level:
  a thread-local stack of frames says which function object is being called on each thread.
  The ``__call__`` hook replaces TF's traceback-filtering wrapper and filters exceptions as it
  does, so it adds no Python frame to a call;
* ``ConcreteFunction._call_flat``: which graph actually ran, for the graph-cache hit counts.
  Installed only once some watched function holds two graphs that could serve a cached call:
  while every function has one such graph, a hit can only have run that one, and the hot path
  is spared an extra Python frame per call (``benchmarks/overhead.py`` prints both costs);
* a ``CONCRETE_FUNCTION_CALLBACKS`` entry: exactly one event per new graph, on the tracing
  thread, attributed through the cache the graph goes into (never by count deltas, which are
  wrong under threads and overlap under recursion);
* a logging handler that copies TensorFlow's own retracing warnings into the report.

Nothing here holds a strong reference to a user argument, a ``Function`` or a concrete
function. Imports TensorFlow only through :mod:`tfgraph_lab._tf_adapter`; never IPython.
The public face is :mod:`tfgraph_lab.recorder` (``TraceRecorder``, ``watch``).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from . import _tf_adapter as tfa
from ._calllog import CallLog
from .explain import explain_failure, explain_trace, mark_wasted
from .records import Reason, Signature

if TYPE_CHECKING:
    from .recorder import TraceRecorder

__all__ = [
    "HUB",
    "NOT_RETRACES",
    "CallRecord",
    "FunctionState",
    "GraphState",
    "LiveCounters",
    "LogEntry",
    "RetraceWarningHandler",
]

NOT_RETRACES = ("first-trace", "variable-creation")

_perf = time.perf_counter


class FunctionState:
    """What the recorder knows of one tf.function object (held weakly)."""

    __slots__ = (
        "__weakref__",
        "collected",
        "graph_list",
        "graphs",
        "info",
        "key",
        "object_no",
        "ref",
        "sole",
        "traced",
    )

    def __init__(self, info: tfa.FunctionInfo, ref: Any, object_no: int) -> None:
        self.info = info
        self.key = (info.qualname, info.filename)
        self.ref = ref
        self.object_no = object_no
        self.graphs: dict[int, GraphState] = {}
        self.graph_list: list[GraphState] = []
        self.traced = False
        self.collected = False
        # The graph every cache hit runs, when that is certain (see _Hub.settle); else None
        # and only the _call_flat hook can tell which graph ran.
        self.sole: GraphState | None = None


class GraphState:
    """One graph (concrete function) of a function object."""

    __slots__ = (
        "captures",
        "cf_ref",
        "generalised",
        "in_watch",
        "log_pos",
        "retrace",
        "scope",
        "scope_known",
        "seq",
        "signature",
        "state",
        "via",
        "wasted_of",
    )

    def __init__(
        self, state: FunctionState, signature: Signature, via: str, scope: str, in_watch: bool
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
        self.captures: dict[str, str] = {}  # Python scalars the body read from closure/globals


# A frame of the per-thread call stack: ``[state, via, served, traces]``. A plain list, because
# one is made per call on the hot path and a list literal costs a quarter of a class instance.
# ``served`` is id() of the concrete function that ran (set by the _call_flat hook) or None;
# ``traces`` is _NO_TRACES until the call traces.
_Frame = list[Any]
_STATE, _VIA, _SERVED, _TRACES = 0, 1, 2, 3

_NO_TRACES: list[GraphState] = []  # shared and never appended to (see _on_concrete_function)


class CallRecord:
    """A call (or a trace without a call) that needs more than the hot path's tuple."""

    __slots__ = (
        "caller",
        "eager",
        "error",
        "failed_trace",
        "graph",
        "reasons",
        "seconds",
        "state",
        "thread",
        "traces",
        "via",
    )

    def __init__(self, state: FunctionState, via: str, seconds: float) -> None:
        self.state = state
        self.via = via
        self.seconds = seconds
        self.traces: list[GraphState] = []
        self.graph: GraphState | None = None
        self.eager = False
        self.error: str | None = None
        self.failed_trace = False
        self.caller: str | None = None
        self.thread: str | None = None
        self.reasons: tuple[Reason, ...] = ()


@dataclass
class LiveCounters:
    """Cheap running totals of a watch in progress, for live displays (no report rebuild).

    ``recent`` holds ``(seconds, traced)`` of the latest calls, oldest first.
    """

    calls: int = 0
    traces: int = 0
    retraces: int = 0
    trace_seconds: float = 0.0
    records: int = 0  # entries that were not plain cache hits
    non_calls: int = 0  # traces made without a call (get_concrete_function, tf.data, …)
    last_retrace: tuple[str, tuple[Reason, ...]] | None = None
    recent: list[tuple[float, bool]] = field(default_factory=list)

    def minus(self, start: LiveCounters) -> LiveCounters:
        return LiveCounters(
            traces=self.traces - start.traces,
            retraces=self.retraces - start.retraces,
            trace_seconds=self.trace_seconds - start.trace_seconds,
            records=self.records - start.records,
            non_calls=self.non_calls - start.non_calls,
            last_retrace=self.last_retrace,
        )


# A log entry is either a hot-path hit ``(state, seconds, graph_or_None)`` or a CallRecord.
LogEntry = Any


class _History:
    """What outlives a single watch: which Python code has been traced by which object count.

    Lets a re-run notebook cell or ``tf.function(f)`` in a loop be named ``new-function-object``.
    Holds strings and numbers only.
    """

    def __init__(self) -> None:
        self.objects_per_code: dict[tuple[str, str, int], int] = {}
        self.last_graphs: dict[tuple[str, str, int], list[Signature]] = {}

    def code_key(self, info: tfa.FunctionInfo) -> tuple[str, str, int]:
        # Terminal IPython names a cell "<ipython-input-12-3f2a…>": the execution count changes
        # when the cell is re-run, the hash of its text does not (ipykernel uses the hash only).
        filename = _IPYTHON_INPUT.sub("<ipython-input-", info.filename)
        return (filename, info.qualname, info.firstlineno)


_IPYTHON_INPUT = re.compile(r"^<ipython-input-\d+-")

HISTORY = _History()


class RetraceWarningHandler(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(level=logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:
            return
        if "retracing" in message:
            self.sink.append(message)


class _Hub:
    """Owns the patches and the shared log while at least one watch is active."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.tls = threading.local()
        self.recorders: list[TraceRecorder] = []
        self.calllog = CallLog()
        self.log: list[LogEntry] = self.calllog.entries
        self.warnings: list[str] = []
        self.states: dict[int, FunctionState] = {}
        self.cache_owner: dict[int, FunctionState] = {}
        self.objects_seen: dict[tuple[str, str], int] = {}
        self.originals: dict[str, Any] = {}
        self.handles: tfa.TFHandles | None = None
        self.log_handler: RetraceWarningHandler | None = None
        self.counters = LiveCounters()

    def _count(self, record: CallRecord) -> None:
        """Running totals, kept on the slow path only (traces, failures, eager calls)."""
        c = self.counters
        c.records += 1
        c.non_calls += record.via != "call"
        if record.traces:
            c.traces += len(record.traces)
            c.trace_seconds += record.seconds
            retraces = sum(1 for g in record.traces if g.retrace)
            if retraces:
                c.retraces += retraces
                c.last_retrace = (record.state.info.qualname, record.reasons)

    # ----------------------------------------------------------------- install/remove
    def attach(self, recorder: TraceRecorder) -> None:
        with self.lock:
            if not self.recorders:
                self._install()
            recorder._start = len(self.log)  # a list index: folding only happens after it
            recorder._start_pos = self.calllog.position()
            recorder._counters_start = replace(self.counters)
            recorder._warnings_start = len(self.warnings)
            self.recorders.append(recorder)

    def fold(self) -> None:
        """Keep the log bounded (called from the hot path when it has grown)."""
        with self.lock:
            newest = self.recorders[-1]._start if self.recorders else len(self.log)
        self.calllog.maybe_fold(newest)

    def detach(self, recorder: TraceRecorder) -> None:
        with self.lock:
            if recorder in self.recorders:
                self.recorders.remove(recorder)
            if not self.recorders:
                self._uninstall()

    def _install(self) -> None:
        h = tfa.handles()
        self.handles = h
        self.calllog = CallLog()
        self.log = self.calllog.entries
        self.warnings = []
        self.states = {}
        self.cache_owner = {}
        self.objects_seen = {}
        self.counters = LiveCounters()
        fn_cls = h.function_class
        self.originals = {"__call__": fn_cls.__dict__["__call__"]}
        try:
            make_hook = _make_call_hook if h.full else _make_count_only_hook
            setattr(fn_cls, "__call__", make_hook(self, self.originals["__call__"]))  # noqa: B010
            if h.full:
                gcf = fn_cls.__dict__["_get_concrete_function_garbage_collected"]
                self.originals["_get_concrete_function_garbage_collected"] = gcf
                setattr(fn_cls, "_get_concrete_function_garbage_collected", _make_gcf_hook(self, gcf))  # noqa: B010
                assert h.callbacks is not None
                h.callbacks.append(self.on_concrete_function)
            self.log_handler = RetraceWarningHandler(self.warnings)
            logging.getLogger("tensorflow").addHandler(self.log_handler)
        except BaseException:
            self._uninstall()
            raise

    def _uninstall(self) -> None:
        h = self.handles
        if h is None:
            return
        fn_cls = h.function_class
        for name in ("__call__", "_get_concrete_function_garbage_collected"):
            if name in self.originals:
                setattr(fn_cls, name, self.originals[name])
        if "_call_flat" in self.originals and h.concrete_function_class is not None:
            setattr(h.concrete_function_class, "_call_flat", self.originals["_call_flat"])  # noqa: B010
        if h.callbacks is not None:
            while self.on_concrete_function in h.callbacks:
                h.callbacks.remove(self.on_concrete_function)
        if self.log_handler is not None:
            logging.getLogger("tensorflow").removeHandler(self.log_handler)
            self.log_handler = None
        self.originals = {}
        self.states = {}
        self.cache_owner = {}

    def _need_call_flat_hook(self) -> None:
        """Install the ``_call_flat`` hook (once per hub install): a function now has two
        graphs that could serve a cached call, so only the graph that ran can say which."""
        with self.lock:
            h = self.handles
            if "_call_flat" in self.originals or h is None or not h.full or not self.recorders:
                return
            cf_cls = h.concrete_function_class
            assert cf_cls is not None
            original = cf_cls.__dict__["_call_flat"]
            self.originals["_call_flat"] = original
            setattr(cf_cls, "_call_flat", _make_call_flat_hook(self, original))  # noqa: B010

    def settle(self, state: FunctionState) -> None:
        """Decide which graph a cache hit of ``state`` runs, now that its graphs changed.

        Certain when the cache holds one graph, or one in the scope cached calls look up (see
        :func:`tfgraph_lab._tf_adapter.created_variables`); otherwise install the hook that
        reports the graph that ran. Runs from the trace callback, which TensorFlow calls before
        it puts the new graph in the cache, so no other thread can hit the graph before this.
        """
        fn = state.ref()
        graphs = list(state.graphs.values())
        sole = graphs[0] if len(graphs) == 1 else None
        if sole is None and fn is not None and graphs and all(g.scope_known for g in graphs):
            wanted = "" if tfa.created_variables(fn) else tfa.VARIABLE_CREATION
            serving = [g for g in graphs if g.scope == wanted]
            if len(serving) == 1:
                sole = serving[0]
        state.sole = sole
        if sole is None and len(graphs) > 1:
            self._need_call_flat_hook()

    # -------------------------------------------------------------------- bookkeeping
    def stack(self) -> list[_Frame]:
        try:
            return self.tls.stack  # type: ignore[no-any-return]
        except AttributeError:
            self.tls.stack = []
            return self.tls.stack  # type: ignore[no-any-return]

    def state_for(self, fn: Any) -> FunctionState:
        state = self.states.get(id(fn))
        if state is not None and state.ref() is fn:
            return state
        with self.lock:
            return self._register(fn)

    def _register(self, fn: Any) -> FunctionState:
        info = tfa.describe_function(fn)
        object_no = self.objects_seen.get((info.qualname, info.filename), 0)
        self.objects_seen[(info.qualname, info.filename)] = object_no + 1
        fn_id = id(fn)
        state = FunctionState(info, None, object_no)
        state_ref = weakref.ref(state)

        def collected(_: Any, fn_id: int = fn_id) -> None:
            live = state_ref()
            if live is not None:
                live.collected = True
            if self.states.get(fn_id) is live:
                self.states.pop(fn_id, None)

        state.ref = weakref.ref(fn, collected)
        self.states[fn_id] = state
        cache = getattr(fn, "_function_cache", None)
        if cache is not None:
            self.cache_owner[id(cache)] = state
            for cf, scope in tfa.cached_functions(fn):
                graph = GraphState(state, tfa.signature_of(cf.function_type), "before", scope or "", False)
                graph.scope_known = scope is not None
                self._add_graph(state, graph, cf)
        self.settle(state)
        return state

    def _add_graph(self, state: FunctionState, graph: GraphState, cf: Any) -> None:
        cf_id = id(cf)
        graphs = state.graphs

        def forget(_: Any) -> None:
            if graphs.get(cf_id) is graph:
                graphs.pop(cf_id, None)
            if state.sole is graph:
                state.sole = None  # its hits are no longer certain (rare: caches keep graphs)

        try:
            graph.cf_ref = weakref.ref(cf, forget)  # ids of dead graphs must not match new ones
        except TypeError:
            graph.cf_ref = None
        graph.log_pos = self.calllog.position()
        state.graphs[cf_id] = graph
        state.graph_list.append(graph)

    # ------------------------------------------------------------------- TF callbacks
    def on_concrete_function(self, cf: Any) -> None:
        """CONCRETE_FUNCTION_CALLBACKS entry: one new graph, on the thread that traced it."""
        try:
            self._on_concrete_function(cf)
        except Exception:
            logging.getLogger(__name__).debug("tfgraph_lab: trace not recorded", exc_info=True)

    def _on_concrete_function(self, cf: Any) -> None:
        options = tfa.find_tracing_options()
        cache = getattr(options, "function_cache", None)
        if options is None or cache is None:
            return  # a helper trace TF keeps in no cache (fn_with_cond, initialize_variables)
        frame = None
        for candidate in reversed(self.stack()):
            if self.cache_owner.get(id(cache)) is candidate[_STATE]:
                frame = candidate
                break
        state = frame[_STATE] if frame is not None else self.cache_owner.get(id(cache))
        if state is None:
            with self.lock:
                state = self._register_orphan(options)
        # ScopeType.VARIABLE_CREATION (first call may create variables) vs NO_VARIABLE_CREATION
        scope = tfa.scope_name(options.scope_type)
        context = tfa.current_context(options.scope_type)
        via = self.via(state, frame[_VIA] if frame is not None else "trace")
        graph = GraphState(state, tfa.signature_of(cf.function_type, context), via, scope, True)
        state.traced = True
        self._add_graph(state, graph, cf)
        self.settle(state)
        if frame is not None:
            if frame[_TRACES] is _NO_TRACES:
                frame[_TRACES] = []
            frame[_TRACES].append(graph)
            frame[_SERVED] = None
        else:
            record = CallRecord(state, via, 0.0)
            record.traces.append(graph)
            record.caller = tfa.caller_location()
            record.reasons = self.explain(state, graph, None)
            self._count(record)
            self.log.append(record)

    def _mark_wasted(
        self, graph: GraphState, earlier: list[GraphState], reasons: list[Reason]
    ) -> list[Reason]:
        """A retrace for a new Python value whose graph equals a cached one but for constants
        (``num_steps=10`` then ``20`` with ``tf.range``) is waste: say so."""
        cf = graph.cf_ref() if graph.cf_ref is not None else None
        if cf is None:
            return reasons
        mine = tfa.graph_fingerprint(cf)
        if mine is None:
            return reasons
        for other in reversed(earlier):
            other_cf = other.cf_ref() if other.cf_ref is not None else None
            if other_cf is not None and tfa.graph_fingerprint(other_cf) == mine:
                graph.wasted_of = other.seq
                return mark_wasted(reasons, other.seq)
        return reasons

    def via(self, state: FunctionState, frame_via: str) -> str:
        """How a graph came about: a call, get_concrete_function, tf.data, a SavedModel save."""
        if state.info.via_hint == "tf.data":
            return "tf.data"
        if frame_via != "call" and tfa.in_save_context():
            return "saved_model"
        return frame_via

    def _register_orphan(self, options: Any) -> FunctionState:
        info = tfa.describe_function(None, options)
        object_no = self.objects_seen.get((info.qualname, info.filename), 0)
        self.objects_seen[(info.qualname, info.filename)] = object_no + 1
        state = FunctionState(info, lambda: None, object_no)
        self.cache_owner[id(options.function_cache)] = state
        return state

    # ------------------------------------------------------------------------ calls
    def finish(
        self,
        frame: _Frame,
        seconds: float,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        exc: BaseException | None,
    ) -> None:
        """The slow path: a call that traced, raised, or ran no graph."""
        state: FunctionState = frame[_STATE]
        traces: list[GraphState] = frame[_TRACES]
        served: int | None = frame[_SERVED]
        record = CallRecord(state, self.via(state, frame[_VIA]), seconds)
        record.traces = list(traces)
        if served is not None:
            record.graph = state.graphs.get(served)
        elif traces and exc is None and frame[_VIA] == "call":
            record.graph = traces[-1]  # the call ran the graph it traced last
        if exc is not None:
            record.error = tfa.error_text(exc)
            assert self.handles is not None
            record.failed_trace = (
                served is None and not self.handles.run_functions_eagerly() and tfa.trace_failed(exc)
            )
        elif not traces and served is None:
            assert self.handles is not None
            record.eager = self.handles.run_functions_eagerly()
        if traces or record.failed_trace:
            record.caller = tfa.caller_location()
            thread = threading.current_thread()
            if thread is not threading.main_thread():
                record.thread = thread.name
            call_sig = None
            if traces and state.info.reduce_retracing:
                call_sig = tfa.call_signature(fn, args, kwargs)
            reasons: list[Reason] = []
            for graph in traces:
                reasons.extend(self.explain(state, graph, call_sig))
                if call_sig is not None and call_sig.leaves != graph.signature.leaves:
                    graph.generalised = True
                if not state.info.framework:
                    graph.captures = tfa.scalar_captures(fn)
            if record.failed_trace and record.error:
                reasons.extend(explain_failure(record.error, state.info.qualname))
            record.reasons = tuple(reasons)
        self._count(record)
        self.log.append(record)

    def explain(
        self, state: FunctionState, graph: GraphState, call_sig: Signature | None
    ) -> tuple[Reason, ...]:
        earlier = [g for g in state.graph_list if g is not graph and g.seq < graph.seq]
        code_key = HISTORY.code_key(state.info)
        is_first_of_object = not earlier
        objects_before = HISTORY.objects_per_code.get(code_key, 0)
        if is_first_of_object:
            HISTORY.objects_per_code[code_key] = objects_before + 1
        other_objects = HISTORY.last_graphs.get(code_key, [])
        reasons = explain_trace(
            new=graph.signature,
            call=call_sig,
            cached=[g.signature for g in earlier],
            cached_scopes=[g.scope for g in earlier],
            scope=graph.scope,
            other_objects=other_objects if objects_before else [],
            reduce_retracing=state.info.reduce_retracing,
            qualname=state.info.qualname,
            kind=state.info.kind,
        )
        HISTORY.last_graphs[code_key] = ([*other_objects, graph.signature])[-8:]
        graph.retrace = bool(reasons) and reasons[0].code not in NOT_RETRACES
        if any(r.code == "python-value-changed" for r in reasons):
            reasons = self._mark_wasted(graph, earlier, reasons)
        return tuple(reasons)


HUB = _Hub()


def _make_call_hook(hub: _Hub, original: Callable[..., Any]) -> Callable[..., Any]:
    # The hot path: every watched call runs this. Kept to the fewest memory touches (locals
    # bound here, a list as the frame, no _call_flat frame for unambiguous functions), and it
    # takes the place of TF's traceback-filtering wrapper instead of adding a frame on top
    # (same filtering of exceptions; see tfa.unwrap_traceback_filter).
    call, tb_filter = tfa.unwrap_traceback_filter(original)
    perf = _perf
    calllog = hub.calllog
    log_append = calllog.append
    entries = calllog.entries
    tls = hub.tls
    states_get = hub.states.get
    assert hub.handles is not None
    eager_flags = hub.handles.eager_flag_module  # RUN_FUNCTIONS_EAGERLY lives here

    def __call__(fn: Any, *args: Any, **kwds: Any) -> Any:
        __tracebackhide__ = True  # pytest and IPython skip this frame in tracebacks
        try:
            stack = tls.stack
        except AttributeError:
            stack = hub.stack()
        state = states_get(id(fn))
        if state is None or state.ref() is not fn:
            state = hub.state_for(fn)
        frame: _Frame = [state, "call", None, _NO_TRACES]
        stack.append(frame)
        t0 = perf()
        try:
            result = call(fn, *args, **kwds)
        except BaseException as exc:
            seconds = perf() - t0
            stack.pop()
            hub.finish(frame, seconds, fn, args, kwds, exc)
            if tb_filter is not None and isinstance(exc, Exception) and tb_filter.enabled():
                # below this frame, as TF's wrapper filters below its own
                below = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
                raise exc.with_traceback(tb_filter.process(below)) from None
            raise
        seconds = perf() - t0
        stack.pop()
        if frame[_TRACES] is _NO_TRACES:
            served = frame[_SERVED]
            if served is not None:
                graph = state.graphs.get(served)
            else:
                graph = state.sole  # the one graph a hit can run (None: unknown, or eager)
                if graph is None or eager_flags.RUN_FUNCTIONS_EAGERLY:
                    hub.finish(frame, seconds, fn, args, kwds, None)
                    return result
            log_append((state, seconds, graph))
            if len(entries) >= calllog.fold_at:
                hub.fold()
        else:
            hub.finish(frame, seconds, fn, args, kwds, None)
        return result

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    __call__._tfgraph_lab_hook = True  # type: ignore[attr-defined]
    return __call__


def _make_count_only_hook(hub: _Hub, original: Callable[..., Any]) -> Callable[..., Any]:
    """Degraded mode for a TensorFlow whose internals moved: traces are the public
    ``experimental_get_tracing_count()`` delta of each call (exact for single-threaded code;
    concurrent callers of one function may see each other's traces). No reasons, no hits."""

    def __call__(fn: Any, *args: Any, **kwds: Any) -> Any:
        state = hub.state_for(fn)
        try:
            before = fn.experimental_get_tracing_count()
        except Exception:
            before = None
        t0 = _perf()
        error: BaseException | None = None
        try:
            return original(fn, *args, **kwds)
        except BaseException as exc:
            error = exc
            raise
        finally:
            seconds = _perf() - t0
            record = CallRecord(state, "call", seconds)
            if error is not None:
                record.error = tfa.error_text(error)
            if before is not None:
                added = max(0, fn.experimental_get_tracing_count() - before)
                for _ in range(added):
                    graph = GraphState(state, Signature((), "(unknown: count-only mode)"), "call", "", True)
                    graph.log_pos = hub.calllog.position()
                    state.graph_list.append(graph)
                    record.traces.append(graph)
                if added:
                    record.reasons = (
                        Reason(
                            "unexplained",
                            message="count-only mode: this TensorFlow release is not fully "
                            "supported, so tfgraph_lab can count traces but not explain them",
                        ),
                    )
            hub._count(record)
            hub.log.append(record)

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    __call__._tfgraph_lab_hook = True  # type: ignore[attr-defined]
    return __call__


def _make_gcf_hook(hub: _Hub, original: Callable[..., Any]) -> Callable[..., Any]:
    def _get_concrete_function_garbage_collected(fn: Any, *args: Any, **kwargs: Any) -> Any:
        stack = hub.stack()
        frame: _Frame = [hub.state_for(fn), "get_concrete_function", None, _NO_TRACES]
        stack.append(frame)
        t0 = _perf()
        try:
            return original(fn, *args, **kwargs)
        except BaseException as exc:
            stack.pop()
            if tfa.trace_failed(exc):
                frame[_SERVED] = None
                hub.finish(frame, _perf() - t0, fn, args, kwargs, exc)
            raise
        finally:
            if stack and stack[-1] is frame:
                stack.pop()
                if frame[_TRACES]:
                    frame[_SERVED] = id(frame)  # no graph ran: not an eager call either
                    hub.finish(frame, _perf() - t0, fn, args, kwargs, None)

    _get_concrete_function_garbage_collected.__wrapped__ = original  # type: ignore[attr-defined]
    _get_concrete_function_garbage_collected._tfgraph_lab_hook = True  # type: ignore[attr-defined]
    return _get_concrete_function_garbage_collected


def _make_call_flat_hook(hub: _Hub, original: Callable[..., Any]) -> Callable[..., Any]:
    tls = hub.tls

    def _call_flat(cf: Any, *args: Any, **kwargs: Any) -> Any:
        stack = getattr(tls, "stack", None)
        if stack:
            top = stack[-1]
            if top[_SERVED] is None:
                top[_SERVED] = id(cf)
        return original(cf, *args, **kwargs)

    _call_flat.__wrapped__ = original  # type: ignore[attr-defined]
    _call_flat._tfgraph_lab_hook = True  # type: ignore[attr-defined]
    return _call_flat
