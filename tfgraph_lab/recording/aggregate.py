"""Turn a watch's log entries into plain summaries and events (the report's content).

The hooks append a :class:`~tfgraph_lab.recording.calllog.Hit` per cache hit and a ``CallRecord`` for
everything else (see :mod:`tfgraph_lab.recording.calllog`); this module is the one reader of those
entries. It imports no TensorFlow (the entries hold plain data and weak references only; the
stale-capture check reads a function's closure through :mod:`tfgraph_lab.adapter`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import adapter as tfa
from ..explain.failures import failure_kind
from ..explain.fixes import code_name
from ..explain.suggest import suggest_fix
from ..explain.whole_run import WholeRun
from ..explain.xla import keeps_jit_compile, under_xla
from ..model.counts import CountRow, mean_cached_seconds
from ..model.places import call_on_line, call_source, function_source
from ..model.records import CallRun, CallSource, Event, FunctionSummary, GraphSummary, Reason
from ..model.vocab import Via
from .calllog import CallRecord, FunctionState, GraphState, Hit, HitRun, LogEntry
from .tally import count_hits, count_record, users
from .xla import XlaOutcome, judge_by_time
from .xla_counted import LoggedXla, LogWindow, XlaTotals, xla_event_fields, xla_kind

__all__ = ["Aggregate", "aggregate", "stale_capture_hints"]


@dataclass(frozen=True)
class Aggregate:
    functions: tuple[FunctionSummary, ...]
    events: tuple[Event, ...]
    runs: tuple[CallRun, ...]
    # the watch's own work on its slow path (describing a function first seen, trace callbacks,
    # explaining, the live log): kept out of every trace's cost, stated once (watch_seconds)
    watch_seconds: float = 0.0


# The counts a FunctionSummary takes as they are summed over the log (same names on CountRow).
_COUNTS = (
    "calls",
    "traces",
    "failed_traces",
    "trace_seconds",
    "call_seconds",
    "traced_calls",
    "retraces",
    "eager_calls",
    "wasted_retraces",
    "nested_trace_seconds",
    "nested_framework_seconds",
)


class _Acc(CountRow):
    """Running totals for one Python function (all its tf.function objects)."""

    __slots__ = (
        "calls_at",
        "events",
        "failures",
        "graphs",
        "hits",
        "info",
        "objects",
        "objects_traced",
        "reasons",
        "xla",
    )

    def __init__(self, info: tfa.FunctionInfo) -> None:
        super().__init__(info.label, not users(info), info.wraps)
        self.info = info
        self.objects: dict[int, FunctionState] = {}
        self.objects_traced: set[int] = set()
        self.graphs: list[GraphState] = []
        self.hits: dict[int, int] = {}
        self.reasons: list[Reason] = []
        self.failures: set[str] = set()  # failure_kind of its failed traces (read from TF's error once)
        self.events: list[int] = []  # positions in the events list of its calls that traced
        # where its calls that traced were made: (place, code, instruction) → None, in order
        self.calls_at: dict[tuple[str, Any, int], None] = {}
        self.xla = XlaTotals()

    def add_hits(self, graph_index: int, hits: int) -> None:
        self.hits[graph_index] = self.hits.get(graph_index, 0) + hits


def _event(
    index: int,
    state: FunctionState,
    via: str,
    seconds: float,
    graph: int | None,
    traced: bool = False,
    traces: int = 0,
    **details: Any,
) -> Event:
    """One event of ``state``'s function; ``details`` are the fields only slow-path entries fill."""
    info = state.info
    return Event(
        index=index,
        qualname=info.qualname,
        label=info.label,
        filename=info.filename,
        function_object=state.object_no,
        via=via,
        traced=traced,
        traces=traces,
        seconds=seconds,
        graph=graph,
        **details,
    )


