"""The capstone check (exercise 08): the learner's ``train_fast`` against the slow reference.

What it checks: the final loss must match the reference solution's training within a tolerance
(a learner who deletes the warm-up learns *better* and fails, one who deletes the training
learns worse and fails); every tf.function of the slow script must still run as a graph (not
under ``run_functions_eagerly``); none may retrace, and all of them together may trace no more
graphs than the slow script has functions (a function renamed or re-created per epoch traces
again); and the speed-up is the ratio of the *medians* of several interleaved timed runs (a
noisy CPU slows one run, not the median). It is a formative check in the learner's own process:
a learner who patches the clock or TensorFlow can fool it, and only fools themselves.
Imports TensorFlow only through ``measure``.
"""

from __future__ import annotations

import linecache
import math
import time
from typing import Any

from .feedback import Feedback, _error_feedback
from .measuring import FunctionUse, _graph_rows, _reason_details, _short, measure
from .reference import reference_value
from .timing import _speedup_shortfall

__all__: list[str] = []

#: The solution matches the reference to ~1e-7 (float32 rounding of the same maths, TF 2.21);
#: deleting the warm-up moves the loss from 0.547 to 0.185, deleting the training to 3.36.
LOSS_RTOL = 1e-3
LOSS_ATOL = 1e-5


def _short_name(use: FunctionUse) -> str:
    return use.qualname.rsplit(".", 1)[-1]


def _median_run(fn: Any, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _train_slow(ex: Any) -> Any:
    """The slow script the check times against: the lesson's own, run from the exercise's
    starter in a namespace of its own — never a baseline the learner hands in."""
    import keras
    import numpy as np
    import tensorflow as tf

    from .sources import CAPSTONE_STARTER

    filename = "<the capstone's train_slow>"
    linecache.cache[filename] = (len(CAPSTONE_STARTER), None, CAPSTONE_STARTER.splitlines(True), filename)
    namespace: dict[str, Any] = {"tf": tf, "np": np, "keras": keras}
    exec(compile(CAPSTONE_STARTER, filename, "exec"), namespace)
    return namespace["train_slow"]


def check_capstone(ex: Any, answer: Any, opts: dict[str, Any]) -> Feedback:
    from .checks import _eager_mode_feedback, _not_computed_by_its_graphs

    if not callable(answer):
        return Feedback(
            ex.id,
            False,
            "call ex.check('08-capstone', train_fast)",
            (),
            "train_fast is the plain Python training function",
        )
    baseline = _train_slow(ex)
    eager = _eager_mode_feedback(ex)
    if eager is not None:
        return eager
    slow = measure(baseline)
    if slow.error is not None:
        fb = _error_feedback(ex, slow.error, slow)
        return Feedback(
            ex.id,
            False,
            "the lesson's train_slow (the check's own copy) " + fb.summary,
            fb.measured,
            "is TensorFlow set up as the lesson's first cell sets it? run that cell again",
        )
    fast = measure(answer)
    if fast.error is not None:
        return _error_feedback(ex, fast.error, fast)
    eager = _eager_mode_feedback(ex, fast)
    if eager is not None:
        return eager
    slow_traces = sum(f.traces for f in slow.functions)
    fast_traces = sum(f.traces for f in fast.functions)
    rows: tuple[tuple[str, str], ...] = (
        ("train_slow", f"{slow.seconds:.2f} s, {slow_traces} traces"),
        ("train_fast", f"{fast.seconds:.2f} s, {fast_traces} traces"),
        *_graph_rows(fast),
        ("final loss (slow → fast)", f"{_short(slow.value)} → {_short(fast.value)}"),
    )
    missing = sorted({_short_name(f) for f in slow.functions} - {_short_name(f) for f in fast.functions})
    if missing:
        return Feedback(
            ex.id,
            False,
            f"{', '.join(missing)} no longer runs as a tf.function",
            rows,
            "eager mode beats a function that retraces on every call, but a graph that traces "
            "once beats both: keep @tf.function and remove the causes of retracing",
        )
    bad = [f for f in fast.functions if f.needed > 1 or f.wasted]
    if bad:
        return Feedback(
            ex.id, False, f"{len(bad)} function(s) still retrace", rows, ex.hints[0], _reason_details(fast)
        )
    functions = len({_short_name(f) for f in slow.functions})
    if fast_traces > functions:
        return Feedback(
            ex.id,
            False,
            f"train_fast traced {fast_traces} graphs for the {functions} functions of the script: "
            "a tf.function is still created again (renamed or per epoch) or retraces",
            rows,
            "create each tf.function once, before the loops, and call that one object every time",
        )
    try:
        slow_loss, fast_loss = float(reference_value(ex)), float(fast.value)
    except (TypeError, ValueError):
        return Feedback(
            ex.id,
            False,
            "train_fast should return the final loss as a number",
            rows,
            "end with `return float(loss)`",
        )
    if not math.isfinite(fast_loss) or abs(fast_loss - slow_loss) > LOSS_RTOL * abs(slow_loss) + LOSS_ATOL:
        direction = "better" if fast_loss < slow_loss else "worse"
        return Feedback(
            ex.id,
            False,
            f"no retraces, but the model learns {direction} than the original: the training changed",
            rows,
            "compute exactly what train_slow computes — same learning-rate schedule, same warm-up, "
            "every batch — only without retracing: pass the changing values as tensors",
        )
    outside = _not_computed_by_its_graphs(ex, answer, fast, LOSS_RTOL)
    if outside is not None:
        return outside
    if slow_traces <= 1:
        return Feedback(
            ex.id,
            None,
            "train_slow did not retrace in this run, so the speed-up says nothing; is it still the original?",
            rows,
        )
    # Interleaved runs, so a burst of load on a shared CPU hits both sides alike.
    repeats = max(1, int(opts.get("repeats", 3)))
    slow_times, fast_times = [slow.seconds], [fast.seconds]
    for _ in range(repeats - 1):
        slow_times += _median_run(baseline, 1)
        fast_times += _median_run(answer, 1)
    slow_s, fast_s = _median(slow_times), _median(fast_times)
    speedup = slow_s / fast_s if fast_s > 0 else math.inf
    rows = (
        *rows,
        (f"medians of {repeats} runs", f"{slow_s:.2f} s → {fast_s:.2f} s"),
        ("speed-up", f"{speedup:.1f}×"),
    )
    short = _speedup_shortfall(
        ex, opts, speedup, rows, "no retraces, but", "run the check again: timings on a busy machine vary"
    )
    if short is not None:
        return short
    return Feedback(
        ex.id, True, f"{slow_traces} traces → {fast_traces}, same loss, {speedup:.1f}× faster", rows
    )
