"""Keras's step functions named for what the user ran: "fit · train step", "predict step".

Keras builds a model's ``tf.function`` objects itself (Keras 3.0-3.15, TensorFlow backend,
``keras/src/backend/tensorflow/trainer.py``): ``model.train_function`` and
``model.test_function`` are plain Python closures over two tf.functions, ``one_step_on_data``
(one batch: the step) and ``multi_step_on_iterator`` (``steps_per_execution`` steps from the
iterator: the loop), and ``model.predict_function`` is one tf.function
(``one_step_on_data_distributed``, or ``multi_step_on_data`` with ``steps_per_execution > 1``;
with ``jit_compile=True`` it calls an XLA ``one_step_on_data``). Keras 2 (``tf.keras`` in TF
2.15) makes each of the three one tf.function. Both build them before calling a callback's
``on_*_begin``, which is when :class:`KerasNames` finds them (through the closures, no Keras
private names) and names them through the recorder.

A test function serves both ``fit``'s validation and ``evaluate``: one tf.function, one cache,
so one row named after each use ("fit · validation / evaluate · test step"). With several
models watched, each name starts with its model's name.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KerasNames", "model_owner", "step_functions"]

_PHASES = {("fit", "train"): "fit · train", ("fit", "test"): "fit · validation"}
_SERIALS: dict[int, tuple[Any, int]] = {}  # id(model) -> (weak reference, serial)
_COUNTER = [0]


def model_owner(model: Any) -> str:
    """A name for ``model`` unique in this process (ids are reused after a model is gone)."""
    slot = _SERIALS.get(id(model))
    if slot is None or slot[0]() is not model:
        for key in [k for k, (ref, _) in _SERIALS.items() if ref() is None]:
            del _SERIALS[key]
        _COUNTER[0] += 1
        slot = _SERIALS[id(model)] = (weakref.ref(model), _COUNTER[0])
    return f"keras model #{slot[1]}"


def _is_tf_function(value: Any) -> bool:
    return hasattr(value, "experimental_get_tracing_count") and hasattr(value, "python_function")


def _part(fn: Any, kind: str) -> str:
    """ "step", "loop" or "step (XLA)" from the name of the Python function Keras wrapped."""
    name = getattr(getattr(fn, "python_function", None), "__name__", "")
    if name.startswith("multi_step_on_"):
        return "loop"
    if kind == "predict" and name == "one_step_on_data":
        return "step (XLA)"  # inside predict's own tf.function, only with jit_compile=True
    return "step"


def step_functions(model: Any, kind: str) -> list[tuple[Any, str]]:
    """The tf.functions behind ``model.{kind}_function`` (``kind``: train, test, predict), each
    with its part ("step", "loop", "step (XLA)"): the function itself if it is one, and those
    its closures hold, three levels deep."""
    root = getattr(model, f"{kind}_function", None)
    found: dict[int, Any] = {}

    def walk(value: Any, depth: int) -> None:
        if _is_tf_function(value):
            if id(value) in found:
                return
            found[id(value)] = value
            value = value.python_function
        if depth > 3:
            return
        for cell in getattr(value, "__closure__", None) or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if _is_tf_function(inner) or (callable(inner) and getattr(inner, "__closure__", None)):
                walk(inner, depth + 1)

    if root is not None:
        walk(root, 0)
    return [(fn, _part(fn, kind)) for fn in found.values()]


@dataclass
class _Named:
    ref: Any  # weak reference to the tf.function
    owner: str
    role: str  # "train", "test", "predict"
    part: str
    phases: list[str] = field(default_factory=list)
    handles: list[Any] = field(default_factory=list)  # the recorder's handles, one per watch
    label: str = ""


class KerasNames:
    """The names one TraceCallback gives the Keras functions it saw."""

    def __init__(self) -> None:
        self._named: dict[int, _Named] = {}
        self._models: dict[str, str] = {}  # owner -> model.name, in the order first seen

    def name(self, recorder: Any, model: Any, call: str, kind: str) -> bool:
        """Name ``model``'s ``kind`` functions for the running ``call`` (fit, evaluate,
        predict) through ``recorder``; True when a function named before got a new name
        (reports built before then need rebuilding)."""
        owner = model_owner(model)
        self._models.setdefault(owner, str(getattr(model, "name", "") or "model"))
        phase = _PHASES.get((call, kind), "evaluate · test" if kind == "test" else kind)
        current = []
        for fn, part in step_functions(model, kind):
            named = self._named.get(id(fn))
            if named is None or named.ref() is not fn:
                named = self._named[id(fn)] = _Named(weakref.ref(fn), owner, kind, part)
            if phase not in named.phases:
                named.phases.append(phase)
            current.append((named, fn))
        renamed = False
        for named in self._named.values():
            label = self._label(named)
            if label != named.label:
                renamed = renamed or bool(named.handles)
                named.label = label
                for handle in named.handles:
                    recorder.name_function(handle, label, named.owner, named.role)
        for named, fn in current:
            handle = recorder.name_function(fn, named.label, named.owner, named.role)
            if not any(h is handle for h in named.handles):
                named.handles.append(handle)
        return renamed

    def _label(self, named: _Named) -> str:
        label = f"{' / '.join(named.phases)} {named.part}"
        if len(self._models) < 2:
            return label
        name = self._models[named.owner]
        if list(self._models.values()).count(name) > 1:
            name = f"{name} ({named.owner})"
        return f"{name} · {label}"
