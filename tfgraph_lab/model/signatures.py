"""The input signature of one call or one graph, as plain data: argument leaves with a path each.

What :mod:`tfgraph_lab.explain.trace` diffs and :mod:`tfgraph_lab.explain.fixes` turns into specs; the adapter
(:mod:`tfgraph_lab.adapter.trace_types`) builds them from TensorFlow's trace types. Frozen
dataclasses of strings, numbers and tuples: no reference to a user argument or a TensorFlow
object. Imports nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

_T = TypeVar("_T")

__all__ = [
    "ArgLeaf",
    "Signature",
    "field_changes",
    "format_shape",
    "is_under",
    "parent_path",
    "repr_fields",
    "split_object_label",
    "stable_text",
]


def format_shape(dims: tuple[int | None, ...] | None) -> str:
    """``(32, 128)``, ``(None,)``, ``()`` or ``<unknown>`` (unknown rank), as TensorFlow prints."""
    if dims is None:
        return "<unknown>"
    inner = ", ".join("None" if d is None else str(d) for d in dims)
    return f"({inner},)" if len(dims) == 1 else f"({inner})"


@dataclass(frozen=True, slots=True)
class ArgLeaf:
    """One leaf of a call or graph signature, e.g. ``x`` a float32 tensor of shape (32, 128).

    ``kind`` is one of ``tensor``, ``python``, ``variable``, ``object``, ``container``,
    ``composite`` (RaggedTensor, Dataset, Iterator…) and ``other``. Containers appear as a
    leaf of their own (``value`` names their length or keys) followed by their items, so a
    change of structure and a change inside one item are both visible.
    """

    path: str
    kind: str
    type_name: str
    dtype: str | None = None
    shape: tuple[int | None, ...] | None = None
    value: str | None = None

    @property
    def shape_text(self) -> str:
        """The shape as TensorFlow prints it: ``(32, 128)``, ``(None, 128)``, ``<unknown>``."""
        return format_shape(self.shape)

    def describe(self) -> str:
        """A short human description of this leaf's type, used for before/after texts."""
        if self.kind in ("tensor", "variable"):
            return f"{self.type_name}(shape={self.shape_text}, dtype={self.dtype})"
        if self.kind == "python":
            return f"{self.type_name} {self.value}"
        if self.kind == "container":
            return f"{self.type_name} {self.value}"
        if self.value:
            return f"{self.type_name} {self.value}"
        return self.type_name


@dataclass(frozen=True, slots=True)
class Signature:
    """The input signature of one call or one graph, as plain leaves plus its context."""

    leaves: tuple[ArgLeaf, ...]
    text: str
    context: str = ""
    keyword_only: tuple[str, ...] = ()  # parameters passed by keyword only (and **kwargs)
    devices: tuple[str, ...] = ()  # the device scopes of its calling context (``/device:CPU:1``)
    # views built from the leaves at their first read (:meth:`derived`): no field of the record
    # (not compared, hashed, shown or copied by ``replace``)
    _derived: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def by_path(self) -> Mapping[str, ArgLeaf]:
        """The leaves by path (``x``, ``batch[0]``, ``p.x``): read it, never change it."""
        return self.derived("by_path", _leaves_by_path)

    def leaves_key(self) -> str:
        """The leaves as text: equal keys, equal leaves (a str keeps its hash, a tuple of leaves
        hashes every field again at each lookup)."""
        return self.derived("leaves_key", _leaves_text)

    def derived(self, name: str, build: Callable[[Signature], _T]) -> _T:
        """``build(self)``, built once per ``name`` (the same ``build`` for one name): the
        report of n retraces compares each graph with the ones before it, and rebuilt such
        views O(n²) times (200 retraces: 160,000 maps by path)."""
        views = self._derived
        if views is None:
            views = {}
            object.__setattr__(self, "_derived", views)
        if name not in views:
            views[name] = build(self)
        return views[name]  # type: ignore[no-any-return]


def _leaves_text(sig: Signature) -> str:
    return repr(sig.leaves)


def _leaves_by_path(sig: Signature) -> Mapping[str, ArgLeaf]:
    return {leaf.path: leaf for leaf in sig.leaves}


def parent_path(path: str) -> str | None:
    """``batch`` for ``batch[0]``, ``p`` for ``p.x``; None for a parameter itself."""
    cut = max(path.rfind("["), path.rfind("."))
    return None if cut <= 0 else path[:cut]


def is_under(path: str, root: str) -> bool:
    """True for a leaf inside the container or object at ``root`` (not ``root`` itself)."""
    return path != root and path.startswith(root) and path[len(root)] in "[."


def field_changes(before: str, after: str) -> list[tuple[str, str, str]]:
    """``[("scale", "2.0", "3.0")]`` for ``F(scale=2.0, n=1)`` → ``F(scale=3.0, n=1)``: the
    ``name=value`` items of two reprs of one type that differ (none when they are not that)."""
    a, b = repr_fields(before), repr_fields(after)
    if a is None or b is None or a[0] != b[0] or list(a[1]) != list(b[1]):
        return []
    return [(k, v, b[1][k]) for k, v in a[1].items() if b[1][k] != v]


def repr_fields(text: str) -> tuple[str, dict[str, str]] | None:
    """``("F", {"scale": "2.0"})`` for ``F(scale=2.0)``; None for a text not of that form."""
    match = re.fullmatch(r"([\w.]+)\((.*)\)", text, re.S)
    if match is None:
        return None
    items, depth, quote, start, body = [], 0, "", 0, match.group(2)
    for i, ch in enumerate(body):
        if quote:
            quote = "" if ch == quote and body[i - 1] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
    items.append(body[start:])
    fields: dict[str, str] = {}
    for item in items:
        key, eq, value = item.strip().partition("=")
        if not eq or not key.isidentifier():
            return None
        fields[key] = value
    return match.group(1), fields


def split_object_label(value: str | None) -> tuple[str, str]:
    """``("F(scale=2.0)", "1 at 0x…")`` for an object leaf's ``F(scale=2.0) #1 at 0x…``; the
    text and ``""`` when it has no serial label."""
    text, sep, label = str(value).rpartition(" #")
    return (text, label) if sep and label[:1].isdigit() else (str(value), "")


_ANONYMOUS = re.compile(r"<(?:[\w.]+\.)?(\w+) object at 0x[0-9a-fA-F]+>")
_CALLABLE = re.compile(r"<(function|bound method|built-in method|method) ([^<>]*?) at 0x[0-9a-fA-F]+>")
_SERIAL = re.compile(r"(#\d+) at 0x[0-9a-fA-F]+")


def stable_text(text: str) -> str:
    """``text`` without memory addresses, which change from run to run and say nothing to a
    reader: ``<__main__.Settings object at 0x7f…>`` → ``<Settings object>``, ``<function f at
    0x7f…>`` → ``<function f>``, an object's label ``#2 at 0x7f…`` → ``#2`` (its serial tells
    two objects apart, even when the second reuses the first's address). An address that is
    all that tells two objects apart stays."""
    if " at 0x" not in text:
        return text
    text = _CALLABLE.sub(r"<\1 \2>", _ANONYMOUS.sub(r"<\1 object>", text))
    return _SERIAL.sub(r"\1", text)
