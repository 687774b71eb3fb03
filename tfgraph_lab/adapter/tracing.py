"""How TensorFlow traces: the trace being built, the caches graphs go into, the context.

Part of the adapter (:mod:`tfgraph_lab.adapter`): reads the frames of
``tracing_compilation`` (``tracing_options``), ``FunctionCache._primary``, ``FunctionContext``,
``function_type_utils`` and graph contents, and unwraps ``traceback_utils.filter_traceback``
(TF 2.15-2.21). Imports TensorFlow lazily, inside each function.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from ..model.places import PACKAGE_DIR, is_framework_file
from ..model.signatures import Signature
from ..model.vocab import Scope
from .trace_types import signature_of

__all__ = [
    "VARIABLE_CREATION",
    "TraceInProgress",
    "TracebackFilter",
    "cache_id",
    "cached_functions",
    "call_signature",
    "current_context",
    "describe_context",
    "frames_hidden",
    "graph_fingerprint",
    "graph_signature",
    "graph_variables",
    "in_save_context",
    "scope_name",
    "trace_failed",
    "trace_in_progress",
    "unwrap_traceback_filter",
    "user_place",
]


class TraceInProgress(NamedTuple):
    """The trace that called the ``CONCRETE_FUNCTION_CALLBACKS`` entry, as plain values."""

    options: Any  # TF's TracingOptions (for describe_function when no watched call made it)
    cache_id: int  # id() of the FunctionCache the new graph goes into
    scope: Scope
    context: str  # the calling context TF keys its cache on (describe_context)
    devices: tuple[str, ...]  # its device scopes (context_devices)


def trace_in_progress() -> TraceInProgress | None:
    """The trace that is calling our callback, or None for a helper trace TF keeps in no cache
    (``fn_with_cond``, ``initialize_variables``).

    Call it from the callback's own frame (two frames below the TF frame that holds
    ``tracing_options``: ``tracing_compilation._create_concrete_function``, TF 2.15-2.21).
    """
    frame = sys._getframe(3)  # this, the hub's handler, the callback → where TF called it
    options = None
    for _ in range(8):
        if frame is None:
            break
        # co_varnames first: reading f_locals builds a dict of the frame's locals (Python 3.11)
        if "tracing_options" in frame.f_code.co_varnames:
            found = frame.f_locals.get("tracing_options")
            if found is not None and hasattr(found, "function_cache"):
                options = found
                break
        frame = frame.f_back  # type: ignore[assignment]
    cache = getattr(options, "function_cache", None)
    if options is None or cache is None:
        return None
    scope_type = options.scope_type  # ScopeType.VARIABLE_CREATION or NO_VARIABLE_CREATION
    looked_up = _looked_up_context(frame.f_back)
    if looked_up is None:
        context, devices = current_context(scope_type)
    else:
        context, devices = describe_context(looked_up), context_devices(looked_up)
    return TraceInProgress(options, id(cache), scope_name(scope_type), context, devices)


def _looked_up_context(frame: Any) -> Any:
    """The ``FunctionContext`` TensorFlow looked this trace's call up with: the local
    ``current_func_context`` of ``tracing_compilation._maybe_define_function``, the frame
    above ``_create_concrete_function`` (TF 2.15-2.21), or None (another caller: rebuild it,
    :func:`current_context`). Reading it instead of building it again spares each trace
    ``make_function_context`` (about 10% of the watch's work in a retracing loop, TF 2.21)."""
    if frame is None or "current_func_context" not in frame.f_code.co_varnames:
        return None
    return frame.f_locals.get("current_func_context")


def cache_id(fn: Any) -> int | None:
    """id() of a tf.function's graph cache (``_function_cache``), None if it has none."""
    cache = getattr(fn, "_function_cache", None)
    return None if cache is None else id(cache)


def call_begun_unhooked(traced_cache: int, function_class: type | None) -> Any:
    """The tf.function whose call on this thread is tracing into the cache ``traced_cache`` but
    began before the hooks were installed (a watch started while another thread traced), or
    None. Found as the frame running ``Function.__call__`` itself (below TF's traceback filter
    and any hook: TF 2.15-2.21) whose ``self`` owns that cache. ``function_class``: TF's
    ``Function`` class, from the probed handles (None before the probe: nothing is found)."""
    method: Any = function_class.__dict__.get("__call__") if function_class is not None else None
    while hasattr(method, "__wrapped__"):
        method = method.__wrapped__
    code = getattr(method, "__code__", None)
    frame = sys._getframe(1)
    while frame is not None and code is not None:
        if frame.f_code is code:
            fn = frame.f_locals.get("self")
            if fn is not None and cache_id(fn) == traced_cache:
                return fn
        frame = frame.f_back  # type: ignore[assignment]
    return None


def graph_signature(cf: Any, trace: TraceInProgress | None = None) -> Signature:
    """The input signature of a concrete function (its ``function_type``) as plain leaves, in
    the calling context of ``trace`` (the trace that made it; None: unknown)."""
    if trace is None:
        return signature_of(cf.function_type)
    return signature_of(cf.function_type, trace.context, trace.devices)


VARIABLE_CREATION = Scope.VARIABLE_CREATION


def scope_name(scope_type: Any) -> Scope:
    """``Scope.VARIABLE_CREATION`` for ``ScopeType.VARIABLE_CREATION``, else ``Scope.NONE``."""
    return VARIABLE_CREATION if _scope_member(scope_type) == "VARIABLE_CREATION" else Scope.NONE


def _scope_member(scope_type: Any) -> str:
    """The member name of TF's ``ScopeType`` enum (``VARIABLE_CREATION``,
    ``NO_VARIABLE_CREATION``): its ``name``, without ``Enum.__str__``'s formatting."""
    name = getattr(scope_type, "name", None)
    return name if isinstance(name, str) else str(scope_type).rpartition(".")[2]


def cached_functions(fn: Any) -> list[tuple[Any, Scope | None]]:
    """The concrete functions in a tf.function's cache, each with the scope it was traced in
    (``None`` where this TensorFlow does not say)."""
    cache = getattr(fn, "_function_cache", None)
    if cache is None:
        return []
    primary = getattr(cache, "_primary", None)
    try:
        if isinstance(primary, dict):
            out: list[tuple[Any, Scope | None]] = []
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
        if not is_framework_file(filename) and not filename.startswith(PACKAGE_DIR):
            return True
        tb = tb.tb_next
    return False


def current_context(scope_type: Any) -> tuple[str, tuple[str, ...]]:
    """The calling context TensorFlow keys its cache on (besides the arguments): its text and
    its device scopes (``context_devices``)."""
    try:
        from tensorflow.python.eager.polymorphic_function import function_context

        ctx = function_context.make_function_context(scope_type)
    except Exception:
        return "", ()
    return describe_context(ctx), context_devices(ctx)


def context_devices(function_context: Any) -> tuple[str, ...]:
    """The device scopes of a TF ``FunctionContext`` (``/device:CPU:1``): a replica's under a
    distribution strategy (TF 2.21 runs each replica thread under one)."""
    ctx = getattr(function_context, "context", None)
    return tuple(_device_text(d) for d in (getattr(ctx, "device_functions", ()) or ()))


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
        parts.append("device " + ",".join(_device_text(d) for d in devices))
    if getattr(ctx, "in_cross_replica_context", False):
        parts.append("cross-replica")
    if getattr(ctx, "variable_policy", None) is not None:
        parts.append("SavedModel save")
    if getattr(ctx, "xla_context_id", 0):
        parts.append("XLA context")
    scope = getattr(function_context, "scope_type", None)
    if scope is not None and _scope_member(scope) == "VARIABLE_CREATION":
        parts.append("variable-creation scope")
    return "; ".join(parts)


def _device_text(device: Any) -> str:
    """A device scope as its spec (``/device:CPU:1``), not ``<MergeDevice object at 0x…>``:
    TF 2.21 wraps each ``tf.device`` scope (a strategy's replica thread runs under one per
    device) in a ``MergeDevice`` with no ``__repr__`` of its own but a ``_spec``."""
    spec = getattr(device, "_spec", None)
    to_string = getattr(spec, "to_string", None)
    if to_string is not None:
        text = str(to_string())
        return text.replace("/job:localhost/replica:0/task:0", "") or "(any)"
    if callable(device):
        return f"device function {getattr(device, '__qualname__', type(device).__name__)}"
    return str(device)


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


def graph_fingerprint(cf: Any) -> int | None:
    """A hash of a concrete function's graph that ignores constant values: the op types in
    order, with their inputs' op types and their outputs' dtypes. Two graphs with equal
    fingerprints differ at most in constants and in the shapes of their inputs: the caller
    adds the input signature (the inputs' shapes, from the graph's ``function_type``).

    Const values, and the static shapes inferred from them (``tf.range(10)`` vs
    ``tf.range(20)``), are left out on purpose. Each op's type is read once (a C call each),
    and no tensor's shape is read: ``str(t.shape)`` of the placeholders was a third of the
    cost of a freshly traced graph's fingerprint (41 → 30 µs for ``x * s``, TF 2.21)."""
    try:
        ops = cf.graph.get_operations()
        kinds = {op: op.type for op in ops}
        parts = tuple(
            (
                kinds[op],
                tuple(kinds.get(t.op) or t.op.type for t in op.inputs),
                tuple(t.dtype for t in op.outputs),
            )
            for op in ops
        )
    except Exception:
        return None
    return hash(parts)


def graph_variables(cf: Any) -> tuple[Any, ...] | None:
    """Weak references to the tf.Variables a concrete function's graph reads (captured, or
    created by its first trace); None when TensorFlow does not say. Weak: a watch never keeps a
    model's variables alive."""
    try:
        return tuple(weakref.ref(v) for v in cf.variables)
    except Exception:
        return None


_GENERATED = "__autograph_generated_file"


def user_place(place: str | None) -> str | None:
    """A place in AutoGraph's generated code (``<tmp>/__autograph_generated_file….py:13``, a
    call made while an outer tf.function traces) as the user's line it was generated from;
    any other place as it is.

    AutoGraph keeps the map while the converted function runs (TF 2.15-2.21:
    ``autograph.impl.api.converted_call`` enters a ``StackTraceMapper`` built from the converted
    function's ``ag_source_map`` on ``tf_stack``'s per-thread stack, and its
    ``get_effective_source_map()`` gives (file, line) → (file, line, function) for every
    converted function on the stack), which is how TF's own error messages name user lines."""
    if not place or _GENERATED not in place:
        return place
    file, _, line = place.rpartition(":")
    try:
        from tensorflow.python.util import tf_stack

        stack = tf_stack._source_mapper_stacks.get(tf_stack._get_thread_key())
        mapped = stack[-1].get_effective_source_map().get((file, int(line))) if stack else None
    except Exception:  # TF moved it: the generated place is still a true place
        return place
    if not mapped:
        return place
    return f"{mapped[0]}:{mapped[1]}"


@contextmanager
def frames_hidden(filenames: Iterable[str]) -> Iterator[None]:
    """While the block runs on this thread, the stacks TensorFlow records for the ops it
    creates (its errors' "defined at (most recent call last)") leave out ``filenames``.

    TF 2.15-2.21 filter those stacks through ``tf_stack``'s per-thread filter stack, as
    AutoGraph's ``CurrentModuleFilter`` hides its own module; a ``StackTraceFilter`` entered
    here adds the names (and keeps the ones entered before). Where TF moved it, nothing is hidden."""
    names = frozenset(filenames)
    try:
        from tensorflow.python.util import tf_stack

        class _Hidden(tf_stack.StackTraceFilter):  # type: ignore[misc]
            def get_filtered_filenames(self) -> frozenset[str]:
                return names | frozenset(self.parent.get_filtered_filenames())

        hidden: Any = _Hidden()
    except Exception:  # a TensorFlow without it: the stacks stay as TF records them
        yield
        return
    with hidden:
        yield
