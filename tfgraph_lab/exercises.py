"""Auto-checked exercises for the guided lessons in ``lessons/``.

Every exercise is checked by *measured behaviour*: the learner's function runs under
:func:`tfgraph_lab.watch`, and the checker compares how many graphs the work needed (and, for
some exercises, the result and the speed-up) with the target. Checks never raise because of the
learner's code: they return a :class:`Feedback` that shows ✓ or ✗, what was measured, and a hint.

    from tfgraph_lab import exercises as ex
    ex.check("03-scalar-trap", run_schedule)   # → Feedback (displays in Jupyter, prints as text)
    ex.hint("03-scalar-trap")                  # one more hint
    ex.solution("03-scalar-trap")              # the worked solution, only when asked

Each exercise also carries its *starter* (the working-but-wrong code the lesson notebook starts
from) and its *solution*; the tests run both through the checker, so each check can fail.

Imports TensorFlow only when a check runs; never imports IPython or ipywidgets.
"""

from __future__ import annotations

import html
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageProblem

__all__ = [
    "EXERCISES",
    "Exercise",
    "Feedback",
    "FunctionUse",
    "Solution",
    "check",
    "check_prediction",
    "exercise",
    "hint",
    "measure",
    "solution",
]

NOT_WASTED = ("first-trace", "variable-creation")


