"""The one place that touches TensorFlow internals.

Every private TensorFlow name the project uses is looked up here, once, with feature detection.
When a TensorFlow release moves something, :func:`probe` says what is missing and the recorder
falls back to a count-only mode (``experimental_get_tracing_count()`` before/after each call)
instead of reporting wrong numbers.

Facts checked on tensorflow-cpu 2.21.0 (Keras 3.15.1) and 2.15.1:

* ``Function.__call__`` patched at class level sees every tf.function call, including methods
  (one ``Function`` per instance via ``__get__``), Keras's internal functions, restored
  SavedModel functions (``RestoredFunction`` subclasses ``Function``) and MirroredStrategy clones.
* ``transform.CONCRETE_FUNCTION_CALLBACKS`` fires once per new concrete function, on the
  tracing thread, from ``tracing_compilation._create_concrete_function`` whose frame holds the
  ``tracing_options`` (with the ``function_cache`` that will receive the graph). It also fires
  for helper traces that go into no cache (``fn_with_cond``, ``initialize_variables``): those
  are not counted by ``experimental_get_tracing_count()`` and must not be counted here.
* ``FunctionCache`` has ``__slots__`` and cannot be weak-referenced: it is identified by id()
  while the owning ``Function`` (weak-referenced) is alive. Its ``_primary`` dict is keyed by
  ``(FunctionContext(context, scope_type), function_type)``.
* ``Function.__call__`` is TF's ``traceback_utils.filter_traceback`` wrapper (``error_handler``,
  with ``__wrapped__``) around the real method; it checks ``is_traceback_filtering_enabled()`` on
  every call and, on an exception, re-raises it with ``_process_traceback_frames`` applied, from
  None (identical in 2.15 and 2.21). See :func:`unwrap_traceback_filter`.
* Which graphs can serve a cached call (``Function._call``): once the first call created
  variables (``_created_variables`` non-empty) every later call looks up the graphs traced with
  ``ScopeType.NO_VARIABLE_CREATION``; otherwise those traced with ``VARIABLE_CREATION``.

This module imports TensorFlow lazily (on first use) so ``import tfgraph_lab`` stays cheap.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ._tf_signatures import _signature_text, _value_text, signature_of
from .records import Signature

__all__ = [
    "FunctionInfo",
    "TFHandles",
    "TracebackFilter",
    "cached_functions",
    "call_signature",
    "caller_location",
    "created_variables",
    "describe_context",
    "describe_function",
    "graph_fingerprint",
    "handles",
    "is_framework_file",
    "scalar_captures",
    "signature_of",
    "trace_failed",
    "unwrap_traceback_filter",
]

MIN_SUPPORTED = (2, 15)


@dataclass(frozen=True)
class TFHandles:
    """The TensorFlow objects the recorder patches or reads, found once."""

    version: str
    function_class: type
    concrete_function_class: type | None
    callbacks: list[Callable[[Any], None]] | None
    eager_flag_module: Any
    full: bool
    missing: tuple[str, ...]

    def run_functions_eagerly(self) -> bool:
        return bool(getattr(self.eager_flag_module, "RUN_FUNCTIONS_EAGERLY", False))


_HANDLES: TFHandles | None = None
_LOCK = threading.Lock()


def _version_tuple(version: str) -> tuple[int, int]:
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (0, 0)


def handles() -> TFHandles:
    """Import TensorFlow (once) and find the internals the recorder needs."""
    global _HANDLES
    if _HANDLES is not None:
        return _HANDLES
    with _LOCK:
        if _HANDLES is None:
            _HANDLES = _probe()
    return _HANDLES


def _probe() -> TFHandles:
    try:
        import tensorflow as tf
    except ImportError as exc:  # pragma: no cover - exercised in a venv without TF
        from .errors import TensorFlowMissingError

        raise TensorFlowMissingError(
            "tfgraph_lab needs TensorFlow, which is not installed in this environment "
            f"({sys.executable}). Install it with `pip install tensorflow` "
            "(or `pip install tensorflow-cpu` on Linux/Windows x86-64)."
        ) from exc

    missing: list[str] = []
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

    function_class = pf.Function
    try:
        from tensorflow.python.eager.polymorphic_function import transform

        callbacks: list[Callable[[Any], None]] | None = transform.CONCRETE_FUNCTION_CALLBACKS
        if not isinstance(callbacks, list):
            callbacks = None
            missing.append("transform.CONCRETE_FUNCTION_CALLBACKS")
    except ImportError:
        callbacks = None
        missing.append("transform.CONCRETE_FUNCTION_CALLBACKS")
    try:
        from tensorflow.python.eager.polymorphic_function import concrete_function

        cf_class: type | None = concrete_function.ConcreteFunction
        if not hasattr(cf_class, "_call_flat"):
            cf_class = None
            missing.append("ConcreteFunction._call_flat")
    except ImportError:
        cf_class = None
        missing.append("ConcreteFunction")
    try:
        from tensorflow.python.eager.polymorphic_function import eager_function_run as efr
    except ImportError:
        efr = None
        missing.append("eager_function_run.RUN_FUNCTIONS_EAGERLY")
    # Instance attributes (_function_cache, _name) are checked per object by the recorder.
    if "_get_concrete_function_garbage_collected" not in function_class.__dict__:
        missing.append("Function._get_concrete_function_garbage_collected")
    version = str(tf.__version__)
    if _version_tuple(version) < MIN_SUPPORTED:
        missing.append(f"TensorFlow >= {MIN_SUPPORTED[0]}.{MIN_SUPPORTED[1]} (found {version})")
    return TFHandles(
        version=version,
        function_class=function_class,
        concrete_function_class=cf_class,
        callbacks=callbacks,
        eager_flag_module=efr,
        full=not missing,
        missing=tuple(missing),
    )


# --------------------------------------------------------------------------- functions


@dataclass(frozen=True)
class FunctionInfo:
    """What the report needs to know about one tf.function object, as plain data."""

    qualname: str
    filename: str
    firstlineno: int
    name: str
    framework: bool
    reduce_retracing: bool
    input_signature: str | None
    via_hint: str
    kind: str = "function"  # "function", "method" (one object per instance), "restored", "tf.data"


def innermost_python_function(obj: Any) -> Any:
    """Follow ``__wrapped__`` and bound methods' ``__func__`` to the user's own function."""
    seen = set()
    while id(obj) not in seen:
        seen.add(id(obj))
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
            continue
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is not None and wrapped is not obj:
            obj = wrapped
            continue
        break
    return obj


def _code_location(fn: Any) -> tuple[str, str, int]:
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if qualname is None:
        qualname = type(fn).__qualname__
    code = getattr(fn, "__code__", None)
    if code is None and callable(fn):
        code = getattr(type(fn).__call__, "__code__", None)
    filename = code.co_filename if code is not None else "<unknown>"
    firstlineno = code.co_firstlineno if code is not None else 0
    return str(qualname), filename, int(firstlineno)


def describe_function(fn: Any, tracing_options: Any = None) -> FunctionInfo:
    """Describe a ``Function`` (or, without one, the tracing options of a trace)."""
    via_hint = "call"
    if fn is not None:
        python_function = getattr(fn, "_python_function", None) or getattr(fn, "python_function", None)
        name = str(getattr(fn, "_name", "") or "")
        reduce_retracing = bool(getattr(fn, "_reduce_retracing", False))
        signature = getattr(fn, "input_signature", None)
        attributes = getattr(fn, "_attributes", None) or {}
    else:
        python_function = getattr(tracing_options, "python_function", None)
        name = str(getattr(tracing_options, "name", "") or "")
        reduce_retracing = bool(getattr(tracing_options, "reduce_retracing", False))
        signature = getattr(tracing_options, "input_signature", None)
        attributes = getattr(tracing_options, "attributes", None) or {}
    kind = "method" if _is_instance_method(python_function) else "function"
    if _is_tf_data(attributes, python_function):
        via_hint = kind = "tf.data"
        user_fn = _tf_data_user_function()
        if user_fn is not None:
            python_function = user_fn
    target = innermost_python_function(python_function)
    user_fn = _strategy_clone_target(target)
    if user_fn is not None:
        target, via_hint = user_fn, "replica"
    qualname, filename, firstlineno = _code_location(target)
    framework = is_framework_file(filename)
    if qualname.endswith("<lambda>") and "." not in qualname:
        qualname = "<lambda>"
    if fn is not None and type(fn).__name__ == "RestoredFunction":
        # A SavedModel-restored function has no Python source: name it after the saved
        # function (concrete function names are ``__inference_<name>_<uid>``, TF 2.15-2.21).
        kind = via_hint = "restored"
        qualname = f"restored {_saved_name(fn) or name}"
        framework = False
    return FunctionInfo(
        qualname=qualname,
        filename=filename,
        firstlineno=firstlineno,
        name=name,
        framework=framework,
        reduce_retracing=reduce_retracing,
        input_signature=_signature_text(signature),
        via_hint=via_hint,
        kind=kind,
    )


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
    wrapped = getattr(python_function, "__wrapped__", None)
    return isinstance(wrapped, types.MethodType) and type(wrapped.__self__).__name__ == ("TfMethodTarget")


def _saved_name(fn: Any) -> str | None:
    import re

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


# ---------------------------------------------------------------------- framework files


def _framework_roots() -> tuple[str, ...]:
    roots = []
    for package in ("tensorflow", "keras", "tf_keras", "absl", "tensorflow_datasets"):
        module = sys.modules.get(package)
        path = getattr(module, "__file__", None)
        if path:
            roots.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    purelib = sysconfig.get_paths().get("purelib")
    if purelib:
        for package in ("tensorflow", "keras", "tf_keras"):
            roots.append(os.path.join(purelib, package) + os.sep)
    return tuple(dict.fromkeys(roots))


_ROOTS: tuple[str, ...] | None = None


def is_framework_file(filename: str) -> bool:
    """True for code of TensorFlow, Keras (or this package): not the user's."""
    global _ROOTS
    if _ROOTS is None:
        _ROOTS = _framework_roots()
    if filename.startswith("<frozen"):
        return True
    path = filename if filename.startswith("<") else os.path.abspath(filename)
    return path.startswith(_ROOTS)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# Our own machinery; the demo module is user-like code and stays visible.
