"""TensorFlow's ``Function`` objects as plain data: who a tf.function is, what its body reads.

Part of the adapter (:mod:`tfgraph_lab.adapter`): reads private attributes of
``Function`` (``_python_function``, ``_name``, ``_reduce_retracing``, ``_created_variables``)
and recognises TF's own wrappers (MirroredStrategy clones, tf.data's structured functions,
per-instance method Functions, SavedModel-restored functions) by their code, TF 2.15-2.21.
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass
from typing import Any

from ..model.places import closure_functions, code_location, innermost_python_function, is_framework_file
from .trace_types import signature_text, value_text

__all__ = [
    "FunctionInfo",
    "created_variables",
    "describe_function",
    "needs_python_training",
    "scalar_captures",
]


@dataclass(frozen=True)
class FunctionInfo:
    """What the report needs to know about one tf.function object, as plain data.

    ``qualname`` is the Python ``__qualname__`` of the innermost function (the JSON's
    ``qualname``, which outside tools key on); ``label`` the name the report shows people, the
    qualname unless TF built the graph around the function ("tf.data wrapper around preprocess",
    "replica clone of replica_fn"), restored it ("restored f") or a front end named it
    ("sequential · fit · train step"). The recording keys rows by label and file.
    """

    qualname: str
    filename: str
    firstlineno: int
    name: str
    framework: bool
    reduce_retracing: bool
    input_signature: str | None
    via_hint: str
    kind: str = "function"  # "function", "method" (one object per instance), "restored", "tf.data"
    # For a graph TF builds around a user's tf.function (tf.data's wrapper, MirroredStrategy's
    # replica clone): that function's qualname. Its traces are not the user function's: TF
    # counts them on another object (or on none).
    wraps: str = ""
    jit_compile: bool = False  # tf.function(jit_compile=True): XLA compiles every graph it runs
    # The functions its closure captures (see _pycode.closure_functions): tells apart two
    # closures of one code, e.g. Keras's train and test functions.
    closure: str = ""
    # Set when a front end names the function for its user (:meth:`Hub.name_function`, e.g.
    # Keras's train step as "fit · train step"): the code's own qualname, who built the object
    # (a Keras model: a new model's first trace is no retrace) and its part ("train", "test",
    # "predict"), for fixes the user can apply.
    origin: str = ""
    owner: str = ""
    role: str = ""
    # Python bool arguments that must stay Python values: the body holds Keras 3 layers whose
    # training= needs a Python bool (Dropout, BatchNormalization: see needs_python_training; set
    # by _history when such a flag is seen; fixes then never make it a tensor).
    python_flags: tuple[str, ...] = ()
    label: str = ""  # see the docstring; describe_function always sets it

    @property
    def key(self) -> tuple[str, str]:
        """One row of the report: the label and the file."""
        return (self.label, self.filename)


def describe_function(fn: Any, tracing_options: Any = None) -> FunctionInfo:
    """Describe a ``Function`` (or, without one, the tracing options of a trace)."""
    via_hint = "call"
    if fn is not None:
        python_function = getattr(fn, "_python_function", None) or getattr(fn, "python_function", None)
        name = str(getattr(fn, "_name", "") or "")
        reduce_retracing = bool(getattr(fn, "_reduce_retracing", False))
        signature = getattr(fn, "input_signature", None)
        attributes = getattr(fn, "_attributes", None) or {}
        jit_compile = getattr(fn, "_jit_compile", None) is True
    else:
        python_function = getattr(tracing_options, "python_function", None)
        name = str(getattr(tracing_options, "name", "") or "")
        reduce_retracing = bool(getattr(tracing_options, "reduce_retracing", False))
        signature = getattr(tracing_options, "input_signature", None)
        attributes = getattr(tracing_options, "attributes", None) or {}
        jit_compile = _must_compile(attributes)
    kind = "method" if _is_instance_method(python_function) else "function"
    around = ""  # what TF built this graph around: "tf.data wrapper", "replica clone"
    if _is_tf_data(attributes, python_function):
        via_hint = kind = "tf.data"
        user_fn = _tf_data_user_function()
        if user_fn is not None:
            python_function = user_fn
            if _is_tf_function(user_fn):
                # ds.map(preprocess) with preprocess a tf.function: tf.data traces its own
                # wrapper graph that calls preprocess; TF counts it on no Function of the user's.
                around = "tf.data wrapper"
    target = innermost_python_function(python_function)
    user_fn = _strategy_clone_target(target)
    if user_fn is not None:
        target, via_hint, around = user_fn, "replica", "replica clone"
    qualname, filename, firstlineno = code_location(target)
    framework = is_framework_file(filename)
    if qualname.endswith("<lambda>") and "." not in qualname:
        qualname = "<lambda>"
    wraps = ""
    label = qualname
    if around:
        wraps = qualname
        label = f"{around} {'around' if around == 'tf.data wrapper' else 'of'} {qualname}"
    if fn is not None and type(fn).__name__ == "RestoredFunction":
        # A SavedModel-restored function has no Python source: name it after the saved
        # function (concrete function names are ``__inference_<name>_<uid>``, TF 2.15-2.21).
        # Its innermost Python function is TF's restore wrapper; the saved name is the user's.
        kind = via_hint = "restored"
        qualname = _saved_name(fn) or name
        label = f"restored {qualname}"
        framework = False
    return FunctionInfo(
        qualname=qualname,
        label=label,
        filename=filename,
        firstlineno=firstlineno,
        name=name,
        framework=framework,
        reduce_retracing=reduce_retracing,
        input_signature=signature_text(signature),
        via_hint=via_hint,
        kind=kind,
        wraps=wraps,
        jit_compile=jit_compile,
        closure=closure_functions(target),
    )


def _is_tf_function(obj: Any) -> bool:
    """A tf.function (``Function``), or a bound method of one, as handed to ``Dataset.map``."""
    obj = getattr(obj, "__func__", obj)
    return hasattr(obj, "experimental_get_tracing_count") and hasattr(obj, "python_function")


def _must_compile(attributes: Any) -> bool:
    """``_XlaMustCompile`` as a trace's attributes hold it (an AttrValue or a plain bool)."""
    value = attributes.get("_XlaMustCompile") if hasattr(attributes, "get") else None
    return bool(getattr(value, "b", value)) if value is not None else False


