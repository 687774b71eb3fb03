"""The hub: installs the hooks in TensorFlow while any watch is active and keeps the shared log.

One process-wide hub installs the hooks when the first watch attaches and removes them when the
last one detaches (watches nest; each sees its own slice of one shared log through the
:class:`~tfgraph_lab.recording.calllog.WatchLog` that :meth:`Hub.attach` returns). The hooks (made in :mod:`tfgraph_lab.recording.hooks`):

* ``Function.__call__`` and ``Function._get_concrete_function_garbage_collected`` at class level:
  a thread-local stack of frames says which function object is being called on each thread.
  The ``__call__`` hook replaces TF's traceback-filtering wrapper and filters exceptions as it
  does, so it adds no Python frame to a call;
* ``ConcreteFunction._call_flat``: which graph ran (hit counts), installed only once a watched
  function holds two graphs that could serve a cached call: until then a hit can only have run
  the one, and the hot path is spared a frame per call (``benchmarks/overhead.py``);
* a ``CONCRETE_FUNCTION_CALLBACKS`` entry (:meth:`Hub.on_concrete_function`): exactly one event
  per new graph, on the tracing thread, attributed through the cache the graph goes into (never
  by count deltas, which are wrong under threads and overlap under recursion);
* a logging filter: TF's retracing warnings into the report, quiet while explained;
* a ``gc.callbacks`` entry (:mod:`tfgraph_lab.recording.gc_clock`): the garbage collections
  that run inside the watch's own work are kept out of "the watch itself".

The hub keeps the registry of function objects (:class:`~tfgraph_lab.recording.calllog.FunctionState`,
held weakly; Keras's steps named for the user, :mod:`tfgraph_lab.adapter.keras_steps`), records the slow
path (:meth:`Hub.record_slow_call`: a call that traced, raised or ran no graph) and keeps what
outlives a watch: ``HUB`` is the one recording state, reset by :meth:`Hub.reset`; the hooks know
it as a :class:`~tfgraph_lab.recording.host.Host`. No strong reference to a user argument, a ``Function``
or a graph. TF only via the adapter; no IPython.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from .. import adapter as tfa
from ..adapter.keras_steps import keras_name
from ..explain.failures import error_text
from ..model.places import caller_at, caller_location, cell_label
from ..model.vocab import Scope, Via
from . import hooks as _hooks
from .calllog import CallLog, CallRecord, FunctionState, GraphState, ThreadStack, WatchLog
from .gc_clock import GcClock, gc_clock_installed
from .history import History, explain_notes, keep_fingerprints, note_new_graph
from .hooks import make_call_flat_hook, make_call_hook, make_count_only_hook, make_gcf_hook
from .host import NO_TRACES, Frame
from .tf_warnings import RetraceWarningHandler, handler_installed, install_handler, remove_handler
from .xla import XlaMemory, XlaModel, XlaOutcome

_perf = time.perf_counter

__all__ = ["HUB", "Hub", "hooks_installed"]


def hooks_installed() -> bool:
    """True while any tfgraph_lab hook is installed in TensorFlow (or our warning handler, or
    the GC clock in ``gc.callbacks``)."""
    h = tfa.loaded_handles()
    if h is None:
        return False
    hooked = [h.function_class.__dict__.get("__call__")]
    hooked.append(h.function_class.__dict__.get("_get_concrete_function_garbage_collected"))
    if h.concrete_function_class is not None:
        hooked.append(h.concrete_function_class.__dict__.get("_call_flat"))
    if any(getattr(x, "_tfgraph_lab_hook", False) for x in hooked):
        return True
    if h.callbacks is not None and any(getattr(cb, "__self__", None) is HUB for cb in h.callbacks):
        return True
    return handler_installed() or gc_clock_installed()


class Hub:
    """The recording state: the hooks and the shared log while watches attach; what outlives them."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.tls = threading.local()
        self.watches: list[WatchLog] = []
        self.calllog = CallLog()
        self.warnings: list[str] = []
        # Notebook cells named when recorded ({filename: "In [3]"}): renderers, and a report read
        # back in another process, read these, never a running IPython. Kept for the process.
        self.labels: dict[str, str] = {}
        self.states: dict[int, FunctionState] = {}
        self.cache_owner: dict[int, FunctionState] = {}
        self.objects_seen: dict[tuple[str, str], int] = {}
        self.originals: dict[str, Any] = {}
        self.handles: tfa.TFHandles | None = None
        self.log_handler: RetraceWarningHandler | None = None
        self.history = History()  # which code earlier function objects traced
        self.xla_memory: dict[str, XlaMemory] = {}  # XLA cache keys seen, per graph
        self.xla = XlaModel(None, self.xla_memory)
        # Called with each record that retraced, on the trace path only (never on a hit).
        self.retrace_sink: Callable[[CallRecord, Mapping[str, str]], None] | None = None
        self.waiting: list[ThreadStack] = []  # threads holding retraces for the live log
        self.gc = GcClock()  # collections, kept out of the watch's own spans (installed with the hooks)

    def add_record(self, record: CallRecord, in_trace: bool = False) -> None:
        """Append a slow-path record to the log; a retrace goes to the live log as well.

        A graph TF built around a function (tf.data wrapper, replica clone) is no retrace of it
        (see :mod:`tfgraph_lab.model.counts`). Counting is the readers' (``_aggregate``).
        The live log reads the record's reasons, so builds them: it gets the record only when no
        call is in progress on this thread and no trace (``in_trace``: made by the trace
        callback), else once the outermost call returns (:meth:`flush_lines`) or the watch stops."""
        self.label(record.caller)
        sink = self.retrace_sink
        if sink is not None and not record.state.info.wraps and any(g.retrace for g in record.traces):
            stack = self.stack()
            if stack or in_trace:
                if not stack.lines:
                    with self.lock:
                        self.waiting.append(stack)
                stack.lines.append(record)
            else:
                if stack.lines:
                    self.flush_lines(stack)  # the nested calls' lines first, in their order
                sink(record, self.labels)  # the live log (set by the recorder)
        self.calllog.append(record)

    def flush_lines(self, stack: ThreadStack | None = None) -> None:
        """Hand the live log the retraces recorded inside a span: ``stack``'s (its thread's
        outermost call returned), or every thread's (a watch stops)."""
        with self.lock:
            stacks = [stack] if stack is not None else list(self.waiting)
            for s in stacks:
                if s in self.waiting:
                    self.waiting.remove(s)
        sink = self.retrace_sink
        for s in stacks:
            records, s.lines = s.lines, []
            if sink is not None:
                for record in records:
                    sink(record, self.labels)

    def label(self, place: str | None) -> None:
        """Name the notebook cell of ``place`` as IPython numbers it now (slow path only)."""
        cell = cell_label(place)
        if cell is not None:
            self.labels[cell[0]] = cell[1]

    def reset(self) -> None:
        """Forget what outlives a watch (``recorder.reset_recording``); between watches only."""
        with self.lock:
            if self.watches:
                raise RuntimeError("reset_recording() while a watch is active; call it between watches")
            self.history.reset()
            self.xla_memory.clear()
            self.labels.clear()

    def attach(self) -> WatchLog:
        """Start a watch: install the hooks if none is active; returns the watch's log view."""
        with self.lock:
            if not self.watches:
                self._install()
            assert self.handles is not None
            watch = WatchLog(self.calllog, self.warnings, self.handles)
            self.watches.append(watch)
            return watch

    def detach(self, watch: WatchLog) -> None:
        self.flush_lines()
        with self.lock:
            if watch in self.watches:
                self.watches.remove(watch)
            if not self.watches:
                self._uninstall()

    def summarise_log(self) -> None:
        """Keep the log bounded (called from the hot path when it has grown): 31-52 ms per
        50 000 calls summarised (TF 2.21, a slow day), the watch's own work (:meth:`own_work`;
        a function's cache hits inside another's trace can reach it)."""
        began, gc_began = _perf(), self.gc.seconds
        with self.lock:
            newest = self.watches[-1].start if self.watches else len(self.calllog.entries)
        self.calllog.summarise_hits(newest)
        self.own_work(began, gc_began)

    def own_since(self, began: float, gc_began: float) -> float:
        """The watch's own seconds in a span it began at ``began`` (``_perf()``), when the GC
        clock read ``gc_began``: the span, less the garbage collections that ran in it."""
        return _perf() - began - (self.gc.seconds - gc_began)

    def own_work(self, began: float, gc_began: float) -> None:
        """The watch's work since ``began`` that belongs to no record: in "the watch itself" of
        every watch running (``CallLog.own_seconds``), in no cost of the calls in progress."""
        spent = self.own_since(began, gc_began)
        self.calllog.add_own(spent)
        charge(self.stack(), spent)

    def _install(self) -> None:
        h = tfa.handles()
        self.handles = h
        self.calllog = CallLog()
        self.warnings = []
        self.states = {}
        self.cache_owner = {}
        self.objects_seen = {}
        self.xla = XlaModel(tfa.xla_key_reader() if h.full else None, self.xla_memory)
        fn_cls = h.function_class
        self.originals = {"__call__": fn_cls.__dict__["__call__"]}
        try:
            self.gc.install()
            make_hook = make_call_hook if h.full else make_count_only_hook
            setattr(fn_cls, "__call__", make_hook(self, self.originals["__call__"]))  # noqa: B010
            if h.full:
                gcf = fn_cls.__dict__["_get_concrete_function_garbage_collected"]
                self.originals["_get_concrete_function_garbage_collected"] = gcf
                setattr(fn_cls, "_get_concrete_function_garbage_collected", make_gcf_hook(self, gcf))  # noqa: B010
                assert h.callbacks is not None
                h.callbacks.append(self.on_concrete_function)
            self.log_handler = install_handler(self.warnings)
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
            remove_handler(self.log_handler)
            self.log_handler = None
        self.gc.remove()
        self.originals = {}
        self.states = {}
        self.cache_owner = {}

    def need_call_flat_hook(self) -> None:
        """Install the ``_call_flat`` hook (once per hub install): a function now has two
        graphs that could serve a cached call, so only the graph that ran can say which."""
        with self.lock:
            h = self.handles
            if "_call_flat" in self.originals or h is None or not h.full or not self.watches:
                return
            cf_cls = h.concrete_function_class
            assert cf_cls is not None
            original = cf_cls.__dict__["_call_flat"]
            self.originals["_call_flat"] = original
            setattr(cf_cls, "_call_flat", make_call_flat_hook(self, original))  # noqa: B010

    def pin_hit_graph(self, state: FunctionState) -> None:
        """Decide which graph a cache hit of ``state`` runs, now that its graphs changed.

        Certain when the cache holds one graph, or one in the scope cached calls look up (see
        :func:`tfgraph_lab.adapter.created_variables`); otherwise install the hook that
        reports the graph that ran. Runs from the trace callback, which TensorFlow calls before
        it puts the new graph in the cache, so no other thread can hit the graph before this.
        """
        graphs = state.graphs
        hit_graph = None
        if len(graphs) == 1:
            hit_graph = next(iter(graphs.values()))
        elif graphs and None not in state.scope_counts:
            # O(1) from the counts in a loop that retraces (two graphs or more in the scope
            # cached calls look up); the one graph of that scope is looked for only when it is one
            fn = state.ref()
            if fn is not None:
                wanted = Scope.NONE if tfa.created_variables(fn) else tfa.VARIABLE_CREATION
                if state.scope_counts.get(wanted) == 1:
                    hit_graph = next(g for g in graphs.values() if g.scope == wanted)
        state.hit_graph = hit_graph
        if hit_graph is None and len(graphs) > 1 and "_call_flat" not in self.originals:
            self.need_call_flat_hook()

    def stack(self) -> ThreadStack:
        try:
            return self.tls.stack  # type: ignore[no-any-return]
        except AttributeError:
            self.tls.stack = ThreadStack()
            return self.tls.stack  # type: ignore[no-any-return]

    def state_for(self, fn: Any) -> FunctionState:
        state = self.states.get(id(fn))
        if state is not None and state.ref() is fn:
            return state
        began, gc_began = _perf(), self.gc.seconds
        with self.lock:
            state = self._register(fn)
        spent = self.own_since(began, gc_began)
        state.registered_at, state.register_seconds = began, spent
        charge(self.stack(), spent)  # inside the span of any call in progress: not TF's time
        return state

    def _register(self, fn: Any) -> FunctionState:
        info = tfa.describe_function(fn)
        self.label(info.filename)
        object_no = self.objects_seen.get(info.key, 0)
        self.objects_seen[info.key] = object_no + 1
        fn_id = id(fn)
        state = FunctionState(info, None, object_no)
        named = keras_name(fn) if info.framework else None
        if named is not None:  # Keras's train/test/predict step: the user's row, in every watch
            state.rename(*named)
        state_ref = weakref.ref(state)

        def collected(_: Any, fn_id: int = fn_id) -> None:
            live = state_ref()
            if live is not None:
                live.collected = True
                try:
                    began, gc_began = _perf(), self.gc.seconds
                    keep_fingerprints(live)  # its graphs are still readable now, not later
                    self.own_work(began, gc_began)  # about 1 ms for 40 graphs (TF 2.21)
                except Exception:  # a weak reference's callback must never raise
                    pass
            if self.states.get(fn_id) is live:
                self.states.pop(fn_id, None)

        state.ref = weakref.ref(fn, collected)
        self.states[fn_id] = state
        cache = tfa.cache_id(fn)
        if cache is not None:
            self.cache_owner[cache] = state
            for cf, scope in tfa.cached_functions(fn):
                graph = GraphState(state, tfa.graph_signature(cf), Via.BEFORE, scope or Scope.NONE, False)
                graph.scope_known = scope is not None
                self._add_graph(state, graph, cf)
        self.pin_hit_graph(state)
        return state

    def _add_graph(self, state: FunctionState, graph: GraphState, cf: Any) -> None:
        cf_id = id(cf)
        graphs = state.graphs
        counts = state.scope_counts
        scope = graph.scope if graph.scope_known else None
        # bound here: a concrete function freed at interpreter exit, after this module's globals
        # were cleared, calls ``forget`` with ``_uncount`` gone ("Exception ignored in: forget …
        # 'NoneType' object is not callable", seen once at a pytest worker's exit, Python 3.11)
        uncount = _uncount

        def forget(_: Any) -> None:
            if graphs.get(cf_id) is graph:
                graphs.pop(cf_id, None)
                uncount(counts, scope)
            if state.hit_graph is graph:
                state.hit_graph = None  # its hits are no longer certain (rare: caches keep graphs)

        try:
            graph.cf_ref = weakref.ref(cf, forget)  # ids of dead graphs must not match new ones
        except TypeError:
            graph.cf_ref = None
        graph.log_pos = self.calllog.position()
        replaced = graphs.get(cf_id)
        if replaced is not None:  # the same concrete function again: counted once
            _uncount(counts, replaced.scope if replaced.scope_known else None)
        graphs[cf_id] = graph
        counts[scope] = counts.get(scope, 0) + 1
        state.graph_list.append(graph)

    def on_concrete_function(self, cf: Any) -> None:
        """CONCRETE_FUNCTION_CALLBACKS entry: one new graph, on the thread that traced it. Runs
        inside the traced call's span: its time is the watch's, not TensorFlow's (charged)."""
        began, gc_began = _perf(), self.gc.seconds
        graph = None
        try:
            graph = self._on_concrete_function(cf)
        except Exception:
            logging.getLogger(__name__).debug("tfgraph_lab: trace not recorded", exc_info=True)
        finally:
            spent = self.own_since(began, gc_began)
            if graph is not None:
                graph.tool_seconds = spent
            charge(self.stack(), spent)

    def _on_concrete_function(self, cf: Any) -> GraphState | None:
        trace = tfa.trace_in_progress()
        if trace is None:
            return None  # a helper trace TF keeps in no cache (fn_with_cond, initialize_variables)
        owner = self.cache_owner.get(trace.cache_id)
        frame = None
        for candidate in reversed(self.stack()):
            if owner is candidate.state:
                frame = candidate
                break
        if frame is None:  # a call begun before the watch
            begun = tfa.call_begun_unhooked(trace.cache_id, self.handles.function_class if self.handles else None)
        else:
            begun = None
        state = frame.state if frame is not None else (owner if begun is None else self.state_for(begun))
        if state is None:
            with self.lock:
                state = self._register_orphan(trace)
        via = self.trace_origin(state, frame.via if frame is not None else Via.TRACE)
        graph = GraphState(state, tfa.graph_signature(cf, trace), via, trace.scope, True)
        state.traced = True
        if frame is not None:
            graph.xla_sites = self.xla.take(frame)  # XLA functions its trace called
        self._add_graph(state, graph, cf)
        self.pin_hit_graph(state)
        if frame is not None:
            if frame.traces is NO_TRACES:
                frame.traces = []
            frame.traces.append(graph)
            frame.served = None
        else:
            record = CallRecord(state, via, 0.0, time.perf_counter())
            record.began_before_watch = begun is not None
            record.thread = self.stack().thread
            record.inside = tuple(f.state for f in self.stack())
            record.traces.append(graph)
            record.caller = tfa.user_place(caller_location())
            record.explain = partial(explain_notes, (note_new_graph(self.history, state, graph, None),))
            self.add_record(record, in_trace=True)
        return graph

    def trace_origin(self, state: FunctionState, frame_via: Via) -> Via:
        """How a graph came about: a call, get_concrete_function, tf.data, a SavedModel save."""
        if state.info.via_hint == Via.TF_DATA:
            return Via.TF_DATA
        if frame_via != Via.CALL and tfa.in_save_context():
            return Via.SAVED_MODEL
        return frame_via

    def _register_orphan(self, trace: tfa.TraceInProgress) -> FunctionState:
        """A graph whose tf.function no watched call or get_concrete_function touched
        (tf.data, SavedModel): described from the trace's options, held by nothing."""
        info = tfa.describe_function(None, trace.options)
        self.label(info.filename)
        object_no = self.objects_seen.get(info.key, 0)
        self.objects_seen[info.key] = object_no + 1
        state = FunctionState(info, lambda: None, object_no)
        self.cache_owner[trace.cache_id] = state
        return state

    def record_slow_call(
        self,
        frame: Frame,
        seconds: float,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        exc: BaseException | None,
        xla: XlaOutcome | None = None,
        graph: GraphState | None = None,
    ) -> None:
        """The slow path: a call that traced, raised, ran no graph, or compiled with XLA.

        ``seconds`` is the call's span; the watch's own work inside it (the trace callbacks, the
        records of the calls the trace made) is taken out, so the record's ``seconds`` is
        TensorFlow's time. This method's own time is the record's ``tool_seconds``, charged to
        the calls still in progress around it (their spans hold it)."""
        began, gc_began = _perf(), self.gc.seconds
        # When the call began, to within the microsecond since the hook read the clock.
        start = began - seconds
        stack = self.stack()
        inside = stack.spent.pop(frame, 0.0)
        state = frame.state
        record = CallRecord(state, self.trace_origin(state, frame.via), max(0.0, seconds - inside), start)
        record.inside = tuple(f.state for f in stack)  # the frame is off the stack: its callers
        try:
            self._fill_slow_record(record, frame, fn, args, kwargs, exc, xla, graph)
        finally:
            if not stack and stack.lines:
                self.flush_lines(stack)  # the outermost call returned: its retraces' lines
            own = self.own_since(began, gc_began)
            record.tool_seconds = own
            charge(stack, own)
            if not stack:
                stack.spent.clear()  # no call in progress on this thread: nothing left to charge

    def _fill_slow_record(
        self,
        record: CallRecord,
        frame: Frame,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        exc: BaseException | None,
        xla: XlaOutcome | None,
        graph: GraphState | None,
    ) -> None:
        state, traces, served = frame.state, frame.traces, frame.served
        record.thread = self.stack().thread
        record.traces = list(traces)
        record.xla = xla
        if exc is not None:
            self.xla.pending.pop(id(frame), None)
        if served is not None:
            record.graph = state.graphs.get(served)
        elif graph is not None:
            record.graph = graph  # the one graph a hit can run (XLA path)
        elif traces and exc is None and frame.via == Via.CALL:
            record.graph = traces[-1]  # the call ran the graph it traced last
        if exc is not None:
            record.error = error_text(exc)
            assert self.handles is not None
            record.failed_trace = (
                served is None and not self.handles.run_functions_eagerly() and tfa.trace_failed(exc)
            )
        elif not traces and served is None:
            assert self.handles is not None
            record.eager = self.handles.run_functions_eagerly()
        if traces and state in record.inside:  # recursion: read when the reasons are built
            state.self_nested.extend(g.seq for g in traces)
        if traces or record.failed_trace:
            place, code, lasti = caller_at(_HOOK_FILES)
            record.caller = tfa.user_place(place)
            if code is not None and record.caller == place:  # the user's own call of the function
                record.call_code, record.call_lasti = code, lasti
            call_sig = None
            if traces and state.info.reduce_retracing:
                call_sig = tfa.call_signature(fn, args, kwargs)
            notes = []
            for graph in traces:
                # what explaining needs that cannot be read later; the reasons are built when
                # read (the live line, the report), not here
                notes.append(note_new_graph(self.history, state, graph, call_sig))
                if call_sig is not None and call_sig.leaves != graph.signature.leaves:
                    graph.generalised = True
                # a framework function (Keras's train step) reads the user's step method's
                # attributes only: see tfa.scalar_captures
                graph.captures = tfa.scalar_captures(fn, framework=state.info.framework)
            failure = (record.error, state.info.label) if record.failed_trace and record.error else None
            record.explain = partial(explain_notes, tuple(notes), failure)
        self.add_record(record)


# The files of the hooks a user's call enters first: a caller whose frame called into them
# called the tf.function itself (model.places.caller_at).
_HOOK_FILES = frozenset({_hooks.__file__})


def _uncount(counts: dict[Scope | None, int], scope: Scope | None) -> None:
    """One graph of ``scope`` fewer in a function's ``scope_counts`` (no zero counts kept)."""
    counts[scope] -= 1
    if not counts[scope]:
        del counts[scope]


def charge(stack: ThreadStack, seconds: float) -> None:
    """The watch's own work of ``seconds`` happened inside every call in progress on this
    thread (an outer function's trace holds a nested function's records): not TensorFlow's."""
    if seconds <= 0.0:
        return
    spent = stack.spent
    for frame in stack:
        spent[frame] = spent.get(frame, 0.0) + seconds


HUB = Hub()
