"""Keras's step functions found from the tf.function alone: which model built it, for which
call kind (train, test, predict) and which part (step, loop, step (XLA)).

Keras builds a model's ``tf.function`` objects itself (Keras 3.0-3.15, TensorFlow backend,
``keras/src/backend/tensorflow/trainer.py``): ``_make_function`` makes ``one_step_on_data``
(one batch) and ``multi_step_on_iterator`` (``steps_per_execution`` batches) for training and
testing, ``make_predict_function`` makes ``one_step_on_data_distributed`` (or
``multi_step_on_data``); each closure holds the model as ``self``. Keras 2 (``tf.keras`` in TF
2.15) makes ``train_function``/``test_function``/``predict_function`` one tf.function each, their
closures holding the model too. Plain Python on closures: no Keras or TensorFlow import, no
Keras private name (the model's public ``train_function`` attributes lead to the functions).

Used by the recording side, which names a Keras step for the user in every watch (the magic,
``run``, ``watch()``), and by :mod:`tfgraph_lab.keras.names` (the callback's names per call).
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["KINDS", "keras_name", "keras_step", "model_owner", "step_functions", "step_label"]

KINDS = ("train", "test", "predict")
# What a step function serves, whatever call is running: the test function serves both fit's
# validation and evaluate (one tf.function, one cache).
_SERVES = {"train": "fit · train", "test": "fit · validation / evaluate · test", "predict": "predict"}
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


def _is_model(value: Any) -> bool:
    return all(hasattr(value, f"make_{kind}_function") for kind in KINDS)


def _model_in_closure(python_function: Any, depth: int = 0) -> Any:
    """The Keras model a step function's closure holds (``self``, or a bound ``self.train_step``),
    looking through wrappers (Keras 3.15 wraps ``one_step_on_data`` in a decorator), or None."""
    for cell in getattr(python_function, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if _is_model(value):
            return value
        if _is_model(getattr(value, "__self__", None)):
            return value.__self__
        if depth < 3 and callable(value):
            found = _model_in_closure(getattr(value, "python_function", value), depth + 1)
            if found is not None:
                return found
    return None


def keras_step(fn: Any) -> tuple[Any, str, str] | None:
    """``(model, kind, part)`` when ``fn`` is one of the step tf.functions of a Keras model
    (found through its closure's model and that model's ``{kind}_function``), else None."""
    model = _model_in_closure(getattr(fn, "python_function", None))
    if model is None:
        return None
    for kind in KINDS:
        for found, part in step_functions(model, kind):
            if found is fn:
                return model, kind, part
    return None


def step_label(model: Any, kind: str, part: str) -> str:
    """``sequential · fit · train step``: the model's name, then what the function serves."""
    name = str(getattr(model, "name", "") or "model")
    return f"{name} · {_SERVES[kind]} {part}"


def keras_name(fn: Any) -> tuple[str, str, str] | None:
    """``(label, owner, kind)`` to show a Keras step as the user's function (see
    ``FunctionState.rename``), or None for any other tf.function."""
    step = keras_step(fn)
    if step is None:
        return None
    model, kind, part = step
    return step_label(model, kind, part), model_owner(model), kind