# --------------------------------------------------------------------------- displayable results
@dataclass(frozen=True)
class Feedback:
    """The result of a check: passed (✓), failed (✗) or not attempted yet (…).

    ``measured`` lists ``(what, value)`` pairs the check measured; ``hint`` is shown when the
    check did not pass. ``bool(feedback)`` is ``True`` only when it passed.
    """

    exercise_id: str
    passed: bool | None
    summary: str
    measured: tuple[tuple[str, str], ...] = ()
    hint: str = ""
    details: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.passed is True

    @property
    def mark(self) -> str:
        return {True: "✓", False: "✗", None: "…"}[self.passed]

    def __str__(self) -> str:
        lines = [f"{self.mark} {self.exercise_id}: {self.summary}"]
        lines += [f"    {what}: {value}" for what, value in self.measured]
        lines += [f"    · {d}" for d in self.details]
        if self.hint and self.passed is not True:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Feedback {self.mark} {self.exercise_id}: {self.summary}>"

    def _repr_html_(self) -> str:
        colour = {True: "#1a7f37", False: "#cf222e", None: "#9a6700"}[self.passed]
        e = html.escape
        rows = "".join(
            f"<tr><td style='padding:1px 12px 1px 0;color:#57606a'>{e(w)}</td>"
            f"<td style='padding:1px 0'><code>{e(v)}</code></td></tr>"
            for w, v in self.measured
        )
        details = "".join(f"<li>{e(d)}</li>" for d in self.details)
        hint = (
            f"<div style='margin-top:4px'><b>Hint:</b> {e(self.hint)}</div>"
            if self.hint and self.passed is not True
            else ""
        )
        return (
            f"<div class='tfgl-feedback' style='border-left:4px solid {colour};padding:4px 10px;"
            f"margin:4px 0'><div style='color:{colour};font-weight:bold'>{e(self.mark)} "
            f"{e(self.exercise_id)}: {e(self.summary)}</div>"
            f"{'<table>' + rows + '</table>' if rows else ''}"
            f"{'<ul style=margin:2px>' + details + '</ul>' if details else ''}{hint}</div>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}


@dataclass(frozen=True)
class Solution:
    """A worked solution (or a hint): plain text and a code block, displayable in Jupyter."""

    exercise_id: str
    title: str
    code: str = ""
    notes: str = ""

    def __str__(self) -> str:
        parts = [f"{self.exercise_id} — {self.title}"]
        if self.notes:
            parts.append(self.notes)
        if self.code:
            parts.append(self.code.rstrip())
        return "\n\n".join(parts)

    def _repr_html_(self) -> str:
        e = html.escape
        code = f"<pre style='margin:4px 0'>{e(self.code.rstrip())}</pre>" if self.code else ""
        notes = f"<p style='margin:4px 0'>{e(self.notes)}</p>" if self.notes else ""
        return (
            f"<div class='tfgl-solution' style='border-left:4px solid #0969da;padding:4px 10px'>"
            f"<b>{e(self.exercise_id)} — {e(self.title)}</b>{notes}{code}</div>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}


# ------------------------------------------------------------------------------ measuring
@dataclass(frozen=True)
class FunctionUse:
    """What one user tf.function cost during a check.

    ``graphs`` is how many distinct graphs served its calls (it does not depend on whether the
    cache was already warm); ``wasted`` counts traces for any reason other than a first trace or
    the one-off variable-creation trace, plus first traces of re-created function objects.
    """

    qualname: str
    calls: int
    traces: int
    graphs: int
    wasted: int
    reasons: tuple[str, ...] = ()

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


def measure(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Measurement:
    """Call ``fn(*args, **kwargs)`` under :func:`tfgraph_lab.watch`; never raises for its errors."""
    from .recorder import watch

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
    return Measurement(value, error, seconds, report, _uses(report))


def _uses(report: Any) -> tuple[FunctionUse, ...]:
    """Per user function: calls, traces, graphs that served calls, and wasted traces.

    The first trace of the first function object in the measurement is never waste, even when
    TF calls it ``new-function-object`` because an earlier run (a re-run cell, the learner's
    own ``%%tracewatch``) traced the same code; every later object's first trace is.
    """
    out = []
    for fn in report.shown_functions:
        reasons: list[str] = []
        wasted = 0
        objects = 0
        for ev in report.events:
            if ev.qualname != fn.qualname or ev.filename != fn.filename or not ev.traced:
                continue
            for r in ev.reasons:
                if r.code == "variable-creation":
                    continue
                if r.code in ("first-trace", "new-function-object"):
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
        out.append(FunctionUse(fn.qualname, fn.calls, fn.traces, graphs, wasted, tuple(reasons)))
    return tuple(out)


def _is_tf_function(obj: Any) -> bool:
    return callable(getattr(obj, "experimental_get_tracing_count", None))


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


def _error_feedback(ex: Exercise, error: BaseException, m: Measurement | None = None) -> Feedback:
    message = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    first = message[0] if message else ""
    for line in message:  # TF puts its own "ValueError: …" sentence after the user-code lines
        found = re.match(r"^\w*(Error|Exception): (.+)", line)
        if found:
            first = found.group(2)
            break
    measured = _graph_rows(m) if m is not None else ()
    return Feedback(
        ex.id,
        False,
        f"your code raised {type(error).__name__}",
        (*measured, ("error", first[:300])),
        ex.hints[0] if ex.hints else "",
    )


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


# ----------------------------------------------------------------------------- exercises
Checker = Callable[["Exercise", Any, dict[str, Any]], Feedback]


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

    @property
    def check_call(self) -> str:
        """The line a notebook uses to check this exercise."""
        return self.call or f'ex.check("{self.id}", {self.answer})'


def _graphs_check(
    ex: Exercise,
    m: Measurement,
    limit: int,
    *,
    target: str,
    reference: Any = None,
    compare: bool = False,
    rtol: float = 1e-4,
) -> Feedback:
    """Shared verdict: every user function needed at most ``limit`` graphs; result unchanged."""
    if m.error is not None:
        return _error_feedback(ex, m.error, m)
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
    if compare and not _close(m.value, reference, rtol=rtol):
        return Feedback(
            ex.id,
            False,
            "the traces are fine but the result changed",
            (*rows, ("your result", _short(m.value)), ("eager result", _short(reference))),
            "the fix must not change what the code computes: compare with the eager run "
            "(tf.config.run_functions_eagerly(True)) and look for a value baked in at trace time",
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


def _check_square(ex: Exercise, answer: Any, opts: dict[str, Any]) -> Feedback:
    import tensorflow as tf

    if not _is_tf_function(answer):
        return Feedback(
            ex.id,
            False,
            f"`{ex.answer}` is a plain Python {type(answer).__name__}, not a tf.function",
            (("type", type(answer).__name__),),
            ex.hints[0],
        )
    inputs = [tf.constant([1.0, 2.0, 3.0]), tf.constant([4.0, 5.0, 6.0]), tf.constant([7.0, 8.0, 9.0])]
    m = measure(lambda: [answer(x) for x in inputs])
    if m.error is None and not all(_close(y, x * x) for y, x in zip(m.value, inputs, strict=True)):
        return Feedback(
            ex.id,
            False,
            "the function runs but does not return x * x",
            (("square([1, 2, 3])", _short(m.value[0])),),
            "return x * x",
        )
    return _graphs_check(ex, m, 1, target="three calls, one graph")


def _check_speedup(ex: Exercise, answer: Any, opts: dict[str, Any]) -> Feedback:
    import tensorflow as tf

    if not _is_tf_function(answer):
        return Feedback(
            ex.id,
            False,
            f"`{ex.answer}` is not a tf.function yet",
            (("type", type(answer).__name__),),
            ex.hints[0],
        )
    x = tf.reshape(tf.range(64, dtype=tf.float32) / 64.0, [8, 8])
    m = measure(lambda: [answer(x) for _ in range(3)])
    if m.error is not None:
        return _error_feedback(ex, m.error, m)
    eager = _eagerly(answer, x)
    if not _close(m.value[-1], eager):
        return Feedback(
            ex.id,
            False,
            "graph and eager results differ",
            (("graph", _short(m.value[-1])), ("eager", _short(eager))),
            ex.hints[-1],
        )
    repeats = int(opts.get("repeats", 30))
    graph_s = _best_time(lambda: answer(x), repeats)
    eager_s = _best_time(lambda: _eagerly(answer, x), repeats)
    speedup = eager_s / graph_s if graph_s > 0 else math.inf
    rows = (
        *_graph_rows(m),
        ("cached graph call", f"{graph_s * 1e3:.2f} ms"),
        ("eager call", f"{eager_s * 1e3:.2f} ms"),
        ("speed-up", f"{speedup:.1f}×"),
    )
    if any(f.needed > 1 for f in m.functions):
        return _graphs_check(ex, m, 1, target="one graph")
    need = float(opts.get("min_speedup", 1.5))
    if speedup < need:
        return Feedback(
            ex.id,
            False,
            f"graph mode is only {speedup:.1f}× faster (target {need}×)",
            rows,
            "keep the loop of small ops inside the tf.function: that is what the graph saves",
        )
    return Feedback(ex.id, True, f"the graph is {speedup:.1f}× faster than eager on these tiny ops", rows)


def _best_time(fn: Callable[[], Any], repeats: int) -> float:
    """Median of ``repeats`` timed calls (after one warm-up), in seconds."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def _check_count_calls(ex: Exercise, answer: Any, opts: dict[str, Any]) -> Feedback:
    import tensorflow as tf

    if not _is_tf_function(answer):
        return Feedback(
            ex.id,
            False,
            f"`{ex.answer}` should stay a tf.function",
            (("type", type(answer).__name__),),
            ex.hints[0],
        )
    counter = tf.Variable(0)
    xs = [tf.fill([3], float(i)) for i in range(5)]
    m = measure(lambda: [answer(x, counter) for x in xs])
    if m.error is not None:
        return _error_feedback(ex, m.error, m)
    count = int(counter.numpy())
    rows = (*_graph_rows(m), ("counter after 5 calls", str(count)))
    if count != 5:
        return Feedback(ex.id, False, f"the counter says {count} after 5 calls", rows, ex.hints[0])
    if not all(_close(y, x * 2.0) for y, x in zip(m.value, xs, strict=True)):
        return Feedback(
            ex.id,
            False,
            "the counter works but the function no longer returns x * 2",
            rows,
            "keep `return x * 2.0`",
        )
    return _graphs_check(ex, m, 1, target="5 calls counted, one graph")


def _check_run(limit: int, target: str, compare: bool = True, rtol: float = 1e-4) -> Checker:
    """A checker for exercises whose answer is a zero-argument function running a workload."""

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
        m = measure(answer)
        reference = None
        if compare and m.error is None:
            try:
                reference = _eagerly(answer)
            except Exception as exc:
                return _error_feedback(ex, exc)
        return _graphs_check(ex, m, limit, target=target, reference=reference, compare=compare, rtol=rtol)

    return checker


def _check_running_sum(ex: Exercise, answer: Any, opts: dict[str, Any]) -> Feedback:
    import tensorflow as tf

    if not isinstance(answer, type):
        return Feedback(ex.id, False, f"pass the class `{ex.answer}` itself", (), "ex.check(..., RunningSum)")
    x = tf.constant([1.0, 2.0, 3.0])

    def run() -> Any:
        acc = answer(3)
        return [acc(x) for _ in range(3)]

    m = measure(run)
    if m.error is not None:
        return _error_feedback(ex, m.error, m)
    got = m.value[-1]
    rows = (*_graph_rows(m), ("after three calls with [1, 2, 3]", _short(got)))
    if not _close(got, x * 3.0):
        return Feedback(ex.id, False, "the total does not add up: expected [3, 6, 9]", rows, ex.hints[1])
    if not any(f.calls for f in m.functions):
        return Feedback(ex.id, False, "__call__ is not a tf.function", rows, "keep @tf.function on __call__")
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


def _check_capstone(ex: Exercise, answer: Any, opts: dict[str, Any]) -> Feedback:
    baseline = opts.get("baseline")
    if not callable(answer) or not callable(baseline):
        return Feedback(
            ex.id,
            False,
            "call ex.check('08-capstone', train_fast, baseline=train_slow)",
            (),
            "both arguments are the plain Python training functions",
        )
    slow = measure(baseline)
    if slow.error is not None:
        fb = _error_feedback(ex, slow.error, slow)
        return Feedback(ex.id, False, "the baseline " + fb.summary, fb.measured, "re-run the train_slow cell")
    fast = measure(answer)
    if fast.error is not None:
        return _error_feedback(ex, fast.error, fast)
    speedup = slow.seconds / fast.seconds if fast.seconds > 0 else math.inf
    slow_traces = sum(f.traces for f in slow.functions)
    fast_traces = sum(f.traces for f in fast.functions)
    rows = (
        ("train_slow", f"{slow.seconds:.2f} s, {slow_traces} traces"),
        ("train_fast", f"{fast.seconds:.2f} s, {fast_traces} traces"),
        *_graph_rows(fast),
        ("speed-up", f"{speedup:.1f}×"),
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
    if not fast.functions:
        return Feedback(
            ex.id,
            False,
            "train_fast calls no tf.function",
            rows,
            "the training step should stay a tf.function",
        )
    try:
        worse = float(fast.value) > 1.25 * float(slow.value) + 1e-3 or not math.isfinite(float(fast.value))
    except (TypeError, ValueError):
        return Feedback(
            ex.id,
            False,
            "train_fast should return the final loss as a number",
            rows,
            "end with `return float(loss)`",
        )
    if worse:
        return Feedback(
            ex.id,
            False,
            "no retraces, but the model learns worse",
            rows,
            "keep the learning-rate schedule and the warm-up: pass them as tensors",
        )
    need = float(opts.get("min_speedup", 2.0))
    if slow_traces <= 1:
        return Feedback(
            ex.id,
            None,
            "train_slow did not retrace in this run, so the speed-up says nothing; is it still the original?",
            rows,
        )
    if speedup < need:
        return Feedback(
            ex.id,
            False,
            f"no retraces, but only {speedup:.1f}× faster (target {need}×)",
            rows,
            "run the check again: timings on a busy machine vary",
        )
    return Feedback(ex.id, True, f"{slow_traces} traces → {fast_traces}, {speedup:.1f}× faster", rows)


def _short_name(use: FunctionUse) -> str:
    return use.qualname.rsplit(".", 1)[-1]


def check_prediction(guess: Any, report: Any, function: str | None = None) -> Feedback:
    """Compare a predicted number of traces with a :class:`TraceReport` (e.g. from ``-v NAME``).

    ``function`` names one function; without it the report's total over user functions is used.
    """
    label = function or "all functions"
    if guess is None or guess is Ellipsis:
        return Feedback("prediction", None, "write your guess first (a whole number), then run again")
    if report is None or not hasattr(report, "traces"):
        return Feedback("prediction", None, "run the %%tracewatch -v NAME cell above first")
    actual = report.function(function).traces if function else report.traces
    if not isinstance(guess, int) or isinstance(guess, bool):
        return Feedback("prediction", False, f"a guess is a whole number, got {guess!r}")
    rows = (("your guess", str(guess)), (f"traces measured ({label})", str(actual)))
    if guess == actual:
        return Feedback("prediction", True, "right on", rows)
    return Feedback(
        "prediction",
        False,
        f"not quite: {actual}, not {guess}",
        rows,
        "read the report's graph cache: one line per graph, and why each one was traced",
    )


# ----------------------------------------------------------------------- the exercise table
_SQUARE_STARTER = """\
def square(x):
    # TODO: make this a tf.function (one line, just above `def`)
    return x * x
"""
_SQUARE_SOLUTION = """\
@tf.function
def square(x):
    return x * x
"""

_SPEED_STARTER = """\
def many_small_ops(x):
    # 40 tiny operations: eagerly, each is a separate trip through Python and TF's runtime.
    # TODO: make this function run as one graph.
    for _ in range(40):
        x = tf.tanh(x) * 0.9 + 0.1
    return x
"""
_SPEED_SOLUTION = """\
@tf.function
def many_small_ops(x):
    for _ in range(40):        # a Python loop is unrolled while tracing: 120 ops in one graph
        x = tf.tanh(x) * 0.9 + 0.1
    return x
"""

_COUNT_STARTER = """\
calls = 0

@tf.function
def scaled(x, counter):
    global calls
    calls += 1          # a Python side effect: it runs only while tracing
    # TODO: make `counter` (a tf.Variable) count every call
    return x * 2.0
"""
_COUNT_SOLUTION = """\
@tf.function
def scaled(x, counter):
    counter.assign_add(1)   # a TF op: it is part of the graph, so it runs on every call
    return x * 2.0
"""

_SCALAR_STARTER = """\
x3 = tf.reshape(tf.range(64 * 16, dtype=tf.float32) / 1000.0, [64, 16])

@tf.function
def scaled_loss(x, factor, training):
    if training:
        x = x * 0.9            # stands in for dropout (deterministic, so results compare)
    return tf.reduce_mean(x) * factor

def run_schedule():
    total = 0.0
    for epoch in range(6):
        factor = 1.0 / (epoch + 1)              # a new Python float every epoch
        total += scaled_loss(x3, factor, True)  # ...and a Python bool
    total += scaled_loss(x3, 1.0, False)        # evaluation
    return total
"""
_SCALAR_SOLUTION = """\
x3 = tf.reshape(tf.range(64 * 16, dtype=tf.float32) / 1000.0, [64, 16])

@tf.function
def scaled_loss(x, factor, training):
    x = tf.cond(training, lambda: x * 0.9, lambda: x)   # a graph branch on a bool tensor
    return tf.reduce_mean(x) * factor

def run_schedule():
    total = 0.0
    for epoch in range(6):
        factor = tf.constant(1.0 / (epoch + 1))         # a tensor: same spec every epoch
        total += scaled_loss(x3, factor, tf.constant(True))
    total += scaled_loss(x3, tf.constant(1.0), tf.constant(False))
    return total
"""

_SHAPES_STARTER = """\
features = tf.reshape(tf.range(100 * 8, dtype=tf.float32) % 7.0, [100, 8])
w4 = tf.reshape(tf.range(8, dtype=tf.float32) / 8.0, [8, 1])

@tf.function
def predict(batch):
    return tf.matmul(tf.cast(batch, tf.float32), w4)

def predict_all():
    outputs = []
    for batch_size in (32, 16):                        # two batch sizes, each with a
        ds = tf.data.Dataset.from_tensor_slices(features).batch(batch_size)
        for batch in ds:                               # smaller last batch (100 = 3·32 + 4)
            outputs.append(predict(batch))
    extra = np.linspace(0.0, 1.0, 5 * 8).reshape(5, 8) # NumPy's default dtype: float64
    outputs.append(predict(extra))
    return tf.concat(outputs, axis=0)
"""
_SHAPES_SOLUTION = """\
features = tf.reshape(tf.range(100 * 8, dtype=tf.float32) % 7.0, [100, 8])
w4 = tf.reshape(tf.range(8, dtype=tf.float32) / 8.0, [8, 1])

@tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32)])   # any batch size
def predict(batch):
    return tf.matmul(batch, w4)

def predict_all():
    outputs = []
    for batch_size in (32, 16):
        ds = tf.data.Dataset.from_tensor_slices(features).batch(batch_size)
        for batch in ds:
            outputs.append(predict(batch))
    extra = np.linspace(0.0, 1.0, 5 * 8).reshape(5, 8).astype(np.float32)  # one dtype
    outputs.append(predict(extra))
    return tf.concat(outputs, axis=0)
"""

_VARS_STARTER = '''\
class RunningSum(tf.Module):
    """Adds each x to a running total kept in a tf.Variable and returns the total."""

    def __init__(self, size):
        super().__init__()
        self.size = size

    @tf.function
    def __call__(self, x):
        total = tf.Variable(tf.zeros([self.size]))   # a new Variable on every call!
        total.assign_add(x)
        return total.read_value()
'''
_VARS_SOLUTION = '''\
class RunningSum(tf.Module):
    """Adds each x to a running total kept in a tf.Variable and returns the total."""

    def __init__(self, size):
        super().__init__()
        self.total = tf.Variable(tf.zeros([size]))   # created once, outside any graph

    @tf.function
    def __call__(self, x):
        self.total.assign_add(x)
        return self.total.read_value()
'''

_OBJECTS_STARTER = """\
x6 = tf.reshape(tf.range(12, dtype=tf.float32), [3, 4])
configs = [{"scale": 0.5 * i, "shift": float(i)} for i in range(1, 6)]

def run_configs():
    results = []
    for cfg in configs:
        @tf.function                    # a new tf.function object on every pass of the loop
        def apply(x, cfg):
            return x * cfg["scale"] + cfg["shift"]
        results.append(apply(x6, cfg))  # ...and a dict of Python floats
    return tf.stack(results)
"""
_OBJECTS_SOLUTION = """\
x6 = tf.reshape(tf.range(12, dtype=tf.float32), [3, 4])
configs = [{"scale": 0.5 * i, "shift": float(i)} for i in range(1, 6)]

@tf.function                            # created once, outside the loop
def apply(x, cfg):
    return x * cfg["scale"] + cfg["shift"]

def run_configs():
    results = []
    for cfg in configs:
        as_tensors = {key: tf.constant(value) for key, value in cfg.items()}  # same structure,
        results.append(apply(x6, as_tensors))                                # same specs
    return tf.stack(results)
"""

_LOOP_STARTER = """\
X7 = tf.reshape(tf.range(200 * 8, dtype=tf.float32) % 11.0 / 11.0, [200, 8])
Y7 = tf.reduce_sum(X7 * tf.range(8, dtype=tf.float32), axis=1, keepdims=True) / 8.0
dataset7 = tf.data.Dataset.from_tensor_slices((X7, Y7)).batch(32)   # 200 = 6·32 + 8

def train_model(epochs=4):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1)])

    @tf.function
    def train_step(x, y, lr):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(lr * g)
        return loss

    lr = 0.05
    for epoch in range(epochs):
        for x, y in dataset7:
            loss = train_step(x, y, lr)
        lr *= 0.7                      # learning-rate decay, as a Python float
    return float(loss)