def _strategy_clone_target(target: Any) -> Any:
    """The user's function behind MirroredStrategy's hidden clone of a tf.function.

    ``strategy.run(fn)`` on a tf.function runs ``fn._clone(python_function=wrapped_fn)``, where
    ``wrapped_fn`` (tensorflow/python/distribute/mirrored_run.py, TF 2.15-2.21) closes over the
    original Function ``fn``. Without this, the user's replica step would be reported as TF's.
    """
    code = getattr(target, "__code__", None)
    if code is None or code.co_name != "wrapped_fn" or not code.co_filename.endswith("mirrored_run.py"):
        return None
    for cell in getattr(target, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        python_function = getattr(value, "python_function", None)
        if python_function is not None and hasattr(value, "experimental_get_tracing_count"):
            return innermost_python_function(python_function)
    return None


def _is_tf_data(attributes: Any, python_function: Any) -> bool:
    """tf.data's transformation functions: marked by an attribute, or defined in tf.data's
    ``structured_function.py`` (TF 2.15-2.21 keeps the attribute out of ``Function._attributes``)."""
    if isinstance(attributes, dict) and attributes.get("_tf_data_function"):
        return True
    code = getattr(python_function, "__code__", None)
    return code is not None and code.co_filename.endswith("structured_function.py")


def _is_instance_method(python_function: Any) -> bool:
    """True for the per-instance Function TF builds in ``Function.__get__`` (its Python
    function wraps a MethodType bound to a ``TfMethodTarget``; TF 2.15-2.21)."""
    wrapped = _method_wrapped(python_function)
    return isinstance(wrapped, types.MethodType) and type(wrapped.__self__).__name__ == ("TfMethodTarget")


def _method_wrapped(python_function: Any) -> Any:
    """What a per-instance Function's Python function wraps: the bound method. Its first trace
    swaps ``__wrapped__`` for AutoGraph's converted function, an unbound one, and keeps the
    method as ``__original_wrapped__`` (TF 2.21 ``class_method_to_instance_method``,
    ``tf_decorator.rewrap``): read after a trace, ``__wrapped__`` alone lost the instance, and
    with it every stale ``self.<attribute>`` hint of a method."""
    original = getattr(python_function, "__original_wrapped__", None)
    return original if original is not None else getattr(python_function, "__wrapped__", None)


def _saved_name(fn: Any) -> str | None:
    for cf in getattr(fn, "concrete_functions", None) or ():
        name = getattr(cf, "name", "")
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        match = re.match(r"__inference_(.+?)_\d+$", str(name))
        if match:
            return match.group(1)
    return None


def _tf_data_user_function() -> Any:
    """Find the user's function handed to ``Dataset.map`` & co. on the current stack.

    tf.data wraps it in ``StructuredFunctionWrapper`` (tensorflow/python/data/ops/
    structured_function.py, TF 2.15-2.21) whose ``__init__`` holds it as ``func``.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "__init__" and frame.f_code.co_filename.endswith("structured_function.py"):
            return frame.f_locals.get("func")
        frame = frame.f_back  # type: ignore[assignment]
    return None


def created_variables(fn: Any) -> bool:
    """Whether the function's first call created tf.Variables (later calls then run the graphs
    traced without variable creation)."""
    return bool(getattr(fn, "_created_variables", None))


_CAPTURE_TYPES = (bool, int, float, str)


def scalar_captures(fn: Any, framework: bool = False) -> dict[str, str]:
    """Python scalars the function body reads from its closure, its globals or ``self``.

    They are baked into the graph at trace time and are not part of the cache key: when one
    changes later, the graph silently keeps the old value (a stale capture, no retrace).
    For a ``framework`` function only the user's step it closes over counts: Keras 3 traces
    ``one_step_on_data``, a closure over the model's bound ``train_step`` (keras/src/backend/
    tensorflow/trainer.py), so a custom ``train_step`` reading ``self.noise`` bakes it in.
    """
    python_function = getattr(fn, "_python_function", None)
    target = innermost_python_function(python_function)
    code = getattr(target, "__code__", None)
    if code is None:
        return {}
    if framework:
        return _user_step_captures(target)
    out: dict[str, str] = {}
    closure = getattr(target, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars, closure):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if type(value) in _CAPTURE_TYPES:
            out[name] = value_text(value)
    module_globals = getattr(target, "__globals__", {})
    for name in code.co_names:
        value = module_globals.get(name)
        if type(value) in _CAPTURE_TYPES:
            out[name] = value_text(value)
    instance = _bound_instance(python_function)
    if instance is not None:
        attrs = getattr(instance, "__dict__", {})
        for name in code.co_names:
            value = attrs.get(name)
            if type(value) in _CAPTURE_TYPES:
                out[f"self.{name}"] = value_text(value)
    return out


def _user_step_captures(target: Any) -> dict[str, str]:
    """``self.<name>`` scalars read by user methods bound in a framework closure."""
    out: dict[str, str] = {}
    for cell in getattr(target, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if not isinstance(value, types.MethodType):
            continue
        code = getattr(value.__func__, "__code__", None)
        if code is None or is_framework_file(code.co_filename):
            continue
        attrs = getattr(value.__self__, "__dict__", {})
        for name in code.co_names:
            attr = attrs.get(name)
            if type(attr) in _CAPTURE_TYPES:
                out[f"self.{name}"] = value_text(attr)
    return out


def _bound_instance(python_function: Any) -> Any:
    wrapped = _method_wrapped(python_function)
    if isinstance(wrapped, types.MethodType):
        target = wrapped.__self__
        weak = getattr(target, "weakrefself_target__", None)
        return weak() if callable(weak) else None
    return None


def needs_python_training(fn: Any) -> bool:
    """Whether a tf.function's body can reach a Keras 3 layer whose ``training=`` must be a
    Python bool — its closure, the globals it names, or ``self`` and the attributes it names hold
    a Keras 3 layer or model containing one.

    Measured on Keras 3.15: Dropout (and the other layers of ``keras.src.layers.regularization``:
    they branch on ``training`` in Python) and BatchNormalization raise
    OperatorNotAllowedInGraphError ("using a symbolic tf.Tensor as a Python bool") on a tensor
    ``training=``; a model of Dense layers takes one (1 trace for both values). Keras 2.15
    (tf.keras in TF 2.15) takes one in Dropout and BatchNormalization too, so only Keras 3 counts.
    """
    target = innermost_python_function(getattr(fn, "_python_function", None))
    code = getattr(target, "__code__", None)
    if code is None:
        return False
    values = []
    for cell in getattr(target, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:
            continue
    module_globals = getattr(target, "__globals__", {})
    values += [module_globals.get(name) for name in code.co_names]
    instance = _bound_instance(getattr(fn, "_python_function", None))
    if instance is not None:
        attrs = getattr(instance, "__dict__", {})
        values += [instance, *(attrs.get(name) for name in code.co_names)]
    return any(_needs_python_training(value) for value in values if value is not None)


_PYTHON_TRAINING = ("keras.src.layers.regularization.", "keras.src.layers.normalization.batch_normalization")


def _needs_python_training(value: Any) -> bool:
    if not any(c.__name__ == "Layer" and c.__module__.startswith("keras.") for c in type(value).__mro__):
        return False
    major = str(getattr(sys.modules.get("keras"), "__version__", "0")).split(".")[0]
    if not (major.isdigit() and int(major) >= 3):
        return False
    flatten = getattr(value, "_flatten_layers", None)  # Keras 3: the layer and its sublayers
    try:
        layers = list(flatten(include_self=True, recursive=True)) if callable(flatten) else [value]
    except Exception:
        layers = [value]
    return any(type(layer).__module__.startswith(_PYTHON_TRAINING) for layer in layers)
