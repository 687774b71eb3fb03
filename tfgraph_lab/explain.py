"""Why did this trace happen? Pure signature diffs → reasons with a message and a fix.

Input is plain data (:class:`~tfgraph_lab.datatypes.Signature`): the new graph's signature, the
call's own signature when ``reduce_retracing`` relaxed it, and the signatures already cached
for the same function object. Output is a list of :class:`~tfgraph_lab.datatypes.Reason` with the
stable codes of docs/ARCHITECTURE.md. No TensorFlow, no IPython: table-driven tests cover it directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .datatypes import ArgLeaf, FixPlan, Reason, Signature
from .fixes import (
    PYTHON_TENSOR_DTYPES,
    call_plan,
    graphs_with_reduce_retracing,
    input_signature_plan,
    reduce_retracing_plan,
    spec_for_shapes,
)

__all__ = [
    "CODES",
    "NOT_RETRACES",
    "explain_trace",
    "input_signature_text",
    "mark_wasted",
]

CODES = (
    "first-trace",
    "new-function-object",
    "variable-creation",
    "python-value-changed",
    "type-changed",
    "dtype-changed",
    "shape-changed",
    "rank-changed",
    "structure-changed",
    "object-changed",
    "variable-changed",
    "context-changed",
    "unexplained",
)

#: Codes of traces that are not retraces: every function object traces once, and a first call
#: that creates variables traces a second time (see :func:`explain_trace`).
NOT_RETRACES = ("first-trace", "variable-creation")

_KIND_WORDS = {
    "tensor": "Tensor",
    "python": "Python value",
    "variable": "tf.Variable",
    "object": "Python object",
    "container": "container",
    "composite": "composite tensor",
    "other": "value",
}


def explain_trace(
    new: Signature,
    cached: Sequence[Signature] = (),
    *,
    call: Signature | None = None,
    cached_scopes: Sequence[str] = (),
    scope: str = "",
    other_objects: Sequence[Signature] = (),
    reduce_retracing: bool = False,
    qualname: str = "",
    kind: str = "function",
) -> list[Reason]:
    """Explain one new graph against the graphs cached before it (same function object).

    ``kind`` is ``method`` for the per-instance function TF makes for a decorated method,
    ``restored`` for a SavedModel-restored function, ``tf.data`` for a dataset transformation.
    """
    seen = call if call is not None else new
    name = _short(qualname)
    if not cached:
        if kind == "method" and other_objects:
            return [
                Reason(
                    "first-trace",
                    message=f"first call on a new instance: {qualname} gets one tf.function "
                    "(and one graph cache) per instance, so each instance traces once — expected",
                    fix="nothing to fix per instance; if instances are created in a loop, reuse one",
                )
            ]
        if other_objects and kind not in ("tf.data", "restored"):
            return [_new_function_object(qualname, len(other_objects))]
        what = {
            "restored": "a SavedModel-restored function: this trace only wraps the saved graph "
            "(cheap), once per new input signature",
            "tf.data": "a tf.data transformation function: traced once when the dataset is built",
        }.get(kind, "first call of this tf.function object")
        around = _around(qualname)
        if around is not None:
            what = around
        return [Reason("first-trace", message=f"{what}: traced a graph for {new.text or '()'}")]
    scopes = list(cached_scopes) or [""] * len(cached)
    same_scope = [s for s, sc in zip(cached, scopes) if sc == scope]
    if scope == "" and not same_scope and any(sc == "variable-creation" for sc in scopes):
        # TF traces a stateful function's first call twice: once allowing variable creation,
        # then (because variables were created) once more without (polymorphic_function.py,
        # Function._call, TF 2.15-2.21).
        return [
            Reason(
                "variable-creation",
                message="the first call created tf.Variables, so TensorFlow traced it a second "
                "time with variable creation disabled; this happens once per function object",
                fix="nothing to fix: it is a one-off. To avoid it, create the variables in "
                "__init__ (or a Keras layer's build) before the first call",
            )
        ]
    candidates = same_scope or list(cached)
    best: list[Reason] | None = None
    best_against: Signature | None = None
    best_rank: tuple[int, int, int] | None = None
    for against in reversed(candidates):  # ties go to the most recent graph
        reasons = _diff(against, seen, history=list(cached) + [seen], name=name)
        rank = (*_rank(reasons), _distance(against, seen))
        if best_rank is None or rank < best_rank:
            best, best_against, best_rank = reasons, against, rank
    assert best is not None and best_against is not None
    if not best:
        return [_context_changed(best_against, new)]
    if reduce_retracing and call is not None and call.leaves != new.leaves:
        best = [_generalised(r, call, new, list(cached) + [new], name) for r in best]
    if {"variable-creation", ""} <= {*scopes, scope}:
        # both scopes hold graphs: the first call created variables and traced twice
        best = [_with_one_off(r) for r in best]
    return best


def _with_one_off(reason: Reason) -> Reason:
    """A function whose first call created variables keeps one more graph whatever the fix."""
    if not reason.plans:
        return reason
    plans = tuple(replace(p, graphs=p.graphs + 1) for p in reason.plans)
    fix = reason.fix + " (plus the one-off second trace of the first call, which created variables)"
    return replace(reason, fix=fix, plans=plans)


def _rank(reasons: list[Reason]) -> tuple[int, int]:
    structural = sum(r.code in ("structure-changed", "type-changed") for r in reasons)
    return (structural, len(reasons))


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


def _around(qualname: str) -> str | None:
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
        if qualname.startswith(prefix):
            return text.format(qualname[len(prefix) :])
    return None


def _short(qualname: str) -> str:
    short = qualname.rsplit(".", 1)[-1] if qualname else "f"
    return "f" if short in ("<lambda>", "") else short


def _new_function_object(qualname: str, previous: int) -> Reason:
    name = qualname or "this function"
    plan = FixPlan(
        hoist=True,
        graphs=1,
        promise="one trace per distinct argument signature, instead of one per object",
    )
    return Reason(
        "new-function-object",
        argument="",
        before=f"{previous} earlier tf.function object(s)",
        after="a new tf.function object",
        message=f"a new tf.function object wraps {name}, which another object already traced: "
        "its cache starts empty (tf.function(...) re-created in a loop, or a re-run cell)",
        fix="create the tf.function once and reuse it (or move the @tf.function definition "
        f"out of the loop or the cell that runs repeatedly): {plan.text(_short(qualname))}",
        plans=(plan,),
    )


def _context_changed(before: Signature, after: Signature) -> Reason:
    if before.context and after.context and before.context != after.context:
        detail = f"the calling context changed: {before.context} → {after.context}"
    else:
        detail = "the arguments match a cached graph but the calling context differs"
    return Reason(
        "context-changed",
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
    if reason.code not in ("shape-changed", "rank-changed"):
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
        reason.message + f"; reduce_retracing generalised it to {graph_leaf.shape_text}, so "
        "later calls with other sizes reuse this graph",
        fix,
        plans=(signature,) if signature is not None else (),
    )


def _diff(before: Signature, after: Signature, history: Sequence[Signature], name: str = "f") -> list[Reason]:
    old = before.by_path()
    new = after.by_path()
    reasons: list[Reason] = []
    broken: list[str] = []  # paths whose subtree is already explained
    for path, leaf in new.items():
        if any(_under(path, b) for b in broken):
            continue
        prev = old.get(path)
        if prev is None:
            if _parent(path) is None:
                reasons.append(_structure(path, None, leaf))
                broken.append(path)
            continue
        reason = _compare(path, prev, leaf, history, name)
        if reason is not None:
            reasons.append(reason)
            if reason.code in ("structure-changed", "type-changed", "object-changed"):
                broken.append(path)
    for path, prev in old.items():
        if path not in new and _parent(path) is None:
            reasons.append(_structure(path, prev, None))
    return reasons


def _parent(path: str) -> str | None:
    cut = max(path.rfind("["), path.rfind("."))
    return None if cut <= 0 else path[:cut]


def _under(path: str, root: str) -> bool:
    return path != root and path.startswith(root) and path[len(root)] in "[."


def _structure(path: str, before: ArgLeaf | None, after: ArgLeaf | None) -> Reason:
    b = "absent" if before is None else before.describe()
    a = "absent" if after is None else after.describe()
    return Reason(
        "structure-changed",
        path,
        b,
        a,
        f"argument `{path}` was {'added' if before is None else 'removed'}: the call's "
        "structure differs from every cached graph",
        "call the function with the same arguments every time (pass optional values "
        "explicitly, always as the same kind)",
    )


def _compare(
    path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str = "f"
) -> Reason | None:
    if prev.kind != leaf.kind or (prev.kind in ("python", "composite") and prev.type_name != leaf.type_name):
        return _type_changed(path, prev, leaf, history, name)
    if leaf.kind == "tensor":
        return _tensor(path, prev, leaf, history, name)
    if leaf.kind == "python":
        if prev.value != leaf.value:
            return _python_value(path, prev, leaf, history, name)
        return None
    if leaf.kind == "variable":
        if (prev.dtype, prev.shape, prev.value) != (leaf.dtype, leaf.shape, leaf.value):
            return Reason(
                "variable-changed",
                path,
                prev.describe() + (f" ({prev.value})" if prev.value else ""),
                leaf.describe() + (f" ({leaf.value})" if leaf.value else ""),
                f"`{path}` is a tf.Variable with a different shape, dtype or aliasing than any cached graph",
                "pass variables of one shape and dtype (and don't pass the same variable twice "
                "in one call); or read the value and pass a tensor",
            )
        return None
    if leaf.kind == "object":
        if prev.value != leaf.value or prev.type_name != leaf.type_name:
            gone = "the earlier object was garbage-collected; " if prev.value == "collected" else ""
            return Reason(
                "object-changed",
                path,
                f"{prev.type_name} object {prev.value}",
                f"{leaf.type_name} object {leaf.value}",
                f"`{path}` is a different Python object ({gone}TensorFlow keys plain objects by "
                "identity, so every new object means a new graph)",
                "pass the object's tensors instead, or bind it (make the tf.function a method "
                "of the object or a closure over it) so it is not an argument",
            )
        return None
    if leaf.kind == "container":
        if prev.type_name != leaf.type_name:
            return _type_changed(path, prev, leaf, history, name)
        if prev.value != leaf.value:
            return _structure_changed(path, prev, leaf, history, name)
        return None
    if prev.value != leaf.value:
        if _dtypes_in(prev.value) != _dtypes_in(leaf.value):
            code, fix = "dtype-changed", "keep its dtypes fixed (cast the values before calling)"
        else:
            code, fix = "shape-changed", "keep its shapes fixed, or use reduce_retracing=True"
        return Reason(
            code,
            path,
            prev.value or prev.type_name,
            leaf.value or leaf.type_name,
            f"`{path}` ({leaf.type_name}) has a different type spec than any cached graph",
            fix,
        )
    return None


def _structure_changed(
    path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str
) -> Reason:
    plans: tuple[FixPlan, ...] = ()
    fix = (
        "keep the container's length and keys fixed; for a varying number of items pass one "
        "tensor (tf.stack) or a tf.data.Dataset instead of a Python list"
    )
    stacked = _stacked_history(path, history) if _is_top(path) and leaf.type_name == "list" else None
    if stacked is not None:
        graphs = graphs_with_reduce_retracing(stacked)
        plan = FixPlan(
            decorator="reduce_retracing=True",
            call=((path, f"tf.stack({path})"),),
            graphs=graphs,
            promise=f"at most {graphs} graphs for the calls seen (the stacked tensor's first "
            "dimension varies, which reduce_retracing relaxes to None)",
            trade="the body then gets one tensor instead of a list: index it or reduce over "
            "axis 0 (tf.reduce_sum(..., axis=0)); a `for` over it becomes a tf.while_loop",
        )
        plans = (plan,)
        fix = f"pass one tensor instead of a Python list of varying length: {plan.text(name)}"
    return Reason(
        "structure-changed",
        path,
        prev.describe(),
        leaf.describe(),
        f"`{path}` changed structure ({prev.value} → {leaf.value}); every structure is "
        "a separate graph, and a Python list is unrolled into the graph",
        fix,
        plans=plans,
    )


def _stacked_history(path: str, history: Sequence[Signature]) -> list[Signature] | None:
    """The graphs seen, with the list ``path`` replaced by its tf.stack: None unless every item
    of every call is a tensor of one dtype and shape."""
    out = []
    for sig in history:
        items = [leaf for leaf in sig.leaves if leaf.path.startswith(path + "[")]
        if not items or any(i.kind != "tensor" or "[" in i.path[len(path) + 1 : -1] for i in items):
            return None
        if len({(i.dtype, i.shape) for i in items}) != 1 or items[0].shape is None:
            return None
        stacked = ArgLeaf(path, "tensor", "Tensor", items[0].dtype, (len(items), *items[0].shape))
        leaves = [stacked if x.path == path else x for x in sig.leaves if x not in items]
        out.append(Signature(tuple(leaves), sig.text, sig.context, sig.keyword_only))
    return out


def _is_top(path: str) -> bool:
    return "[" not in path and "." not in path


def _dtypes_in(text: str | None) -> list[str]:
    import re

    return re.findall(r"tf\.[a-z0-9_]+", text or "")


def _type_changed(path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str) -> Reason:
    before = f"{_KIND_WORDS.get(prev.kind, prev.kind)} ({prev.type_name})"
    after = f"{_KIND_WORDS.get(leaf.kind, leaf.kind)} ({leaf.type_name})"
    plans: tuple[FixPlan, ...] = ()
    if leaf.kind == "tensor" or prev.kind == "tensor":
        fix = (
            f"pass `{path}` as the same kind on every call: always a tensor "
            f"(tf.constant(...)) if it varies, always a Python value if it is a fixed setting"
        )
        tensor = leaf if leaf.kind == "tensor" else prev
        python = prev if leaf.kind == "tensor" else leaf
        if _is_top(path) and python.kind == "python" and python.type_name in PYTHON_TENSOR_DTYPES:
            dtype = tensor.dtype or PYTHON_TENSOR_DTYPES[python.type_name]

            def as_tensor(x: ArgLeaf) -> ArgLeaf:
                if x.path != path or x.kind != "python":
                    return x
                return ArgLeaf(path, "tensor", "Tensor", dtype, ())

            plan = call_plan(
                history,
                {path: f"tf.cast({path}, tf.{dtype})"},
                as_tensor,
                promise="",
            )
            plan = _promised(plan, "graph for the calls seen: one kind, one dtype")
            plans = (plan,)
            fix = f"pass `{path}` as the same kind on every call, always a {dtype} tensor: {plan.text(name)}"
    else:
        fix = f"pass `{path}` as the same kind of value on every call"
    return Reason(
        "type-changed",
        path,
        before,
        after,
        f"`{path}` changed kind: {before} → {after}",
        fix,
        plans=plans,
    )


def _promised(plan: FixPlan, what: str) -> FixPlan:
    graphs = plan.graphs
    words = what.replace("graph", "graphs", 1) if graphs != 1 else what
    return FixPlan(plan.decorator, plan.call, plan.hoist, graphs, f"{graphs} {words}", plan.trade, plan.note)


def _python_value(path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str) -> Reason:
    kind = leaf.type_name
    dtype = PYTHON_TENSOR_DTYPES.get(kind)
    plans: tuple[FixPlan, ...] = ()
    plan: FixPlan | None = None
    if dtype is not None and _is_top(path):

        def as_tensor(x: ArgLeaf) -> ArgLeaf:
            if x.path != path or x.kind != "python":
                return x
            return ArgLeaf(path, "tensor", "Tensor", dtype, ())

        trade = ""
        if kind == "int":
            trade = (
                f"tf.constant({path}) is an int32 tensor: where it meets float tensors, cast it "
                f"(tf.cast({path}, tf.float32)); `for i in range({path})` becomes a tf.while_loop"
            )
        plan = _promised(
            call_plan(history, {path: f"tf.constant({path})"}, as_tensor, promise="", trade=trade),
            "graph for the calls seen, whatever the value",
        )
        plans = (plan,)
    if kind == "bool":
        fix = "expected once per value for a mode flag"
        if plan is not None:
            fix += (
                f"; to share one graph: {plan.text(name)} — AutoGraph turns `if {path}:` on a "
                "tensor into tf.cond, so the graph holds both branches"
            )
    elif plan is not None:
        fix = (
            f"pass `{path}` as a tensor so one graph serves every value: {plan.text(name)}; "
            "where it drives control flow, AutoGraph turns `if`/`for range()` on a tensor "
            "into tf.cond/tf.while_loop"
        )
    else:
        fix = f"pass `{path}` as a tensor, or keep it fixed; every distinct Python value makes a new graph"
    return Reason(
        "python-value-changed",
        path,
        prev.value or "",
        leaf.value or "",
        f"`{path}` is a Python {kind} and its value changed ({prev.value} → {leaf.value}): "
        "TensorFlow bakes Python values into the graph, one graph per value",
        fix,
        plans=plans,
    )


def _tensor(
    path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str
) -> Reason | None:
    if prev.dtype != leaf.dtype:
        return _dtype_changed(path, prev, leaf, history, name)
    if prev.shape is None or leaf.shape is None:
        return None
    if _compatible(leaf.shape, prev.shape):
        return None
    signature = input_signature_plan(history)
    relax: FixPlan | None = reduce_retracing_plan(history)
    if relax is not None and relax.graphs >= len({sig.leaves for sig in history}):
        relax = None  # these calls differ in more than shapes: it would not save a trace
    plans = tuple(p for p in (signature, relax) if p is not None)
    if signature is not None and relax is not None:
        cure = (
            f"declare every argument, the varying dimensions as None: "
            f"{signature.text(name)}; or {relax.text(name)}"
        )
    elif signature is not None:
        cure = f"declare every argument, the varying dimensions as None: {signature.text(name)}"
    elif relax is not None:
        cure = f"{relax.text(name)} (no input_signature fits these arguments{_why_no_signature(history)})"
    else:
        cure = "keep its shape fixed: these calls also differ in more than shapes"

    if len(prev.shape) != len(leaf.shape):
        return Reason(
            "rank-changed",
            path,
            prev.shape_text,
            leaf.shape_text,
            f"`{path}` changed rank ({len(prev.shape)} → {len(leaf.shape)} dimensions)",
            f"pass tensors of one rank (reshape first), or accept any rank: {cure}",
            plans=plans,
        )
    last_batch = (
        len(leaf.shape) >= 1
        and leaf.shape[1:] == prev.shape[1:]
        and leaf.shape[0] is not None
        and prev.shape[0] is not None
        and leaf.shape[0] < prev.shape[0]
    )
    message = f"`{path}` changed shape {prev.shape_text} → {leaf.shape_text}"
    if last_batch:
        message += " — typically the smaller last batch of a dataset"
        fix = f"use .batch(..., drop_remainder=True) (drops the last, smaller batch), or {cure}"
    else:
        fix = cure
    return Reason("shape-changed", path, prev.shape_text, leaf.shape_text, message, fix, plans=plans)


def _why_no_signature(history: Sequence[Signature]) -> str:
    last = history[-1] if history else None
    if last is None:
        return ""
    if last.keyword_only:
        return ": keyword-only arguments (" + ", ".join(last.keyword_only) + ") cannot be in one"
    odd = [
        leaf.path
        for leaf in last.leaves
        if leaf.kind not in ("tensor", "container")
        and not (leaf.kind == "python" and leaf.type_name in PYTHON_TENSOR_DTYPES)
    ]
    if odd:
        return ": " + ", ".join(f"`{p}`" for p in odd[:3]) + " cannot be described by a tf.TensorSpec"
    return ""


def _dtype_changed(
    path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str
) -> Reason:
    target = prev.dtype or "float32"
    fix = f"cast before calling (`tf.cast({path}, tf.{target})`) so every call passes one dtype"
    plans: tuple[FixPlan, ...] = ()
    if _is_top(path):

        def cast(x: ArgLeaf) -> ArgLeaf:
            if x.path != path or x.kind != "tensor":
                return x
            return ArgLeaf(x.path, x.kind, x.type_name, target, x.shape, x.value)

        rewrite = {path: f"tf.cast({path}, tf.{target})"}
        cast_plan = _promised(call_plan(history, rewrite, cast), "graph for the calls seen, all in one dtype")
        plans = (cast_plan,)
        fix = (
            f"cast before calling, so every call passes one dtype: {cast_plan.text(name)} "
            "(reduce_retracing=True would not help: it never relaxes a dtype)"
        )
        signature = input_signature_plan(history, dtypes={path: target})
        if signature is not None:
            declared = FixPlan(
                decorator=signature.decorator,
                call=cast_plan.call,
                graphs=1,
                promise="one graph for every call",
                trade=f"a call passing `{path}` as {leaf.dtype} without the cast then raises "
                "TypeError instead of tracing again",
                note=signature.note,
            )
            plans = (cast_plan, declared)
            fix += f"; to make another dtype an error: {declared.text(name)}"
    return Reason(
        "dtype-changed",
        path,
        prev.dtype or "",
        leaf.dtype or "",
        f"`{path}` is a {leaf.dtype} tensor; the cached graph takes {prev.dtype}",
        fix,
        plans=plans,
    )


def _compatible(shape: tuple[int | None, ...], pattern: tuple[int | None, ...]) -> bool:
    return len(shape) == len(pattern) and all(p is None or p == s for s, p in zip(shape, pattern))


def input_signature_text(path: str, history: Sequence[Signature], dtype: str | None) -> str:
    """``@tf.function(input_signature=[...])`` covering every argument of the graphs in
    ``history`` (the varying dimensions of ``path`` set to None), or, when no input_signature
    can cover them, the spec of ``path`` alone."""
    plan = input_signature_plan(history, dtypes={path: dtype} if dtype else None)
    if plan is not None:
        return f"@tf.function({plan.decorator})"
    shapes = [
        leaf.shape
        for sig in history
        for leaf in sig.leaves
        if leaf.path == path and leaf.kind == "tensor" and leaf.dtype == dtype
    ]
    return f"a tf.TensorSpec for `{path}`: {spec_for_shapes(shapes, dtype)}"


def mark_wasted(reasons: Sequence[Reason], graph_index: int) -> list[Reason]:
    """Say that a python-value retrace built a graph identical to a cached one but for constants."""
    out = []
    for r in reasons:
        if r.code == "python-value-changed":
            r = replace(
                r,
                message=r.message + f" — a wasted retrace: the new graph is the same as graph "
                f"#{graph_index} except for constants",
            )
        out.append(r)
    return out
