"""Why one argument made a new graph: one builder per reason code, with its message and fix.

:func:`tfgraph_lab.explain.trace.explain_trace` decides which argument changed and how; the builders
here say it — before/after, a one-line message, a fix a learner can paste (built from
:mod:`tfgraph_lab.explain.fixes` plans: the text is the change a test applies). Pure: no TF, no IPython.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..model.records import FixPlan, Reason
from ..model.signatures import ArgLeaf, Signature, field_changes, parent_path, repr_fields, split_object_label
from ..model.vocab import ReasonCode
from .fixes import (
    NOT_CASTABLE,
    PYTHON_TENSOR_DTYPES,
    autograph_caveat,
    call_plan,
    graphs_with_reduce_retracing,
    input_signature_plan,
    reduce_retracing_helps,
    reduce_retracing_plan,
    relaxing_plan,
    stacked_history,
    why_no_input_signature,
)
from .folds import texts_seen

__all__ = [
    "LAST_BATCH_FIX",
    "argument_added_or_removed",
    "composite_changed",
    "dtype_changed",
    "object_changed",
    "python_value_changed",
    "recursion_reason",
    "shrank_in_batch",
    "structure_changed",
    "tensor_changed",
    "type_changed",
    "variable_changed",
]


# The other way for a smaller last batch, after the fix that holds for any source of batches.
LAST_BATCH_FIX = "pass full batches only (tf.data: .batch(..., drop_remainder=True))"
_MORE_THAN_SHAPES = "these calls also differ in more than shapes"
# The words before a shape's input_signature (then "; or " and reduce_retracing, when both fit).
SIGNATURE_CURE = "declare an input_signature with None where dimensions vary: "

_KIND_WORDS = {
    "tensor": "Tensor",
    "python": "Python value",
    "variable": "tf.Variable",
    "object": "Python object",
    "container": "container",
    "composite": "composite tensor",
    "other": "value",
}


def argument_added_or_removed(path: str, before: ArgLeaf | None, after: ArgLeaf | None) -> Reason:
    b = "absent" if before is None else before.describe()
    a = "absent" if after is None else after.describe()
    return Reason(
        ReasonCode.STRUCTURE_CHANGED,
        path,
        b,
        a,
        f"argument `{path}` was {'added' if before is None else 'removed'}: the call's "
        "structure differs from every cached graph",
        "call the function with the same arguments every time (pass optional values "
        "explicitly, always as the same kind)",
    )


def structure_changed(
    path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str
) -> Reason:
    plans: tuple[FixPlan, ...] = ()
    listed = leaf.type_name in ("list", "tuple")
    fix = (
        "keep the container's length and keys fixed; for a varying number of items pass one "
        "tensor (tf.stack) or a tf.data.Dataset instead of a Python list"
        if listed
        else "keep the container's keys or fields fixed: pass every key on every call (a default "
        "value where there is none), never a dict that gains or loses keys"
    )
    stacked = (
        stacked_history(path, history) if parent_path(path) is None and leaf.type_name == "list" else None
    )
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
        ReasonCode.STRUCTURE_CHANGED,
        path,
        prev.describe(),
        leaf.describe(),
        f"`{path}` changed structure ({prev.value} → {leaf.value}); every structure is "
        "a separate graph" + (", and a Python list is unrolled into the graph" if leaf.type_name == "list" else ""),
        fix,
        plans=plans,
    )


def type_changed(path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str) -> Reason:
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
        if parent_path(path) is None and python.kind == "python" and python.type_name in PYTHON_TENSOR_DTYPES:
            dtype = tensor.dtype or PYTHON_TENSOR_DTYPES[python.type_name]
            as_tensor, key = _python_as_tensor(path, dtype)
            plan = call_plan(history, {path: f"tf.cast({path}, tf.{dtype})"}, as_tensor, promise="", key=key)
            plan = _promised(plan, "graph for the calls seen: one kind, one dtype", history)
            plans = (plan,)
            fix = f"pass `{path}` as the same kind on every call, always a {dtype} tensor: {plan.text(name)}"
    else:
        fix = f"pass `{path}` as the same kind of value on every call"
    return Reason(
        ReasonCode.TYPE_CHANGED,
        path,
        before,
        after,
        f"`{path}` changed kind: {before} → {after}",
        fix,
        plans=plans,
    )


def _promised(plan: FixPlan, what: str, history: Sequence[Signature] = ()) -> FixPlan:
    graphs = plan.graphs
    saved = len(texts_seen(history, "leaves", Signature.leaves_key)) - graphs if history else 0
    noun, _, rest = what.partition(" ")  # "graph for the calls seen, ...": the count beside its comparison
    fewer = f"{saved} fewer graph{'s' if saved != 1 else ''}: " if saved > 0 else ""  # the change's own
    versus = f" instead of {graphs + saved}" if saved > 0 else ""  # other arguments may still make graphs
    promise = f"{fewer}{graphs} {noun + 's' if graphs != 1 else noun}{versus} {rest}".rstrip()
    return FixPlan(plan.decorator, plan.call, plan.hoist, graphs, promise, plan.trade, plan.note)


def _python_as_tensor(path: str, dtype: str) -> tuple[Callable[[ArgLeaf], ArgLeaf], str]:
    """The leaf rewrite of passing the Python value ``path`` as a ``dtype`` tensor, and its key
    (:func:`~tfgraph_lab.explain.fixes.call_plan`)."""

    def as_tensor(x: ArgLeaf) -> ArgLeaf:
        if x.path != path or x.kind != "python":
            return x
        return ArgLeaf(path, "tensor", "Tensor", dtype, ())

    return as_tensor, f"python {path} as a {dtype} tensor"


def python_value_changed(
    path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str
) -> Reason:
    """A Python value that TensorFlow keys by value (a ``Literal``: bool, int, float, str,
    None) took a new one, of the same type or not: ``training`` None → True is a new value to
    TF, as 0.1 → 0.05 is. The tensor plan needs one dtype for every value the graphs saw at
    ``path``: ints and floats together are cast to float32 (``tf.constant(1)`` alone is
    int32, a second dtype, a second graph; the same rewrite as the function's own fix,
    :mod:`tfgraph_lab.explain.whole_run`); None, a str or a bool mixed with others has no
    tensor that holds them all, so no plan."""
    kind = leaf.type_name
    kinds = {prev.type_name, kind} | _python_types_at(path, history)
    rewrite, dtype = f"tf.constant({path})", PYTHON_TENSOR_DTYPES.get(kind) if len(kinds) == 1 else None
    if kinds == {"int", "float"}:
        rewrite, dtype = f"tf.cast({path}, tf.float32)", "float32"
    plans: tuple[FixPlan, ...] = ()
    plan: FixPlan | None = None
    if dtype is not None and parent_path(path) is None:
        as_tensor, key = _python_as_tensor(path, dtype)
        trade = ""
        if kind == "int" and dtype == "int32":
            trade = (
                f"tf.constant({path}) is an int32 tensor: where it meets float tensors, cast it "
                f"(tf.cast({path}, tf.float32)); `for i in range({path})` becomes a tf.while_loop"
            )
        plan = _promised(
            call_plan(history, {path: rewrite}, as_tensor, promise="", trade=trade, key=key),
            "graph for the calls seen, whatever the value",
            history,
        )
        plans = (plan,)
    if kinds <= {"bool", "NoneType"}:
        fix = "expected once per value for a mode flag"
        if "NoneType" in kinds:
            fix += " (None is a value of its own: None, True and False make a graph each)"
        if plan is not None:
            fix += (
                f"; to share one graph: {plan.text(name)} — AutoGraph turns `if {path}:` on a "
                f"tensor into tf.cond, so the graph holds both branches ({autograph_caveat(path)})"
            )
    elif plan is not None:
        fix = (
            f"pass `{path}` as a tensor so one graph serves every value: {plan.text(name)}; "
            "where it drives control flow, AutoGraph turns `if`/`for range()` on a tensor "
            f"into tf.cond/tf.while_loop ({autograph_caveat(path, loops=True)})"
        )
    elif "NoneType" in kinds:
        fix = (
            f"every distinct Python value of `{path}` makes a new graph, None included: keep it "
            "fixed, or pass a tensor on every call (a tensor cannot be None: give a value instead)"
        )
    else:
        fix = f"pass `{path}` as a tensor, or keep it fixed; every distinct Python value makes a new graph"
    if prev.type_name == kind:
        what = f"is a Python {kind} and its value changed"
    else:
        what = f"changed from {_python_noun(prev.type_name)} to {_python_noun(kind)}"
    return Reason(
        ReasonCode.PYTHON_VALUE_CHANGED,
        path,
        prev.value or "",
        leaf.value or "",
        f"`{path}` {what} ({prev.value} → {leaf.value}): "
        "TensorFlow bakes Python values into the graph, one graph per value",
        fix,
        plans=plans,
    )


def recursion_reason(reason: Reason, name: str) -> Reason:
    """``reason`` for a function that calls itself while traced (TF's guide, "Recursive
    tf.functions"): each Python value of the argument that drives the recursion traces its own
    graph, inside the trace of the one above. Passing it as a tensor, the fix for any other
    Python value, makes the ``if`` on it a tf.cond whose branches are both traced whatever the
    value: the recursion never ends while tracing (RecursionError, TF 2.21; case 12:
    ``recursive_fn(tf.constant(5))``). So no tensor plan: the recursion becomes a loop."""
    if reason.code != ReasonCode.PYTHON_VALUE_CHANGED:
        return reason
    path = reason.argument
    return replace(
        reason,
        message=f"{reason.message} — {name} calls itself: each value traces its own graph, inside "
        "the trace of the one above",
        fix=f"keep `{path}` a Python value (a tensor `{path}` would recurse forever while tracing: "
        "RecursionError), or write the recursion as a loop, a `for` over tf.range, to trace once",
        plans=(),
    )


def _python_noun(type_name: str) -> str:
    return "None" if type_name == "NoneType" else f"a Python {type_name}"


def _python_types_at(path: str, history: Sequence[Signature]) -> set[str]:
    """The types of the Python values the graphs so far had at ``path`` (``{"int", "float"}``)."""

    def types_of(sig: Signature) -> str:
        return sig.derived(
            f"python types at {path}",
            lambda s: " ".join(sorted({x.type_name for x in s.leaves if x.path == path and x.kind == "python"})),
        )

    return {t for text in texts_seen(history, f"python types at {path}", types_of) for t in text.split()}


def tensor_differs(prev: ArgLeaf, leaf: ArgLeaf) -> bool:
    """:func:`tensor_changed` gives a reason for these two tensor leaves (not None)."""
    if prev.dtype != leaf.dtype:
        return True
    if prev.shape is None or leaf.shape is None:
        return False
    return not _compatible(leaf.shape, prev.shape)


def shrank_in_batch(before: tuple[int | None, ...] | None, after: tuple[int | None, ...] | None) -> bool:
    """``after`` is ``before`` with a smaller first dimension and the rest the same, as a
    smaller last batch is ((32, 8) → (4, 8)); a vector that grew (2,) → (3,) is not."""
    return (
        before is not None
        and after is not None
        and len(after) >= 1
        and len(after) == len(before)
        and after[1:] == before[1:]
        and after[0] is not None
        and before[0] is not None
        and after[0] < before[0]
    )


def tensor_changed(
    path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str
) -> Reason | None:
    if prev.dtype != leaf.dtype:
        return dtype_changed(path, prev, leaf, history, name)
    if not tensor_differs(prev, leaf):
        return None
    signature = input_signature_plan(history)
    relax: FixPlan | None = reduce_retracing_plan(history)
    if not reduce_retracing_helps(history):
        relax = None  # these calls differ in more than shapes: it would not save a trace
    plans = tuple(p for p in (signature, relax) if p is not None)
    if signature is not None and relax is not None:
        cure = f"{SIGNATURE_CURE}{signature.text(name)}; or {relax.text(name)}"
    elif signature is not None:
        cure = f"{SIGNATURE_CURE}{signature.text(name)}"
    elif relax is not None:
        cure = (
            f"{relax.text(name)} (no input_signature fits these arguments{why_no_input_signature(history)})"
        )
    else:
        cure = f"keep its shape fixed: {_MORE_THAN_SHAPES}"

    assert prev.shape is not None and leaf.shape is not None  # tensor_differs: same dtype, both known
    if len(prev.shape) != len(leaf.shape):
        return Reason(
            ReasonCode.RANK_CHANGED,
            path,
            prev.shape_text,
            leaf.shape_text,
            f"`{path}` changed rank ({len(prev.shape)} → {len(leaf.shape)} dimensions)",
            f"pass tensors of one rank (reshape first), or accept any rank: {cure}",
            plans=plans,
        )
    last_batch = shrank_in_batch(prev.shape, leaf.shape)
    message = f"`{path}` changed shape {prev.shape_text} → {leaf.shape_text}"
    if last_batch:
        # Not "of a dataset": slices of a NumPy array (x[i:i + 32]) make the same short batch,
        # and drop_remainder is no fix there. The fix that holds either way comes first.
        message += " — only the first dimension shrank, as in a smaller last batch"
        fix = f"{cure}; or {LAST_BATCH_FIX}" if plans else f"{LAST_BATCH_FIX}: {_MORE_THAN_SHAPES}"
    else:
        fix = cure
    return Reason(ReasonCode.SHAPE_CHANGED, path, prev.shape_text, leaf.shape_text, message, fix, plans=plans)


def dtype_changed(path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str) -> Reason:
    """A tensor's dtype changed: cast every call to one dtype (the floating one of the two: a
    cast to int32 would cut 1.1 to 1), unless one of them is a string, which no cast turns into
    a number (TF 2.21: UnimplementedError, "Cast string to float is not supported")."""
    target = next((d for d in (prev.dtype, leaf.dtype) if d and d.startswith(("float", "bfloat"))), None)
    target = target or prev.dtype or "float32"
    fix = f"cast before calling (`tf.cast({path}, tf.{target})`) so every call passes one dtype"
    plans: tuple[FixPlan, ...] = ()
    strings = [d for d in (prev.dtype, leaf.dtype) if d in NOT_CASTABLE]
    if strings:
        other = leaf.dtype if prev.dtype in NOT_CASTABLE else prev.dtype
        fix = (
            f"expected: no cast turns a {strings[0]} tensor into {other} (tf.cast raises), so each "
            f"dtype keeps a graph of its own; if `{path}` should be one or the other, convert it "
            "where the data is made (tf.strings.to_number for numbers written as text)"
        )
    elif parent_path(path) is None:

        def cast(x: ArgLeaf) -> ArgLeaf:
            if x.path != path or x.kind != "tensor":
                return x
            return ArgLeaf(x.path, x.kind, x.type_name, target, x.shape, x.value)

        rewrite = {path: f"tf.cast({path}, tf.{target})"}
        cast_plan = _promised(
            call_plan(history, rewrite, cast, key=f"tensor {path} cast to {target}"),
            "graph for the calls seen, all in one dtype",
        )
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
        ReasonCode.DTYPE_CHANGED,
        path,
        prev.dtype or "",
        leaf.dtype or "",
        f"`{path}` is a {leaf.dtype} tensor; the cached graph takes {prev.dtype}",
        fix,
        plans=plans,
    )


def _compatible(shape: tuple[int | None, ...], pattern: tuple[int | None, ...]) -> bool:
    return len(shape) == len(pattern) and all(p is None or p == s for s, p in zip(shape, pattern))


def variable_changed(
    path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature], name: str
) -> Reason:
    fix = "pass variables of one shape and dtype (and don't pass the same variable twice in one call); "
    fix += "or read the value and pass a tensor"
    plan = relaxing_plan(prev, leaf, history)
    if plan is not None:
        fix += f"; for a shape that varies: {plan.text(name)}"
    changed = _variable_fields_changed(prev, leaf)
    if changed == ["trainable"]:
        fix = "pass variables with one trainable setting; or read the value and pass a tensor"
    return Reason(
        ReasonCode.VARIABLE_CHANGED,
        path,
        prev.describe() + (f" ({prev.value})" if prev.value else ""),
        leaf.describe() + (f" ({leaf.value})" if leaf.value else ""),
        f"`{path}` is a tf.Variable with a different {_join_or(changed)} than any cached graph",
        fix,
        plans=(plan,) if plan is not None else (),
    )


def _variable_fields_changed(prev: ArgLeaf, leaf: ArgLeaf) -> list[str]:
    """Which of TF's VariableSpec fields differ: shape, dtype, trainable, aliasing."""

    def fields(v: ArgLeaf) -> dict[str, str]:
        parts = (v.value or "").split(", ")
        alias = next((p for p in parts if p.startswith("alias ")), "")
        return {"trainable": str("trainable=False" not in parts), "aliasing pattern": alias}

    before, after = fields(prev), fields(leaf)
    changed = [
        name
        for name, a, b in (("shape", prev.shape, leaf.shape), ("dtype", prev.dtype, leaf.dtype))
        if a != b
    ]
    changed += [name for name in ("trainable", "aliasing pattern") if before[name] != after[name]]
    return changed or ["shape, dtype, trainable flag or aliasing pattern"]


