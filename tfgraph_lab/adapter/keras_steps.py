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

:func:`compile_settings` reads what a model was compiled with (public Keras API:
``trainable_weights``, ``get_compile_config()``, ``optimizer.get_config()``) when its new step
function first traces, so a recompile can be explained by what it changed. It is the one
function here that imports TensorFlow (``tf.init_scope``: it runs inside the trace of Keras's
train loop, where Keras 3.15's ``optimizer.get_config()`` cannot read the learning rate's value).
"""

from __future__ import annotations

import json
import weakref
from typing import Any

from ..model.vocab import CompileSetting

__all__ = [
    "KINDS",
    "compile_settings",
    "keras_name",
    "keras_step",
    "model_owner",
    "step_functions",
    "step_label",
]

KINDS = ("train", "test", "predict")
# What a step function serves, whatever call is running: the test function serves both fit's
# validation and evaluate (one tf.function, one cache).
_SERVES = {"train": "fit · train", "test": "fit · validation / evaluate · test", "predict": "predict"}
_SERIALS: dict[int, tuple[Any, int]] = {}  # id(model) -> (weak reference, serial)
_COUNTER = [0]


def _serial(obj: Any) -> int:
    """A number for ``obj`` unique in this process (ids are reused after an object is gone)."""
    slot = _SERIALS.get(id(obj))
    if slot is None or slot[0]() is not obj:
        for key in [k for k, (ref, _) in _SERIALS.items() if ref() is None]:
            del _SERIALS[key]
        _COUNTER[0] += 1
        slot = _SERIALS[id(obj)] = (weakref.ref(obj), _COUNTER[0])
    return slot[1]


def model_owner(model: Any) -> str:
    """A name for ``model`` unique in this process (ids are reused after a model is gone)."""
    return f"keras model #{_serial(model)}"


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


TRAINABLE, LEARNING_RATE = CompileSetting.TRAINABLE.value, CompileSetting.LEARNING_RATE.value
OPTIMIZER, OPTIMIZER_CONFIG = CompileSetting.OPTIMIZER.value, CompileSetting.OPTIMIZER_CONFIG.value
OPTIMIZER_OBJECT = CompileSetting.OPTIMIZER_OBJECT.value
_COMPILE_KEYS = (
    "loss",
    "loss_weights",
    "metrics",
    "weighted_metrics",
    "run_eagerly",
    "steps_per_execution",
    "jit_compile",
)


def _text(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def _settings(model: Any) -> dict[str, str]:
    weights = getattr(model, "trainable_weights", None) or []
    out = {TRAINABLE: ", ".join(str(getattr(w, "path", None) or w.name) for w in weights)}
    config = model.get_compile_config() if hasattr(model, "get_compile_config") else {}
    for key in _COMPILE_KEYS:
        if key in (config or {}):
            out[key] = _text(config[key])
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        out[OPTIMIZER] = type(optimizer).__name__
        out[OPTIMIZER_OBJECT] = f"#{_serial(optimizer)}"
        opt_config = dict(optimizer.get_config())
        opt_config.pop("name", None)  # adam, adam_1, ...: a new object's name, not a setting
        rate = opt_config.pop("learning_rate", None)
        out[LEARNING_RATE] = f"{rate:g}" if isinstance(rate, float) else _text(rate)
        out[OPTIMIZER_CONFIG] = _text(opt_config)
    return out


def compile_settings(fn: Any) -> dict[str, str] | None:
    """What the Keras model behind the step tf.function ``fn`` is compiled with, as texts keyed
    by ``CompileSetting`` (and compile()'s loss, metrics and options by keyword), or None when ``fn`` is no model's step
    or Keras cannot say."""
    model = _model_in_closure(getattr(fn, "python_function", None))
    if model is None:
        return None
    import tensorflow as tf

    try:
        with tf.init_scope():  # eager, also when called while Keras's train loop is traced
            return _settings(model)
    except Exception:  # a Keras that moved things: no settings, the generic text
        return None