def aggregate(
    entries: Sequence[Any],
    log_end: int | None = None,
    hints: dict[tuple[str, str], list[str]] | None = None,
    origin: float | None = None,
    xla_log: LogWindow | None = None,
    labels: Mapping[str, str] | None = None,
) -> Aggregate:
    """Summaries per function (user functions first), events in order, summarised runs of
    cached calls, and fix suggestions.

    Each function's graph cache lists every graph its objects held by ``log_end`` (the end of
    this watch in the shared log), including graphs traced before the watch began. ``origin``
    is the ``perf_counter`` reading when the watch began: events' ``start`` count from it.
    ``xla_log``: TensorFlow's XLA compile log of the watch; when usable, it gives the XLA counts.
    ``labels``: the notebook cells' names (file → ``In [3]``), for the places fixes print.
    """

    def since(start: float) -> float | None:
        return None if origin is None else start - origin

    accs: dict[tuple[str, str], _Acc] = {}
    events: list[Event] = []
    runs: list[CallRun] = []
    graph_index: dict[int, int] = {}
    own = [0.0]  # the watch's own work describing the function objects first seen in it

    def acc_for(state: Any) -> _Acc:
        acc = accs.get(state.key)
        if acc is None:
            acc = accs[state.key] = _Acc(state.info)
        if id(state) not in acc.objects:
            acc.objects[id(state)] = state
            if origin is None or state.registered_at >= origin:  # described in this watch
                own[0] += state.register_seconds
            for graph in state.graph_list:
                if log_end is None or graph.log_pos <= log_end:
                    index_of(acc, graph)
        return acc

    def index_of(acc: _Acc, graph: Any) -> int:
        idx = graph_index.get(id(graph))
        if idx is None:
            idx = graph_index[id(graph)] = len(acc.graphs)
            acc.graphs.append(graph)
        return idx

    logged = LoggedXla.of(xla_log, origin)  # None: TF's log is off, the count is modelled
    judged = {} if logged is not None else judge_by_time(entries)
    compiled: list[tuple[_Acc, XlaOutcome, float, bool]] = []  # (calling acc, outcome, s, traced)

    def xla_of(i: int, entry: Any, acc: _Acc, seconds: float, traced: bool) -> XlaOutcome | None:
        outcome = judged.get(i) or getattr(entry, "xla", None)
        if logged is not None:
            logged.note(acc, outcome, len(events))
            return None  # counted from TF's log at the end
        if outcome is None or not outcome.compiled:
            return None
        compiled.append((acc, outcome, seconds, traced))
        if not traced:
            acc.xla_slow_calls += 1
            acc.xla_slow_seconds += seconds
        return outcome

    gi: int | None
    watch_seconds = 0.0
    n = 0  # the call index (a summarised run advances it by its number of calls)
    for i, entry in enumerate(entries):
        if type(entry) is HitRun:
            for share in entry.states.values():
                count_hits(acc_for(share.state), share.calls, share.seconds)
            for served in entry.graphs.values():
                acc = acc_for(served.graph.state)
                acc.add_hits(index_of(acc, served.graph), served.hits)
            names = tuple(dict.fromkeys(share.state.info.label for share in entry.states.values()))
            runs.append(
                CallRun(
                    n, entry.calls, entry.seconds, entry.max_seconds, names, since(entry.start), entry.thread
                )
            )
            n += entry.calls
            continue
        if type(entry) is Hit:
            state, seconds, graph, start, stack = (
                entry.state,
                entry.seconds,
                entry.graph,
                entry.start,
                entry.stack,
            )
            acc = acc_for(state)
            count_hits(acc, 1, seconds)
            gi = None
            if graph is not None:
                gi = index_of(acc, graph)
                acc.add_hits(gi, 1)
            xla = xla_of(i, entry, acc, seconds, False)
            events.append(
                _event(
                    n,
                    state,
                    Via.CALL,
                    seconds,
                    gi,
                    thread=stack.thread,
                    start=since(start),
                    call_number=acc.calls,
                    **xla_event_fields(xla),
                )
            )
            n += 1
            continue
        assert isinstance(entry, CallRecord)
        watch_seconds += entry.tool_seconds + sum(g.tool_seconds for g in entry.traces)
        state = entry.state
        acc = acc_for(state)
        is_call = entry.via == Via.CALL
        new_graphs = [index_of(acc, g) for g in entry.traces]
        if entry.traces:
            entry.reasons  # noqa: B018  # built first: they mark its wasted graphs, counted next
        retraces = count_record(acc, entry)
        if entry.traces:
            acc.objects_traced.add(id(state))
            acc.reasons.extend(entry.reasons)
            acc.events.append(len(events))
            if entry.caller and is_call:
                acc.calls_at[(entry.caller, entry.call_code, entry.call_lasti)] = None
        if entry.failed_trace and entry.error:
            acc.failures.add(failure_kind(entry.error) or "")
        gi = None
        if entry.graph is not None:
            gi = index_of(acc, entry.graph)
        elif new_graphs and is_call and entry.error is None:
            gi = new_graphs[-1]
        if gi is not None and is_call:
            acc.add_hits(gi, 1)
        xla = xla_of(i, entry, acc, entry.seconds, bool(entry.traces))
        events.append(
            _event(
                n,
                state,
                entry.via,
                entry.seconds,
                gi,
                traced=bool(entry.traces),
                traces=len(entry.traces),
                retraces=retraces,
                eager=entry.eager,
                failed_trace=entry.failed_trace,
                wasted=any(g.wasted_of is not None for g in entry.traces),
                error=entry.error,
                caller=entry.caller,
                thread=entry.thread,
                signature=entry.traces[-1].signature.text if entry.traces else None,
                reasons=entry.reasons,
                **xla_event_fields(xla),
                start=since(entry.start),
                call_number=acc.calls if is_call else None,
                began_before_watch=entry.began_before_watch,
                inside=entry.inside[-1].info.label if entry.inside else None,  # the outer row's label
            )
        )
        n += 1

    if logged is not None:
        events = logged.place(events, list(accs.values()))
    for caller, outcome, seconds, traced in compiled:
        mean = mean_cached_seconds([caller])
        for target in outcome.targets:
            x = acc_for(target).xla
            x.compiles += 1
            x.estimated += int(outcome.maybe)
            if traced:
                continue  # its time is the trace's already (the two cannot be told apart)
            x.seconds += seconds / len(outcome.targets)
            if mean:
                x.cost_calls += seconds / len(outcome.targets) / mean

    summaries = []
    sources: dict[tuple[str, int, int], CallSource] = {}  # one per call site, read once
    for acc in accs.values():
        _count_whole_run(acc, events, _call_sources(acc, sources, labels))
        _say_xla_trade(acc, events)
        info = acc.info
        several = len({id(g.state) for g in acc.graphs}) > 1  # rows alike, told apart by object
        graphs = tuple(
            GraphSummary(
                signature=g.signature.text,
                hits=acc.hits.get(i, 0),
                traced_in_watch=g.in_watch,
                via=g.via,
                scope=g.scope,
                generalised=g.generalised,
                function_object=g.state.object_no if several else None,
            )
            for i, g in enumerate(acc.graphs)
        )
        summary = FunctionSummary(
            qualname=info.qualname,
            label=info.label,
            filename=info.filename,
            firstlineno=info.firstlineno,
            framework=not users(info),
            graphs=graphs,
            function_objects=len(acc.objects),
            objects_traced=len(acc.objects_traced),
            reduce_retracing=info.reduce_retracing,
            input_signature=info.input_signature,
            jit_compile=info.jit_compile,
            xla_compiles=acc.xla.compiles,
            xla_estimated=acc.xla.estimated,
            xla_compiles_kind=xla_kind(acc.xla, info.jit_compile, logged is not None),
            xla_seconds=acc.xla.seconds,
            xla_cost_calls=acc.xla.cost_calls if acc.xla.compiles and acc.xla.cost_calls else None,
            xla_slow_calls=acc.xla_slow_calls,
            xla_slow_seconds=acc.xla_slow_seconds,
            wraps=info.wraps,
            hints=tuple((hints or {}).get(info.key, ())),
            **{name: getattr(acc, name) for name in _COUNTS},
        )
        history = [g.signature for g in acc.graphs]
        calls = _keras_calls(acc, labels, _KERAS_CALLS[info.role]) if info.role in _KERAS_CALLS else ()
        suggestion = suggest_fix(summary, acc.reasons, history, info.role, info.python_flags, acc.failures, calls)
        summaries.append(replace(summary, suggestion=suggestion or None))
    summaries.sort(key=lambda f: (f.framework, -f.retraces, -f.traces, f.label))
    return Aggregate(tuple(summaries), tuple(events), tuple(runs), watch_seconds + own[0])


