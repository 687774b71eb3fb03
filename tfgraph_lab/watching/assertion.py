"""``assert_max_traces``: a trace count asserted in any code, as a context manager or a decorator.

    with tfgraph_lab.assert_max_traces(train_step, 1):    # train_step's traces in the block
        ...
    with tfgraph_lab.assert_max_traces(train_step=1):     # by name; or n=1: every user function
        ...

    @tfgraph_lab.assert_max_traces(n=1)                   # above @tf.function: every call of it,
    @tf.function                                          # counted since it was decorated
    def train_step(x, step): ...

    @tfgraph_lab.assert_max_traces(train_step=1)          # on a plain function (a test): each call
    def test_training(): ...                              # of it runs under a watch of its own

Broken, it raises :class:`~tfgraph_lab.model.errors.TraceAssertionError` (an ``AssertionError``)
naming the function, its count (TensorFlow's own: the report's rows equal
``experimental_get_tracing_count()``; a decorated tf.function is counted by that method itself),
each retrace's argument with the values it took (before → after) and the report's fix. Built on
the one watch (:class:`~tfgraph_lab.watching.recorder.TraceRecorder`); imports no TensorFlow.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ..model.errors import TraceAssertionError, UnknownBudgetName, UsageProblem
from ..model.places import code_location, innermost_python_function
from ..model.records import Event
from ..render.overrun import overrun_text
from ..report.trace_report import TraceReport
from .budget import TraceBudget
from .recorder import TraceRecorder

__all__ = ["TraceAssertion", "assert_max_traces"]

Overrun = tuple[str, int, int]


def _is_tf_function(obj: Any) -> bool:
    return hasattr(obj, "experimental_get_tracing_count") and hasattr(obj, "python_function")


def _row_key(fn: Any) -> tuple[str, str]:
    """The report row (label, filename) of a tf.function, as the recording names it: a user's
    tf.function's label is its qualname (a label made for people, e.g. "tf.data wrapper around
    f", is another row's)."""
    qualname, filename, _ = code_location(innermost_python_function(fn.python_function))
    if qualname.endswith("<lambda>") and "." not in qualname:
        qualname = "<lambda>"
    return qualname, filename


