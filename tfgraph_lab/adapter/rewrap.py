"""Re-wrapping a tf.function with other options, and the results its calls return.

Part of the adapter (:mod:`tfgraph_lab.adapter`), for trying a fix on the learner's own code
(:mod:`tfgraph_lab.trial.tryfix`):

* :func:`function_options` reads the options a ``Function`` was made with (private attributes
  ``_autograph``, ``_jit_compile``, ``_reduce_retracing``, ``_experimental_autograph_options``,
  ``_attributes``; TF 2.15-2.21), so a fix changes one keyword and keeps the others;
* :func:`rewrap` builds ``tf.function(python_function, **options)`` with some overridden;
* :func:`intercept_tf_function` replaces the public ``tf.function`` for a while, so a cell that
  defines the function itself (``@tf.function`` or ``tf.function(f)`` in a loop) gets the fix;
* :func:`global_random_generator` is ``tf.random``'s global generator, when one exists (its
  state is restored after a trial);
* :func:`capture_results` wraps ``Function.__call__`` at class level for a while and keeps the
  eager results of the calls of the functions it is asked about (never their arguments).

Each restores what it replaced on every exit path.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ..model.places import code_location, innermost_python_function

__all__ = [
    "Location",
    "ResultLog",
    "capture_results",
    "draws_random_numbers",
    "function_location",
    "function_options",
    "global_random_generator",
    "intercept_tf_function",
    "is_tf_function",
    "rewrap",
    "tracing_count",
]

Location = tuple[str, str, int]  # qualname, filename, first line of the innermost function

# Results kept per function: enough to compare a training loop, bounded for long ones.
MAX_RESULTS = 2000


def is_tf_function(obj: Any) -> bool:
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

    return isinstance(obj, pf.Function)


def function_location(obj: Any) -> Location | None:
    """Where the Python code a tf.function (or a plain function) wraps lives."""
    target = getattr(obj, "python_function", obj) if is_tf_function(obj) else obj
    target = innermost_python_function(target)
    if getattr(target, "__code__", None) is None:
        return None
    return code_location(target)


def function_options(fn: Any) -> dict[str, Any]:
    """The keyword arguments ``tf.function`` was given for ``fn`` (those a fix may change)."""
    options: dict[str, Any] = {
        "input_signature": fn.input_signature,
        "autograph": getattr(fn, "_autograph", True),
        "jit_compile": getattr(fn, "_jit_compile", None),
        "reduce_retracing": bool(getattr(fn, "_reduce_retracing", False)),
    }
    autograph_options = getattr(fn, "_experimental_autograph_options", None)
    if autograph_options is not None:
        options["experimental_autograph_options"] = autograph_options
    attributes = dict(getattr(fn, "_attributes", None) or {})
    if attributes:
        options["experimental_attributes"] = attributes
    return options


def tracing_count(fn: Any) -> int:
    """Graphs traced by ``fn`` and, for a decorated method, by the per-instance Functions it
    made (``_descriptor_cache``: TF 2.15-2.21 creates one per instance in ``__get__``)."""
    count = int(fn.experimental_get_tracing_count())
    cache = getattr(fn, "_descriptor_cache", None)
    for bound in list(cache.values()) if cache is not None else ():
        if hasattr(bound, "experimental_get_tracing_count"):
            count += int(bound.experimental_get_tracing_count())
    return count


_RANDOM_OPS = {"Multinomial", "TruncatedNormal", "ParameterizedTruncatedNormal", "RngReadAndSkip", "RngSkip"}


def _is_random_op(op: str) -> bool:
    return "Random" in op or op in _RANDOM_OPS or (op.startswith("Stateful") and "Call" not in op)


def draws_random_numbers(fn: Any) -> bool:
    """Whether a graph ``fn`` traced holds a random op (dropout, ``tf.random.*``), also inside a
    ``tf.cond`` branch or a nested function (the graph's function library). Such a graph draws
    other numbers than the graphs it replaces, even under ``tf.random.set_seed``: each new graph
    starts its ops' random state afresh (TF 2.21), so one graph reused for every call and one
    graph per call give different numbers without any change of meaning."""
    functions = [fn]
    cache = getattr(fn, "_descriptor_cache", None)
    functions += list(cache.values()) if cache is not None else []
    for f in functions:
        for concrete in getattr(f, "_list_all_concrete_functions", lambda: [])():
            graph_def = concrete.graph.as_graph_def()
            ops = [node.op for node in graph_def.node]
            ops += [node.op for lib in graph_def.library.function for node in lib.node_def]
            if any(_is_random_op(op) for op in ops):
                return True
    return False


def global_random_generator() -> Any:
    """``tf.random``'s global generator when the code created one (``stateful_random_ops``'s
    private ``global_generator``, TF 2.15-2.21), else None: never creates it."""
    from tensorflow.python.ops import stateful_random_ops

    return getattr(stateful_random_ops, "global_generator", None)


def rewrap(fn: Any, overrides: dict[str, Any]) -> Any:
    """A new ``tf.function`` over ``fn``'s Python function, with ``overrides`` applied."""
    import tensorflow as tf

    return tf.function(fn.python_function, **{**function_options(fn), **overrides})


