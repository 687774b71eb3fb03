"""From a function's retrace reasons to one code change a learner can paste.

Pure: works on :mod:`tfgraph_lab.datatypes` data only. ``suggest_fix`` returns the decorator or
call change that addresses the function's retraces (``report.suggest(qualname)``), or None
when the function did not retrace for a reason worth fixing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .datatypes import FunctionSummary, Reason, Signature
from .explain import _spec_for

__all__ = ["signature_from_history", "suggest_fix"]

_BENIGN = ("first-trace", "variable-creation")


def signature_from_history(history: Sequence[Signature]) -> str | None:
    """``input_signature=[...]`` covering every graph seen, or None when an argument is not a
    tensor (an input_signature only takes tensors) or dtypes differ."""
    if not history:
        return None
    params: list[str] = []
    for leaf in history[0].leaves:
        if _is_top(leaf.path) and leaf.path not in params:
            params.append(leaf.path)
    specs = []
    for param in params:
        leaves = [sig.by_path().get(param) for sig in history]
        if any(leaf is None or leaf.kind != "tensor" for leaf in leaves):
            return None
        dtypes = {leaf.dtype for leaf in leaves if leaf is not None}
        if len(dtypes) != 1:
            return None
        specs.append(_spec_for([leaf.shape for leaf in leaves if leaf is not None], dtypes.pop()))
    if not specs:
        return None
    return "input_signature=[" + ", ".join(specs) + "]"


def _is_top(path: str) -> bool:
    return "[" not in path and "." not in path


def suggest_fix(
    summary: FunctionSummary, reasons: Sequence[Reason], history: Sequence[Signature]
) -> str | None:
    """The change that stops the function's most frequent kinds of retrace (at most two)."""
    if summary.failed_traces and any(
        r.code == "variable-creation" and "every trace" in r.message for r in reasons
    ):
        short = summary.qualname.rsplit(".", 1)[-1]
        return (
            "class Model(tf.Module):\n"
            "    def __init__(self):\n"
            "        self.v = tf.Variable(...)   # created once, outside the traced body\n"
            "    @tf.function\n"
            f"    def {short}(self, x): ...      # only reads/assigns self.v"
        )
    counts = Counter(r.code for r in reasons if r.code not in _BENIGN)
    if not counts:
        return None
    # Up to two kinds of retrace, most frequent first (e.g. a Python lr *and* the last batch).
    parts = [_suggest_for(code, summary, reasons, history) for code, _ in counts.most_common(2)]
    return "\n".join(dict.fromkeys(p for p in parts if p)) or None


def _suggest_for(
    code: str, summary: FunctionSummary, reasons: Sequence[Reason], history: Sequence[Signature]
) -> str | None:
    name = summary.qualname
    short = name.rsplit(".", 1)[-1]
    if short == "<lambda>":
        short = "f"
    if code in ("shape-changed", "rank-changed"):
        signature = signature_from_history(history)
        if signature is not None:
            return f"@tf.function({signature})\ndef {short}(...): ..."
        return f"@tf.function(reduce_retracing=True)\ndef {short}(...): ..."
    if code == "dtype-changed":
        changed = [r for r in reasons if r.code == code]
        target = changed[0].before if changed else "float32"
        arg = changed[0].argument if changed else "x"
        return f"{short}(..., {arg}=tf.cast({arg}, tf.{target}))  # one dtype for every call"
    if code == "python-value-changed":
        args = _arguments(reasons, code)
        passes = ", ".join(f"{a}=tf.constant({a})" for a in args)
        return f"{short}(..., {passes})  # tensors: one graph for every value"
    if code == "new-function-object":
        return (
            f"{short}_fn = tf.function({short})  # once, outside the loop or cell\nfor ...: {short}_fn(...)"
        )
    if code == "object-changed":
        args = _arguments(reasons, code)
        return (
            f"# pass tensors instead of new Python objects for {', '.join(args)}, "
            f"or make {short} a method of the object"
        )
    if code == "structure-changed":
        args = _arguments(reasons, code)
        return (
            f"{short}(..., {args[0]}=tf.stack({args[0]}))  # one tensor instead of a Python "
            "list of varying length"
            if args and args[0]
            else f"# call {short} with the same arguments every time"
        )
    if code == "type-changed":
        args = _arguments(reasons, code)
        return f"# pass {', '.join(args)} as the same kind (always a tensor) on every call"
    if code == "variable-changed":
        return f"# create {short}'s variables once, with fixed shapes and dtypes"
    return None


def _arguments(reasons: Sequence[Reason], code: str) -> list[str]:
    return list(dict.fromkeys(r.argument for r in reasons if r.code == code and r.argument))
