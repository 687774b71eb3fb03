"""Why a new graph was traced: its explanation against the graphs before it, and the history
that outlives a single watch.

The history records which Python code has been traced by how many ``tf.function`` objects, so
that a re-run notebook cell or ``tf.function(f)`` in a loop is named ``new-function-object``.
It holds strings, numbers and signatures only. Called by the hub on the slow path (a call that
traced); the reasons themselves come from the pure :mod:`tfgraph_lab.explain.trace`. Imports
TensorFlow only through :mod:`tfgraph_lab.adapter`; never IPython.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from .. import adapter as tfa
from ..adapter.keras_steps import compile_settings
from ..explain.arguments import recursion_reason
from ..explain.failures import explain_failure
from ..explain.fixes import code_name
from ..explain.keras_fixes import keras_flag_reason, keras_reason, recompile_reason
from ..explain.trace import explain_trace, mark_wasted, reads_other_variables, trace_kind
from ..model.counts import is_retrace
from ..model.places import cell_label, innermost_python_function
from ..model.records import Reason
from ..model.signatures import Signature, parent_path
from ..model.vocab import ReasonCode
from .calllog import NOT_READ, FunctionState, GraphState

__all__ = [
    "History",
    "NotedGraph",
    "explain_new_graph",
    "explain_noted",
    "explain_notes",
    "keep_fingerprints",
    "note_new_graph",
]

_IPYTHON_INPUT = re.compile(r"^<ipython-input-\d+-")
_KEPT_SIGNATURES = 8  # graphs of earlier objects remembered per piece of code


class History:
    """Per piece of Python code: how many function objects traced it, their latest graphs."""

    def __init__(self) -> None:
        self.objects_per_code: dict[tuple[str, str, int, str, str], int] = {}
        self.last_graphs: dict[tuple[str, str, int, str, str], list[Signature]] = {}
        # The code object the latest function object ran: a notebook cell run again compiles
        # its source anew, a loop re-wraps the same code (a code object: constants, no globals)
        self.codes: dict[tuple[str, str, int, str, str], object] = {}
        # A Keras model's compile() settings when its latest step function of this code first
        # traced (adapter.keras_steps.compile_settings): what a recompile changed
        self.compiles: dict[tuple[str, str, int, str, str], dict[str, str] | None] = {}
        # Weak references to the tf.Variables the latest object's first graph of this code
        # reads (adapter.graph_variables): a new object that reads others cannot be hoisted.
        # Read at an object's first graph only: its retraces read the same variables
        self.variables: dict[tuple[str, str, int, str, str], tuple[object, ...]] = {}

    def reset(self) -> None:
        """Forget every earlier function object (``Hub.reset``, ``recorder.reset_recording``)."""
        self.objects_per_code.clear()
        self.last_graphs.clear()
        self.codes.clear()
        self.compiles.clear()
        self.variables.clear()

    def cell_rerun(self, key: tuple[str, str, int, str, str], state: FunctionState) -> bool:
        """The first graph of ``state`` is its cell's re-run: an IPython cell defined this
        function's code again (a new code object for the same place), not a loop re-wrapping it."""
        fn = state.ref()
        python_function = innermost_python_function(getattr(fn, "_python_function", None))
        code = getattr(python_function, "__code__", None)
        if code is None:
            return False
        before = self.codes.get(key)
        self.codes[key] = code
        return before is not None and before is not code and cell_label(state.info.filename) is not None

    def state_key(self, state: FunctionState) -> tuple[str, str, int, str, str]:
        """:meth:`code_key` of ``state``'s info, kept on the state until its info changes (a
        Keras step named for the user): read once per function object, not per trace."""
        kept = state.code_key
        if kept is not None and kept[0] is state.info:
            return kept[1]  # type: ignore[no-any-return]
        key = self.code_key(state.info)
        state.code_key = (state.info, key)
        return key

    def code_key(self, info: tfa.FunctionInfo) -> tuple[str, str, int, str, str]:
        # Terminal IPython names a cell "<ipython-input-12-3f2a…>": the execution count changes
        # when the cell is re-run, the hash of its text does not (ipykernel uses the hash only).
        # Closures over different functions are different functions (Keras's train vs test).
        # A named function keys by its code's own qualname and its owner: another Keras model's
        # train step is another piece of work, not a new object of this one.
        filename = _IPYTHON_INPUT.sub("<ipython-input-", info.filename)
        return (filename, info.origin or info.label, info.firstlineno, info.closure, info.owner)