@contextlib.contextmanager
def intercept_tf_function(wrap: Callable[[Any, Any, dict[str, Any]], Any]) -> Iterator[None]:
    """While active, ``tf.function(func, **kw)`` (and ``@tf.function(**kw)``) returns
    ``wrap(original_tf_function, func, kw)``: the fix decides what to build."""
    import tensorflow as tf

    original = tf.function

    def function(func: Any = None, **kwargs: Any) -> Any:
        if func is None:
            return lambda inner: wrap(original, inner, kwargs)
        return wrap(original, func, kwargs)

    function.__doc__ = original.__doc__
    module = sys.modules["tensorflow"]
    module.function = function  # type: ignore[attr-defined]
    try:
        yield
    finally:
        module.function = original  # type: ignore[attr-defined]


class ResultLog:
    """Eager results of the calls of some tf.functions, in call order, per code location."""

    def __init__(self, wanted: Callable[[Location], bool]) -> None:
        self.wanted = wanted
        self.results: dict[Location, list[Any]] = {}
        self.calls: dict[Location, int] = {}
        self._where: dict[int, tuple[Any, Location | None]] = {}
        self.failures = 0  # results that could not be kept (then outputs are not compared)

    def location(self, fn: Any) -> Location | None:
        known = self._where.get(id(fn))
        if known is not None and known[0]() is fn:
            return known[1]
        import weakref

        where = function_location(fn)
        if where is not None and not self.wanted(where):
            where = None
        try:
            self._where[id(fn)] = (weakref.ref(fn), where)
        except TypeError:
            pass
        return where

    def add(self, where: Location, result: Any) -> None:
        self.calls[where] = self.calls.get(where, 0) + 1
        kept = self.results.setdefault(where, [])
        if len(kept) < MAX_RESULTS:
            kept.append(result)


@contextlib.contextmanager
def capture_results(wanted: Callable[[Location], bool]) -> Iterator[ResultLog]:
    """Keep the eager results of calls of the tf.functions whose code location is ``wanted``.

    Wraps ``Function.__call__`` at class level, over or under tfgraph_lab's own hook (each
    restores what it found, so the two nest); calls made while a graph is being traced return
    symbolic tensors and are not kept."""
    import tensorflow as tf
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

    log = ResultLog(wanted)
    original = pf.Function.__dict__["__call__"]

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # the user's error shows their frames, not this wrapper
        result = original(self, *args, **kwargs)
        try:  # keeping a result must never break the user's call
            if tf.executing_eagerly():
                where = log.location(self)
                if where is not None:
                    log.add(where, result)
        except Exception:
            log.failures += 1
        return result

    pf.Function.__call__ = __call__  # type: ignore[method-assign]
    try:
        yield log
    finally:
        # Only if still ours: a tfgraph_lab hook installed before this one and removed since
        # took this wrapper away with it (it restores what it found).
        if pf.Function.__dict__.get("__call__") is __call__:
            pf.Function.__call__ = original  # type: ignore[method-assign]