class TraceAssertion:
    """What :func:`assert_max_traces` returns: a context manager, and a decorator (see the module)."""

    def __init__(
        self,
        fn: Any = None,
        limit: int | None = None,
        budget: TraceBudget | None = None,
        xla_budget: TraceBudget | None = None,
    ) -> None:
        if fn is not None and not _is_tf_function(fn):
            raise UsageProblem(
                f"assert_max_traces(fn, n): fn must be a tf.function, got {type(fn).__name__}; "
                "to assert on every call of a plain function, decorate it: @assert_max_traces(n=1)"
            )
        self.fn = fn
        self.limit = limit
        self.budget = budget
        self.xla_budget = xla_budget
        self._recorder: TraceRecorder | None = None
        # the decorated tf.function: TF's count when decorated, and the traces seen since (plain data)
        self._count_at_start = fn.experimental_get_tracing_count() if fn is not None else 0
        self._traced: list[Event] = []
        self._calls = 0
        if fn is not None:
            functools.update_wrapper(self, fn, updated=())

    # ------------------------------------------------------------ the context manager
    def __enter__(self) -> TraceRecorder:
        if self._recorder is not None:
            raise RuntimeError("this assert_max_traces is already watching a block")
        self._recorder = TraceRecorder(self.budget, self.xla_budget).start()
        return self._recorder

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        recorder, self._recorder = self._recorder, None
        assert recorder is not None
        recorder.stop()
        for text in recorder.report.budget_warnings:  # train_stp=1: never applied, say so
            warnings.warn(text, UnknownBudgetName, stacklevel=2)
        if exc_type is None:
            self.check(recorder.report)

    def overruns(self, report: TraceReport) -> tuple[list[Overrun], list[Overrun]]:
        """``(label, count, budget)`` over the trace limit, and over the XLA budget."""
        traces: list[Overrun] = []
        if self.fn is not None and self.limit is not None:
            key = _row_key(self.fn)
            row = next((f for f in report.functions if f.key == key), None)
            if row is not None and row.traces > self.limit:
                traces.append((row.label, row.traces, self.limit))
        elif self.budget is not None:
            traces = self.budget.overruns(report.functions)
        xla = self.xla_budget.overruns(report.functions) if self.xla_budget is not None else []
        return traces, xla

    def check(self, report: TraceReport) -> None:
        """Raise :class:`TraceAssertionError` when ``report`` breaks the limits."""
        __tracebackhide__ = True
        traces, xla = self.overruns(report)
        if traces or xla:
            raise TraceAssertionError(traces, report, xla, overrun_text(report, traces, xla))

    # ------------------------------------------------------------ the decorator
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fn is not None:
            return self._call_watched(*args, **kwargs)
        if len(args) != 1 or kwargs or not callable(args[0]):
            raise UsageProblem("assert_max_traces(...) decorates one function: @assert_max_traces(n=1)")
        target = args[0]
        if _is_tf_function(target):
            limit = self.limit if self.limit is not None else self._limit_for(target)
            return TraceAssertion(target, limit, xla_budget=self.xla_budget)
        return self._each_call_watched(target)

    def _limit_for(self, fn: Any) -> int:
        qualname, _ = _row_key(fn)
        limit = self.budget.limit_for(qualname, framework=False) if self.budget is not None else None
        return 1 if limit is None else limit

    def _each_call_watched(self, target: Callable[..., Any]) -> Callable[..., Any]:
        budget, xla_budget = self.budget, self.xla_budget

        @functools.wraps(target)
        def watched(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            with TraceAssertion(None, None, budget, xla_budget):
                return target(*args, **kwargs)

        return watched

    def _call_watched(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        fn = self.fn
        before = fn.experimental_get_tracing_count()
        self._calls += 1
        recorder = TraceRecorder(max_xla_compiles=self.xla_budget).start()
        try:
            result = fn(*args, **kwargs)
        finally:
            recorder.stop()
        if fn.experimental_get_tracing_count() == before and self.xla_budget is None:
            return result  # a cached call: nothing to read (the report is built only on a trace)
        report = recorder.report
        key = _row_key(fn)
        self._traced += [
            dataclasses.replace(e, call_number=self._calls)  # its number among all watched calls
            for e in report.events
            if e.key == key and e.traced
        ]
        count = fn.experimental_get_tracing_count() - self._count_at_start
        traces: list[Overrun] = []
        if self.limit is not None and count > self.limit:
            traces.append((key[0], count, self.limit))
        xla = self.xla_budget.overruns(report.functions) if self.xla_budget is not None else []
        if traces or xla:
            # every trace since decorating, so the argument's values read 1 → 2 → 3
            whole = dataclasses.replace(report, events=tuple(self._traced))
            raise TraceAssertionError(traces, report, xla, overrun_text(whole, traces, xla))
        return result

    def __getattr__(self, name: str) -> Any:
        fn = self.__dict__.get("fn")
        if fn is None:
            raise AttributeError(name)
        return getattr(fn, name)  # the tf.function's own methods: get_concrete_function, ...

    def __repr__(self) -> str:
        what = repr(self.fn) if self.fn is not None else self._describe()
        return f"assert_max_traces({what})"

    def _describe(self) -> str:
        parts = [] if self.budget is None else [f"traces: {self.budget.describe()}"]
        if self.xla_budget is not None:
            parts.append(f"XLA compiles: {self.xla_budget.describe()}")
        return "; ".join(parts)


def assert_max_traces(
    fn: Any = None,
    n: int | None = None,
    /,
    *,
    max_xla_compiles: TraceBudget | int | str | Mapping[str, int] | None = None,
    **per_function: int,
) -> TraceAssertion:
    """Assert that tf.functions trace at most so many times (see the module for the forms).

    ``assert_max_traces(fn, n)``: the tf.function ``fn`` (all its objects: the report's row)
    traces at most ``n`` times in the block, or, decorated, over all its calls since; ``n``
    defaults to 1. ``assert_max_traces(n)`` or ``(n=N)``: every user function at most ``N``.
    ``assert_max_traces(train_step=2)``: by qualname (or its last part). ``max_xla_compiles``:
    the same for XLA compilations. A first call that creates tf.Variables traces twice
    (TensorFlow's count), so such a function needs ``n=2``.
    """
    if "n" in per_function and n is None and not isinstance(fn, int):
        n = per_function.pop("n")
    if isinstance(fn, int) and not isinstance(fn, bool) and n is None:
        fn, n = None, fn
    xla_budget = TraceBudget.parse(max_xla_compiles, measure="xla_compiles") if max_xla_compiles is not None else None
    if fn is not None:
        if per_function:
            raise UsageProblem("assert_max_traces(fn, n) takes no FN=N limits: name one function")
        limit = 1 if n is None else TraceBudget.parse(n).default  # type: ignore[union-attr]
        return TraceAssertion(fn, limit, xla_budget=xla_budget)
    if n is None and not per_function and xla_budget is None:
        n = 1
    budget = None
    if n is not None or per_function:
        budget = TraceBudget.parse(dict(per_function)) if per_function else None
        if n is not None:
            default = TraceBudget.parse(n)
            assert default is not None
            limits = budget.per_function if budget is not None else {}
            budget = TraceBudget(default=default.default, per_function=limits)
    return TraceAssertion(None, n, budget, xla_budget)