"""
_LOOP_SOLUTION = """\
X7 = tf.reshape(tf.range(200 * 8, dtype=tf.float32) % 11.0 / 11.0, [200, 8])
Y7 = tf.reduce_sum(X7 * tf.range(8, dtype=tf.float32), axis=1, keepdims=True) / 8.0
dataset7 = tf.data.Dataset.from_tensor_slices((X7, Y7)).batch(32)

def train_model(epochs=4):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1)])

    @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32),   # any batch size
                                  tf.TensorSpec([None, 1], tf.float32),
                                  tf.TensorSpec([], tf.float32)])          # lr: a scalar tensor
    def train_step(x, y, lr):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(lr * g)
        return loss

    lr = tf.Variable(0.05)            # created outside the step, updated in place
    for epoch in range(epochs):
        for x, y in dataset7:
            loss = train_step(x, y, lr)
        lr.assign(lr * 0.7)
    return float(loss)
"""

_CAPSTONE_STARTER = '''\
def train_slow(epochs=3):
    """A training script with several hidden retracing causes. Returns the final loss."""
    keras.utils.set_random_seed(1)
    X = np.random.default_rng(0).normal(size=(100, 8)).astype("float32")
    Y = (X @ np.linspace(-1.0, 1.0, 8).astype("float32")).reshape(-1, 1)
    train = tf.data.Dataset.from_tensor_slices((X, Y)).batch(24)     # 100 = 4·24 + 4
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(1)])
    step = 0
    for epoch in range(epochs):
        lr = 0.1 / (epoch + 1)

        @tf.function
        def train_step(x, y, lr, step):
            warmup = min(1.0, (step + 1) / 10)                        # Python maths on a Python int
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            for v, g in zip(model.trainable_variables, grads):
                v.assign_sub(lr * warmup * g)
            return loss

        for x, y in train:
            train_step(x, y, lr, step)
            step += 1

    @tf.function
    def evaluate(x, y, training):
        return tf.reduce_mean((model(x, training=training) - y) ** 2)

    return float(evaluate(X, Y, False))
'''
_CAPSTONE_SOLUTION = '''\
def train_fast(epochs=3):
    """The same training, without retracing. Returns the final loss."""
    keras.utils.set_random_seed(1)
    X = np.random.default_rng(0).normal(size=(100, 8)).astype("float32")
    Y = (X @ np.linspace(-1.0, 1.0, 8).astype("float32")).reshape(-1, 1)
    train = tf.data.Dataset.from_tensor_slices((X, Y)).batch(24)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(1)])
    spec = [tf.TensorSpec([None, 8], tf.float32), tf.TensorSpec([None, 1], tf.float32),
            tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.int64)]

    @tf.function(input_signature=spec)               # created once; any batch size
    def train_step(x, y, lr, step):
        warmup = tf.minimum(1.0, tf.cast(step + 1, tf.float32) / 10.0)   # tensor maths
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(lr * warmup * g)
        return loss

    step = tf.Variable(0, dtype=tf.int64)            # counters and schedules live in variables
    lr = tf.Variable(0.1)
    for epoch in range(epochs):
        lr.assign(0.1 / (epoch + 1))
        for x, y in train:
            train_step(x, y, lr, step)
            step.assign_add(1)

    @tf.function
    def evaluate(x, y):
        return tf.reduce_mean((model(x, training=False) - y) ** 2)

    return float(evaluate(X, Y))
'''

EXERCISES: dict[str, Exercise] = {
    e.id: e
    for e in (
        Exercise(
            "00-square",
            0,
            "your first tf.function",
            "Turn `square` into a tf.function. The check calls it three times with float32 "
            "vectors of length 3 and expects one graph.",
            "square",
            _SQUARE_STARTER,
            _SQUARE_SOLUTION,
            ("put `@tf.function` on the line above `def square(x):`",),
            _check_square,
        ),
        Exercise(
            "01-graph-speedup",
            1,
            "make many small ops fast",
            "Make `many_small_ops` run as one graph. The check compares a cached graph call "
            "with an eager call and expects at least 1.5× speed-up and the same result.",
            "many_small_ops",
            _SPEED_STARTER,
            _SPEED_SOLUTION,
            (
                "decorate it with @tf.function — no other change is needed",
                "the graph must compute exactly what the Python code computes",
            ),
            _check_speedup,
        ),
        Exercise(
            "02-count-calls",
            2,
            "side effects that run on every call",
            "`scaled` counts its calls in a Python variable, which only changes while TF "
            "traces. Make the tf.Variable `counter` (the check passes one in) count every call.",
            "scaled",
            _COUNT_STARTER,
            _COUNT_SOLUTION,
            (
                "Python statements run only while tracing; a TF op such as "
                "counter.assign_add(1) is part of the graph and runs on every call",
            ),
            _check_count_calls,
        ),
        Exercise(
            "03-scalar-trap",
            3,
            "one graph for the whole schedule",
            "`run_schedule` makes a new graph for every epoch's factor and one more for "
            "evaluation. Change the calls (and the branch) so that one graph serves all 7 calls, "
            "with the same total.",
            "run_schedule",
            _SCALAR_STARTER,
            _SCALAR_SOLUTION,
            (
                "pass tf.constant(...) instead of Python floats and bools; branch on the bool tensor "
                "with tf.cond (or let AutoGraph turn `if training:` into one)",
            ),
            _check_run(1, "one graph for all 7 calls, same total"),
        ),
        Exercise(
            "04-shapes",
            4,
            "any batch size, one dtype",
            "`predict_all` feeds batches of 32, 16 and 4 rows and a float64 NumPy array. Make it "
            "need at most 2 graphs (1 with an input_signature), with the same outputs.",
            "predict_all",
            _SHAPES_STARTER,
            _SHAPES_SOLUTION,
            (
                "give predict an input_signature=[tf.TensorSpec([None, 8], tf.float32)] — or "
                "reduce_retracing=True — and feed one dtype (float32)",
            ),
            _check_run(2, "at most 2 graphs for every batch size and dtype"),
        ),
        Exercise(
            "05-variables",
            5,
            "a Variable that lives outside the graph",
            "`RunningSum(3)` should add each x to a running total and return it. Calling it "
            "raises today. Fix the class; the check calls it three times with [1, 2, 3].",
            "RunningSum",
            _VARS_STARTER,
            _VARS_SOLUTION,
            (
                "create the tf.Variable once, in __init__, and only assign_add to it inside the tf.function",
                "a Variable created inside __call__ starts from zero on every call",
            ),
            _check_running_sum,
        ),
        Exercise(
            "06-objects",
            6,
            "one function object, one structure",
            "`run_configs` re-creates `apply` for every config and passes a dict of Python "
            "floats. Make all five configs share one graph, with the same results.",
            "run_configs",
            _OBJECTS_STARTER,
            _OBJECTS_SOLUTION,
            (
                "create the tf.function once, outside the loop, and pass the config values as "
                "tensors (a dict of tensors with the same keys keeps one graph)",
            ),
            _check_run(1, "five configs, one graph"),
        ),
        Exercise(
            "07-training-loop",
            7,
            "a custom loop that traces once",
            "`train_model` retraces for every epoch's learning rate and every smaller last "
            "batch. Make `train_step` trace once, keeping the decay and every sample.",
            "train_model",
            _LOOP_STARTER,
            _LOOP_SOLUTION,
            (
                "keep lr in a tf.Variable (created outside the step, updated with .assign) and give "
                "train_step an input_signature with a None batch dimension",
            ),
            _check_run(1, "one graph for the whole training", rtol=1e-3),
        ),
        Exercise(
            "08-capstone",
            8,
            "the slow training script",
            "`train_slow` hides several retracing causes. Write `train_fast`, the same training "
            "without them. The check runs both: no retraces, at least 2× faster, a loss no "
            "worse than 1.25× the slow one.",
            "train_fast",
            _CAPSTONE_STARTER.replace("def train_slow(", "def train_fast(", 1),
            _CAPSTONE_SOLUTION,
            (
                "run %%tracewatch on train_slow() and fix one reason at a time: there are four "
                "(a re-created function, a Python float, a Python int and a smaller last batch)",
                "a Python int that changes on every step is the most expensive one: keep it in a "
                "tf.Variable and do the warm-up maths with tf ops",
            ),
            _check_capstone,
            call='ex.check("08-capstone", train_fast, baseline=train_slow)',
        ),
    )
}

_HINTS_GIVEN: dict[str, int] = {}


def exercise(exercise_id: str) -> Exercise:
    """The :class:`Exercise` called ``exercise_id`` (e.g. ``"03-scalar-trap"``)."""
    found = EXERCISES.get(exercise_id)
    if found is None:
        raise UsageProblem(f"no exercise {exercise_id!r}; the exercises are: {', '.join(sorted(EXERCISES))}")
    return found


def check(exercise_id: str, answer: Any, **options: Any) -> Feedback:
    """Check the learner's ``answer`` for exercise ``exercise_id`` by running it and measuring.

    Returns a :class:`Feedback` (✓/✗, what was measured, a hint); errors in the learner's code
    become feedback, they are not raised. ``options`` pass exercise settings such as
    ``baseline=train_slow`` (capstone), ``min_speedup=…`` or ``repeats=…``.
    """
    ex = exercise(exercise_id)
    try:
        return ex.checker(ex, answer, options)
    except Exception as exc:
        return _error_feedback(ex, exc)


def hint(exercise_id: str, number: int | None = None) -> Solution:
    """The next hint for ``exercise_id`` (or hint ``number``, counting from 1)."""
    ex = exercise(exercise_id)
    if number is None:
        number = _HINTS_GIVEN.get(exercise_id, 0) % len(ex.hints) + 1
        _HINTS_GIVEN[exercise_id] = number
    number = max(1, min(number, len(ex.hints)))
    return Solution(ex.id, f"hint {number} of {len(ex.hints)}", notes=ex.hints[number - 1])


def solution(exercise_id: str) -> Solution:
    """The worked solution of ``exercise_id``: try the hints first."""
    ex = exercise(exercise_id)
    return Solution(
        ex.id,
        f"solution: {ex.title}",
        code=ex.solution,
        notes="Paste it into the exercise cell, run it, then run the check again.",
    )


def _ids(lesson: int | None = None) -> Sequence[str]:
    return [e.id for e in EXERCISES.values() if lesson is None or e.lesson == lesson]
