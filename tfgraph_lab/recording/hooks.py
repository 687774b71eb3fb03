"""The hook factories: the functions the hub puts in place of TensorFlow's methods.

* :func:`make_call_hook` replaces ``Function.__call__`` — the hot path, run by every watched call;
* :func:`make_count_only_hook` replaces it instead when this TensorFlow's internals moved
  (count-only mode);
* :func:`make_gcf_hook` wraps ``Function._get_concrete_function_garbage_collected``
  (``get_concrete_function``);
* :func:`make_call_flat_hook` wraps ``ConcreteFunction._call_flat``: which graph ran.

Each pushes a :class:`~tfgraph_lab.recording.host.Frame` on the hub's per-thread stack, appends a
:class:`~tfgraph_lab.recording.calllog.Hit` to the shared log on the hot path, and hands every other call
to the hub's ``record_slow_call``. The hub is a :class:`~tfgraph_lab.recording.host.Host` here: this
module does not import it. Every hook is marked ``_tfgraph_lab_hook`` and keeps the original as
``__wrapped__``.

Hot-path rule: no attribute lookup or Python frame may be added to :func:`make_call_hook`'s
``__call__`` or :func:`make_call_flat_hook`'s ``_call_flat`` (``benchmarks/overhead.py``
measures both). Imports TensorFlow only through :mod:`tfgraph_lab.adapter`; never IPython.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .. import adapter as tfa
from ..explain.failures import error_text
from ..model.records import Reason
from ..model.signatures import Signature
from ..model.vocab import ReasonCode, Scope, Via
from .calllog import CallRecord, GraphState, new_hit
from .host import NO_TRACES, Frame, Host

__all__ = ["make_call_flat_hook", "make_call_hook", "make_count_only_hook", "make_gcf_hook"]

_perf = time.perf_counter

# A cached call of a jit_compile function that returned within this time did not compile: its
# XLA cache key (0.86-1.9 µs to read in benchmarks/overhead.py, up to 1.6% of a 123 µs call) is
# read only for slower calls. The fastest XLA compilation seen was 3.1 ms (an identity function
# on a loaded 2-core machine, TF 2.21, CPU), a tiny matmul stack 25-60 ms: a compile 12x faster
# than that is not in sight. Above the floor the key read costs at most 0.8% of the call.
NO_COMPILE_SECONDS = 250e-6


def _no_xla_key(args: tuple[Any, ...], kwds: dict[str, Any]) -> None:
    return None


def make_call_hook(hub: Host, original: Callable[..., Any]) -> Callable[..., Any]:
    # The hot path: every watched call runs this. Kept to the fewest memory touches (locals
    # bound here, a slotted Frame, no _call_flat frame for unambiguous functions), and it
    # takes the place of TF's traceback-filtering wrapper instead of adding a frame on top
    # (same filtering of exceptions; see tfa.unwrap_traceback_filter).
    call, tb_filter = tfa.unwrap_traceback_filter(original)
    perf = _perf
    calllog = hub.calllog
    log_append = calllog.append
    entries = calllog.entries
    tls = hub.tls
    states_get = hub.states.get
    new_frame, via_call = Frame, Via.CALL  # an enum member read per call costs ~90 ns (Python 3.11)
    assert hub.handles is not None
    eager_flags = hub.handles.eager_flag_module  # RUN_FUNCTIONS_EAGERLY lives here
    xla_call = hub.xla.call  # the hub makes its XLA path before it makes this hook (one per install)
    # None when this TensorFlow's names moved: XLA is not counted, no graph gets an XlaMemory
    xla_key: Callable[..., Any] = hub.xla.key if hub.xla.key is not None else _no_xla_key
    no_compile = NO_COMPILE_SECONDS

    def __call__(fn: Any, *args: Any, **kwds: Any) -> Any:
        __tracebackhide__ = True  # pytest and IPython skip this frame in tracebacks
        try:
            stack = tls.stack
        except AttributeError:
            stack = hub.stack()
        state = states_get(id(fn))
        if state is None or state.ref() is not fn:
            state = hub.state_for(fn)
        frame = new_frame(state, via_call)
        stack.append(frame)
        t0 = perf()
        try:
            result = call(fn, *args, **kwds)
        except BaseException as exc:
            seconds = perf() - t0
            stack.pop()
            hub.record_slow_call(frame, seconds, fn, args, kwds, exc)
            if tb_filter is not None and isinstance(exc, Exception) and tb_filter.enabled():
                # below this frame, as TF's wrapper filters below its own
                below = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
                raise exc.with_traceback(tb_filter.process(below)) from None
            raise
        seconds = perf() - t0
        stack.pop()
        if state.xla:  # XLA compiles per concrete shape, even without a retrace
            # The one case per call: a cached call of a jit_compile function at a shape XLA
            # compiled for before (its key in the graph's XlaMemory) is a hit, decided here
            # without a call into the XLA path (benchmarks/overhead.py's XLA row).
            graph = state.hit_graph
            if graph is not None and frame.traces is NO_TRACES and frame.served is None:
                # Only a jit_compile function's graphs get an XlaMemory, made by the XLA path
                # with a key reader (recording/xla.py): no need to check either here.
                memory = graph.xla_keys
                if memory is not None and not eager_flags.RUN_FUNCTIONS_EAGERLY:
                    if seconds < no_compile:
                        hit = True  # too fast to have compiled: a hit, its key left unread
                    else:
                        try:
                            hit = xla_key(args, kwds) in memory.keys  # None (building): False
                        except Exception:  # never into the user's call: the XLA path reads it
                            hit = False
                    if hit:
                        memory.cached.append(seconds)
                        log_append(new_hit((state, seconds, graph, t0, stack)))
                        if len(entries) >= calllog.summarise_at:
                            hub.summarise_log()
                        return result
            xla_call(hub, frame, seconds, fn, args, kwds, t0, stack)
            return result
        if frame.traces is NO_TRACES:
            served = frame.served
            if served is not None:
                graph = state.graphs.get(served)
            else:
                graph = state.hit_graph  # the one graph a hit can run (None: unknown, or eager)
                if graph is None or eager_flags.RUN_FUNCTIONS_EAGERLY:
                    hub.record_slow_call(frame, seconds, fn, args, kwds, None)
                    return result
            log_append(new_hit((state, seconds, graph, t0, stack)))
            if len(entries) >= calllog.summarise_at:
                hub.summarise_log()
        else:
            hub.record_slow_call(frame, seconds, fn, args, kwds, None)
        return result

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    __call__._tfgraph_lab_hook = True  # type: ignore[attr-defined]
    return __call__


def make_count_only_hook(hub: Host, original: Callable[..., Any]) -> Callable[..., Any]:
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
            record = CallRecord(state, Via.CALL, seconds, t0)
            record.thread = hub.stack().thread
            if error is not None:
                record.error = error_text(error)
            if before is not None:
                added = max(0, fn.experimental_get_tracing_count() - before)
                for _ in range(added):
                    graph = GraphState(
                        state, Signature((), "(unknown: count-only mode)"), Via.CALL, Scope.NONE, True
                    )
                    graph.log_pos = hub.calllog.position()
                    state.graph_list.append(graph)
                    record.traces.append(graph)
                if added:
                    record.reasons = (
                        Reason(
                            ReasonCode.UNEXPLAINED,
                            message="count-only mode: this TensorFlow release is not fully "
                            "supported, so tfgraph_lab can count traces but not explain them",
                        ),
                    )
            hub.add_record(record)

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    __call__._tfgraph_lab_hook = True  # type: ignore[attr-defined]
    return __call__


def make_gcf_hook(hub: Host, original: Callable[..., Any]) -> Callable[..., Any]:
    def _get_concrete_function_garbage_collected(fn: Any, *args: Any, **kwargs: Any) -> Any:
        stack = hub.stack()
        frame = Frame(hub.state_for(fn), Via.GET_CONCRETE_FUNCTION)
        stack.append(frame)
        t0 = _perf()
        try:
            return original(fn, *args, **kwargs)
        except BaseException as exc:
            stack.pop()
            if tfa.trace_failed(exc):
                frame.served = None
                hub.record_slow_call(frame, _perf() - t0, fn, args, kwargs, exc)
            raise
        finally:
            if stack and stack[-1] is frame:
                stack.pop()
                if frame.traces:
                    frame.served = id(frame)  # no graph ran: not an eager call either
                    hub.record_slow_call(frame, _perf() - t0, fn, args, kwargs, None)

    _get_concrete_function_garbage_collected.__wrapped__ = original  # type: ignore[attr-defined]
    _get_concrete_function_garbage_collected._tfgraph_lab_hook = True  # type: ignore[attr-defined]
    return _get_concrete_function_garbage_collected


def make_call_flat_hook(hub: Host, original: Callable[..., Any]) -> Callable[..., Any]:
    tls = hub.tls

    def _call_flat(cf: Any, *args: Any, **kwargs: Any) -> Any:
        stack = getattr(tls, "stack", None)
        if stack:
            top = stack[-1]
            if top.served is None:
                top.served = id(cf)
        return original(cf, *args, **kwargs)

    _call_flat.__wrapped__ = original  # type: ignore[attr-defined]
    _call_flat._tfgraph_lab_hook = True  # type: ignore[attr-defined]
    return _call_flat
