"""Why did this trace happen? Pure signature diffs → reasons with a message and a fix.

Input is plain data (:class:`~tfgraph_lab.model.signatures.Signature`): the new graph's signature, the
call's own signature when ``reduce_retracing`` relaxed it, and the signatures already cached
for the same function object. Output is a list of :class:`~tfgraph_lab.model.records.Reason` with the
stable codes of docs/ARCHITECTURE.md. No TensorFlow, no IPython: table-driven tests cover it directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from ..model.counts import NOT_RETRACES
from ..model.records import FixPlan, Reason
from ..model.signatures import ArgLeaf, Signature, is_under, parent_path, stable_text
from ..model.vocab import ReasonCode, Scope
from .arguments import (
    argument_added_or_removed,
    composite_changed,
    object_changed,
    python_value_changed,
    structure_changed,
    tensor_changed,
    tensor_differs,
    type_changed,
    variable_changed,
)
from .fixes import code_name, input_signature_plan
from .folds import PrefixFolds

__all__ = [
    "CODES",
    "NOT_RETRACES",
    "explain_trace",
    "mark_wasted",
    "reads_other_variables",
    "trace_kind",
]

CODES = tuple(ReasonCode)  # in the order of docs/ARCHITECTURE.md's table

# Codes of traces that are not retraces (every function object traces once, and a first call
# that creates variables traces a second time): defined with the other counts, in counts.py.


def explain_trace(
    new: Signature,
    cached: Sequence[Signature] = (),
    *,
    call: Signature | None = None,
    cached_scopes: Sequence[str] = (),
    scope: str = Scope.NONE,
    other_objects: Sequence[Signature] = (),
    reduce_retracing: bool = False,
    qualname: str = "",
    kind: str = "function",
    cell_rerun: bool = False,
    label: str = "",
) -> list[Reason]:
    """Explain one new graph against the graphs cached before it (same function object); the
    reasons' texts name objects without their memory address (:func:`stable_text`).

    ``kind`` is ``method`` for the per-instance function TF makes for a decorated method,
    ``restored`` for a SavedModel-restored function, ``tf.data`` for a dataset transformation.
    ``cell_rerun``: the new object comes from a notebook cell that defined the function again.
    ``qualname`` is the function's Python qualname (a fix's code calls it by its last part);
    ``label`` the name the report shows ("tf.data wrapper around preprocess"; default: the
    qualname), used in the reasons' words only.
    """
    reasons = _explain(
        new, cached, call, cached_scopes, scope, other_objects, reduce_retracing, qualname, kind, cell_rerun,
        label or qualname,
    )
    return [_stable(r) for r in reasons]


def _stable(r: Reason) -> Reason:
    texts = (r.before, r.after, r.message, r.fix)
    if not any(" at 0x" in t for t in texts):
        return r
    before, after, message, fix = (stable_text(t) for t in texts)
    return replace(r, before=before, after=after, message=message, fix=fix)


def _explain(
    new: Signature,
    cached: Sequence[Signature],
    call: Signature | None,
    cached_scopes: Sequence[str],
    scope: str,
    other_objects: Sequence[Signature],
    reduce_retracing: bool,
    qualname: str,
    kind: str,
    cell_rerun: bool,
    label: str,
) -> list[Reason]:
    seen = call if call is not None else new
    name = code_name(qualname)
    first = trace_kind(bool(cached), cached_scopes, scope, bool(other_objects), kind)
    if not cached:
        if kind == "method" and other_objects:
            return [
                Reason(
                    ReasonCode.FIRST_TRACE,
                    message=f"first call on a new instance: {label} gets one tf.function "
                    "(and one graph cache) per instance, so each instance traces once — expected",
                    fix="nothing to fix per instance; if instances are created in a loop, reuse one",
                )
            ]
        if first == ReasonCode.NEW_FUNCTION_OBJECT:
            if cell_rerun:
                return [_cell_rerun(label)]
            return [_new_function_object(label, name, len(other_objects))]
        what = {
            "restored": "a SavedModel-restored function: this trace only wraps the saved graph "
            "(cheap), once per new input signature",
            "tf.data": "a tf.data transformation function: traced once when the dataset is built",
        }.get(kind, "first call of this tf.function object")
        around = _around(label)
        if around is not None:
            what = around
        return [Reason(ReasonCode.FIRST_TRACE, message=f"{what}: traced a graph for {new.text or '()'}")]
    scopes = list(cached_scopes) or [Scope.NONE] * len(cached)
    same_scope = [s for s, sc in zip(cached, scopes) if sc == scope]
    if first == ReasonCode.VARIABLE_CREATION:
        # TF traces a stateful function's first call twice: once allowing variable creation,
        # then (because variables were created) once more without (polymorphic_function.py,
        # Function._call, TF 2.15-2.21).
        return [
            Reason(
                ReasonCode.VARIABLE_CREATION,
                message="the first call created tf.Variables, so TensorFlow traced it a second "
                "time with variable creation disabled; this happens once per function object",
                fix="nothing to fix: it is a one-off. To avoid it, create the variables in "
                "__init__ (or a Keras layer's build) before the first call",
            )
        ]
    candidates = same_scope or list(cached)
    best_against: Signature | None = None
    best_rank: tuple[int, int, int] | None = None
    # Which cached graph to explain against is decided by the reasons' codes and the distance
    # alone: the candidates are ranked on the codes _diff would give (_diff_codes: no reason's
    # texts, no fix plans, which count graphs over the whole history), and the reasons are
    # built once, for the graph chosen. A loop's n-th retrace would rank n graphs: the scan
    # stops at a graph one change away (rank (0, 1, 1), the least a graph with a reason can
    # have) unless an older graph could still have no reason at all (:func:`_code_free_key`).
    alike = seen.derived("code_free_key", _code_free_key)
    for i, against in enumerate(reversed(candidates)):  # ties go to the most recent graph
        codes = _diff_codes(against, seen)
        rank = (*_rank_codes(codes), _distance(against, seen))
        if best_rank is None or rank < best_rank:
            best_against, best_rank = against, rank
        if best_rank == _ONE_CHANGE and not _older_may_have_no_reason(candidates[: len(candidates) - 1 - i], alike):
            break
    assert best_against is not None and best_rank is not None
    best = _diff(best_against, seen, history=list(cached) + [seen], name=name) if best_rank[1] else []
    if not best:
        return [_context_changed(best_against, new)]
    if reduce_retracing and call is not None and call.leaves != new.leaves:
        best = [_generalised(r, call, new, list(cached) + [new], name) for r in best]
    if {Scope.VARIABLE_CREATION, Scope.NONE} <= {*scopes, scope}:
        # both scopes hold graphs: the first call created variables and traced twice
        best = [_with_one_off(r) for r in best]
    return best


def trace_kind(
    has_cached: bool, cached_scopes: Sequence[str], scope: str, has_other_objects: bool, kind: str
) -> ReasonCode | None:
    """The first reason code of a trace when the kind of trace alone decides it, else None (the
    signature diff decides, and it is a retrace: :data:`NOT_RETRACES` holds neither of its codes).
    Cheap, and the one rule :func:`explain_trace` branches on: the recording decides whether a
    graph is a retrace from it when the graph is traced, and builds the reasons later.
    ``cached_scopes``: the scopes of the cached graphs (empty: all ``Scope.NONE``)."""
    if not has_cached:
        if kind == "method" and has_other_objects:
            return ReasonCode.FIRST_TRACE  # a new instance's own function
        if has_other_objects and kind not in ("tf.data", "restored"):
            return ReasonCode.NEW_FUNCTION_OBJECT
        return ReasonCode.FIRST_TRACE
    if scope != Scope.NONE or Scope.NONE in cached_scopes or not cached_scopes:
        return None
    if any(sc == Scope.VARIABLE_CREATION for sc in cached_scopes):
        # TF traces a stateful function's first call twice: once allowing variable creation,
        # then (because variables were created) once more without
        return ReasonCode.VARIABLE_CREATION
    return None


def _with_one_off(reason: Reason) -> Reason:
    """A function whose first call created variables keeps one more graph whatever the fix."""
    if not reason.plans:
        return reason
    plans = tuple(replace(p, graphs=p.graphs + 1) for p in reason.plans)
    fix = reason.fix + " (plus the one-off second trace of the first call, which created variables)"
    return replace(reason, fix=fix, plans=plans)


_ONE_CHANGE = (0, 1, 1)  # no structural change, one reason, one attribute of one leaf


_Key = frozenset[tuple[str | tuple[int | None, ...] | None, ...]]


def _code_free_key(sig: Signature) -> tuple[_Key, _Key | None]:
    """What :func:`_changes` compares of each leaf: two signatures it finds no change between
    have equal first keys. A tensor's shape is in the second key only, None when a shape is not
    fully known: shapes with a None dimension are compatible with others (no change) without
    being equal. Two signatures may have no reason between them only when their first keys are
    equal and their second keys are equal or either is None (:func:`_older_may_have_no_reason`)."""
    loose = frozenset(
        (leaf.path, leaf.kind, leaf.dtype)
        if leaf.kind == "tensor"
        else (leaf.path, leaf.kind, leaf.dtype, leaf.shape, leaf.value)
        if leaf.kind == "variable"
        else (leaf.path, leaf.kind, leaf.value)
        if leaf.kind not in ("python", "object", "container", "composite")
        else (leaf.path, leaf.kind, leaf.type_name, leaf.value)
        for leaf in sig.leaves
    )
    tensors = [leaf for leaf in sig.leaves if leaf.kind == "tensor"]
    if any(leaf.shape is None or None in leaf.shape for leaf in tensors):
        return loose, None
    return loose, frozenset((leaf.path, leaf.shape) for leaf in tensors)


class _KeysSeen(NamedTuple):
    """The :func:`_code_free_key` of a history's graphs, as :func:`_older_may_have_no_reason`
    asks of them: every first key, those seen with a shape not fully known, and the pairs."""

    loose: set[_Key]
    vague: set[_Key]
    pairs: set[tuple[_Key, _Key]]


def _add_keys(seen: _KeysSeen, sig: Signature) -> None:
    loose, strict = sig.derived("code_free_key", _code_free_key)
    seen.loose.add(loose)
    if strict is None:
        seen.vague.add(loose)
    else:
        seen.pairs.add((loose, strict))


_OLDER_KEYS: PrefixFolds[_KeysSeen] = PrefixFolds(
    lambda: _KeysSeen(set(), set(), set()),
    _add_keys,
    lambda seen: _KeysSeen(set(seen.loose), set(seen.vague), set(seen.pairs)),
)


def _older_may_have_no_reason(older: Sequence[Signature], alike: tuple[_Key, _Key | None]) -> bool:
    """Whether any of ``older`` may have no reason against the call whose key is ``alike``
    (:func:`_code_free_key`: equal first keys, second keys equal or either None), read from
    the keys of the graphs before (a loop's n-th retrace asks it of the n-1 graphs before the
    last, the (n-1)-th's history: :class:`~tfgraph_lab.explain.folds.PrefixFolds`)."""
    seen = _OLDER_KEYS.over(older)
    loose, strict = alike
    return loose in seen.vague or (strict is None and loose in seen.loose) or (loose, strict) in seen.pairs


def _rank_codes(codes: Sequence[str]) -> tuple[int, int]:
    """How bad a diff is: its structural changes, then its number of reasons."""
    structural = sum(c in (ReasonCode.STRUCTURE_CHANGED, ReasonCode.TYPE_CHANGED) for c in codes)
    return (structural, len(codes))


def _distance(a: Signature, b: Signature) -> int:
    """How many leaf attributes differ: the closest cached graph is the one to explain against."""
    old, new = a.by_path(), b.by_path()
    total = 0
    for path in old.keys() | new.keys():
        x, y = old.get(path), new.get(path)
        if x is None or y is None:
            total += 2
            continue
        total += sum(
            (
                x.kind != y.kind,
                x.type_name != y.type_name,
                x.dtype != y.dtype,
                (x.shape is None) != (y.shape is None) or len(x.shape or ()) != len(y.shape or ()),
                x.shape != y.shape,
                x.value != y.value,
            )
        )
    return total


def _around(label: str) -> str | None:
    """The first-trace text of a graph TF builds around a user's tf.function, else None."""
    for prefix, text in (
        (
            "tf.data wrapper around ",
            "tf.data built its own graph around the tf.function {0} when the dataset was built "
            "(it calls {0}, whose own graphs and trace count are separate)",
        ),
        (
            "replica clone of ",
            "MirroredStrategy runs the tf.function {0} through a copy of it for the replicas; "
            "TensorFlow counts this trace on the copy, not on {0}",
        ),
    ):
        if label.startswith(prefix):
            return text.format(label[len(prefix) :])
    return None


def _new_function_object(label: str, code: str, previous: int) -> Reason:
    """``label`` names the function in words, ``code`` in the fix's code."""
    name = label or "this function"
    plan = FixPlan(
        hoist=True,
        graphs=1,
        promise="one trace per distinct argument signature, instead of one per object",
    )
    return Reason(
        ReasonCode.NEW_FUNCTION_OBJECT,
        argument="",
        before=f"{previous} earlier tf.function object(s)",
        after="a new tf.function object",
        message=f"a new tf.function object wraps {name}, which another object already traced: "
        "its cache starts empty (tf.function(...) re-created in a loop, or a re-run cell)",
        fix="create the tf.function once and reuse it (or move the @tf.function definition "
        f"out of the loop or the cell that runs repeatedly): {plan.text(code)}",
        plans=(plan,),
    )


def reads_other_variables(reason: Reason, label: str) -> Reason:
    """A new tf.function object whose graph reads other tf.Variables than the earlier object's
    (``@tf.function def serve(x): return model(x)`` defined in a loop over fresh models): a graph
    keeps the variables it captured when it was traced, so one tf.function made once would keep
    computing with the first object's variables — the outputs change, silently. Expected: one
    graph per set of variables; no "create it once" fix (measured, TF 2.21: three fresh models,
    the hoisted function returned the first model's outputs for all three)."""
    if reason.code != ReasonCode.NEW_FUNCTION_OBJECT or not any(p.hoist for p in reason.plans):
        return reason
    name = label or "this function"
    return Reason(
        reason.code,
        argument="",
        before=reason.before,
        after="a new tf.function object that reads other tf.Variables",
        message=f"a new tf.function object wraps {name}, and its graph reads other tf.Variables than "
        "the earlier object's (another model or layer): expected, each set of variables needs its "
        "own graph",
        fix="nothing to fix: keep one tf.function per model; creating it once would not save the "
        "trace but break the results (a graph keeps the variables it was traced with, so every "
        "call would compute with the first model's)",
    )


def _cell_rerun(label: str) -> Reason:
    """Running a cell again runs its ``@tf.function`` definition again: a new object, an empty
    cache (TF 2.21 keys the cache on the object). Expected, once per re-run; nothing to hoist."""
    name = label or "this function"
    return Reason(
        ReasonCode.NEW_FUNCTION_OBJECT,
        argument="",
        before="the tf.function the cell made when it ran before",
        after="a new tf.function object",
        message=f"re-running the cell that defines {name} made a new tf.function, whose cache starts "
        "empty: expected, once per re-run of that cell",
        fix="nothing to fix; to keep the graphs, run the defining cell once and re-run only the "
        "cells that call it",
    )


def _context_changed(before: Signature, after: Signature) -> Reason:
    if before.context and after.context and before.context != after.context:
        detail = f"the calling context changed: {before.context} → {after.context}"
    else:
        detail = "the arguments match a cached graph but the calling context differs"
    return Reason(
        ReasonCode.CONTEXT_CHANGED,
        argument="",
        before=before.context,
        after=after.context,
        message=detail + " (TensorFlow keys its cache on the outer graph, device and "
        "replica context, and SavedModel saving, besides the arguments)",
        fix="expected when the same function is called eagerly and from inside another "
        "tf.function, under a distribution strategy, or while saving; call it from one place",
    )


def _generalised(
    reason: Reason, call: Signature, new: Signature, history: Sequence[Signature], name: str
) -> Reason:
    if reason.code not in (ReasonCode.SHAPE_CHANGED, ReasonCode.RANK_CHANGED):
        return reason
    graph_leaf = new.by_path().get(reason.argument)
    if graph_leaf is None:
        return reason
    signature = input_signature_plan(history)
    fix = "nothing more to do: reduce_retracing already relaxed the shape"
    if signature is not None:
        fix += f"; to avoid even this one retrace, replace it with {signature.text(name)}"
    return Reason(
        reason.code,
        reason.argument,
        reason.before,
        reason.after,
        reason.message + f"; reduce_retracing generalised it to {_relaxed_text(graph_leaf)}, so "
        "later calls with other sizes reuse this graph",
        fix,
        plans=(signature,) if signature is not None else (),
    )


def _relaxed_text(leaf: ArgLeaf) -> str:
    """A relaxed graph's leaf as the reason's before and after read: a tensor's shape, a
    composite's type spec (a dataset iterator's ``IteratorSpec(TensorSpec(shape=(None, 2)…``;
    it has no shape of its own, and read "<unknown>")."""
    if leaf.kind in ("tensor", "variable"):
        return leaf.shape_text
    return leaf.value or leaf.type_name


# A change that explains a whole subtree: the leaves under its path are not compared.
_BREAKS = (ReasonCode.STRUCTURE_CHANGED, ReasonCode.TYPE_CHANGED, ReasonCode.OBJECT_CHANGED)


def _diff(before: Signature, after: Signature, history: Sequence[Signature], name: str = "f") -> list[Reason]:
    reasons: list[Reason] = []
    for path, prev, leaf, change in _changes(before, after):
        if prev is None or leaf is None:
            reasons.append(argument_added_or_removed(path, prev, leaf))
        else:
            reasons.append(_compare(path, prev, leaf, change, history, name))
    return reasons


def _diff_codes(before: Signature, after: Signature) -> list[str]:
    """What :func:`_diff` explains, as one code per reason, without building the reasons (the
    code of a tensor's, a composite's or an object's change is its kind: enough to rank)."""
    return [change for _, _, _, change in _changes(before, after)]


def _changes(before: Signature, after: Signature) -> list[tuple[str, ArgLeaf | None, ArgLeaf | None, str]]:
    """The changes :func:`_diff` explains, in its order: (path, before's leaf, after's leaf,
    change), a leaf None for an argument added or removed."""
    old = before.by_path()
    new = after.by_path()
    out: list[tuple[str, ArgLeaf | None, ArgLeaf | None, str]] = []
    broken: list[str] = []  # paths whose subtree is already explained
    for path, leaf in new.items():
        if broken and any(is_under(path, b) for b in broken):
            continue
        prev = old.get(path)
        if prev is None:
            if parent_path(path) is None:
                out.append((path, None, leaf, ReasonCode.STRUCTURE_CHANGED))
                broken.append(path)
            continue
        change = _change(prev, leaf)
        if change is not None:
            out.append((path, prev, leaf, change))
            if change in _BREAKS:
                broken.append(path)
    for path, prev in old.items():
        if path not in new and parent_path(path) is None:
            out.append((path, prev, None, ReasonCode.STRUCTURE_CHANGED))
    return out


def _change(prev: ArgLeaf, leaf: ArgLeaf) -> str | None:
    """Which change of one leaf :func:`_compare` explains, or None: the code of its reason
    for a type, structure, Python value or variable change; ``tensor``, ``composite`` or
    ``object`` for the others (their builders choose the exact code, never a breaking one but
    an object's)."""
    # Two Python values of different types (None → True, 1 → 0.5) are two values to TF: each
    # is a Literal, keyed by value (TF 2.21 default_types.Literal: Literal(1) == Literal(1.0),
    # a hit), so the change is a value's, and the fix is one for values, not for kinds.
    if prev.kind != leaf.kind or (prev.kind == "composite" and prev.type_name != leaf.type_name):
        return ReasonCode.TYPE_CHANGED
    if leaf.kind == "tensor":
        return "tensor" if tensor_differs(prev, leaf) else None
    if leaf.kind == "python":
        return ReasonCode.PYTHON_VALUE_CHANGED if prev.value != leaf.value else None
    if leaf.kind == "variable":
        differs = (prev.dtype, prev.shape, prev.value) != (leaf.dtype, leaf.shape, leaf.value)
        return ReasonCode.VARIABLE_CHANGED if differs else None
    if leaf.kind == "object":
        differs = prev.value != leaf.value or prev.type_name != leaf.type_name
        return ReasonCode.OBJECT_CHANGED if differs else None
    if leaf.kind == "container":
        if prev.type_name != leaf.type_name:
            return ReasonCode.TYPE_CHANGED
        return ReasonCode.STRUCTURE_CHANGED if prev.value != leaf.value else None
    return "composite" if prev.value != leaf.value else None


def _compare(
    path: str, prev: ArgLeaf, leaf: ArgLeaf, change: str, history: Sequence[Signature], name: str = "f"
) -> Reason:
    """The reason for one leaf's ``change`` (:func:`_change`)."""
    if change == ReasonCode.TYPE_CHANGED:
        return type_changed(path, prev, leaf, history, name)
    if change == "tensor":
        reason = tensor_changed(path, prev, leaf, history, name)
        assert reason is not None  # tensor_differs said so
        return reason
    if change == ReasonCode.PYTHON_VALUE_CHANGED:
        return python_value_changed(path, prev, leaf, history, name)
    if change == ReasonCode.VARIABLE_CHANGED:
        return variable_changed(path, prev, leaf, history, name)
    if change == ReasonCode.OBJECT_CHANGED:
        return object_changed(path, prev, leaf)
    if change == ReasonCode.STRUCTURE_CHANGED:
        return structure_changed(path, prev, leaf, history, name)
    return composite_changed(path, prev, leaf)


def mark_wasted(reasons: Sequence[Reason], graph_index: int) -> list[Reason]:
    """Say that a python-value retrace built a graph identical to a cached one but for constants."""
    out = []
    for r in reasons:
        if r.code == ReasonCode.PYTHON_VALUE_CHANGED:
            r = replace(
                r,
                message=r.message + f" — a wasted retrace: the new graph is the same as graph "
                f"#{graph_index} except for constants",
            )
        out.append(r)
    return out