class NotedGraph:
    """What explaining a new graph needs that cannot be read later, noted when it is traced:
    the function's info then, the history's graphs of earlier objects of its code then, whether
    its cell was re-run, a Keras model's compile settings. The reasons are built from it when
    someone reads them (:func:`explain_noted`: a live line written, the report built), outside
    every call's span: a watched loop that retraces pays only for the note."""

    __slots__ = ("call_sig", "compiled", "earlier_objects", "graph", "info", "other_variables", "rerun", "state")

    def __init__(
        self,
        state: FunctionState,
        graph: GraphState,
        call_sig: Signature | None,
        info: tfa.FunctionInfo,
        earlier_objects: list[Signature],
        rerun: bool,
        compiled: tuple[dict[str, str] | None, dict[str, str] | None],
        other_variables: bool = False,
    ) -> None:
        self.state = state
        self.graph = graph
        self.call_sig = call_sig
        self.info = info
        self.earlier_objects = earlier_objects
        self.rerun = rerun
        self.compiled = compiled
        # a new object's first graph reads other tf.Variables than the earlier object's
        self.other_variables = other_variables


def note_new_graph(
    history: History, state: FunctionState, graph: GraphState, call_sig: Signature | None
) -> NotedGraph:
    """Note ``graph``, new in ``state``'s cache, at trace time: the history's bookkeeping (in
    trace order), ``graph.retrace`` (from the trace's kind alone, :func:`explain.trace.trace_kind`,
    the first code the reasons will have), the function's Python flags and the tf.Variables
    its graph reads (a new object reading others' is no hoisting case). No signature diff, no
    reason text, no fingerprint: :func:`explain_noted` reads them later (and
    :func:`keep_fingerprints` before the graphs go)."""
    earlier = state.graph_list[: graph.seq]  # seq: its place in graph_list, which only grows
    code_key = history.state_key(state)
    objects_before = history.objects_per_code.get(code_key, 0)
    rerun = False
    compiled: tuple[dict[str, str] | None, dict[str, str] | None] = (None, None)
    if not earlier:  # the first graph of this function object
        history.objects_per_code[code_key] = objects_before + 1
        rerun = history.cell_rerun(code_key, state)
        if state.info.owner and state.info.role:  # a Keras model's step: what it is compiled with
            settings = compile_settings(state.ref())
            compiled = (history.compiles.get(code_key), settings)
            history.compiles[code_key] = settings
    other_objects = history.last_graphs.get(code_key, [])
    earlier_objects = other_objects if objects_before else []
    history.last_graphs[code_key] = ([*other_objects, graph.signature])[-_KEPT_SIGNATURES:]
    other_variables = False
    if not earlier:  # an object's first graph against the earlier object's first graph
        before_vars = history.variables.get(code_key)
        cf = graph.cf_ref() if graph.cf_ref is not None else None
        now_vars = tfa.graph_variables(cf) if cf is not None else None
        if now_vars is not None:
            history.variables[code_key] = now_vars
        other_variables = (
            bool(objects_before)
            and before_vars is not None
            and now_vars is not None
            and not _same_variables(before_vars, now_vars)
        )
    first = trace_kind(
        bool(earlier), [g.scope for g in earlier], graph.scope, bool(earlier_objects), state.info.kind
    )
    graph.retrace = is_retrace([first or ReasonCode.UNEXPLAINED])  # decided here, once (counts.py)
    # No fingerprint here: it is read when the reasons are (a wasted retrace compares them),
    # or by keep_fingerprints when the function object dies, while its graphs still live.
    flags = _python_flags(graph.signature)
    if flags and flags != state.info.python_flags:
        fn = state.ref()
        if fn is not None and tfa.needs_python_training(fn):
            state.info = replace(state.info, python_flags=flags)
    return NotedGraph(state, graph, call_sig, state.info, earlier_objects, rerun, compiled, other_variables)


