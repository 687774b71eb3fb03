"""TensorFlow's trace types rendered as plain data: argument leaves and signature texts.

Part of the adapter (:mod:`tfgraph_lab.adapter`).

``signature_of(function_type)`` flattens a TF ``FunctionType`` (of a graph or of a call) into
:class:`~tfgraph_lab.model.signatures.ArgLeaf` leaves — tensors, Python values, variables, objects,
containers — with a path per leaf (``x``, ``batch[0]``, ``cfg['lr']``, ``p.x``). It reads the
public attributes of TF's TraceType classes by class name (``TensorSpec``, ``Literal``,
``Tuple``, ``List``, ``NamedTuple``, ``Attrs``, ``Dict``, ``Weakref``, ``VariableSpec``; TF
2.15-2.21) and imports nothing from TensorFlow itself.
"""

from __future__ import annotations

import itertools
import math
import sys
import threading
import weakref
from typing import Any

from ..model.signatures import ArgLeaf, Signature, format_shape

__all__ = ["signature_of", "signature_text", "value_text"]

MAX_VALUE_CHARS = 60
MAX_OBJECT_CHARS = 400


def signature_text(signature: Any) -> str | None:
    if signature is None:
        return None
    try:
        parts = [_spec_text(spec) for spec in signature]
    except TypeError:
        return _clean_repr(signature)
    return "[" + ", ".join(parts) + "]"


def _spec_text(spec: Any) -> str:
    shape = getattr(spec, "shape", None)
    dtype = getattr(spec, "dtype", None)
    if shape is not None and dtype is not None and type(spec).__name__ == "TensorSpec":
        dims = _shape_tuple(shape)
        dims_text = "None" if dims is None else "[" + ", ".join(map(_dim_text, dims)) + "]"
        return f"tf.TensorSpec({dims_text}, tf.{dtype.name})"
    return _clean_repr(spec)


def _dim_text(d: int | None) -> str:
    return "None" if d is None else str(d)


def _clean_repr(obj: Any) -> str:
    return _safe_repr(obj).replace(", name=None", "")


def _safe_repr(obj: Any) -> str:
    """``repr(obj)``, or a stand-in when a user's ``__repr__`` raises: reading an argument for
    the report must never change the call (the hooks run inside it)."""
    try:
        return repr(obj)
    except Exception as exc:
        return f"<{type(obj).__qualname__} object: repr() raised {type(exc).__name__}>"


def signature_of(function_type: Any, context: str = "", devices: tuple[str, ...] = ()) -> Signature:
    """Flatten a TF ``FunctionType`` (of a graph or a call) into plain leaves and text."""
    leaves: list[ArgLeaf] = []
    texts: list[str] = []
    keyword_only: list[str] = []
    parameters = getattr(function_type, "parameters", None) or {}
    for name, parameter in parameters.items():
        constraint = getattr(parameter, "type_constraint", None)
        first = len(leaves)
        _flatten(str(name), constraint, leaves)
        texts.append(f"{name}: {_parameter_text(constraint, leaves[first:])}")
        # TF 2.21 makes every positional parameter (and each of *args, as args_0…)
        # POSITIONAL_ONLY in a graph's FunctionType; keyword-only ones and **kwargs entries
        # stay KEYWORD_ONLY: no input_signature can describe those.
        if str(getattr(getattr(parameter, "kind", None), "name", "")) in ("KEYWORD_ONLY", "VAR_KEYWORD"):
            keyword_only.append(str(name))
    return Signature(tuple(leaves), ", ".join(texts), context, tuple(keyword_only), devices)


def _shape_tuple(shape: Any) -> tuple[int | None, ...] | None:
    try:
        dims = shape.as_list()
    except (ValueError, AttributeError):
        return None
    return tuple(None if d is None else int(d) for d in dims)


def _is_nan_marker(value: Any) -> bool:
    """``value`` is TF's stand-in for a Python NaN in a ``Literal``: NaN != NaN, so TF keys every
    NaN by one bare ``object()``, ``default_types.NanMarker`` (TF 2.15-2.21). Read from the
    loaded module (a Literal exists only once TensorFlow is), never imported here. Before
    this, a NaN argument read as an object (``#3 at 0x…``) and a None one as ``nan``."""
    module = sys.modules.get("tensorflow.core.function.trace_type.default_types")
    marker = getattr(module, "NanMarker", None)
    return marker is not None and value is marker


