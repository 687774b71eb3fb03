"""From a function's retrace reasons to one code change a learner can paste.

Pure: works on :mod:`tfgraph_lab.model.records` data only. ``suggest_fix`` returns the decorator or
call change that addresses the function's retraces (``report.suggest(qualname)``), or None
when the function did not retrace for a reason worth fixing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence

from ..model.records import CallSource, FixPlan, FunctionSummary, Reason
from ..model.signatures import Signature
from ..model.vocab import ReasonCode
from .arguments import LAST_BATCH_FIX, shrank_in_batch
from .failures import VARIABLE_PER_TRACE
from .fixes import (
    OTHERS_MAKE_THEM,
    RELAXING_TRACES,
    code_name,
    input_signature_plan,
    on_your_def,
    reduce_retracing_helps,
    reduce_retracing_plan,
    relaxing_keeps_shape_graphs,
    shape_free_graphs,
    why_no_input_signature,
)
from .folds import texts_seen
from .keras_fixes import flag_suggestion, keras_suggestion
from .plan import graphs_before, plan_fixes
from .trace import NOT_RETRACES
from .whole_run import PER_DEVICE_PROMISE, devices_of
from .xla import xla_caveated

__all__ = ["signature_from_history", "suggest_fix"]


def signature_from_history(history: Sequence[Signature]) -> str | None:
    """``input_signature=[...]`` covering every parameter of every graph seen, or None when no
    input_signature can (a keyword-only argument, an object, a string, a dtype that varies)."""
    plan = input_signature_plan(history)
    return plan.decorator if plan is not None else None


def suggest_fix(
    summary: FunctionSummary,
    reasons: Sequence[Reason],
    history: Sequence[Signature],
    role: str = "",
    python_flags: Sequence[str] = (),
    failures: Collection[str] = (),
    calls: Sequence[CallSource] = (),
) -> str | None:
    """The best change of the function's ranked plan (:func:`~tfgraph_lab.explain.plan.plan_fixes`)
    with the others after it; without a plan that saves a graph, the change that stops the
    function's most frequent kinds of retrace (at most two).

    ``role``: the function is Keras's train/test/predict step (named by TraceCallback): the
    change goes where the user's code meets Keras (:mod:`tfgraph_lab.explain.keras_fixes`).
    ``python_flags``: Python bool arguments that reach Keras 3 layers and must stay Python.
    ``failures``: the kinds of its failed traces (``failures.failure_kind``, which reads TF's
    error once, when the report is built): cases are recognised by data, never by the text of
    a reason's message. ``calls``: the user's lines whose calls into Keras traced ``role``'s
    function, as written (its code is written on them)."""
    if role:
        retraces = [r for r in reasons if r.code not in NOT_RETRACES]
        return keras_suggestion(role, retraces, any(g.generalised for g in summary.graphs), calls)
    if summary.failed_traces and VARIABLE_PER_TRACE in failures:
        short = code_name(summary.qualname)
        return (
            "class Model(tf.Module):\n"
            "    def __init__(self):\n"
            "        self.v = tf.Variable(...)   # created once, outside the traced body\n"
            "    @tf.function\n"
            f"    def {short}(self, x): ...      # only reads/assigns self.v"
        )
    counts = Counter(r.code for r in reasons if r.code not in NOT_RETRACES)
    if not counts:
        return None
    plan = plan_fixes(summary, reasons)
    if plan.fixes:  # the ranked plan: its best change first, each with what it saves
        text = plan.suggestion()
        best = plan.fixes[0].plan
        if summary.jit_compile or xla_caveated(reasons):  # it, or a function it calls, under XLA
            if best.call and not best.decorator:
                text += XLA_VALUE_NOTE
            elif devices_of(history) > 1:  # each replica's graph compiles for each shape (TF 2.21 log: 12)
                text += "\n# " + PER_DEVICE_PROMISE + PER_DEVICE_XLA
            else:
                text += "\n" + XLA_SHAPE_NOTE
        return text
    # Up to two kinds of retrace, most frequent first (e.g. a Python lr *and* the last batch).
    parts = [_suggest_for(code, summary, reasons, history, python_flags) for code, _ in counts.most_common(2)]
    return "\n".join(dict.fromkeys(p for p in parts if p)) or None


# A distributed dataset's last batch is smaller per replica (TF 2.21 MirroredStrategy: 10 rows
# batched by 8 over 2 replicas: PerReplica 4+4, then 1+1): a PerReplica shape change.
PER_REPLICA_SPEC = "PerReplicaSpec"  # the type spec of a distributed batch (TF 2.21)
PER_REPLICA_FIX = (
    "# batch the dataset with drop_remainder=True before strategy.experimental_distribute_dataset:\n"
    "# every PerReplica batch then has one shape (the last, smaller batch is dropped) → 1 graph"
)
# Measured (TF 2.21, MirroredStrategy over 2 logical CPUs): each replica thread traces its own
# graph, so an input_signature leaves one graph per device.
PER_DEVICE_XLA = ", and XLA compiles once per device and shape"
# Measured (TF 2.21): x[:k] under jit_compile=True with k a tensor: 1 graph, 3 compiles for 3 values.
XLA_VALUE_NOTE = (
    "\n# under jit_compile=True a value that sets a shape (a slice size, a tf.range limit) still "
    "compiles once per value with XLA: pad or bucket it to a few sizes, or accept one compile per value"
)
# Measured (TF 2.21): input_signature [None] under jit_compile=True, sizes 4, 3, 2: 1 trace, 3 compiles.
XLA_SHAPE_NOTE = (
    "# under jit_compile=True XLA still compiles once per concrete shape: pad or bucket the varying "
    "dimension to a few sizes to compile less"
)


def _suggest_for(
    code: str,
    summary: FunctionSummary,
    reasons: Sequence[Reason],
    history: Sequence[Signature],
    python_flags: Sequence[str] = (),
) -> str | None:
    name = summary.qualname
    short = code_name(name)
    if code == ReasonCode.PYTHON_VALUE_CHANGED and python_flags:
        flagged = {r.argument for r in reasons if r.code == code}
        if flagged <= set(python_flags):
            return flag_suggestion(python_flags, short)
    if code in (ReasonCode.SHAPE_CHANGED, ReasonCode.RANK_CHANGED):
        # an input_signature would make a Keras-bound Python flag a tensor
        plan = None if python_flags else input_signature_plan(history)
        if plan is None and reduce_retracing_helps(history):
            relaxed = reduce_retracing_plan(history)
            plan = relaxed if relaxed.graphs < graphs_before(summary) else None  # it saves a graph
        if plan is None and any(_per_replica(history, r.argument) for r in reasons if r.code == code):
            return PER_REPLICA_FIX
        if plan is None and summary.reduce_retracing and any(g.generalised for g in summary.graphs):
            return (
                f"# nothing more to do: reduce_retracing is on and relaxed the shapes; to save more, call "
                f"{short} with tensors of one shape (each shape no relaxed graph fitted yet traced once)"
            )
        if plan is None:
            return _one_shape(short, history, python_flags, relaxing=not summary.reduce_retracing)
        promise = plan.promise
        xla = summary.jit_compile or xla_caveated(reasons)  # it, or a function it calls
        per_device = _per_device(history) and any(r.code == ReasonCode.CONTEXT_CHANGED for r in reasons)
        if per_device:
            promise = PER_DEVICE_PROMISE + (PER_DEVICE_XLA if summary.jit_compile else "")
        lines = [f"@tf.function({plan.decorator})", f"{on_your_def(short)} → {promise}"]
        if plan.note:
            lines.append(f"# {plan.note}")
        if xla and not (per_device and summary.jit_compile):
            lines.append(XLA_SHAPE_NOTE)
        return "\n".join(lines)
    if code in (ReasonCode.DTYPE_CHANGED, ReasonCode.TYPE_CHANGED, ReasonCode.STRUCTURE_CHANGED):
        latest = _latest_plan(reasons, code)
        if latest is not None:
            return _plan_lines(latest, short)
    if code == ReasonCode.PYTHON_VALUE_CHANGED:
        rewrites = [p.call for r in reasons if r.code == code for p in r.plans[:1]]
        merged = tuple(dict.fromkeys(pair for call in rewrites for pair in call))
        if merged:
            passes = ", ".join(f"{a}={e}" for a, e in merged)
            text = f"{short}(..., {passes})  # tensors: a new value no longer makes a new graph"
            return text + (XLA_VALUE_NOTE if summary.jit_compile or xla_caveated(reasons) else "")
    if code == ReasonCode.NEW_FUNCTION_OBJECT:
        if not any(r.plans for r in reasons if r.code == code):
            return None  # a re-run definition cell: expected, nothing to change
        return (
            f"{short}_fn = tf.function({short})  # once, outside the loop or cell\n"
            f"{short}_fn(...)  # in the loop: call {short}_fn, not a new tf.function"
        )
    if code == ReasonCode.OBJECT_CHANGED:
        args = _arguments(reasons, code)
        return (
            f"# pass tensors instead of new Python objects for {', '.join(args)}, "
            f"or make {short} a method of the object"
        )
    if code == ReasonCode.STRUCTURE_CHANGED:
        return f"# call {short} with the same arguments, containers of one length and keys, every time"
    if code == ReasonCode.TYPE_CHANGED:
        args = _arguments(reasons, code)
        # "always a tensor" where a tensor was one of the kinds its graphs took; a list then a
        # Dataset (TF's guide, case 08) is told one kind, not a tensor
        tensor = any(leaf.kind == "tensor" and leaf.path in args for sig in history for leaf in sig.leaves)
        return f"# pass {', '.join(args)} as the same kind{' (always a tensor)' if tensor else ''} on every call"
    if code == ReasonCode.VARIABLE_CHANGED:
        return f"# create {short}'s variables once, with fixed shapes, dtypes and trainable settings"
    return None


def _one_shape(short: str, history: Sequence[Signature], python_flags: Sequence[str], relaxing: bool = True) -> str:
    """The suggestion when no decorator saves a graph of a function whose shapes change: call
    it with one shape, and why no decorator (read from the graphs, not from a reason's text;
    ``relaxing``: reduce_retracing is not on yet, so it is said why it would not help).
    A Keras custom loop (batches 32, 32, 32, 4; ``training`` passed on to the model) keeps 2
    graphs under reduce_retracing too (TF 2.21), though only the shapes tell them apart."""
    if _composite_varies(history):  # its shapes are in its type spec's text: not told apart here
        # TF 2.21 relaxes an iterator's element shapes too: (1, 2), (2, 2), (3, 2) keep 2 graphs
        return f"# call {short} with inputs of one shape (a dataset or iterator: elements of one shape)" + (
            f"\n# or @tf.function(reduce_retracing=True) on {short}: it relaxes an iterator's element shapes as a tensor's"
            if relaxing
            else ""
        )
    distinct = len(texts_seen(history, "leaves", Signature.leaves_key))
    if shape_free_graphs(history) >= distinct:  # each graph differs in more than its tensors' shapes
        return f"# call {short} with tensors of one shape (these calls differ in more than shapes)"
    head = f"# call {short} with tensors of one shape"
    if _first_dimension_only(history):
        head += f": {LAST_BATCH_FIX}"
    lines = [head]
    if python_flags:
        lines.append(f"# no input_signature: it would make `{python_flags[0]}` a tensor, and Keras 3's layers need a Python bool")
    elif input_signature_plan(history) is None:
        lines.append(f"# no input_signature fits these arguments{why_no_input_signature(history)}")
    if relaxing:  # the function is not already reduce_retracing=True
        why = RELAXING_TRACES if relaxing_keeps_shape_graphs(history) else OTHERS_MAKE_THEM
        lines.append(f"# @tf.function(reduce_retracing=True) would save no graph: {why}")
    return "\n".join(lines)


def _composite_varies(history: Sequence[Signature]) -> bool:
    """A composite argument (an iterator, a dataset, a ragged tensor) had more than one type
    spec across the graphs."""
    specs: dict[str, set[str | None]] = {}
    for sig in history:
        for leaf in sig.leaves:
            if leaf.kind == "composite":
                specs.setdefault(leaf.path, set()).add(leaf.value)
    return any(len(seen) > 1 for seen in specs.values())


def _first_dimension_only(history: Sequence[Signature]) -> bool:
    """Every tensor whose shape varies across the graphs shrank in its first dimension alone,
    from its first graph's (full batches, then a smaller last one), as ``tensor_changed`` says
    "as in a smaller last batch"; a vector that grew from 2 to 3 is no batch."""
    shapes: dict[str, list[tuple[int | None, ...] | None]] = {}
    for sig in history:
        for leaf in sig.leaves:
            if leaf.kind in ("tensor", "variable"):
                shapes.setdefault(leaf.path, []).append(leaf.shape)
    varying = [seen for seen in shapes.values() if len(set(seen)) > 1]

    def shrank(seen: list[tuple[int | None, ...] | None]) -> bool:
        return all(s == seen[0] or shrank_in_batch(seen[0], s) for s in seen)

    return bool(varying) and all(shrank(seen) for seen in varying)


def _per_replica(history: Sequence[Signature], path: str) -> bool:
    """The argument at ``path`` is a distributed value (its leaf's type is TF's
    ``PerReplicaSpec``, TF 2.21), read from the graphs' signatures."""
    return any(leaf.path == path and leaf.type_name == PER_REPLICA_SPEC for s in history for leaf in s.leaves)


def _per_device(history: Sequence[Signature]) -> bool:
    """The graphs were traced under different device scopes (a strategy's replicas)."""
    return len({s.devices for s in history if s.devices}) > 1


def _arguments(reasons: Sequence[Reason], code: str) -> list[str]:
    return list(dict.fromkeys(r.argument for r in reasons if r.code == code and r.argument))


def _latest_plan(reasons: Sequence[Reason], code: str) -> FixPlan | None:
    for r in reversed(reasons):
        if r.code == code and r.plans:
            return r.plans[0]
    return None


def _plan_lines(plan: FixPlan, short: str) -> str:
    lines = []
    if plan.decorator:
        lines += [f"@tf.function({plan.decorator})", on_your_def(short)]
    if plan.call:
        passes = ", ".join(f"{a}={e}" for a, e in plan.call)
        lines.append(f"{short}(..., {passes})  # at every call")
    lines.append(f"# {plan.promise}" + (f"; trade-off: {plan.trade}" if plan.trade else ""))
    return "\n".join(lines)