_DEMO = _PACKAGE_DIR + "demo.py"  # the built-in demo plays the user: its lines are shown


@functools.lru_cache(maxsize=1)
def _stdlib_dir() -> str:
    return sysconfig.get_paths().get("stdlib", "") + os.sep


def caller_location() -> str | None:
    """``file:line`` of the innermost frame outside TF, Keras, tfgraph_lab and the stdlib."""
    stdlib = _stdlib_dir()
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if (
            not is_framework_file(filename)
            and (not filename.startswith(_PACKAGE_DIR) or filename == _DEMO)
            and not (stdlib != os.sep and filename.startswith(stdlib))
        ):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return None


# --------------------------------------------------------------------------- tracing


def find_tracing_options() -> Any:
    """The ``tracing_options`` of the trace that is calling our callback (or None)."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return None
        options = frame.f_locals.get("tracing_options")
        if options is not None and hasattr(options, "function_cache"):
            return options
        frame = frame.f_back  # type: ignore[assignment]
    return None


VARIABLE_CREATION = "variable-creation"


def scope_name(scope_type: Any) -> str:
    """``"variable-creation"`` for ``ScopeType.VARIABLE_CREATION``, else ``""``."""
    return VARIABLE_CREATION if str(scope_type).endswith(".VARIABLE_CREATION") else ""


def cached_functions(fn: Any) -> list[tuple[Any, str | None]]:
    """The concrete functions in a tf.function's cache, each with the scope it was traced in
    (``None`` where this TensorFlow does not say)."""
    cache = getattr(fn, "_function_cache", None)
    if cache is None:
        return []
    primary = getattr(cache, "_primary", None)
    try:
        if isinstance(primary, dict):
            out: list[tuple[Any, str | None]] = []
            for key, cf in list(primary.items()):
                scope_type = getattr(key[0], "scope_type", None) if isinstance(key, tuple) else None
                out.append((cf, None if scope_type is None else scope_name(scope_type)))
            return out
        return [(cf, None) for cf in cache.values()]
    except Exception:
        return []


class TracebackFilter(NamedTuple):
    """TF's own exception filtering: ``if enabled(): raise exc.with_traceback(process(tb))``."""

    enabled: Callable[[], bool]
    process: Callable[[Any], Any]