def value_text(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if _is_nan_marker(value):
        return "nan"
    text = _safe_repr(value)
    if len(text) > MAX_VALUE_CHARS:
        text = text[: MAX_VALUE_CHARS - 1] + "…"
    return text


_OBJECT_SERIALS: dict[int, tuple[Any, int]] = {}
_SERIAL_LOCK = threading.Lock()
_NEXT_SERIAL = itertools.count(1)
_MAX_SERIALS = 10_000


def _object_label(obj: Any) -> str:
    """``#3 at 0x7f…``: a serial number tells two objects apart even when the second reuses
    the address of a garbage-collected first (temporaries passed as arguments)."""
    with _SERIAL_LOCK:
        known = _OBJECT_SERIALS.get(id(obj))
        if known is not None and known[0] is not None and known[0]() is obj:
            return f"#{known[1]} at {id(obj):#x}"
        serial = next(_NEXT_SERIAL)
        try:
            ref: Any = weakref.ref(obj)
        except TypeError:  # not weak-referenceable: identity can only be told while alive
            ref = None
        if len(_OBJECT_SERIALS) >= _MAX_SERIALS:  # a process passing new objects forever
            for key in [k for k, (r, _) in _OBJECT_SERIALS.items() if r is None or r() is None]:
                del _OBJECT_SERIALS[key]
        _OBJECT_SERIALS[id(obj)] = (ref, serial)
        return f"#{serial} at {id(obj):#x}"


_SCALAR_TYPES = frozenset({"int", "float", "bool", "str", "bytes", "complex", "NoneType"})


def _flatten(path: str, tc: Any, out: list[ArgLeaf]) -> None:
    cls = type(tc).__name__
    if cls in ("TensorSpec", "BoundedTensorSpec"):
        out.append(ArgLeaf(path, "tensor", "Tensor", tc.dtype.name, _shape_tuple(tc.shape)))
    elif cls == "VariableSpec":
        out.append(
            ArgLeaf(path, "variable", "Variable", tc.dtype.name, _shape_tuple(tc.shape), _variable_value(tc))
        )
    elif cls == "Literal":
        value = tc.value
        type_name = "float" if _is_nan_marker(value) else type(value).__name__
        if type_name in _SCALAR_TYPES:
            out.append(ArgLeaf(path, "python", type_name, value=value_text(value)))
        elif type(value).__eq__ is object.__eq__:  # type: ignore[comparison-overlap]  # by identity
            out.append(ArgLeaf(path, "object", type(value).__qualname__, value=_object_label(value)))
        else:  # hashable and compared by value (a frozen dataclass, an enum…): show the value
            out.append(ArgLeaf(path, "object", type(value).__qualname__, value=value_text(value)))
    elif cls in ("Tuple", "List"):
        items = tc.components if cls == "Tuple" else tc.components_tuple.components
        kind = "tuple" if cls == "Tuple" else "list"
        out.append(ArgLeaf(path, "container", kind, value=f"of length {len(items)}"))
        for i, item in enumerate(items):
            _flatten(f"{path}[{i}]", item, out)
    elif cls in ("NamedTuple", "Attrs"):
        named = tc if cls == "NamedTuple" else tc.named_attributes
        names = tuple(named.attribute_names)
        out.append(ArgLeaf(path, "container", str(named.type_name), value=f"fields {list(names)}"))
        for name, item in zip(names, named.attributes.components):
            _flatten(f"{path}.{name}", item, out)
    elif cls == "Dict":
        keys = list(tc.mapping.keys())
        shown = sorted(keys, key=_safe_repr)
        out.append(ArgLeaf(path, "container", "dict", value=f"keys {shown!r}"))
        for key in shown:
            _flatten(f"{path}[{_safe_repr(key)}]", tc.mapping[key], out)
    elif cls == "Weakref":
        obj = tc._ref()
        if obj is None:
            out.append(ArgLeaf(path, "object", "<garbage-collected object>", value="collected"))
        else:
            out.append(ArgLeaf(path, "object", type(obj).__qualname__, value=_weakref_value(obj)))
    elif tc is None:
        out.append(ArgLeaf(path, "other", "None"))
    else:
        out.append(ArgLeaf(path, "composite", _composite_name(tc), value=_clean_repr(tc)))


def _weakref_value(obj: Any) -> str:
    """A weakly keyed object as text, read now (no reference to it is kept).

    TF 2.21 keys a hashable custom object through ``weakref.ref`` (trace_type_builder), whose
    ``==`` and hash are the object's own while it is alive: a frozen dataclass is keyed by its
    fields, a plain object by identity. Both get a serial and address (``#1 at 0x…``), the
    first after its value (``F(scale=2.0) #1 at 0x…``), so a change of value shows."""
    if type(obj).__eq__ is object.__eq__:  # type: ignore[comparison-overlap]  # by identity
        return _object_label(obj)
    try:
        text = repr(obj)
    except Exception:  # a user __repr__ that fails: fall back to telling objects apart
        return _object_label(obj)
    if text.startswith("<") and " at 0x" in text:  # no __repr__ of its own
        return _object_label(obj)
    # Longer than other values: the reason shows only the fields that changed. The label stays:
    # an equal object still retraces once the one a graph was traced for is collected.
    text = text if len(text) <= MAX_OBJECT_CHARS else text[: MAX_OBJECT_CHARS - 1] + "…"
    return f"{text} {_object_label(obj)}"


def _composite_name(tc: Any) -> str:
    name = type(tc).__name__
    return {
        "RaggedTensorSpec": "RaggedTensor",
        "SparseTensorSpec": "SparseTensor",
        "DatasetSpec": "Dataset",
        "IteratorSpec": "Iterator",
        "OwnedIteratorSpec": "Iterator",
    }.get(name, name)


def _parameter_text(tc: Any, leaves: list[ArgLeaf]) -> str:
    """:func:`_type_text` of a parameter, from the leaf just made of it when it is one tensor
    or one Python value (most parameters): no second read of TF's shape or second ``repr``
    of the value on the trace path."""
    if len(leaves) == 1:
        leaf = leaves[0]
        cls = type(tc).__name__
        if leaf.kind == "tensor" and cls in ("TensorSpec", "BoundedTensorSpec"):
            return f"TensorSpec(shape={format_shape(leaf.shape)}, dtype=tf.{leaf.dtype})"
        if leaf.kind == "python" and cls == "Literal" and leaf.value is not None:
            return leaf.value
    return _type_text(tc)


def _type_text(tc: Any) -> str:
    cls = type(tc).__name__
    if cls in ("TensorSpec", "BoundedTensorSpec"):
        return f"TensorSpec(shape={_shape_text(tc.shape)}, dtype=tf.{tc.dtype.name})"
    if cls == "Literal":
        return value_text(tc.value)
    if cls == "Tuple":
        inner = ", ".join(_type_text(c) for c in tc.components)
        return f"({inner},)" if len(tc.components) == 1 else f"({inner})"
    if cls == "List":
        return "[" + ", ".join(_type_text(c) for c in tc.components_tuple.components) + "]"
    if cls in ("NamedTuple", "Attrs"):
        named = tc if cls == "NamedTuple" else tc.named_attributes
        inner = ", ".join(
            f"{n}={_type_text(c)}" for n, c in zip(named.attribute_names, named.attributes.components)
        )
        return f"{named.type_name}({inner})"
    if cls == "Dict":
        inner = ", ".join(f"{k!r}: {_type_text(tc.mapping[k])}" for k in sorted(tc.mapping, key=repr))
        return "{" + inner + "}"
    if cls == "Weakref":
        obj = tc._ref()
        if obj is None:
            return "<collected>"
        if type(obj).__eq__ is object.__eq__:  # type: ignore[comparison-overlap]  # by identity
            return f"<{type(obj).__qualname__} object>"
        return value_text(obj)
    if cls == "VariableSpec":
        # TF's own fields, as its signatures print them: a non-trainable Variable or another
        # aliasing pattern is another key, so two rows that differ only there must show it
        extra = "".join(
            f", {field}={getattr(tc, field)}"
            for field in ("trainable", "alias_id")
            if getattr(tc, field, None) is not None
        )
        return f"VariableSpec(shape={_shape_text(tc.shape)}, dtype=tf.{tc.dtype.name}{extra})"
    return _clean_repr(tc)


def _variable_value(tc: Any) -> str | None:
    """``alias 1`` (which arguments are one Variable), ``, trainable=False`` added for a
    non-trainable one: both are in TF's key for a Variable argument (its ``VariableSpec``)."""
    alias = getattr(tc, "alias_id", None)
    parts = [] if alias is None else [f"alias {alias}"]
    if getattr(tc, "trainable", True) is False:
        parts.append("trainable=False")
    return ", ".join(parts) or None


def _shape_text(shape: Any) -> str:
    return format_shape(_shape_tuple(shape))
