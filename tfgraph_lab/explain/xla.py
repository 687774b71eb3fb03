"""Why did XLA compile again? Pure diffs of XLA cache keys → reasons with a message and a fix.

XLA (``jit_compile=True``) keeps one executable per graph, per device and per *concrete* input
shape: a ``None`` dimension in an ``input_signature`` stops the retrace, never the compilation.
Input is plain data: the call's tensors as :class:`~tfgraph_lab.model.signatures.ArgLeaf` (path, dtype,
concrete shape) for this compilation and for the one before it on the same graph. Output is
:class:`~tfgraph_lab.model.records.Reason` objects with stable codes. No TensorFlow, no IPython.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..model.records import Reason
from ..model.signatures import ArgLeaf, format_shape
from ..model.vocab import ReasonCode, XlaCode

__all__ = [
    "XLA_CODES",
    "XLA_FIX",
    "constant_value_reason",
    "explain_compile",
    "hidden_shape_reason",
    "keeps_jit_compile",
    "logged_nested_reason",
    "nested_compile_reason",
    "per_device_reason",
    "taped_reason",
    "under_xla",
    "xla_caveated",
]

XLA_CODES = tuple(XlaCode)  # in the order of docs/ARCHITECTURE.md's list

XLA_FIX = (
    "pad or bucket the varying dimension to a few sizes (mask the padding), pass full batches "
    "only (tf.data: drop_remainder=True), or use jit_compile=False where shapes must vary"
)

_NONE_DIM = "a None dimension in the input_signature stops the retrace, not the XLA compilation"


def explain_compile(
    now: Sequence[ArgLeaf],
    before: Sequence[ArgLeaf] | None,
    *,
    device: str = "",
    before_device: str = "",
    traced: bool = False,
) -> list[Reason]:
    """Explain one XLA compilation against the last one on the same graph (None: the first)."""
    if before is None:
        shapes = ", ".join(f"{leaf.path} {format_shape(leaf.shape)}" for leaf in now) or "no tensors"
        what = "this new graph" if traced else "this graph"
        return [
            Reason(
                XlaCode.FIRST_COMPILE,
                message=f"XLA compiled {what} for the concrete shapes {shapes}; every new "
                "concrete shape compiles again",
            )
        ]
    old = {leaf.path: leaf for leaf in before}
    reasons = []
    for leaf in now:
        prev = old.get(leaf.path)
        if prev is None or prev.shape == leaf.shape:
            continue
        ranked = prev.shape is not None and leaf.shape is not None and len(prev.shape) != len(leaf.shape)
        reasons.append(
            Reason(
                XlaCode.RANK_CHANGED if ranked else XlaCode.SHAPE_CHANGED,
                argument=leaf.path,
                before=format_shape(prev.shape),
                after=format_shape(leaf.shape),
                message=f"same graph, new concrete shape: XLA compiled {leaf.path} again for "
                f"{format_shape(leaf.shape)} (it had {format_shape(prev.shape)}); {_NONE_DIM}",
                fix=XLA_FIX,
            )
        )
    if not reasons and device != before_device:
        reasons.append(
            Reason(
                XlaCode.DEVICE_CHANGED,
                before=before_device,
                after=device,
                message="same graph and shapes on another device: XLA keeps one cache per device",
                fix="run the function on one device",
            )
        )
    if not reasons:
        reasons.append(
            Reason(
                XlaCode.SHAPE_CHANGED,
                message="same graph, a combination of concrete shapes XLA had not compiled for; " + _NONE_DIM,
                fix=XLA_FIX,
            )
        )
    return reasons


def nested_compile_reason(inner: str, shapes: str) -> Reason:
    """An XLA function called inside a plain graph compiles when that graph first runs."""
    return Reason(
        XlaCode.FIRST_COMPILE,
        argument=inner,
        after=shapes,
        message=f"XLA compiled {inner} (called inside this graph, jit_compile=True) for {shapes}",
    )


def hidden_shape_reason(inner: str, shapes: str, estimated: bool) -> Reason:
    """A nested XLA call with ``None`` dims: XLA compiles per size the running graph feeds it."""
    how = (
        "counted from the call time (far above this graph's cached calls, or 50 ms or more with "
        "sizes this graph had not run with)"
        if estimated
        else "its first run compiles"
    )
    return Reason(
        XlaCode.HIDDEN_SHAPE,
        argument=inner,
        after=shapes,
        message=f"XLA compiled {inner} (jit_compile=True, called inside this graph with shapes "
        f"{shapes}): it compiles once per concrete size the running graph feeds it, which "
        f"Python does not see; {how}",
        fix=XLA_FIX,
    )


def taped_reason() -> Reason:
    """Under a recording GradientTape, TF runs a forward twin of the graph and differentiates
    it with a backward function: XLA compiles both, per shape (TF 2.21 compile log)."""
    return Reason(
        XlaCode.GRADIENT_TAPE,
        message="called under a GradientTape: XLA compiles a forward twin of this graph and, "
        "for tape.gradient, its backward function (2 compilations per new shape)",
        fix="compute the gradient inside the jit_compile=True function (one compilation)",
    )


# The reasons below explain compilations TensorFlow's own log showed (tfgraph_lab.recording.xla_counted).

CONSTANT_FIX = (
    "pad or bucket the value to a few sizes (e.g. round the length up to a multiple of 8 and "
    "mask the rest), or accept one compilation per value; passing it as a tensor instead of a "
    "Python int stops the retraces, not these compilations"
)


def constant_value_reason(name: str) -> Reason:
    """XLA compiled a graph again for shapes it had compiled: an argument's value is a
    compile-time constant (TF 2.21: ``x[:k]`` with ``k`` a tensor argument compiles per value)."""
    return Reason(
        XlaCode.CONSTANT_VALUE,
        argument=name,
        message=f"XLA compiled {name} again for tensor shapes it had compiled already: an "
        "argument's value sets a shape here (a slice size, a tf.range limit, a reshape), and "
        "XLA needs it as a compile-time constant, so it compiles once per value",
        fix=CONSTANT_FIX,
    )


def per_device_reason(name: str, copies: int) -> Reason:
    """One call compiled several copies of one function: a strategy's replicas, one per device."""
    return Reason(
        XlaCode.PER_DEVICE,
        argument=name,
        after=str(copies),
        message=f"XLA compiled {name} {copies}× in this call, once per device: under a "
        "distribution strategy every replica compiles its own copy (XLA keeps one cache per "
        "device), so each new shape costs one compilation per device",
        fix="keep the per-replica batch shape fixed (batch the dataset with drop_remainder=True) "
        "so each device compiles once; a single graph does not stop the per-device compilations",
    )


