"""A call-site fix written on the user's own calls.

A fix that changes how an argument is passed (``FixPlan.call``: ``lr`` → ``tf.constant(lr)``)
used to print a template, ``train_step(..., lr=tf.constant(lr))  # at every call``, which does
not run as printed against the user's ``train_step(x, y, lr, True)`` or ``h(i)``. The watch
keeps where each call that traced was made and, when the report is built, the call expression
as written (:class:`~tfgraph_lab.model.records.CallSource`); :func:`call_edits` rewrites each
one: a positional argument in place (``train_step(x, y, tf.constant(lr), True)``), a keyword
as a keyword (``f(x, training=tf.constant(flag))``), the rest of the call as the user wrote it.
A call it cannot rewrite (no source: Keras's own code, code built by ``exec``; arguments passed
with ``*``/``**``; the argument left to its default) is named, with why, in the note.

Pure: plain records and :mod:`ast`. Imports neither TensorFlow, IPython nor ipywidgets.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from ..model.records import CallEdit, CallSource
from ..model.signatures import Signature, parent_path

__all__ = ["call_edits", "meets_floats_only", "parameters"]


def parameters(sig: Signature) -> tuple[list[str], list[str]]:
    """The function's parameters as its graphs name them: those a call may pass by position,
    in order (``args_0``… for ``*args``), and the keyword-only ones."""
    keyword_only = list(sig.keyword_only)
    top = [leaf.path for leaf in sig.leaves if parent_path(leaf.path) is None]
    return [p for p in top if p not in keyword_only], keyword_only


def _star_index(parameter: str) -> int | None:
    head, _, number = parameter.rpartition("_")
    return int(number) if head == "args" and number.isdigit() else None


def _wrapped(expression: str, parameter: str, argument: str) -> str:
    """``tf.constant(lr)`` with the parameter's name replaced by the argument as written."""
    return re.sub(rf"(?<![\w.]){re.escape(parameter)}(?!\w)", lambda _: argument, expression, count=1)


def _edit(source: CallSource, call: Sequence[tuple[str, str]], sig: Signature) -> CallEdit | str:
    """The call of ``source`` rewritten, or why it cannot be."""
    tree = ast.parse(source.text, mode="eval").body
    assert isinstance(tree, ast.Call)  # model.places.call_source checked it
    positional, _ = parameters(sig)
    named = [p for p in positional if _star_index(p) is None]
    spans: list[tuple[int, int, str]] = []  # (start, end) offsets in source.text, new text
    offsets = _line_offsets(source.text)
    for parameter, expression in call:
        star = _star_index(parameter)
        index = (
            len(named) + star
            if star is not None
            else (named.index(parameter) if parameter in named else None)
        )
        node: ast.expr | None = None
        if index is not None and index < len(tree.args):
            if any(isinstance(a, ast.Starred) for a in tree.args[: index + 1]):
                return (
                    f"it passes arguments with `*`, so `{parameter}` is not one of its arguments as written"
                )
            node = tree.args[index]
        else:
            if any(isinstance(a, ast.Starred) for a in tree.args):
                return (
                    f"it passes arguments with `*`, so `{parameter}` is not one of its arguments as written"
                )
            node = next((k.value for k in tree.keywords if k.arg == parameter), None)
        if node is None:
            if any(k.arg is None for k in tree.keywords):
                return (
                    f"it passes arguments with `**`, so `{parameter}` is not one of its arguments as written"
                )
            return f"it leaves `{parameter}` to its default: pass `{parameter}={expression}` there"
        argument = ast.get_source_segment(source.text, node)
        if argument is None or node.end_lineno is None or node.end_col_offset is None:
            return "its source could not be read"
        start = offsets[node.lineno - 1] + _chars(source.text, node.lineno, node.col_offset)
        end = offsets[node.end_lineno - 1] + _chars(source.text, node.end_lineno, node.end_col_offset)
        spans.append((start, end, _wrapped(expression, parameter, argument)))
    text = source.text
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return "its arguments could not be rewritten as valid Python"
    return CallEdit(
        source.place,
        source.where,
        source.line,
        source.col,
        source.end_line,
        source.end_col,
        source.text,
        text,
    )


def _line_offsets(text: str) -> list[int]:
    offsets, at = [], 0
    for line in text.splitlines(keepends=True):
        offsets.append(at)
        at += len(line)
    return offsets or [0]


def _chars(text: str, line: int, byte_col: int) -> int:
    """ast's column (UTF-8 bytes) on ``line`` of ``text`` as characters."""
    return len(text.splitlines()[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def call_edits(
    call: Sequence[tuple[str, str]], sources: Sequence[CallSource], sig: Signature | None
) -> tuple[tuple[CallEdit, ...], str]:
    """Each call of ``sources`` rewritten by the plan's ``call`` (``(parameter, expression)``
    pairs), and a note naming the calls that could not be, with why ("" when none). ``sig``:
    a signature of the function's graphs (its parameters, in order)."""
    if not call or not sources:
        return (), ""
    edits: list[CallEdit] = []
    missing: dict[str, list[str]] = {}
    for source in sources:
        why = source.why if not source.text or sig is None else ""
        if not why:
            assert sig is not None
            done = _edit(source, call, sig)
            if isinstance(done, CallEdit):
                edits.append(done)
                continue
            why = done
        missing.setdefault(why or "its source is unknown", []).append(source.where)
    notes = []
    for why, wheres in missing.items():
        shown = ", ".join(wheres[:3]) + (f" and {len(wheres) - 3} more" if len(wheres) > 3 else "")
        notes.append(f"the call{'s' if len(wheres) > 1 else ''} at {shown}: {why}")
    return tuple(edits), "; ".join(notes)


def meets_floats_only(parameter: str, source: str) -> bool:
    """Whether every use of ``parameter`` in the function ``source`` is inside arithmetic with a
    Python float (``1.0 / (1 + step)``): there ``tf.constant(step)``, an int32 tensor, fails
    ("Expected int32, but got 1.0", TF 2.21: TF converts the float to the tensor's dtype) while a
    float32 tensor serves. False when it has no use, or any use that may need an int (an index,
    ``range(step)``, a shape, a call's argument)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    uses = [
        n for n in ast.walk(tree)
        if isinstance(n, ast.Name) and n.id == parameter and isinstance(n.ctx, ast.Load)
    ]  # fmt: skip
    if not uses:
        return False
    for use in uses:
        top: ast.AST = use
        while isinstance(parents.get(top), (ast.BinOp, ast.UnaryOp)):
            top = parents[top]
        if top is use or not any(
            isinstance(c, ast.Constant) and isinstance(c.value, float) for c in ast.walk(top)
        ):
            return False
    return True