def unwrap_traceback_filter(method: Callable[..., Any]) -> tuple[Callable[..., Any], TracebackFilter | None]:
    """Split TF's ``filter_traceback`` wrapper off ``method``.

    Returns ``(inner, tb_filter)``: a hook that calls ``inner`` instead of ``method`` and, when
    ``inner`` raises an ``Exception`` and ``tb_filter.enabled()``, re-raises it with
    ``tb_filter.process`` applied to the traceback below its own frame, from None, does exactly
    what the wrapper does (its own frame stands where the wrapper's ``error_handler`` stood),
    without the wrapper's Python frame and its per-call check. When ``method`` is not that
    wrapper (another TF release), returns ``(method, None)``: call it as it is.
    """
    try:
        from tensorflow.python.util import traceback_utils as tu

        wrapper_code = tu.filter_traceback(lambda: None).__code__
        inner = method.__wrapped__  # type: ignore[attr-defined]
        tb_filter = TracebackFilter(tu.is_traceback_filtering_enabled, tu._process_traceback_frames)
    except (ImportError, AttributeError):
        return method, None
    if getattr(method, "__code__", None) is not wrapper_code or not callable(inner):
        return method, None
    return inner, tb_filter


def created_variables(fn: Any) -> bool:
    """Whether the function's first call created tf.Variables (later calls then run the graphs
    traced without variable creation)."""
    return bool(getattr(fn, "_created_variables", None))


