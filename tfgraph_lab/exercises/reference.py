"""The reference result of an exercise: its worked solution, run eagerly in a fresh namespace.

Checks judge the learner's result against this, never against the learner's own code run
eagerly (a wrong answer agrees with itself). Computed once per exercise and kept as NumPy.
Imports TensorFlow (and Keras, when the solution uses it) only when first asked.
"""

from __future__ import annotations

import linecache
from typing import Any

from .measuring import _eagerly

__all__: list[str] = []

_VALUES: dict[str, Any] = {}


def reference_value(ex: Any) -> Any:
    """What ``ex.solution``'s ``ex.answer()`` returns, run eagerly (no graph of the learner's
    session is touched: the solution's names live in a namespace of their own)."""
    if ex.id not in _VALUES:
        import numpy as np
        import tensorflow as tf

        from .. import exercises

        namespace: dict[str, Any] = {"tf": tf, "np": np, "ex": exercises}
        if "keras." in ex.solution:
            import keras

            namespace["keras"] = keras
        filename = f"<reference solution {ex.id}>"
        lines = ex.solution.splitlines(True)
        linecache.cache[filename] = (len(ex.solution), None, lines, filename)  # for AutoGraph
        code = compile(ex.solution, filename, "exec")
        exec(code, namespace)
        value = _eagerly(namespace[ex.answer])
        _VALUES[ex.id] = value if isinstance(value, float) else np.asarray(value)
    return _VALUES[ex.id]