def explain_new_graph(
    history: History, state: FunctionState, graph: GraphState, call_sig: Signature | None
) -> tuple[Reason, ...]:
    """The reasons for ``graph``, new in ``state``'s cache, at once: :func:`note_new_graph`
    then :func:`explain_noted`."""
    return explain_noted(note_new_graph(history, state, graph, call_sig))


def explain_notes(notes: tuple[NotedGraph, ...], failure: tuple[str, str] | None = None) -> tuple[Reason, ...]:
    """The reasons of a record: each noted graph's, then why its trace failed (``failure``:
    the error's text and the function's label), as the record's ``explain``."""
    reasons: list[Reason] = []
    for noted in notes:
        reasons.extend(explain_noted(noted))
    if failure is not None:
        reasons.extend(explain_failure(*failure))
    return tuple(reasons)


def explain_noted(noted: NotedGraph) -> tuple[Reason, ...]:
    """The reasons for a noted graph: the diff against the graphs its function held when it was
    traced (its graph list only grows), the wasted-retrace search and the fixes at the level of
    Keras's steps. Pure over the note; called when the reasons are first read."""
    state, graph, call_sig, info = noted.state, noted.graph, noted.call_sig, noted.info
    earlier = state.graph_list[: graph.seq]
    reasons = explain_trace(
        new=graph.signature,
        call=call_sig,
        cached=[g.signature for g in earlier],
        cached_scopes=[g.scope for g in earlier],
        scope=graph.scope,
        other_objects=noted.earlier_objects,
        reduce_retracing=info.reduce_retracing,
        qualname=info.qualname,
        label=info.label,
        kind=info.kind,
        cell_rerun=noted.rerun,
    )
    if noted.other_variables:  # a new object whose graph reads other tf.Variables
        reasons = [reads_other_variables(r, info.label or info.qualname) for r in reasons]
    if any(r.code == ReasonCode.PYTHON_VALUE_CHANGED for r in reasons):
        reasons = _mark_wasted(graph, earlier, reasons)
    if state.self_nested:  # it called itself while traced: a tensor argument would recurse forever
        driving = recursion_paths(state)
        reasons = [recursion_reason(r, info.label or info.qualname) if r.argument in driving else r for r in reasons]
    if info.python_flags:  # they reach Keras 3 layers: no fix makes them tensors
        reasons = [keras_flag_reason(r, info.python_flags, code_name(info.qualname)) for r in reasons]
    if info.role:  # Keras's step, named by TraceCallback: fixes at the user's level
        generalised = call_sig is not None and call_sig.leaves != graph.signature.leaves
        reasons = [keras_reason(r, info.role, generalised) for r in reasons]
    if info.framework and _KERAS_DIR in info.filename:
        owned = bool(info.owner)
        reasons = [
            (recompile_reason(r, *noted.compiled, info.role) if owned else _keras_rebuilt(r))
            if r.code == ReasonCode.NEW_FUNCTION_OBJECT
            else r
            for r in reasons
        ]
    return tuple(reasons)


def recursion_paths(state: FunctionState) -> set[str]:
    """The Python arguments that drive a function's recursion: those whose value differs
    between a graph traced inside its own trace and the graph traced next (the trace around it,
    or the next one down), as ``n`` does in ``recursive_fn(n - 1)`` and a learning rate passed
    down unchanged does not. Read when the reasons are built: after the outermost call."""
    graphs = state.graph_list
    paths: set[str] = set()
    for seq in state.self_nested:
        if seq + 1 >= len(graphs):
            continue
        inner, after = graphs[seq].signature.by_path(), graphs[seq + 1].signature.by_path()
        paths.update(
            path
            for path, leaf in inner.items()
            if leaf.kind == "python" and (path not in after or after[path].value != leaf.value)
        )
    return paths


_KERAS_DIR = f"{os.sep}keras{os.sep}"