def _call_sources(
    acc: _Acc, done: dict[tuple[str, int, int], CallSource], labels: Mapping[str, str] | None
) -> tuple[CallSource, ...]:
    """The source of each distinct call of the function that traced (its place and the call
    expression as written), read now from what the hook kept: a fix rewrites those calls."""
    out: dict[tuple[str, int, int], CallSource] = {}
    for place, code, lasti in acc.calls_at:
        source = done.get((place, id(code), lasti))
        if source is None:
            source = done[(place, id(code), lasti)] = call_source(place, code, lasti, labels)
        out.setdefault((source.place, source.line, source.col) if source.text else (place, -1, -1), source)
    return tuple(out.values())


# The user's call into Keras that a Keras step's suggestion reads, by the step's role: predict's
# padding is written on ``model.predict(…)``; a train or test step's suggestion tells
# ``train_on_batch``/``test_on_batch`` (batches the user makes) from fit/evaluate (Keras's, with
# the batch_size each passes), the first method found on a line: fit's validation runs the test
# step too.
_KERAS_CALLS = {
    "predict": ("predict",),
    "train": ("train_on_batch", "fit"),
    "test": ("test_on_batch", "evaluate", "fit"),
}


def _keras_calls(
    acc: _Acc, labels: Mapping[str, str] | None, methods: Sequence[str]
) -> tuple[CallSource, ...]:
    """The user's ``model.<method>(...)`` calls whose run traced Keras's step (the step's
    caller is the user's line that called into Keras), as written: on each line, the first of
    ``methods`` called there once (else the first one's why-not)."""
    places = dict.fromkeys(place for place, _, _ in acc.calls_at)
    found = []
    for place in places:
        sources = [call_on_line(place, method, labels) for method in methods]
        found.append(next((s for s in sources if s.text), sources[0]))
    return tuple(found)


