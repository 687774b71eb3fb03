"""Try the report's fix on the learner's own code: run it again with the fix applied, measure.

:func:`try_fix` takes a report, the name of a function that retraced and a callable that runs
the code again (``%%tracewatch --try-fix`` passes the cell; ``report.try_fix`` the user's
callable). It picks the fix the report prints first (:func:`~tfgraph_lab.report.fix_trial.choose_fix`)
and, when that fix is a change to the decorator or "create the tf.function once", runs the code
again under :func:`~tfgraph_lab.watching.recorder.watch` with the fix applied:

* the tf.function bound under a name in the namespace (or on a class, for a decorated method) is
  re-wrapped from its Python function with the new options, for the re-run only;
* a tf.function the code creates itself (``@tf.function`` in the cell, ``tf.function(f)`` in a
  loop) gets the same options through ``tf.function`` while the code runs (and, for "create it
  once", the same object every time);

then restores the namespace, the classes and ``tf.function`` (also when the code raised), and
returns a :class:`~tfgraph_lab.report.fix_trial.FixTrial`: traces, retraces, XLA compilations and times
before → after, whether the outputs are equal, and TensorFlow's error when the fix raised. A fix
that changes call sites is not applied: the trial shows it with the count it promises.

Glue: imports TensorFlow (through the adapter for private names) and the recorder.
"""

from __future__ import annotations

import contextlib
import io
import logging
import time
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from ..adapter import rewrap as tfr
from ..explain.failures import error_text
from ..model.errors import UsageProblem
from ..report.fix_trial import FixChoice, FixTrial, RunFigures, choose_fix
from ..report.trace_report import TraceReport
from ..watching.recorder import watch

__all__ = ["CellTrial", "Outputs", "capture_outputs", "try_fix"]


@dataclass
class Outputs:
    """What one run returned: the code's value and the function's results (numpy), per run."""

    value: Any = None
    results: dict[tfr.Location, list[Any]] = field(default_factory=dict)

    def of(self, where: tfr.Location) -> list[Any]:
        return self.results.get(where, [])


@contextlib.contextmanager
def capture_outputs() -> Iterator[Outputs]:
    """Keep the eager results of every user tf.function called meanwhile (``outputs.results``);
    the caller sets ``outputs.value``. Used around the watched run of ``--try-fix``."""
    from ..model.places import is_framework_file

    outputs = Outputs()
    with tfr.capture_results(lambda where: not is_framework_file(where[1])) as log:
        yield outputs
    # Tensors, converted when compared (not in the timed run); none when some could not be
    # kept: results out of step would compare the wrong calls.
    outputs.results = log.results if not log.failures else {}


def _numpy(x: Any) -> Any:
    """Tensors → numpy, nested structures kept as flat lists; None when a leaf is not data."""
    import numpy as np
    import tensorflow as tf

    leaves: list[Any] = []
    try:
        flat = tf.nest.flatten(x, expand_composites=True)
    except Exception:  # a structure tf.nest cannot walk (e.g. a dict with unsortable keys)
        return _NOT_DATA
    for leaf in flat:
        if isinstance(leaf, (int, float, bool, complex, np.ndarray, np.generic)) or leaf is None:
            leaves.append(np.asarray(leaf) if leaf is not None else None)
            continue
        try:
            leaves.append(np.asarray(leaf.numpy()))
        except Exception:  # no numpy(), or a symbolic tensor
            return _NOT_DATA
    return leaves


_NOT_DATA = object()  # a value made of more than tensors and numbers: not compared