def _same_variables(before: tuple[object, ...], now: tuple[object, ...]) -> bool:
    """The same live tf.Variables (compared by identity; a dead one is not among ``now``)."""
    old = [ref() for ref in before]  # type: ignore[operator]
    new = [ref() for ref in now]  # type: ignore[operator]
    if any(v is None for v in old) or any(v is None for v in new):
        return False
    return {id(v) for v in old} == {id(v) for v in new}


def _python_flags(signature: Signature) -> tuple[str, ...]:
    """The parameters passed as Python bools (mode flags such as ``training``)."""
    return tuple(
        leaf.path
        for leaf in signature.leaves
        if leaf.kind == "python" and leaf.type_name == "bool" and parent_path(leaf.path) is None
    )


def _keras_rebuilt(reason: Reason) -> Reason:
    """A new object of Keras's own train/test/predict function whose model is not known.

    Keras 3 (3.0-3.15) drops ``train_function``, ``test_function`` and ``predict_function`` in
    ``compile()`` (keras/src/trainers/trainer.py) and builds each model's own on first use, so
    a new object means the model was compiled again, or it is another model. A function keyed
    by its model (named for the user) gets ``explain.keras_fixes.recompile_reason`` instead.
    """
    return replace(
        reason,
        message="Keras built this function anew: model.compile() ran again (each compile() drops "
        "the model's train, test and predict functions) or this is another model (each model "
        "traces its own once); the new function object starts with an empty cache",
        fix="expected for another model, and for a recompile that changed what Keras trains with "
        "(trainable weights, loss, metrics, the optimizer; it also resets the optimizer's state); "
        "if the recompile changed only the learning rate, assign it instead: "
        "model.optimizer.learning_rate.assign(new_lr)",
        plans=(),
    )


def _mark_wasted(graph: GraphState, earlier: list[GraphState], reasons: list[Reason]) -> list[Reason]:
    """A retrace for a new Python value whose graph equals a cached one but for constants
    (``num_steps=10`` then ``20`` with ``tf.range``) is waste: say so."""
    mine = _fingerprint(graph)
    if mine is None:
        return reasons
    for other in reversed(earlier):
        if _fingerprint(other) == mine:
            graph.wasted_of = other.seq
            return mark_wasted(reasons, other.seq)
    return reasons


def keep_fingerprints(state: FunctionState) -> None:
    """Read the fingerprints a wasted-retrace search may compare (its graphs with a Python value
    in their key) before they go: called when ``state``'s function object is collected.

    A fingerprint is read when the reasons are built, not when the graph is traced: on the
    trace path it cost ~50 µs a graph (the graph's ops read cold, TF 2.21), ~15% of the watch's
    work in a loop retracing on a Python float; read together later, a third of that. The
    graphs live as long as their function: TF's cache never drops one (TF 2.15-2.21), and
    CPython calls a weak reference's callback before it clears the object's attributes, so the
    graphs are still readable here when the function is freed by its reference count (as a
    ``tf.function`` is: checked with TF 2.21). One freed in a reference cycle by the garbage
    collector has its graphs' weak references cleared first: their retraces are then never
    called wasted (said only when seen, never guessed)."""
    for graph in state.graph_list:
        if graph.fingerprint is NOT_READ and any(leaf.kind == "python" for leaf in graph.signature.leaves):
            _fingerprint(graph)


def _fingerprint(graph: GraphState) -> int | None:
    """The graph's fingerprint, read once per graph (a loop's n-th retrace on a Python value
    compares with up to n graphs before it); None when its concrete function is gone."""
    if graph.fingerprint is NOT_READ:
        cf = graph.cf_ref() if graph.cf_ref is not None else None
        if cf is None:
            return None  # not kept: a graph never comes back
        ops = tfa.graph_fingerprint(cf)
        inputs = tuple(
            (leaf.path, leaf.dtype, leaf.shape) for leaf in graph.signature.leaves if leaf.kind == "tensor"
        )
        # the graph's ops, and the shapes of its inputs (of another shape: not "the same graph")
        graph.fingerprint = None if ops is None else hash((ops, inputs))
    return graph.fingerprint  # type: ignore[no-any-return]