def _count_whole_run(acc: _Acc, events: list[Event], sources: Sequence[CallSource] = ()) -> None:
    """Every plan of the function counted over the graphs its calls used in this watch, one
    rewrite per argument (:mod:`tfgraph_lab.explain.whole_run`): the events' reasons and the
    suggestion; a call-site rewrite carries ``sources``, the function's calls rewritten."""
    if not any(r.plans for r in acc.reasons):
        return
    kept = [g for i, g in enumerate(acc.graphs) if g.in_watch or acc.hits.get(i)]
    used = [g.signature for g in kept]
    # the graphs before a fix, counted as explain.plan.graphs_before counts them from the report
    calls_at_sites = any(p.call for r in acc.reasons for p in r.plans)
    whole = WholeRun(
        used,
        code_name(acc.info.qualname),
        [g.signature for g in acc.graphs],
        before=len(used) or None,
        sources=sources,
        body=function_source(acc.info.filename, acc.info.firstlineno) if calls_at_sites else "",
        objects=[id(g.state) for g in kept],
        relaxing=acc.info.reduce_retracing,
    )
    acc.reasons = list(whole.reasons(acc.reasons))
    for at in acc.events:
        if at < len(events) and events[at].reasons:
            events[at] = replace(events[at], reasons=whole.reasons(events[at].reasons))


def _say_xla_trade(acc: _Acc, events: list[Event]) -> None:
    """Under XLA (the function, or one its graphs call, has jit_compile=True) a retrace fix
    stops traces, not compilations: its fix says so (:func:`tfgraph_lab.explain.xla.under_xla`),
    once the plans are final. Not for Keras's steps, whose fixes are Keras's own."""
    info = acc.info
    if info.role or info.python_flags or not (info.jit_compile or any(g.xla_sites for g in acc.graphs)):
        return
    nested = not info.jit_compile

    def said(r: Reason) -> Reason:
        r = under_xla(r, nested)
        return r if nested else keeps_jit_compile(r)  # its fix's decorator line replaces the user's

    acc.reasons = [said(r) for r in acc.reasons]
    for at in acc.events:
        if at < len(events) and events[at].reasons:
            events[at] = replace(events[at], reasons=tuple(said(r) for r in events[at].reasons))


_FLOAT_REPR = re.compile(r"-?\d+(\.\d*(e[+-]?\d+)?|e[+-]?\d+)")  # repr of a finite float: 1.0, 1e-05


def _stale_cure(name: str, old: str, framework: bool) -> str:
    """How the graph reads a changing value: an attribute of the object (a method's ``self``,
    a Keras model's) kept in a tf.Variable and assigned; a closure's or global's passed as an
    argument. A float's Variable is written out (``tf.Variable(1)`` would be int32, and
    ``x * self.scale`` on a float tensor would raise); another's is left to the reader."""
    if not (framework or name.startswith("self.")):
        return f"Pass `{name}` as an argument (a tensor or tf.Variable) if it changes."
    start = old if _FLOAT_REPR.fullmatch(old) else "..."
    return (
        f"Keep it in a tf.Variable ({name} = tf.Variable({start}), changed with "
        f"{name}.assign(...)) so the graph reads its current value."
    )


def stale_capture_hints(entries: list[LogEntry]) -> dict[tuple[str, str], list[str]]:
    """Python scalars a traced body read (closure, globals, ``self``) that have changed since:
    the graph still holds the old value. A hint, never a retrace."""
    latest: dict[int, GraphState] = {}
    for entry in entries:
        if type(entry) is CallRecord:
            for graph in entry.traces:
                if graph.captures:
                    latest[id(entry.state)] = graph
    hints: dict[tuple[str, str], list[str]] = {}
    for graph in latest.values():
        fn = graph.state.ref()
        if fn is None:
            continue
        framework = graph.state.info.framework
        now = tfa.scalar_captures(fn, framework=framework)
        for name, old in graph.captures.items():
            if name in now and now[name] != old:
                cure = _stale_cure(name, old, framework)
                hints.setdefault(graph.state.key, []).append(
                    f"`{name}` was {old} when {graph.state.info.label} was traced and is "
                    f"{now[name]} now, but the graph still uses {old}: closures, globals and "
                    f"attributes are not part of the cache key, so this did not retrace. {cure}"
                )
    return hints