def logged_nested_reason(name: str) -> Reason:
    """An XLA function called inside this graph compiled when the graph ran (TF's log)."""
    return Reason(
        XlaCode.HIDDEN_SHAPE,
        argument=name,
        message=f"XLA compiled {name} (jit_compile=True, called inside this graph) when the graph "
        "ran: it compiles once per concrete size the running graph feeds it, even when the outer "
        "graph is traced once",
        fix=XLA_FIX,
    )


# A retrace fix under XLA (the function, or one it calls, has jit_compile=True) stops traces, not
# compilations. Measured against TF 2.21's compile log (tests/recording/test_xla_caveats.py): x[:k] with k
# passed as a tensor: 1 trace, 3 compiles for k = 1, 2, 3 (also nested in a plain tf.function);
# x * k: 1 trace, 1 compile; input_signature [None] for sizes 4, 3, 2: 1 trace, 3 compiles.
XLA_CAVEAT_LEAD = "under XLA ("
_VALUE_CODES = (ReasonCode.PYTHON_VALUE_CHANGED, ReasonCode.TYPE_CHANGED)
_SHAPE_CODES = (ReasonCode.SHAPE_CHANGED, ReasonCode.RANK_CHANGED, ReasonCode.STRUCTURE_CHANGED)


def under_xla(reason: Reason, nested: bool) -> Reason:
    """``reason`` with the XLA trade of its fix said, in its text and in each plan's ``trade``:
    a tensor argument that sets a shape or a compile-time constant still compiles once per value,
    and a graph that takes any size still compiles once per concrete shape. ``nested``: the XLA
    function is one this function calls, not the function itself."""
    where = "in the jit_compile=True function it calls" if nested else "jit_compile=True"
    if (
        reason.code in _VALUE_CODES
        and reason.argument
        and (reason.plans or reason.code != ReasonCode.TYPE_CHANGED)
    ):
        caveat = (
            f"{XLA_CAVEAT_LEAD}{where}) a tensor `{reason.argument}` stops the retraces, not the "
            "compilations, where its value sets a shape or a compile-time constant (a slice size, "
            "a tf.range limit, a reshape): XLA then compiles once per value — pad or bucket it "
            "to a few sizes, or accept one compile per value"
        )
    elif reason.code in _SHAPE_CODES and reason.plans:
        caveat = (
            f"{XLA_CAVEAT_LEAD}{where}) one graph still compiles once per concrete shape (a None "
            "dimension stops the retrace, not the compilation): pad or bucket the varying "
            "dimension to a few sizes to compile less"
        )
    else:
        return reason
    plans = tuple(replace(p, trade=f"{p.trade}; {caveat}" if p.trade else caveat) for p in reason.plans)
    return replace(reason, fix=f"{reason.fix}; {caveat}" if reason.fix else caveat, plans=plans)


def keeps_jit_compile(reason: Reason) -> Reason:
    """``reason`` with each decorator fix written for a ``jit_compile=True`` function: the printed
    line replaces the user's decorator, so it keeps ``jit_compile=True`` (``@tf.function(
    input_signature=[…])`` as printed dropped XLA, and with it the compilations its trade-off
    speaks of). Last in the keywords: a plan is told apart by its first keyword
    (:mod:`tfgraph_lab.explain.plan`)."""
    if not any(p.decorator and "jit_compile" not in p.decorator for p in reason.plans):
        return reason
    fix = reason.fix
    plans = []
    for p in reason.plans:
        if p.decorator and "jit_compile" not in p.decorator:
            kept = f"{p.decorator}, jit_compile=True"
            fix = fix.replace(f"@tf.function({p.decorator})", f"@tf.function({kept})")
            p = replace(p, decorator=kept)
        plans.append(p)
    return replace(reason, fix=fix, plans=tuple(plans))


def xla_caveated(reasons: Sequence[Reason]) -> bool:
    """Whether any of ``reasons`` carries the XLA trade (:func:`under_xla`)."""
    return any(XLA_CAVEAT_LEAD in r.fix for r in reasons)
