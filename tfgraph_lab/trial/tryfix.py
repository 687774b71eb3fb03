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
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from ..adapter import rewrap as tfr
from ..explain.failures import error_text
from ..model.errors import UsageProblem
from ..report.fix_trial import (
    CallRewrite,
    FixChoice,
    FixTrial,
    RunFigures,
    choose_fix,
    decorator_kwargs,
    parse_call,
)
from ..report.trace_report import TraceReport
from ..watching.recorder import watch
from .state import UserState

__all__ = ["CellTrial", "Outputs", "capture_outputs", "exclusive", "snapshot", "try_fix"]


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
    """The decorator's keywords, built from the plan's typed options: the text is parsed by a
    strict grammar, never evaluated (a report read from a file is data)."""
    import tensorflow as tf

    assert choice.plan is not None
    return decorator_kwargs(choice.plan.decorator, tf)


class _Converting:
    """A thin wrapper over a fixed tf.function that rewrites some arguments before every call
    (``tf.constant(lr)``, ``tf.cast(x, tf.float32)``, ``tf.stack(xs)``): for the re-run, the
    same as editing every call site. Anything else it is asked for is the function's."""

    def __init__(self, fn: Any, rewrites: tuple[CallRewrite, ...], bound: Any = None) -> None:
        import inspect

        self._fn, self._rewrites, self._bound = fn, rewrites, bound
        self._signature = inspect.signature(fn.python_function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if self._bound is not None:
            args = (self._bound, *args)
        try:
            call = self._signature.bind(*args, **kwargs)
        except TypeError:  # TensorFlow says what is wrong with the call, as without the wrapper
            call = None
        if call is not None:
            for r in self._rewrites:
                self._convert(call, r)
            args, kwargs = call.args, call.kwargs
        if self._bound is not None:
            return self._fn.__get__(self._bound, type(self._bound))(*args[1:], **kwargs)
        return self._fn(*args, **kwargs)

    def _convert(self, call: Any, r: CallRewrite) -> None:
        import tensorflow as tf

        def converted(value: Any) -> Any:
            if r.kind == "constant":
                return tf.constant(value)
            if r.kind == "stack":
                return tf.stack(value)
            return tf.cast(value, tf.dtypes.as_dtype(r.dtype))

        if r.parameter in call.arguments:
            call.arguments[r.parameter] = converted(call.arguments[r.parameter])
            return
        star = next((p.name for p in call.signature.parameters.values() if p.kind == p.VAR_POSITIONAL), None)
        index = r.parameter[len("args_") :]
        if star in call.arguments and r.parameter.startswith("args_") and index.isdigit():
            items = list(call.arguments[star])
            if int(index) < len(items):
                items[int(index)] = converted(items[int(index)])
                call.arguments[star] = tuple(items)

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else _Converting(self._fn, self._rewrites, obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)


class _Applied:
    """The fix applied for one run: rebound names, patched classes, tf.function's wrapper."""

    def __init__(
        self, where: tfr.Location, overrides: dict[str, Any], hoist: bool, rewrites: tuple[CallRewrite, ...]
    ) -> None:
        self.where, self.overrides, self.hoist, self.rewrites = where, overrides, hoist, rewrites
        self.made: list[Any] = []  # the fixed tf.function objects (count their traces)
        self.once: dict[int, tuple[Any, Any]] = {}  # python function id -> (it, what the code gets)

    def _converting(self, fn: Any) -> Any:
        return _Converting(fn, self.rewrites) if self.rewrites else fn

    def fixed(self, fn: Any) -> Any:
        new = tfr.rewrap(fn, self.overrides)  # a fresh object: its graphs are the fix's
        self.made.append(new)
        return self._converting(new)

    def wrap(self, original: Any, func: Any, kwargs: dict[str, Any]) -> Any:
        if tfr.is_tf_function(func) or tfr.function_location(func) != self.where:
            return original(func, **kwargs)
        if self.hoist and id(func) in self.once and self.once[id(func)][0] is func:
            return self.once[id(func)][1]
        new = original(func, **{**kwargs, **self.overrides})
        self.made.append(new)
        given = self._converting(new)
        if self.hoist:
            self.once[id(func)] = (func, given)
        return given

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


@dataclass
class _Run:
    """One re-run: what it returned, what it raised, how long it took, what its watch saw."""

    outputs: Outputs
    error: BaseException | None
    seconds: float
    report: TraceReport


def _run(rerun: Callable[[], Any], start: UserState, fix: _Applied | None = None) -> _Run:
    """Run once from ``start`` (restored first), under a watch of its own and with its
    results kept, printed output and the live retrace log hidden (both were shown for the
    watched run; the trial reports this one); an Exception is returned, not raised.

    The watch is entered before the results are captured and left after: tfgraph_lab's hook is
    then in place beneath the capture for the whole run, whatever other threads' watches do,
    so each restores exactly what it found (issue 33.8)."""
    start.restore()
    error = None
    applied = fix.applied(start.namespace) if fix is not None else contextlib.nullcontext()
    with (
        applied,
        contextlib.redirect_stdout(io.StringIO()),
        _live_log_off(),
        watch() as w,
        capture_outputs() as outputs,  # inside the watch: over tfgraph_lab's hook
    ):
        t0 = time.perf_counter()
        try:
            outputs.value = rerun()
        except Exception as exc:  # the fix's failure is a finding, reported
            error = exc
        seconds = time.perf_counter() - t0
    return _Run(outputs, error, seconds, w.report)


@contextlib.contextmanager
def _live_log_off() -> Iterator[None]:
    logger = logging.getLogger("tfgraph_lab")
    before = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = before


_TRIAL = threading.Lock()  # one trial at a time in the process
_running_in: list[str] = []  # the thread of the trial running, for the refusal


@contextlib.contextmanager
def exclusive() -> Iterator[None]:
    """Hold the process's one fix trial; a second, from another thread, is refused: a trial
    re-wraps ``tf.function`` and redirects ``sys.stdout`` for the whole process."""
    if not _TRIAL.acquire(blocking=False):
        where = f" (in thread {_running_in[0]!r})" if _running_in else ""
        raise UsageProblem(
            f"try-fix: another fix trial is running{where}; trials cannot overlap (each replaces "
            "tf.function and sys.stdout for the whole process while the code runs again): try "
            "again when it is done"
        )
    _running_in[:] = [threading.current_thread().name]
    try:
        yield
    finally:
        _running_in.clear()
        _TRIAL.release()


def _random_state() -> list[Any]:
    generator = tfr.global_random_generator()
    return [generator.state] if generator is not None else []


def snapshot(namespace: MutableMapping[str, Any]) -> UserState:
    """The user's state as :class:`~tfgraph_lab.trial.state.UserState` keeps it, ``tf.random``'s
    global generator included."""
    return UserState(namespace, _random_state())


def runs_said(as_written_first: bool) -> str:
    """How many times the code runs again, in words (said before it does)."""
    most = 3 if as_written_first else 2
    first = "once as written (the outputs to compare with), " if as_written_first else ""
    return (
        f"up to {most} more times: {first}once with the fix, and once more as written only if the "
        "outputs differ or the fixed run raises"
    )


def try_fix(
    report: TraceReport,
    name: str | None = None,
    *,
    rerun: Callable[[], Any],
    namespace: MutableMapping[str, Any] | None = None,
    before: Outputs | None = None,
    before_seconds: float | None = None,
    announce: Callable[[str], None] | None = None,
    start: UserState | None = None,
    before_runs: Callable[[str, UserState], None] | None = None,
) -> FixTrial:
    """Run ``rerun`` again with the fix that saves most graphs for ``name`` (default: the
    first function that retraced) and measure it against ``report`` (see the module docstring).

    ``namespace`` is where the code finds the function (default: ``rerun``'s globals).
    ``before`` holds the outputs of the run ``report`` watched, and ``start`` the state that
    run started from; without them, ``rerun`` first runs once unchanged from the state of now.
    Every run starts from ``start`` (or the state of now), and the state of now is restored
    afterwards (:class:`~tfgraph_lab.trial.state.UserState`). ``announce(fix_code)`` and
    ``before_runs(fix_code, state)`` (``state``: what will be restored) are called before the
    code runs again. Raises UsageProblem when nothing (or no ``name``)
    retraced, when the fix is outside the grammar of fixes (a crafted report) and while
    another trial runs.
    """
    with exclusive():
        return _try_fix(report, name, rerun, namespace, before, before_seconds, announce, start, before_runs)


def _try_fix(
    report: TraceReport,
    name: str | None,
    rerun: Callable[[], Any],
    namespace: MutableMapping[str, Any] | None,
    before: Outputs | None,
    before_seconds: float | None,
    announce: Callable[[str], None] | None,
    start: UserState | None,
    before_runs: Callable[[str, UserState], None] | None,
) -> FixTrial:
    choice = choose_fix(report, name)
    if choice is None:
        what = f"{name!r} did not retrace" if name else "no function retraced"
        seen = ", ".join(sorted(report.traces_by_function())) or "none"
        raise UsageProblem(f"try-fix: {what} in this report (functions: {seen}); nothing to try")
    f = choice.function
    figures = RunFigures.from_report(report, f, report.seconds if before_seconds is None else before_seconds)
    common = {"function": f.qualname, "label": f.label, "plan": choice.plan, "before": figures, "code": choice.code}
    if not choice.applicable:
        return FixTrial(applied=False, advice=choice.advice, **common)  # type: ignore[arg-type]
    assert choice.plan is not None
    overrides = _overrides(choice)  # refused before anything runs when outside the grammar
    rewrites = parse_call(choice.plan.call)
    if namespace is None:
        namespace = getattr(rerun, "__globals__", None)
        if namespace is None:
            raise UsageProblem("try-fix: pass namespace= (the dict where the code finds the function)")
    where = (f.qualname, f.filename, f.firstlineno)
    now = snapshot(namespace)
    start = start or now
    if before_runs is not None:
        before_runs(choice.plan.code(choice.name), now)
    if announce is not None:
        announce(choice.plan.code(choice.name))
    try:
        return _trial(
            choice, common, where, overrides, rewrites, rerun, namespace, before, before_seconds, start, now
        )
    finally:
        now.restore()  # what the user keeps: the state before the trial (the watched run's)


def _trial(
    choice: FixChoice,
    common: dict[str, Any],
    where: tfr.Location,
    overrides: dict[str, Any],
    rewrites: tuple[CallRewrite, ...],
    rerun: Callable[[], Any],
    namespace: MutableMapping[str, Any],
    before: Outputs | None,
    before_seconds: float | None,
    start: UserState,
    now: UserState,
) -> FixTrial:
    assert choice.plan is not None
    f, name = choice.function, choice.name
    reruns: list[str] = []
    if before is None:
        before = _run(rerun, start).outputs
        reruns.append("as written, for the outputs to compare with")
    fix = _Applied(where, overrides, choice.plan.hoist, rewrites)
    fixed = _run(rerun, start, fix)
    reruns.append("with the fix")
    after_figures = RunFigures.from_report(fixed.report, f, fixed.seconds)
    notes = []
    if before_seconds is None:
        notes.append(
            "total time: before is the watched block's, after is rerun()'s (the same only when "
            "the block was rerun() alone); the per-call times compare the same calls"
        )
    tried = ""
    if rewrites:
        converts = ", ".join(f"`{r.parameter}` with {e}" for r, (_, e) in zip(rewrites, choice.plan.call))
        tried = (
            f"for the re-run, {name} was bound to a thin wrapper that converts {converts} before "
            f"every call — the same as editing every call site; your code is unchanged"
        )
    common = {**common, "reruns": tuple(reruns), "tried": tried}
    error = fixed.error
    if error is not None and after_figures.calls == 0:
        untried = (
            f"the code raised {error_text(error)} before it called the fixed {name}, so the fix "
            "never ran (state the trial cannot put back — an exhausted iterator, a file — makes a "
            "second run differ from the first)"
        )
        return FixTrial(applied=True, untried=untried, note="; ".join(notes), **common)
    if error is None and after_figures.calls == 0 and common["before"].calls > 0:
        untried = (
            f"the code ran again with the fix but never called {name} ({common['before'].calls} "
            "calls in the watched run), so the fix never ran: something the first run used up — "
            "an exhausted iterator or generator, a file read to its end — makes a second run "
            "differ from the first"
        )
        return FixTrial(applied=True, untried=untried, note="; ".join(notes), **common)
    if not fix.made or (fix.traced() == 0 and error is None):
        note = (
            f"the re-run did not call a fixed {name}: the code reaches it through a "
            "reference this tool cannot replace (an attribute, a list, a closure); apply the "
            "fix by hand"
        )
        return FixTrial(applied=False, note=note, **{**common, "tried": ""})
    trial = FixTrial(applied=True, after=after_figures, note="; ".join(notes), **common)
    if fix.hoist and len(fix.once) > 1:
        notes.insert(
            0,
            f"the code created {len(fix.once)} different Python functions for {name} (a def "
            "or lambda inside the loop): one tf.function per Python function, so hoisting the "
            "tf.function alone cannot help — move the def out of the loop too",
        )
        trial = _replace(trial, note="; ".join(notes))
    if error is not None:
        control = _run(rerun, start)
        reruns.append("as written again, to tell the fix from a second run")
        trial = _replace(trial, reruns=tuple(reruns))
        if control.error is not None:
            untried = (
                f"with the fix the code raised {error_text(error)}, and run again as written it "
                f"raised too ({error_text(control.error)}): a second run differs from the first "
                "for reasons other than the fix"
            )
            return _replace(trial, after=None, untried=untried)
        return _replace(trial, error=error_text(error))
    outputs, detail = _compare(before, fixed.outputs, where, name)
    if outputs == "differ" and any(tfr.draws_random_numbers(g) for g in fix.made):
        # A fixed graph draws other random numbers than the graphs it replaces, also under
        # tf.random.set_seed (where a run as written repeats its numbers exactly): not the fix.
        outputs, detail = "noisy", "the fixed graph draws other random numbers (dropout, tf.random)"
    if outputs == "differ":
        # Random ops or state the code keeps make runs differ without any fix: run it once
        # more as written and compare that with the first run before blaming the fix.
        control = _run(rerun, start)
        reruns.append("as written again, to tell the fix from noise")
        if control.error is not None:
            outputs = "not compared"
            detail = (
                f"the run as written again raised {error_text(control.error)}; the fixed run's outputs differ"
            )
        elif _compare(before, control.outputs, where, name)[0] == "differ":
            outputs = "noisy"
            detail = "a run as written again differs from the first too: random ops or state the code keeps"
    return _replace(trial, outputs=outputs, outputs_detail=detail, reruns=tuple(reruns))


class CellTrial:
    """``%%tracewatch --try-fix`` for one cell: runs it watched while keeping its outputs (and
    the state it started from), then tries the fix with the cell as ``rerun`` and the shell's
    namespace: every re-run starts from the state the watched run started from, and the user
    keeps the watched run's state."""

    def __init__(self, name: str, run_cell: Callable[[], Any], namespace: MutableMapping[str, Any]) -> None:
        self.name, self.run_cell, self.namespace = name or None, run_cell, namespace
        self.outputs = Outputs()
        self.start: UserState | None = None

    @classmethod
    def for_flag(
        cls, flag: str | None, run_cell: Callable[[], Any], namespace: MutableMapping[str, Any]
    ) -> CellTrial | None:
        """None when ``--try-fix`` was not given (``flag`` is None)."""
        return None if flag is None else cls(flag, run_cell, namespace)

    def first_run(self) -> Any:
        """The watched run: the cell as written, its tf.function results kept (the watch is
        already on: the capture sits over tfgraph_lab's hook)."""
        self.start = snapshot(self.namespace)
        with capture_outputs() as outputs:
            outputs.value = self.run_cell()
        self.outputs = outputs
        return outputs.value

    @staticmethod
    def announce(fix: str, state: UserState) -> None:
        print(
            f"--try-fix: trying {fix}; the cell runs {runs_said(False)} (their printed output is "
            "hidden). Each run starts from the state the watched run started from, and afterwards "
            f"the state it left is put back — {state.restored()}; not restored: {state.limits()}…"
        )

    def show(self, report: TraceReport, seconds: float, display: Callable[[Any], Any]) -> None:
        try:
            trial = try_fix(
                report,
                self.name,
                rerun=self.run_cell,
                namespace=self.namespace,
                before=self.outputs,
                before_seconds=seconds,
                before_runs=self.announce,
                start=self.start,
            )
        except UsageProblem as exc:
            print(exc)
            return
        display(trial)


def _replace(trial: FixTrial, **changes: Any) -> FixTrial:
    from dataclasses import replace

    return replace(trial, **changes)
