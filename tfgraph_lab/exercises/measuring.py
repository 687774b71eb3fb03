"""Measure what a learner's code needed: run it under :func:`tfgraph_lab.watch` and summarise,
per user function, calls, traces, the graphs that served them and wasted traces."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.vocab import ReasonCode
from .graph_work import PYTHON_OPS, _ops_of

__all__ = ["FunctionUse", "Measurement", "measure"]


@dataclass(frozen=True)
class FunctionUse:
    """What one user tf.function cost during a check.

    ``graphs`` is how many distinct graphs served its calls (it does not depend on whether the
    cache was already warm); ``wasted`` counts traces for any reason other than a first trace or
    the one-off variable-creation trace, plus first traces of re-created function objects.
    """

    qualname: str  # the function as the report shows it (its label)
    calls: int
    traces: int
    graphs: int
    wasted: int
    reasons: tuple[str, ...] = ()
    eager_calls: int = 0  # calls that ran as plain Python (tf.config.run_functions_eagerly(True))

    @property
    def needed(self) -> int:
        """Graphs this workload needed (same as ``graphs``; named for the verdicts)."""
        return self.graphs


@dataclass(frozen=True)
class Measurement:
    """One run of the learner's code under ``watch()``."""

    value: Any
    error: BaseException | None
    seconds: float
    report: Any
    functions: tuple[FunctionUse, ...] = ()

    def use(self, qualname: str) -> FunctionUse | None:
        for f in self.functions:
            if f.qualname == qualname or f.qualname.endswith("." + qualname):
                return f
        return None

    @property
    def total_graphs(self) -> int:
        return sum(f.needed for f in self.functions)


def measure(fn: Callable[..., Any], *args: Any, learners: Sequence[Any] = (), **kwargs: Any) -> Measurement:
    """Call ``fn(*args, **kwargs)`` under :func:`tfgraph_lab.watch`; never raises for its errors.

    The report leaves out tf.functions whose code is TensorFlow's own; ``learners`` names the
    tf.functions the learner handed in, which count even then (``tf.function(tf.square)`` is a
    learner's tf.function whose code is TensorFlow's).
    """
    from ..watching.recorder import watch

    value: Any = None
    error: BaseException | None = None
    with watch() as recorder:
        t0 = time.perf_counter()
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:
            error = exc
        seconds = time.perf_counter() - t0
    report = recorder.report
    return Measurement(value, error, seconds, report, _uses(report, _places(learners)))


def _places(functions: Sequence[Any]) -> set[tuple[str, str]]:
    """(file, qualname) of the code each tf.function in ``functions`` runs, as the report names
    it: the innermost function under decorators such as TF's dispatch wrappers."""
    places = set()
    for function in functions:
        python = inspect.unwrap(getattr(function, "python_function", function))
        code = getattr(python, "__code__", None)
        if code is not None:
            places.add((code.co_filename, getattr(python, "__qualname__", code.co_name)))
    return places


def _uses(
    report: Any, learners: frozenset[tuple[str, str]] | set[tuple[str, str]] = frozenset()
) -> tuple[FunctionUse, ...]:
    """Per user function: calls, traces, graphs that served calls, and wasted traces.

    The first trace of the first function object in the measurement is never waste, even when
    TF calls it ``new-function-object`` because an earlier run (a re-run cell, the learner's
    own ``%%tracewatch``) traced the same code; every later object's first trace is.
    """
    out = []
    shown = list(report.shown_functions)
    shown += [f for f in report.functions if f not in shown and (f.filename, f.qualname) in learners]
    for fn in shown:
        reasons: list[str] = []
        wasted = 0
        objects = 0
        for ev in report.events:
            if ev.key != fn.key or not ev.traced:
                continue
            for r in ev.reasons:
                if r.code == ReasonCode.VARIABLE_CREATION:
                    continue
                if r.code in (ReasonCode.FIRST_TRACE, ReasonCode.NEW_FUNCTION_OBJECT):
                    objects += 1
                    if objects == 1:
                        continue
                    text = "new-function-object: the tf.function was created again"
                else:
                    arg = f" {r.argument}" if r.argument else ""
                    change = f" {r.before} → {r.after}" if r.before or r.after else ""
                    text = f"{r.code}{arg}{change}"
                wasted += 1
                if text not in reasons:
                    reasons.append(text)
        graphs = sum(1 for g in fn.graphs if g.hits > 0)
        if graphs == 0 and fn.calls:  # graph hits unknown (count-only mode): fall back to traces
            graphs = wasted + 1 if fn.traces else 0
        out.append(
            FunctionUse(fn.label, fn.calls, fn.traces, graphs, wasted, tuple(reasons), fn.eager_calls)
        )
    return tuple(out)


def _is_tf_function(obj: Any) -> bool:
    """Whether ``obj`` is a tf.function, by TF's own type (an attribute of that name proves
    nothing). TF 2.15–2.21: ``tf.types.experimental.PolymorphicFunction`` (``GenericFunction``
    before it was renamed); a tf.function method bound to an instance is one too."""
    import tensorflow as tf

    kinds = tf.types.experimental
    kind = getattr(kinds, "PolymorphicFunction", None) or kinds.GenericFunction
    return isinstance(obj, kind)


def _python_ops(fn: Any, *args: Any) -> list[str]:
    """The ops in ``fn``'s graph for ``args`` that run Python code (none: an empty list), nested
    functions included. Asks for the graph the calls already traced, so it traces nothing new."""
    return sorted(_ops_of(fn, args, {}) & PYTHON_OPS)


def _eagerly(fn: Callable[..., Any], *args: Any) -> Any:
    import tensorflow as tf

    before = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        return fn(*args)
    finally:
        tf.config.run_functions_eagerly(before)


def _close(a: Any, b: Any, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    import numpy as np

    try:
        x = np.asarray(a, dtype=np.float64)
        y = np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=rtol, atol=atol))


def _short(value: Any) -> str:
    import numpy as np

    try:
        arr = np.asarray(value)
    except Exception:
        return repr(value)[:80]
    text = np.array2string(arr, precision=4, threshold=8, separator=", ")
    return " ".join(text.split())[:80]


def _graph_rows(m: Measurement) -> tuple[tuple[str, str], ...]:
    rows = []
    for f in m.functions:
        rows.append(
            (
                f"{f.qualname}",
                f"{f.calls} calls served by {f.needed} graph{'s' if f.needed != 1 else ''}"
                f" ({f.traces} traced during the check)",
            )
        )
    return tuple(rows)


def _reason_details(m: Measurement, limit: int = 4) -> tuple[str, ...]:
    """Up to ``limit`` retrace reasons, one per (function, code, argument) first."""
    seen: list[str] = []
    kinds: set[tuple[str, ...]] = set()
    rest: list[str] = []
    for f in m.functions:
        for r in f.reasons:
            line = f"{f.qualname} retraced: {r}"
            kind = (f.qualname, *r.split(" ")[:2])
            if kind in kinds:
                rest.append(line)
            else:
                kinds.add(kind)
                seen.append(line)
    return tuple((seen + rest)[:limit])