def error_text(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line. TF's "in user code:" errors put the real message last."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    message = lines[-1] if lines else ""
    name = type(exc).__name__
    if message.startswith(name + ":"):
        message = message[len(name) + 1 :].strip()
    text = f"{name}: {message}" if message else name
    return text if len(text) <= limit else text[: limit - 1] + "…"


def trace_failed(exc: BaseException) -> bool:
    """True when the exception was raised while TensorFlow was tracing (building a graph).

    Call only for a call that ran no graph and not eagerly. TF's ``filter_traceback``
    (traceback_utils, on by default in 2.15-2.21) strips its own frames, so the sign is either
    TF's tracing frame (filtering off) or any frame of user code below the call: the Python
    body of a tf.function runs only while it is traced. Errors raised before tracing (argument
    binding, input_signature mismatch) have neither.
    """
    tb = exc.__traceback__
    if tb is not None:
        tb = tb.tb_next  # skip the hook's own frame
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name in ("func_graph_from_py_func", "_create_concrete_function"):
            return True
        filename = code.co_filename
        if not is_framework_file(filename) and not filename.startswith(_PACKAGE_DIR):
            return True
        tb = tb.tb_next
    return False


def current_context(scope_type: Any) -> str:
    """Describe the calling context TensorFlow keys its cache on (besides the arguments)."""
    try:
        from tensorflow.python.eager.polymorphic_function import function_context

        ctx = function_context.make_function_context(scope_type)
    except Exception:
        return ""
    return describe_context(ctx)


def describe_context(function_context: Any) -> str:
    """Render a TF ``FunctionContext`` as short text, e.g. ``eager`` or ``inside graph f``."""
    ctx = getattr(function_context, "context", None)
    parts: list[str] = []
    parent = getattr(ctx, "parent_graph", None)
    if parent is None:
        parts.append("eager")
    else:
        name = getattr(parent, "name", None)
        parts.append(f"inside graph {name}" if name else "inside a tf.Graph (graph-mode code)")
    devices = getattr(ctx, "device_functions", ()) or ()
    if devices:
        parts.append("device " + ",".join(str(d) for d in devices))
    if getattr(ctx, "in_cross_replica_context", False):
        parts.append("cross-replica")
    if getattr(ctx, "variable_policy", None) is not None:
        parts.append("SavedModel save")
    if getattr(ctx, "xla_context_id", 0):
        parts.append("XLA context")
    scope = getattr(function_context, "scope_type", None)
    if scope is not None and "NO_VARIABLE" not in str(scope) and "VARIABLE" in str(scope):
        parts.append("variable-creation scope")
    return "; ".join(parts)


def in_save_context() -> bool:
    try:
        from tensorflow.python.saved_model import save_context
    except ImportError:
        return False
    return bool(save_context.in_save_context())


def call_signature(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Signature | None:
    """The signature TF looked the call up with (before any ``reduce_retracing`` relaxation).

    Mirrors ``tracing_compilation._maybe_define_function`` (TF 2.15-2.21). ~80 us: only called
    for calls that traced.
    """
    try:
        from tensorflow.python.eager.polymorphic_function import function_type_utils as ftu

        bound = ftu.canonicalize_function_inputs(
            args, kwargs, fn._function_type, fn._default_values, fn._is_pure
        )
        capture_types = fn._function_captures.capture_types
        lookup_type, _ = ftu.make_canonicalized_monomorphic_type(
            bound.args, bound.kwargs, capture_types, fn._function_type
        )
    except Exception:
        return None
    return signature_of(lookup_type)


# --------------------------------------------------------------------- graph contents


def graph_fingerprint(cf: Any) -> int | None:
    """A hash of a concrete function's graph that ignores constant values: the op types in
    order with their inputs. Two graphs with equal fingerprints differ at most in constants."""
    try:
        ops = cf.graph.get_operations()
        parts = tuple(
            (
                op.type,
                tuple(t.op.type for t in op.inputs),
                # output dtypes, and the shapes of the inputs (placeholders): inputs of another
                # shape are not "the same graph". Const values, and the static shapes inferred
                # from them (tf.range(10) vs tf.range(20)), are left out on purpose.
                tuple((t.dtype.name, str(t.shape) if op.type == "Placeholder" else "") for t in op.outputs),
            )
            for op in ops
        )
    except Exception:
        return None
    return hash(parts)


_CAPTURE_TYPES = (bool, int, float, str)


def scalar_captures(fn: Any) -> dict[str, str]:
    """Python scalars the function body reads from its closure, its globals or ``self``.

    They are baked into the graph at trace time and are not part of the cache key: when one
    changes later, the graph silently keeps the old value (a stale capture, no retrace).
    """
    python_function = getattr(fn, "_python_function", None)
    target = innermost_python_function(python_function)
    code = getattr(target, "__code__", None)
    if code is None:
        return {}
    out: dict[str, str] = {}
    closure = getattr(target, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars, closure):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if type(value) in _CAPTURE_TYPES:
            out[name] = _value_text(value)
    module_globals = getattr(target, "__globals__", {})
    for name in code.co_names:
        value = module_globals.get(name)
        if type(value) in _CAPTURE_TYPES:
            out[name] = _value_text(value)
    instance = _bound_instance(python_function)
    if instance is not None:
        attrs = getattr(instance, "__dict__", {})
        for name in code.co_names:
            value = attrs.get(name)
            if type(value) in _CAPTURE_TYPES:
                out[f"self.{name}"] = _value_text(value)
    return out


def _bound_instance(python_function: Any) -> Any:
    wrapped = getattr(python_function, "__wrapped__", None)
    if isinstance(wrapped, types.MethodType):
        target = wrapped.__self__
        weak = getattr(target, "weakrefself_target__", None)
        return weak() if callable(weak) else None
    return None
