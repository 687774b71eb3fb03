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

from ..adapter.keras_steps import model_owner, step_functions

__all__ = ["KerasNames", "model_owner", "step_functions"]

_PHASES = {("fit", "train"): "fit · train", ("fit", "test"): "fit · validation"}


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
