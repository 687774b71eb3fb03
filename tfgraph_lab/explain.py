"""Why did this trace happen? Pure signature diffs → reasons with a message and a fix.

Input is plain data (:class:`~tfgraph_lab.datatypes.Signature`): the new graph's signature, the
call's own signature when ``reduce_retracing`` relaxed it, and the signatures already cached
for the same function object. Output is a list of :class:`~tfgraph_lab.datatypes.Reason` with the
stable codes of DESIGN.md. No TensorFlow, no IPython: table-driven tests cover it directly.
"""

from __future__ import annotations

from collections.abc import Sequence

from .datatypes import ArgLeaf, Reason, Signature

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
        reasons = _diff(against, seen, history=list(cached) + [seen])
        rank = (*_rank(reasons), _distance(against, seen))
        if best_rank is None or rank < best_rank:
            best, best_against, best_rank = reasons, against, rank
    assert best is not None and best_against is not None
    if not best:
        return [_context_changed(best_against, new)]
    if reduce_retracing and call is not None and call.leaves != new.leaves:
        best = [_generalised(r, call, new) for r in best]
    return best


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


def _new_function_object(qualname: str, previous: int) -> Reason:
    name = qualname or "this function"
    return Reason(
        "new-function-object",
        argument="",
        before=f"{previous} earlier tf.function object(s)",
        after="a new tf.function object",
        message=f"a new tf.function object wraps {name}, which another object already traced: "
        "its cache starts empty (tf.function(...) re-created in a loop, or a re-run cell)",
        fix=f"create the tf.function once and reuse it: hoist `tf.function({name})` (or the "
        "@tf.function definition) out of the loop or the cell that runs repeatedly",
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


def _generalised(reason: Reason, call: Signature, new: Signature) -> Reason:
    if reason.code not in ("shape-changed", "rank-changed"):
        return reason
    graph_leaf = new.by_path().get(reason.argument)
    if graph_leaf is None:
        return reason
    return Reason(
        reason.code,
        reason.argument,
        reason.before,
        reason.after,
        reason.message + f"; reduce_retracing generalised it to {graph_leaf.shape_text}, so "
        "later calls with other sizes reuse this graph",
        "nothing more to do: reduce_retracing already relaxed the shape (an input_signature "
        "would have avoided this one retrace too)",
    )


def _diff(before: Signature, after: Signature, history: Sequence[Signature]) -> list[Reason]:
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
        reason = _compare(path, prev, leaf, history)
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


def _compare(path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature]) -> Reason | None:
    if prev.kind != leaf.kind or (prev.kind in ("python", "composite") and prev.type_name != leaf.type_name):
        return _type_changed(path, prev, leaf)
    if leaf.kind == "tensor":
        return _tensor(path, prev, leaf, history)
    if leaf.kind == "python":
        if prev.value != leaf.value:
            return _python_value(path, prev, leaf)
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
            return _type_changed(path, prev, leaf)
        if prev.value != leaf.value:
            return Reason(
                "structure-changed",
                path,
                prev.describe(),
                leaf.describe(),
                f"`{path}` changed structure ({prev.value} → {leaf.value}); every structure is "
                "a separate graph, and a Python list is unrolled into the graph",
                "keep the container's length and keys fixed; for a varying number of items "
                "pass one tensor (tf.stack) or a tf.data.Dataset instead of a Python list",
            )
        return None
    if prev.value != leaf.value:
        code = "dtype-changed" if _dtypes_in(prev.value) != _dtypes_in(leaf.value) else "shape-changed"
        return Reason(
            code,
            path,
            prev.value or prev.type_name,
            leaf.value or leaf.type_name,
            f"`{path}` ({leaf.type_name}) has a different type spec than any cached graph",
            "keep its element shapes and dtypes fixed, use reduce_retracing=True, or give an "
            "input_signature with None dimensions",
        )
    return None


def _dtypes_in(text: str | None) -> list[str]:
    import re

    return re.findall(r"tf\.[a-z0-9_]+", text or "")


def _type_changed(path: str, prev: ArgLeaf, leaf: ArgLeaf) -> Reason:
    before = f"{_KIND_WORDS.get(prev.kind, prev.kind)} ({prev.type_name})"
    after = f"{_KIND_WORDS.get(leaf.kind, leaf.kind)} ({leaf.type_name})"
    if leaf.kind == "tensor" or prev.kind == "tensor":
        fix = (
            f"pass `{path}` as the same kind on every call: always a tensor "
            f"(tf.constant(...)) if it varies, always a Python value if it is a fixed setting"
        )
    else:
        fix = f"pass `{path}` as the same kind of value on every call"
    return Reason(
        "type-changed",
        path,
        before,
        after,
        f"`{path}` changed kind: {before} → {after}",
        fix,
    )


