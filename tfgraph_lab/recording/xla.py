"""XLA compilations of watched functions, counted by modelling XLA's own compilation cache.

TensorFlow counts its XLA compilations in the monitoring counter
``/tensorflow/core/xla_compilations``, but no Python API reads it (TF 2.15-2.21):
``tensorflow.python.eager.monitoring`` only *creates* metrics, and creating a ``Counter`` of that
name replaces TF's registration ("Trying to register 2 metrics with the same name", then a
fresh zero); ``_test_metrics_util.test_counter_value`` reads only TF's test counter. So this
module models the cache XLA looks compilations up in, from what the recorder sees:

* a direct call of a ``jit_compile=True`` function compiles once per graph (concrete function),
  device and *concrete* input shapes (``DeviceCompilationClusterSignature``: function name and
  attributes, then each argument's dtype and shape). The key of such a call is read on the
  hot path (:func:`tfgraph_lab.adapter.xla_key_reader`, a microsecond or two) unless the call
  returned too fast to have compiled (``recording.hooks.NO_COMPILE_SECONDS``): then it is a hit;
* a ``jit_compile=True`` function called while another graph is *built* compiles when that
  graph runs, under other attributes than a direct call (a separate cache entry). Its input
  shapes are the static shapes in the outer graph: when all are known, the count is exact;
  with ``None`` dims (Keras's ``fit`` feeds its XLA step from a dataset iterator) the sizes are
  only known inside the running graph: the first run compiles, later runs are counted from their
  call time (far above the graph's cached calls), and the report says it estimated them;
* an XLA function called inside another XLA function is compiled as part of it (no entry).

The model is checked against TensorFlow's own log of each compilation in the tests
(``TF_CPP_VMODULE=device_compiler=2``: "Instantly compiling for signature: ..."). It does not
see values XLA needs as compile-time constants (an integer tensor used as a shape compiles per
value) nor calls made before the watch began: a graph that existed before the watch gets its
new shapes judged by call time, like hidden shapes. No TensorFlow import here (the adapter
reads the keys); only plain data and the hub's own state objects.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections import deque
from collections.abc import Sequence, Set
from typing import Any

from .. import adapter as tfa
from ..explain.keras_fixes import keras_xla_reason
from ..explain.xla import explain_compile, hidden_shape_reason, nested_compile_reason, taped_reason
from ..model.records import Reason
from ..model.signatures import ArgLeaf, format_shape
from ..model.vocab import Via
from .calllog import CallRecord, Hit, new_hit
from .host import Frame, Host

__all__ = ["COMPILE_RATIO", "Site", "XlaMemory", "XlaModel", "XlaOutcome", "estimate_hidden", "judge_by_time"]

# A call counted as a compilation by its time alone is at least this many times the fastest of
# its graph's other calls and at least MIN_COMPILE_SECONDS above it. XLA's CPU compile of even a
# tiny graph took 25-60 ms on the 2-core test machine (TF 2.21), a tiny Keras train step 0.15-0.5 s;
# cached Keras steps 0.6-12 ms (a loaded machine stalls a call by tens of ms now and then).
COMPILE_RATIO = 20.0
MIN_COMPILE_SECONDS = 0.05


class Site:
    """A ``jit_compile=True`` function called inside another graph while it was built."""

    __slots__ = ("graph", "leaves", "state")

    def __init__(self, state: Any, graph: Any, leaves: tuple[tuple[str, tuple[int | None, ...] | None], ...]):
        self.state = state  # the XLA function's FunctionState
        self.graph = graph  # its GraphState (None: unknown)
        self.leaves = leaves  # (dtype, static dims) per tensor, as the outer graph knows them

    @property
    def dynamic(self) -> bool:
        return any(dims is None or None in dims for _, dims in self.leaves)

    def shapes_text(self) -> str:
        return ", ".join(f"{dtype} {format_shape(dims)}" for dtype, dims in self.leaves) or "no tensors"


class XlaOutcome:
    """What XLA did on one call: compiled (certainly), or maybe (to be judged by call time)."""

    __slots__ = ("compiled", "maybe", "reasons", "reference", "targets")

    def __init__(self, compiled: bool, maybe: bool, reasons: tuple[Reason, ...], targets: list[Any]):
        self.compiled = compiled
        self.maybe = maybe  # uncertain: decided from the call time when the report is built
        if any(t.info.role for t in targets):  # Keras's step (jit_compile): Keras-level fixes
            reasons = tuple(keras_xla_reason(r) for r in reasons)
        self.reasons = reasons
        self.targets = targets  # FunctionStates whose graphs compiled (nested: the inner one)
        self.reference: float | None = None  # a cached call's time seen in an earlier watch


class XlaModel:
    """Per hub install: the path of calls XLA is involved in, and the nested call sites found
    while graphs are built. ``memory`` is the hub's :class:`XlaMemory` per graph, which
    outlives the install (``Hub.reset`` clears it)."""

    def __init__(self, key_reader: Any, memory: dict[str, XlaMemory]) -> None:
        self.key = key_reader  # None: TF moved the names; XLA is then not counted
        self.memory = memory
        self.pending: dict[int, list[Site]] = {}  # id(outer frame) -> sites found in its trace

    def call(
        self,
        hub: Host,
        frame: Frame,
        seconds: float,
        fn: Any,
        args: Any,
        kwargs: Any,
        start: float | None = None,
        stack: Any = None,
    ) -> None:
        """A call of a function with ``state.xla`` (``jit_compile=True``, or a plain function
        whose graphs call one). Reads XLA's cache key (a microsecond or two) and logs a hit as the
        hot path does, else a slow-path record carrying what XLA compiled. ``start`` and
        ``stack``: the hook's clock reading and the thread's stack (read again when absent)."""
        # The cached call of a jit_compile function at a shape XLA compiled before, the one case
        # per call, never comes here: the hook decides it (recording/hooks.py).
        state, served, traces = frame.state, frame.served, frame.traces
        if served is not None:
            graph = state.graphs.get(served)
        elif traces:
            graph = traces[-1] if frame.via == Via.CALL else None
        else:
            graph = state.hit_graph
        assert hub.handles is not None
        eager = hub.handles.eager_flag_module.RUN_FUNCTIONS_EAGERLY  # no graph runs: no XLA
        outcome = None
        if self.key is not None and graph is not None and not eager:
            try:
                outcome = self._outcome(hub, state, graph, bool(traces), args, kwargs, seconds)
            except Exception:  # never into the user's call: the count just misses this one
                logging.getLogger(__name__).debug("tfgraph_lab: XLA key not read", exc_info=True)
        if traces or outcome is not None or graph is None or eager:
            hub.record_slow_call(frame, seconds, fn, args, kwargs, None, xla=outcome, graph=graph)
            return
        calllog = hub.calllog
        # a Hit, as the hot path makes it (without the hook's reading, the start is a few
        # microseconds late: the key was read)
        began = start if start is not None else time.perf_counter() - seconds
        calllog.append(new_hit((state, seconds, graph, began, stack if stack is not None else hub.stack())))
        if len(calllog.entries) >= calllog.summarise_at:
            hub.summarise_log()

    def _outcome(
        self, hub: Host, state: Any, graph: Any, traced: bool, args: Any, kwargs: Any, seconds: float
    ) -> XlaOutcome | None:
        key = self.key(args, kwargs)
        if key is None:  # called while another graph is built: compiles when that one runs
            stack = hub.stack()
            outer = stack[-1] if stack else None
            if state.info.jit_compile:
                self.site(outer, state, graph, tfa.xla_site_leaves(args, kwargs))
            else:
                self.propagate(outer, graph)
            return None
        if state.info.jit_compile:
            return self.direct(state, graph, key, traced, seconds)
        if graph.xla_sites:
            return self.ran(graph, key[0], key[1])
        return None

    # ------------------------------------------------------------------ direct calls
    def direct(
        self, state: Any, graph: Any, key: tuple[Any, ...], traced: bool, seconds: float = 0.0
    ) -> XlaOutcome | None:
        """A call of a ``jit_compile=True`` function that ran ``graph`` eagerly."""
        memory = _memory_of(self.memory, graph)
        keys = memory.keys
        if key in keys:
            memory.cached.append(seconds)
            return None
        keys.add(key)
        device, shapes, taping = key
        now = _leaves(graph.signature.leaves, shapes)
        before = graph.xla_last
        reasons = explain_compile(
            now,
            before[1] if before is not None else None,
            device=device,
            before_device=before[0] if before is not None else "",
            traced=traced,
        )
        if taping:
            reasons.append(taped_reason())
        graph.xla_last = (device, now)
        targets = [state, state] if taping else [state]  # forward twin, then backward
        if graph.in_watch:
            return XlaOutcome(True, False, tuple(reasons), targets)
        # A graph from before this watch: if an earlier watch saw its calls, a new key compiled
        # unless the call ran between watches (unseen); its time against the cached calls seen
        # says which. With no earlier watch (or no cached call seen), judged by time in this one.
        outcome = XlaOutcome(False, True, tuple(reasons), targets)
        outcome.reference = statistics.median(memory.cached) if memory.cached else None
        if memory.watched and outcome.reference is None:
            outcome.compiled, outcome.maybe = True, False
        return outcome

    # ------------------------------------------------------------------ nested calls
    def site(self, outer_frame: Frame | None, state: Any, graph: Any, leaves: Any) -> None:
        """An XLA function called while the graph of ``outer_frame`` is being built."""
        if outer_frame is None or outer_frame.state.info.jit_compile:
            return  # not inside a watched function, or inlined into an outer XLA cluster
        self.pending.setdefault(id(outer_frame), []).append(Site(state, graph, leaves))
        outer_frame.state.xla = True

    def propagate(self, outer_frame: Frame | None, graph: Any) -> None:
        """A plain function whose graph holds XLA sites was called while another graph is built."""
        if outer_frame is None or graph is None or not graph.xla_sites:
            return
        if outer_frame.state.info.jit_compile:
            return
        self.pending.setdefault(id(outer_frame), []).extend(graph.xla_sites)
        outer_frame.state.xla = True

    def take(self, frame: Frame) -> tuple[Site, ...] | None:
        sites = self.pending.pop(id(frame), None)
        return tuple(sites) if sites else None

    def ran(self, graph: Any, device: str, shapes: tuple[Any, ...] = ()) -> XlaOutcome | None:
        """A graph holding XLA sites ran eagerly: which of them compiled now.

        A site with ``None`` dims compiles on the graph's first run; later runs are judged by
        call time (:func:`judge_by_time`). When the graph itself takes ``None`` dims, the
        concrete sizes of its call (``shapes``) are seen: only a call with sizes the graph has
        not run with is a candidate (Keras's predict step, TF 2.21: the relaxed
        ``predict_function`` fed 5 rows, then 32 and 8 compiled its XLA step 3×, every call a
        compilation, so no cached call's time stood out against)."""
        reasons: list[Reason] = []
        targets: list[Any] = []
        maybe = False
        candidates: list[Any] = []
        graph.xla_tracked = graph.xla_tracked or _sizes_vary(graph)
        for site in graph.xla_sites:
            inner = site.graph
            if inner is None:
                continue
            keys = _memory_of(self.memory, inner).keys
            name = site.state.info.label
            if site.dynamic:
                full: tuple[Any, ...] = ("nested", device, id(graph), site.leaves)
                sized = ("nested sizes", device, id(graph), shapes)
                if full in keys:  # later runs: judged by call time (estimate_hidden)
                    if graph.xla_tracked and sized not in keys:
                        keys.add(sized)
                        candidates.append(site)
                    continue
                keys.add(sized)
                reasons.append(hidden_shape_reason(name, site.shapes_text(), estimated=False))
            else:
                full = ("nested", device, site.leaves)
                if full in keys:
                    continue
                reasons.append(nested_compile_reason(name, site.shapes_text()))
            keys.add(full)
            targets.append(site.state)
            maybe = maybe or not (inner.in_watch and graph.in_watch)
        if not targets and candidates:  # new sizes: judged by time, among the graph's calls
            site = candidates[0]
            reason = hidden_shape_reason(site.state.info.label, site.shapes_text(), estimated=True)
            return XlaOutcome(False, True, (reason,), [site.state])
        if not targets:
            return None
        return XlaOutcome(not maybe, maybe, tuple(reasons), targets)


class XlaMemory:
    """What outlives a watch about one graph's XLA cache: the keys it compiled for while
    watched, and the times of its calls known to be cached (the reference for judging)."""

    __slots__ = ("cached", "keys", "watched")

    def __init__(self) -> None:
        self.keys: set[Any] = set()
        self.cached: deque[float] = deque(maxlen=32)
        self.watched = False  # a watch saw the graph made: every key of its watched calls is here


MAX_MEMORY = 5_000


def _memory_of(memory_map: dict[str, XlaMemory], graph: Any) -> XlaMemory:
    """The graph's XLA memory, shared by its GraphState in every watch (hub install). The map
    is keyed by the concrete function's name (``__inference_f_123``: unique in a process)."""
    memory: XlaMemory | None = graph.xla_keys
    if memory is not None:
        return memory
    cf = graph.cf_ref() if graph.cf_ref is not None else None
    name = str(getattr(cf, "name", "") or "") if cf is not None else ""
    memory = memory_map.get(name) if name else None
    if memory is None:
        memory = XlaMemory()
        memory.watched = graph.in_watch
        if name:
            if len(memory_map) >= MAX_MEMORY:
                del memory_map[next(iter(memory_map))]
            memory_map[name] = memory
    graph.xla_keys = memory
    return memory


def _sizes_vary(graph: Any) -> bool:
    """The graph takes a tensor with ``None`` dims: its calls' concrete sizes can vary, and are
    seen (a dataset iterator argument's are not: Keras's ``fit`` step)."""
    return any(
        leaf.kind == "tensor" and (leaf.shape is None or None in leaf.shape)
        for leaf in graph.signature.leaves
    )


def _leaves(signature_leaves: Sequence[ArgLeaf], shapes: tuple[Any, ...]) -> list[ArgLeaf]:
    """The call's tensors as leaves: names and dtypes from the graph's signature when they line
    up with the flat tensors, else ``tensor 0``, ``tensor 1``…"""
    named = [leaf for leaf in signature_leaves if leaf.kind in ("tensor", "variable")]
    if len(named) != len(shapes):
        named = []
    out = []
    for i, (_, dims) in enumerate(shapes):
        if named:
            out.append(ArgLeaf(named[i].path, "tensor", "Tensor", named[i].dtype, tuple(dims)))
        else:
            out.append(ArgLeaf(f"tensor {i}", "tensor", "Tensor", None, tuple(dims)))
    return out


def judge_by_time(entries: Sequence[Any]) -> dict[int, XlaOutcome]:
    """The calls whose compilation only their time can tell, judged: list index → outcome.

    Two kinds: runs of a graph that calls an XLA function with ``None`` dims (the Hits
    of such a graph), and calls the model marked ``maybe`` (a graph from before the watch).
    Each is compared with the other calls of its graph (:func:`estimate_hidden`).
    """
    out: dict[int, XlaOutcome] = {}
    samples: dict[int, list[tuple[float, bool]]] = {}
    where: dict[int, list[int]] = {}
    graphs: dict[int, Any] = {}
    maybe_graphs = {
        id(e.graph)
        for e in entries
        if type(e) is CallRecord and e.xla is not None and e.xla.maybe and e.graph is not None
    }
    for i, entry in enumerate(entries):
        if type(entry) is Hit:
            graph = entry.graph
            if graph is None:
                continue
            hidden = bool(graph.xla_sites) and any(s.dynamic for s in graph.xla_sites)
            if not hidden and id(graph) not in maybe_graphs:
                continue
            # a call with sizes its graph ran with before: cached, a reference only
            seconds, candidate = entry.seconds, hidden and not graph.xla_tracked
        elif type(entry) is CallRecord:
            graph = entry.graph
            outcome = entry.xla
            if graph is None or (id(graph) not in maybe_graphs and not graph.xla_sites):
                continue
            if outcome is not None and not outcome.maybe:
                continue  # a certain compilation: not a reference for cached calls
            if outcome is not None and outcome.reference is not None:
                ref = outcome.reference  # cached calls of this graph seen in earlier watches
                compiled = entry.seconds >= max(COMPILE_RATIO * ref, ref + MIN_COMPILE_SECONDS)
                out[i] = XlaOutcome(compiled, True, outcome.reasons if compiled else (), outcome.targets)
                continue
            if entry.traces or entry.error is not None:
                continue
            seconds, candidate = entry.seconds, outcome is not None
        else:
            continue  # a HitRun: summarised hits keep no per-call time
        samples.setdefault(id(graph), []).append((seconds, candidate))
        where.setdefault(id(graph), []).append(i)
        graphs[id(graph)] = graph
    tracked = {graph_id for graph_id, graph in graphs.items() if graph.xla_tracked}
    for graph_id, verdicts in estimate_hidden(samples, tracked).items():
        graph = graphs[graph_id]
        for i, compiled in zip(where[graph_id], verdicts, strict=True):
            entry = entries[i]
            if type(entry) is CallRecord:
                outcome = entry.xla
                if outcome is not None:
                    out[i] = XlaOutcome(compiled, True, outcome.reasons if compiled else (), outcome.targets)
                continue
            if not compiled:
                continue
            site = next(s for s in graph.xla_sites if s.dynamic)
            reason = hidden_shape_reason(site.state.info.label, site.shapes_text(), estimated=True)
            out[i] = XlaOutcome(True, True, (reason,), [site.state])
    return out


def estimate_hidden(
    samples: dict[int, list[tuple[float, bool]]], tracked: Set[int] = frozenset()
) -> dict[int, list[bool]]:
    """Per graph, which calls compiled, judged by time: ``(seconds, candidate)`` per call, in
    order. A candidate compiled when it took ``COMPILE_RATIO`` × the graph's fastest call and
    ``MIN_COMPILE_SECONDS`` more (a cached call should not; a tiny compile can, and is missed).
    The fastest call, not the median: when half the calls compile (a nested XLA function fed 4
    batch sizes), the median is itself a compilation and no compilation would stand out.
    ``tracked``: graphs whose candidates are the calls with new sizes; with no other call to
    compare with (every call had new sizes), a candidate of ``MIN_COMPILE_SECONDS`` or more."""
    out: dict[int, list[bool]] = {}
    for graph_id, calls in samples.items():
        ref = min(s for s, _ in calls)
        floor = max(COMPILE_RATIO * ref, ref + MIN_COMPILE_SECONDS)
        if graph_id in tracked and all(candidate for _, candidate in calls):
            floor = MIN_COMPILE_SECONDS
        out[graph_id] = [candidate and seconds >= floor for seconds, candidate in calls]
    return out
