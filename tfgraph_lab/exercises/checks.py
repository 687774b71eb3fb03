"""The checkers: each runs the learner's answer (and, where it matters, the starter or a
baseline), measures it and returns :class:`~tfgraph_lab.exercises.feedback.Feedback`."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .feedback import Feedback, _error_feedback
from .graph_work import run_with_other_inputs
from .measuring import (
    Measurement,
    _close,
    _graph_rows,
    _is_tf_function,
    _python_ops,
    _reason_details,
    _short,
    measure,
)
from .predictions import _PREDICTIONS, check_prediction  # noqa: F401 (re-exported, see below)
from .reference import reference_value

__all__ = ["Checker", "Exercise", "Variant", "check_prediction"]

# check_prediction and the session's graded predictions live in .predictions; kept here for
# the answer keys' last cell (``from tfgraph_lab.exercises.checks import _PREDICTIONS``).


Checker = Callable[["Exercise", Any, dict[str, Any]], Feedback]


@dataclass(frozen=True)
class Variant:
    """Another right answer that computes something else on purpose: ``solution`` (its worked
    code), the ``calls`` its workload makes, and the ``note`` a learner reads when theirs is it
    (``drop_remainder=True`` in 07 drops the last batch's rows: another loss, fewer steps)."""

    name: str
    solution: str
    calls: int
    note: str


@dataclass(frozen=True)
class Exercise:
    """One exercise: what to do, the starter the notebook begins with, hints and a solution.

    ``answer`` is the name the learner's code defines and passes to :func:`check`.
    """

    id: str
    lesson: int
    title: str
    task: str
    answer: str
    starter: str
    solution: str
    hints: tuple[str, ...]
    checker: Checker = field(repr=False)
    call: str = ""
    variants: tuple[Variant, ...] = ()

    @property
    def check_call(self) -> str:
        """The line a notebook uses to check this exercise."""
        return self.call or f'ex.check("{self.id}", {self.answer})'


_EAGER_ON = (
    "tf.config.run_functions_eagerly(True) is on: every tf.function runs as plain Python, so "
    "there is no graph to measure"
)


def _eager_mode_feedback(ex: Exercise, m: Measurement | None = None) -> Feedback | None:
    """Not yet, when tf.functions ran as plain Python (globally, or switched on inside the answer)."""
    import tensorflow as tf

    ran_eagerly = [f for f in (m.functions if m else ()) if f.eager_calls]
    if not tf.config.functions_run_eagerly() and not ran_eagerly:
        return None
    rows = _graph_rows(m) if m is not None else ()
    rows = (*rows, *((f"{f.qualname} calls run eagerly", str(f.eager_calls)) for f in ran_eagerly))
    return Feedback(
        ex.id,
        False,
        _EAGER_ON,
        rows or (("run_functions_eagerly", "True"),),
        "run tf.config.run_functions_eagerly(False), then check again: the fix is a graph traced once",
    )


def _result_feedback(ex: Exercise, m: Measurement, reference: Any, rtol: float) -> Feedback | None:
    """Not yet, when the answer's result differs from the reference solution's."""
    import numpy as np

    if _close(m.value, reference, rtol=rtol):
        return None
    rows = (*_graph_rows(m), ("your result", _short(m.value)), ("expected", _short(reference)))
    try:
        mine, theirs = np.shape(m.value), np.shape(reference)
    except Exception:
        mine, theirs = (), ()
    if mine != theirs:
        return Feedback(
            ex.id,
            False,
            f"your result has shape {mine}, the reference {theirs}: rows were dropped or added",
            (*rows, ("shapes", f"{mine} vs {theirs}")),
            "keep every sample (drop_remainder=True drops the last batch's rows) and every call",
        )
    return Feedback(
        ex.id,
        False,
        "the result differs from the reference solution's: the fix changed what is "
        "computed (or skipped part of it)",
        rows,
        "the fix must compute exactly what the original does, every call and every sample: look for "
        "a value baked in at trace time, or a call left out",
    )


def _graphs_check(
    ex: Exercise,
    m: Measurement,
    limit: int,
    *,
    target: str,
    reference: Any = None,
    compare: bool = False,
    rtol: float = 1e-4,
    calls: int = 0,
) -> Feedback:
    """Shared verdict: the work ran in tf.functions (``calls`` graph calls at least), which
    needed at most ``limit`` graphs in all, per function object; result as the reference's."""
    if m.error is not None:
        return _error_feedback(ex, m.error, m)
    eager = _eager_mode_feedback(ex, m)
    if eager is not None:
        return eager
    if not m.functions:
        return Feedback(
            ex.id,
            False,
            "no tf.function was called",
            (("tf.functions called", "0"),),
            "keep the work inside a @tf.function: the point is to make graph mode cheap, "
            "not to switch it off",
        )
    rows = _graph_rows(m)
    over = [f for f in m.functions if f.needed > limit]
    if compare:
        wrong = _result_feedback(ex, m, reference, rtol)
        if wrong is not None:
            return wrong
    served = sum(f.calls for f in m.functions)
    if served < calls:
        return Feedback(
            ex.id,
            False,
            f"tf.functions served {served} call{'s' if served != 1 else ''}; the work makes {calls}: "
            "part of it runs beside the graph, eagerly",
            rows,
            "the step that runs every time must be the tf.function, called once per step",
        )
    total = sum(f.needed for f in m.functions)
    if not over and total > limit:
        return Feedback(
            ex.id,
            False,
            f"{total} graphs across {len(m.functions)} tf.functions; the target is {target}",
            rows,
            "create one tf.function, once, and call it for all the work (renamed or re-created "
            "functions each trace again)",
        )
    if over:
        worst = max(over, key=lambda f: f.needed)
        return Feedback(
            ex.id,
            False,
            f"{worst.qualname} needed {worst.needed} graphs; the target is {target}",
            rows,
            ex.hints[0] if ex.hints else "",
            _reason_details(m),
        )
    extra: tuple[str, ...] = ()
    if limit > 1 and any(f.needed > 1 for f in m.functions):
        extra = (
            "2 graphs is what reduce_retracing=True gives (one exact, one generalised); "
            "an input_signature gets it down to 1",
        )
    return Feedback(ex.id, True, f"well done — {target}", rows, details=extra)


def _not_a_tf_function(ex: Exercise, answer: Any, what: str) -> Feedback:
    """Feedback for an answer that should be a tf.function and is not: its name and what is
    wrong with it, its type, the exercise's first hint."""
    kind = type(answer).__name__
    return Feedback(ex.id, False, f"`{ex.answer}` {what}", (("type", kind),), ex.hints[0])


def _check_square(ex: Exercise, answer: Any, opts: dict[str, Any]) -> Feedback:
    import tensorflow as tf

    if not _is_tf_function(answer):
        return _not_a_tf_function(ex, answer, f"is a plain Python {type(answer).__name__}, not a tf.function")
    inputs = [tf.constant([1.0, 2.0, 3.0]), tf.constant([4.0, 5.0, 6.0]), tf.constant([7.0, 8.0, 9.0])]
    m = measure(lambda: [answer(x) for x in inputs], learners=[answer])
    if m.error is None and not all(_close(y, x * x) for y, x in zip(m.value, inputs, strict=True)):
        return Feedback(
            ex.id,
            False,
            "the function runs but does not return x * x",
            (("square([1, 2, 3])", _short(m.value[0])),),
            "return x * x",
        )
    python_ops = _python_ops(answer, inputs[0]) if m.error is None else []
    if python_ops:
        return Feedback(
            ex.id,
            False,
            f"the graph calls back into Python ({', '.join(python_ops)}): NumPy squares x, outside the graph",
            _graph_rows(m),
            "write the square with TensorFlow ops: return x * x",
        )
    return _graphs_check(ex, m, 1, target="three calls, one graph")


def _check_count_calls(ex: Exercise, answer: Any, opts: dict[str, Any]) -> Feedback:
    import tensorflow as tf

    if not _is_tf_function(answer):
        return _not_a_tf_function(ex, answer, "should stay a tf.function")
    # A random start and number of calls: a counter that counts, not one set to a number.
    rng = random.Random()
    start, n = rng.randint(0, 50), rng.randint(3, 9)
    counter = tf.Variable(start)
    xs = [tf.fill([3], float(i)) for i in range(n)]
    m = measure(lambda: [answer(x, counter) for x in xs])
    if m.error is not None:
        return _error_feedback(ex, m.error, m)
    count = int(counter.numpy()) - start
    rows = (*_graph_rows(m), (f"counter: {start} before {n} calls, after", str(start + count)))
    if count != n:
        return Feedback(
            ex.id, False, f"the counter went up by {count} over {n} calls", rows, ex.hints[0]
        )
    python_ops = _python_ops(answer, xs[0], counter)
    if python_ops:
        return Feedback(
            ex.id,
            False,
            f"the graph calls back into Python ({', '.join(python_ops)}): that part runs outside the graph",
            rows,
            "count with a TF op on the Variable: counter.assign_add(1)",
        )
    if not all(_close(y, x * 2.0) for y, x in zip(m.value, xs, strict=True)):
        return Feedback(
            ex.id,
            False,
            "the counter works but the function no longer returns x * 2",
            rows,
            "keep `return x * 2.0`",
        )
    return _graphs_check(ex, m, 1, target=f"{n} calls counted, one graph")


def _check_run(limit: int, target: str, calls: int, rtol: float = 1e-4) -> Checker:
    """A checker for exercises whose answer is a zero-argument function running a workload of
    ``calls`` steps: judged against the exercise's reference solution (:mod:`.reference`)."""

    def checker(ex: Exercise, answer: Any, opts: dict[str, Any]) -> Feedback:
        if not callable(answer):
            return Feedback(ex.id, False, f"`{ex.answer}` should be a function", (), ex.hints[0])
        if _is_tf_function(answer):
            return Feedback(
                ex.id,
                False,
                f"pass the plain Python function `{ex.answer}` that runs the workload, not a tf.function",
                (),
                "check(...) calls it for you",
            )
        eager = _eager_mode_feedback(ex)
        if eager is not None:
            return eager
        m = measure(answer)
        if m.error is not None:
            return _error_feedback(ex, m.error, m)
        reference = reference_value(ex)
        for variant in () if _close(m.value, reference, rtol=rtol) else ex.variants:
            other = reference_value(ex, variant.solution, variant.name)
            if _close(m.value, other, rtol=rtol):
                fb = _graphs_check(
                    ex, m, limit, target=target, reference=other, compare=True, rtol=rtol, calls=variant.calls
                )
                fb = Feedback(
                    fb.exercise_id, fb.passed, fb.summary, fb.measured, fb.hint, (variant.note, *fb.details)
                )
                return _judged_by_its_graphs(ex, answer, m, fb, rtol)
        fb = _graphs_check(
            ex, m, limit, target=target, reference=reference, compare=True, rtol=rtol, calls=calls
        )
        return _judged_by_its_graphs(ex, answer, m, fb, rtol)

    return checker


def _judged_by_its_graphs(ex: Exercise, answer: Any, m: Measurement, fb: Feedback, rtol: float) -> Feedback:
    """``fb`` when it fails, or when the answer's graphs computed its result; else not yet: the
    result stays the same when every graph call gets other inputs (the work ran eagerly beside a
    tf.function called only to be counted), or a graph runs Python (tf.numpy_function,
    tf.py_function)."""
    if not fb.passed:
        return fb
    outside = _not_computed_by_its_graphs(ex, answer, m, rtol)
    return fb if outside is None else outside  # (a Feedback is falsy when it fails: no `or`)


def _not_computed_by_its_graphs(ex: Exercise, answer: Any, m: Measurement, rtol: float) -> Feedback | None:
    """Not yet (see :func:`_judged_by_its_graphs`), or None when the graphs did the work."""
    work = run_with_other_inputs(answer)
    rows = _graph_rows(m)
    if work.python_ops:
        return Feedback(
            ex.id,
            False,
            f"the graph calls back into Python ({', '.join(work.python_ops)}): tf.numpy_function or "
            "tf.py_function runs that part as Python, outside the graph",
            rows,
            "write the work with TensorFlow ops, so the graph computes it",
        )
    if work.error is None and _close(work.value, m.value, rtol=rtol):
        return Feedback(
            ex.id,
            False,
            "your tf.functions do not compute the result: it stays the same when they get other "
            "inputs, so the work runs beside them (eagerly, or copied in)",
            (*rows, ("result with other inputs to every graph", _short(work.value))),
            "the work itself must run in the tf.function, and the result must come from what it returns",
        )
    return None


def _check_running_sum(ex: Exercise, answer: Any, opts: dict[str, Any]) -> Feedback:
    import tensorflow as tf

    if not isinstance(answer, type):
        return Feedback(ex.id, False, f"pass the class `{ex.answer}` itself", (), "ex.check(..., RunningSum)")
    x = tf.constant([1.0, 2.0, 3.0])
    made: list[Any] = []

    def run() -> Any:
        acc = answer(3)
        made.append(acc)
        return [acc(x) for _ in range(3)]

    m = measure(run)
    if m.error is not None:
        return _error_feedback(ex, m.error, m)
    acc = made[0]
    call = acc.__call__ if callable(acc) else None
    if not _is_tf_function(call):
        return Feedback(
            ex.id,
            False,
            "__call__ is not a tf.function",
            (("type of __call__", type(call).__name__),),
            "keep @tf.function on __call__",
        )
    state = [v for v in vars(acc).values() if isinstance(v, tf.Variable)]
    if not state:
        return Feedback(
            ex.id,
            False,
            "the running total is not kept in a tf.Variable",
            (*_graph_rows(m), ("tf.Variables on the object", "0")),
            ex.hints[0],
        )
    got = m.value[-1]
    rows = (*_graph_rows(m), ("after three calls with [1, 2, 3]", _short(got)))
    if not _close(got, x * 3.0):
        return Feedback(ex.id, False, "the total does not add up: expected [3, 6, 9]", rows, ex.hints[1])
    fb = _graphs_check(ex, m, 1, target="the variable lives outside the graph: one graph, right totals")
    if fb.passed and any(f.traces == 2 for f in m.functions):
        fb = Feedback(
            fb.exercise_id,
            True,
            fb.summary,
            fb.measured,
            details=(
                "lazy creation on the first call works (TF traces it a second time, once); creating the "
                "Variable in __init__ avoids even that",
            ),
        )
    return fb
