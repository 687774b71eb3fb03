"""The reference result of an exercise: its worked solution, run eagerly in a fresh namespace.

Checks judge the learner's result against this, never against the learner's own code run
eagerly (a wrong answer agrees with itself). Computed once per exercise and kept as NumPy.
Imports TensorFlow (and Keras, when the solution uses it) only when first asked.
"""

from __future__ import annotations

import linecache
from types import SimpleNamespace
from typing import Any

from .measuring import _eagerly

__all__: list[str] = []

#: The names of ``tfgraph_lab.exercises`` a worked solution may use as ``ex.NAME`` (a test checks
#: every solution and variant uses no other): handed in as a namespace, so that the reference
#: reads no module above it (the package imports this module).
SOLUTION_API = ("compare_eager",)


def solution_api() -> SimpleNamespace:
    """``ex`` inside a worked solution: :data:`SOLUTION_API`, the same functions a learner calls."""
    from .timing import compare_eager

    names = {"compare_eager": compare_eager}
    return SimpleNamespace(**{name: names[name] for name in SOLUTION_API})

_VALUES: dict[str, Any] = {}


def reference_value(ex: Any, solution: str = "", variant: str = "") -> Any:
    """What ``ex.solution``'s ``ex.answer()`` returns, run eagerly (no graph of the learner's
    session is touched: the solution's names live in a namespace of their own); with
    ``solution`` and ``variant``, what that other worked solution (an ``ex.variants`` entry)
    returns."""
    key = f"{ex.id}:{variant}" if variant else ex.id
    if key not in _VALUES:
        import numpy as np
        import tensorflow as tf

        source = solution or ex.solution
        namespace: dict[str, Any] = {"tf": tf, "np": np, "ex": solution_api()}
        if "keras." in source:
            import keras

            namespace["keras"] = keras
        filename = f"<reference solution {key}>"
        lines = source.splitlines(True)
        linecache.cache[filename] = (len(source), None, lines, filename)  # for AutoGraph
        code = compile(source, filename, "exec")
        exec(code, namespace)
        value = _eagerly(namespace[ex.answer])
        _VALUES[key] = value if isinstance(value, float) else np.asarray(value)
    return _VALUES[key]
