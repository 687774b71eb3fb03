"""Whether a learner's result is the work of their graphs: the answer run once more with every
tf.function call's floating inputs scaled by random factors (same shapes and dtypes, so nothing
retraces), and what each graph called contains.

A result that stays the same when every graph gets other inputs was not computed by those
graphs (a total summed eagerly beside a tf.function called only to be counted, an empty
tf.function returning a number copied from elsewhere); a graph holding ``PyFunc`` or
``EagerPyFunc`` ops runs Python (``tf.numpy_function``, ``tf.py_function``) instead of TensorFlow.
These are formative checks in the learner's own process: they make a non-solution fail, they
do not stop a learner set on fooling them. Imports TensorFlow and NumPy only when run.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__: list[str] = []

#: Op types that call back into Python from a graph: tf.numpy_function (PyFunc) and
#: tf.py_function (EagerPyFunc), as TF 2.21 names them.
PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})

#: Each floating input element is multiplied by a factor drawn from this range: far enough from
#: 1 that every result the exercises compute moves well beyond their tolerances.
SCALE = (1.5, 2.5)


@dataclass(frozen=True)
class GraphWork:
    """The answer's result with other graph inputs, and the Python ops its graphs hold."""

    value: Any
    error: BaseException | None
    functions_called: int
    python_ops: tuple[str, ...]


def _function_class() -> Any:
    import tensorflow as tf

    return type(tf.function(lambda: None))


def _scaled(value: Any, rng: random.Random) -> Any:
    """``value`` with every floating element scaled (a tf.Tensor or NumPy array of a floating
    dtype); anything else — Python numbers, Variables, ints, bools — as it is, so the call
    keeps its cache key."""
    import numpy as np
    import tensorflow as tf

    if isinstance(value, tf.Tensor) and value.dtype.is_floating and value.shape.is_fully_defined():
        factors = np.asarray(
            [rng.uniform(*SCALE) for _ in range(int(np.prod(value.shape.as_list() or [1])))]
        ).reshape(value.shape.as_list())
        return value * tf.constant(factors, dtype=value.dtype)
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        factors = np.asarray([rng.uniform(*SCALE) for _ in range(value.size)]).reshape(value.shape)
        return (value * factors).astype(value.dtype)
    return value


def _ops_of(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> set[str]:
    """Op types of the graph ``function`` serves these arguments with, nested functions
    included (their ops live in the graph's function library)."""
    try:
        graph_def = function.get_concrete_function(*args, **kwargs).graph.as_graph_def()
    except Exception:
        return set()
    ops = {node.op for node in graph_def.node}
    for library_function in graph_def.library.function:
        ops |= {node.op for node in library_function.node_def}
    return ops


def run_with_other_inputs(answer: Callable[[], Any], seed: int | None = None) -> GraphWork:
    """Run ``answer()`` with every tf.function call's floating tensor inputs scaled by random
    factors; never raises for the answer's errors."""
    import tensorflow as tf

    rng = random.Random(seed)
    cls = _function_class()
    original = cls.__dict__["__call__"]
    calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []

    def scaled_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not tf.inside_function():  # a call while another function traces: its inputs are
            try:  # that function's symbolic tensors, already made of scaled inputs
                args, kwargs = tf.nest.map_structure(lambda v: _scaled(v, rng), (args, kwargs))
            except (TypeError, ValueError):
                pass
        if len(calls) < 50 and all(f is not self for f, _, _ in calls):
            calls.append((self, args, kwargs))
        return original(self, *args, **kwargs)

    value: Any = None
    error: BaseException | None = None
    cls.__call__ = scaled_call
    try:
        value = answer()
    except Exception as exc:
        error = exc
    finally:
        cls.__call__ = original
    ops: set[str] = set()
    for function, args, kwargs in calls:
        ops |= _ops_of(function, args, kwargs)
    return GraphWork(value, error, len(calls), tuple(sorted(ops & PYTHON_OPS)))
