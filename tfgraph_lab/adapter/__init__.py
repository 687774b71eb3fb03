"""The one place that touches TensorFlow internals (the adapter).

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

The adapter is this package: :mod:`.functions` (``Function`` objects as plain data),
:mod:`.tracing` (the trace in progress, caches, contexts, graph contents), :mod:`.trace_types`
(trace types as argument leaves) and :mod:`.xla` (XLA's compilation cache key of a call).
Everything others use is in ``__all__`` here; no other module
reads a private name of the adapter. It imports TensorFlow lazily (on first use) so
``import tfgraph_lab`` stays cheap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .functions import (
    FunctionInfo,
    created_variables,
    describe_function,
    needs_python_training,
    scalar_captures,
)
from .trace_types import signature_of
from .tracing import (
    VARIABLE_CREATION,
    TracebackFilter,
    TraceInProgress,
    cache_id,
    cached_functions,
    call_begun_unhooked,
    call_signature,
    current_context,
    describe_context,
    frames_hidden,
    graph_fingerprint,
    graph_signature,
    graph_variables,
    in_save_context,
    scope_name,
    trace_failed,
    trace_in_progress,
    unwrap_traceback_filter,
    user_place,
)
from .xla import xla_key_reader, xla_site_leaves

__all__ = [
    "MIN_SUPPORTED",
    "VARIABLE_CREATION",
    "FunctionInfo",
    "TFHandles",
    "TraceInProgress",
    "TracebackFilter",
    "cache_id",
    "cached_functions",
    "call_begun_unhooked",
    "call_signature",
    "created_variables",
    "current_context",
    "describe_context",
    "describe_function",
    "frames_hidden",
    "graph_fingerprint",
    "graph_signature",
    "graph_variables",
    "handles",
    "in_save_context",
    "loaded_handles",
    "needs_python_training",
    "probe",
    "scalar_captures",
    "scope_name",
    "signature_of",
    "trace_failed",
    "trace_in_progress",
    "unwrap_traceback_filter",
    "user_place",
    "xla_key_reader",
    "xla_site_leaves",
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


def loaded_handles() -> TFHandles | None:
    """The handles if TensorFlow was already probed, else None (never imports TensorFlow)."""
    return _HANDLES


def handles() -> TFHandles:
    """Import TensorFlow (once) and find the internals the recorder needs."""
    global _HANDLES
    if _HANDLES is not None:
        return _HANDLES
    with _LOCK:
        if _HANDLES is None:
            _HANDLES = probe()
    return _HANDLES


def probe() -> TFHandles:
    """Import TensorFlow and look up every internal the recorder uses (see :func:`handles`)."""
    try:
        import tensorflow as tf
    except ImportError as exc:  # pragma: no cover - exercised in a venv without TF
        from ..model.errors import TensorFlowMissingError

        raise TensorFlowMissingError() from exc

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