def _equal(a: Any, b: Any) -> bool:
    import numpy as np

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return False
            continue
        if x.shape != y.shape:
            return False
        if x.dtype.kind in "biufc" and y.dtype.kind in "biufc":
            if not np.allclose(x, y, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def _compare(before: Outputs, after: Outputs, where: tfr.Location, name: str) -> tuple[str, str]:
    """``(outputs, detail)``: ``equal`` / ``differ`` / ``not compared`` and what was compared."""
    parts, differ = [], []
    value_b, value_a = _numpy(before.value), _numpy(after.value)
    if before.value is not None or after.value is not None:
        if value_b is _NOT_DATA or value_a is _NOT_DATA:
            parts.append("the value is not made of tensors and numbers: not compared")
        else:
            parts.append("the value returned")
            if not _equal(value_b, value_a):
                differ.append("the value returned")
    rb, ra = [_numpy(r) for r in before.of(where)], [_numpy(r) for r in after.of(where)]
    if rb or ra:
        comparable = [r for r in rb + ra if r is not _NOT_DATA]
        if len(comparable) == len(rb) + len(ra):
            parts.append(f"{len(rb)} results of {name}")
            if len(rb) != len(ra):
                differ.append(f"{name} returned {len(rb)} → {len(ra)} results")
            elif not all(_equal(x, y) for x, y in zip(rb, ra)):
                bad = next(i for i, (x, y) in enumerate(zip(rb, ra)) if not _equal(x, y))
                differ.append(f"{name}'s result #{bad + 1} differs")
    if differ:
        return "differ", "; ".join(differ)
    compared = [p for p in parts if not p.endswith("not compared")]
    if not compared:
        return "not compared", "; ".join(parts) or "nothing returned a tensor"
    return "equal", "allclose: " + " and ".join(parts)


def _overrides(choice: FixChoice) -> dict[str, Any]:
    import tensorflow as tf

    assert choice.plan is not None
    if not choice.plan.decorator:
        return {}
    return dict(eval(f"dict({choice.plan.decorator})", {"tf": tf}))  # the plan text is our own code


class _Applied:
    """The fix applied for one run: rebound names, patched classes, tf.function's wrapper."""

    def __init__(self, where: tfr.Location, overrides: dict[str, Any], hoist: bool) -> None:
        self.where, self.overrides, self.hoist = where, overrides, hoist
        self.made: list[Any] = []  # the fixed tf.function objects (count their traces)
        self.once: dict[int, tuple[Any, Any]] = {}  # python function id -> (it, its Function)

    def fixed(self, fn: Any) -> Any:
        new = tfr.rewrap(fn, self.overrides)
        self.made.append(new)
        return new

    def wrap(self, original: Any, func: Any, kwargs: dict[str, Any]) -> Any:
        if tfr.is_tf_function(func) or tfr.function_location(func) != self.where:
            return original(func, **kwargs)
        if self.hoist and id(func) in self.once and self.once[id(func)][0] is func:
            return self.once[id(func)][1]
        new = original(func, **{**kwargs, **self.overrides})
        self.made.append(new)
        if self.hoist:
            self.once[id(func)] = (func, new)
        return new

    @contextlib.contextmanager
    def applied(self, namespace: MutableMapping[str, Any]) -> Iterator[None]:
        saved = dict(namespace)
        patched: list[tuple[type, str, Any]] = []
        try:
            for name, obj in saved.items():
                if tfr.is_tf_function(obj) and tfr.function_location(obj) == self.where:
                    namespace[name] = self.fixed(obj)
                elif isinstance(obj, type):
                    for attr, value in list(vars(obj).items()):
                        if tfr.is_tf_function(value) and tfr.function_location(value) == self.where:
                            patched.append((obj, attr, value))
                            setattr(obj, attr, self.fixed(value))
            with tfr.intercept_tf_function(self.wrap):
                yield
        finally:
            for cls, attr, value in reversed(patched):
                setattr(cls, attr, value)
            for name in [k for k in namespace if k not in saved]:
                del namespace[name]
            for name, value in saved.items():
                if namespace.get(name, _NOT_DATA) is not value:
                    namespace[name] = value

    def traced(self) -> int:
        return sum(tfr.tracing_count(f) for f in self.made)


def _run(rerun: Callable[[], Any], capture: bool) -> tuple[Any, Outputs, BaseException | None, float]:
    """Run once with printed output and the live retrace log hidden (both were shown for the
    watched run; the trial reports this one); an Exception is returned, not raised."""
    outputs, error = Outputs(), None
    with contextlib.redirect_stdout(io.StringIO()), _live_log_off(), contextlib.ExitStack() as stack:
        if capture:
            outputs = stack.enter_context(capture_outputs())
        t0 = time.perf_counter()
        try:
            outputs.value = rerun()
        except Exception as exc:  # the fix's failure is a finding, reported
            error = exc
        seconds = time.perf_counter() - t0
    return outputs.value, outputs, error, seconds


@contextlib.contextmanager
def _live_log_off() -> Iterator[None]:
    logger = logging.getLogger("tfgraph_lab")
    before = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = before


def try_fix(
    report: TraceReport,
    name: str | None = None,
    *,
    rerun: Callable[[], Any],
    namespace: MutableMapping[str, Any] | None = None,
    before: Outputs | None = None,
    before_seconds: float | None = None,
    announce: Callable[[str], None] | None = None,
) -> FixTrial:
    """Run ``rerun`` again with the fix the report prints first for ``name`` (default: the
    first function that retraced) and measure it against ``report`` (see the module docstring).

    ``namespace`` is where the code finds the function (default: ``rerun``'s globals).
    ``before`` holds the outputs of the run ``report`` watched; without it, ``rerun`` first runs
    once unchanged to get them. ``announce(fix_code)`` is called before the code runs again.
    Raises UsageProblem when nothing (or no ``name``) retraced.
    """
    choice = choose_fix(report, name)
    if choice is None:
        what = f"{name!r} did not retrace" if name else "no function retraced"
        seen = ", ".join(sorted(report.traces_by_function())) or "none"
        raise UsageProblem(f"try-fix: {what} in this report (functions: {seen}); nothing to try")
    f = choice.function
    figures = RunFigures.from_report(report, f, report.seconds if before_seconds is None else before_seconds)
    common = {"function": f.qualname, "plan": choice.plan, "before": figures, "code": choice.code}
    if not choice.applicable:
        return FixTrial(applied=False, advice=choice.advice, **common)  # type: ignore[arg-type]
    if namespace is None:
        namespace = getattr(rerun, "__globals__", None)
        if namespace is None:
            raise UsageProblem("try-fix: pass namespace= (the dict where the code finds the function)")
    where = (f.qualname, f.filename, f.firstlineno)
    reruns: list[str] = []
    if announce is not None:
        announce(choice.plan.code(choice.name) if choice.plan else "the fix")
    if before is None:
        _, before, _, _ = _run(rerun, capture=True)
        reruns.append("as written, for the outputs to compare with")
    assert choice.plan is not None
    fix = _Applied(where, _overrides(choice), choice.plan.hoist)
    with fix.applied(namespace), watch() as w:
        _, after, error, seconds = _run(rerun, capture=True)
    reruns.append("with the fix")
    after_figures = RunFigures.from_report(w.report, f, seconds)
    notes = []
    if before_seconds is None:
        notes.append(
            "total time: before is the watched block's, after is rerun()'s (the same only when "
            "the block was rerun() alone); the per-call times compare the same calls"
        )
    trial = FixTrial(applied=True, after=after_figures, reruns=tuple(reruns), note="; ".join(notes), **common)  # type: ignore[arg-type]
    if not fix.made or (fix.traced() == 0 and error is None):
        note = (
            f"the re-run did not call a fixed {choice.name}: the code reaches it through a "
            "reference this tool cannot replace (an attribute, a list, a closure); apply the "
            "fix by hand"
        )
        return FixTrial(applied=False, note=note, reruns=tuple(reruns), **common)  # type: ignore[arg-type]
    if fix.hoist and len(fix.once) > 1:
        notes.insert(
            0,
            f"the code created {len(fix.once)} different Python functions for {choice.name} (a def "
            "or lambda inside the loop): one tf.function per Python function, so hoisting the "
            "tf.function alone cannot help — move the def out of the loop too",
        )
        trial = _replace(trial, note="; ".join(notes))
    if error is not None:
        return _replace(trial, error=error_text(error))
    outputs, detail = _compare(before, after, where, choice.name)
    if outputs == "differ" and any(tfr.draws_random_numbers(f) for f in fix.made):
        # A fixed graph draws other random numbers than the graphs it replaces, also under
        # tf.random.set_seed (where a run as written repeats its numbers exactly): not the fix.
        outputs, detail = "noisy", "the fixed graph draws other random numbers (dropout, tf.random)"
    if outputs == "differ":
        # Random ops or state the code keeps make runs differ without any fix: run it once
        # more as written and compare that with the first run before blaming the fix.
        _, control, control_error, _ = _run(rerun, capture=True)
        reruns.append("as written again, to tell the fix from noise")
        if control_error is not None or _compare(before, control, where, choice.name)[0] == "differ":
            outputs, detail = "noisy", "random ops or state the code keeps"
    return _replace(trial, outputs=outputs, outputs_detail=detail, reruns=tuple(reruns))


class CellTrial:
    """``%%tracewatch --try-fix`` for one cell: runs it watched while keeping its outputs, then
    tries the fix with the cell as ``rerun`` and the shell's namespace."""

    def __init__(self, name: str, run_cell: Callable[[], Any], namespace: MutableMapping[str, Any]) -> None:
        self.name, self.run_cell, self.namespace = name or None, run_cell, namespace
        self.outputs = Outputs()

    @classmethod
    def for_flag(
        cls, flag: str | None, run_cell: Callable[[], Any], namespace: MutableMapping[str, Any]
    ) -> CellTrial | None:
        """None when ``--try-fix`` was not given (``flag`` is None)."""
        return None if flag is None else cls(flag, run_cell, namespace)

    def first_run(self) -> Any:
        """The watched run: the cell as written, its tf.function results kept."""
        with capture_outputs() as outputs:
            outputs.value = self.run_cell()
        self.outputs = outputs
        return outputs.value

    def show(self, report: TraceReport, seconds: float, display: Callable[[Any], Any]) -> None:
        try:
            trial = try_fix(
                report,
                self.name,
                rerun=self.run_cell,
                namespace=self.namespace,
                before=self.outputs,
                before_seconds=seconds,
                announce=lambda fix: print(
                    f"--try-fix: running the cell a second time with {fix} (its printed output "
                    "is hidden; the names it sets are restored afterwards)…"
                ),
            )
        except UsageProblem as exc:
            print(exc)
            return
        display(trial)


def _replace(trial: FixTrial, **changes: Any) -> FixTrial:
    from dataclasses import replace

    return replace(trial, **changes)