def _python_value(path: str, prev: ArgLeaf, leaf: ArgLeaf) -> Reason:
    kind = leaf.type_name
    if kind == "bool":
        fix = (
            f"expected once per value for a mode flag; to share one graph pass "
            f"`{path}=tf.constant({leaf.value})` and branch with tf.cond (AutoGraph turns "
            f"`if {path}:` on a tensor into tf.cond)"
        )
    elif kind in ("int", "float"):
        fix = (
            f"pass `{path}` as a tensor — `tf.constant({leaf.value})` (or a tf.Variable you "
            "assign) — so one graph serves every value; where it drives control flow, "
            "AutoGraph turns `if`/`for range()` on a tensor into tf.cond/tf.while_loop"
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
    )


def _tensor(path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature]) -> Reason | None:
    if prev.dtype != leaf.dtype:
        return Reason(
            "dtype-changed",
            path,
            prev.dtype or "",
            leaf.dtype or "",
            f"`{path}` is a {leaf.dtype} tensor; the cached graph takes {prev.dtype}",
            f"cast before calling (`tf.cast({path}, tf.{prev.dtype})`) so every call passes "
            f"one dtype, or fix it with {input_signature_text(path, history, prev.dtype)}",
        )
    if prev.shape is None or leaf.shape is None:
        return None
    if _compatible(leaf.shape, prev.shape):
        return None
    spec = input_signature_text(path, history, leaf.dtype)
    if len(prev.shape) != len(leaf.shape):
        return Reason(
            "rank-changed",
            path,
            prev.shape_text,
            leaf.shape_text,
            f"`{path}` changed rank ({len(prev.shape)} → {len(leaf.shape)} dimensions)",
            f"pass tensors of one rank (reshape first), or accept any rank with {spec}",
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
        fix = (
            f"use .batch(..., drop_remainder=True), or declare the batch dimension as None: "
            f"{spec} (or reduce_retracing=True)"
        )
    else:
        fix = f"declare the varying dimensions as None: {spec} (or reduce_retracing=True)"
    return Reason("shape-changed", path, prev.shape_text, leaf.shape_text, message, fix)


def _compatible(shape: tuple[int | None, ...], pattern: tuple[int | None, ...]) -> bool:
    return len(shape) == len(pattern) and all(p is None or p == s for s, p in zip(shape, pattern))


def input_signature_text(path: str, history: Sequence[Signature], dtype: str | None) -> str:
    """``@tf.function(input_signature=[tf.TensorSpec([None, 128], tf.float32)])`` for ``path``,
    with every dimension that varied across ``history`` set to None."""
    shapes = [
        leaf.shape
        for sig in history
        for leaf in sig.leaves
        if leaf.path == path and leaf.kind == "tensor" and leaf.dtype == dtype
    ]
    spec = _spec_for(shapes, dtype)
    if "[" in path or "." in path:
        return f"a tf.TensorSpec for `{path}`: {spec}"
    return f"@tf.function(input_signature=[{spec}])"


def _spec_for(shapes: Sequence[tuple[int | None, ...] | None], dtype: str | None) -> str:
    known = [s for s in shapes if s is not None]
    dtype_text = f"tf.{dtype}" if dtype else "tf.float32"
    if not known or len({len(s) for s in known}) != 1 or len(known) != len(shapes):
        return f"tf.TensorSpec(None, {dtype_text})"
    dims = []
    for column in zip(*known):
        first = column[0]
        dims.append(first if all(d == first for d in column) else None)
    inner = ", ".join("None" if d is None else str(d) for d in dims)
    return f"tf.TensorSpec([{inner}], {dtype_text})"


def mark_wasted(reasons: Sequence[Reason], graph_index: int) -> list[Reason]:
    """Say that a python-value retrace built a graph identical to a cached one but for constants."""
    out = []
    for r in reasons:
        if r.code == "python-value-changed":
            r = Reason(
                r.code,
                r.argument,
                r.before,
                r.after,
                r.message + f" — a wasted retrace: the new graph is the same as graph #{graph_index} "
                "except for constants",
                r.fix,
            )
        out.append(r)
    return out