def _join_or(names: list[str]) -> str:
    names = ["trainable flag" if n == "trainable" else n for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def object_changed(path: str, prev: ArgLeaf, leaf: ArgLeaf) -> Reason:
    if _by_value(prev) and _by_value(leaf):
        return _value_object_changed(path, prev, leaf)
    gone = "the earlier object was garbage-collected; " if prev.value == "collected" else ""
    return Reason(
        ReasonCode.OBJECT_CHANGED,
        path,
        f"{prev.type_name} object {prev.value}",
        f"{leaf.type_name} object {leaf.value}",
        f"`{path}` is a different Python object ({gone}TensorFlow keys plain objects by "
        "identity, so every new object means a new graph)",
        "pass the object's tensors instead, or bind it (make the tf.function a method "
        "of the object or a closure over it) so it is not an argument",
    )


def _by_value(leaf: ArgLeaf) -> bool:
    """Compared by value: value text (+ ``#1 at 0x…`` if weakly keyed), not a label alone."""
    return bool(leaf.value) and not re.fullmatch(r"collected|(#\d+ )?at 0x[0-9a-f]+", str(leaf.value))


def _value_object_changed(path: str, prev: ArgLeaf, leaf: ArgLeaf) -> Reason:
    """A frozen dataclass (or other hashable object with its own ``==``) that retraced. TF 2.21
    keys it by ``weakref.ref`` (trace_type_builder), equal only while both objects are alive:
    an equal new object traced 1 graph while the first lived, 2 once it was collected."""
    (old, old_label), (new, new_label) = split_object_label(prev.value), split_object_label(leaf.value)
    keyed = "TensorFlow keys a hashable object by ==/hash" + (
        " through a weak reference" if old_label else ""
    )
    if old == new:
        message = f"`{path}` is an equal {leaf.type_name}, but the object the graph was traced for was "
        message += f"garbage-collected ({keyed}, which matches only while that object is alive)"
        fix = "keep one object alive for every call (create it once, outside the loop)"
        before, after = f"{old} #{old_label}", f"{new} #{new_label}"
        return Reason(ReasonCode.OBJECT_CHANGED, path, before, after, message, fix)
    changes = field_changes(old, new)
    shown = "; ".join(f"{k}: {a} → {b}" for k, a, b in changes) or f"{old} → {new}"
    names = ", ".join(k for k, _, _ in changes) or "the field that changes"
    if changes:  # only the fields that changed: F(scale=2.0, …) → F(scale=3.0, …)
        name, fields = repr_fields(old) or ("", {})
        more = ", …" if len(changes) < len(fields) else ""
        old = name + "(" + ", ".join(f"{k}={a}" for k, a, _ in changes) + more + ")"
        new = name + "(" + ", ".join(f"{k}={b}" for k, _, b in changes) + more + ")"
    alive = " while the first one is alive" if old_label else ""  # unlabelled: TF holds it (Literal)
    message = f"`{path}` changed value ({shown}): {keyed}, so an equal new object reuses the "
    message += f"graph{alive}, and a changed value traces a new graph"
    fix = f"pass the changing field ({names}) as a tensor argument (e.g. tf.constant(...)) instead "
    return Reason(
        ReasonCode.OBJECT_CHANGED,
        path,
        old,
        new,
        message,
        fix + "of inside the object, or keep one object for every call",
    )


def composite_changed(path: str, prev: ArgLeaf, leaf: ArgLeaf) -> Reason:
    """A RaggedTensor, Dataset, Iterator… whose type spec differs."""
    if _dtypes_in(prev.value) != _dtypes_in(leaf.value):
        code, fix = ReasonCode.DTYPE_CHANGED, "keep its dtypes fixed (cast the values before calling)"
    else:
        code, fix = ReasonCode.SHAPE_CHANGED, "keep its shapes fixed, or use reduce_retracing=True"
    return Reason(
        code,
        path,
        prev.value or prev.type_name,
        leaf.value or leaf.type_name,
        f"`{path}` ({leaf.type_name}) has a different type spec than any cached graph",
        fix,
    )


def _dtypes_in(text: str | None) -> list[str]:
    return re.findall(r"tf\.[a-z0-9_]+", text or "")
