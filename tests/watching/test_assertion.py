"""``tfgraph_lab.assert_max_traces``: a context manager and a decorator that fail with the function,
TensorFlow's own count, the argument responsible (the values it took) and the fix."""

from __future__ import annotations

import pytest

import tfgraph_lab
from tfgraph_lab.model.errors import TraceAssertionError, TraceBudgetExceeded, UnknownBudgetName, UsageProblem

tf = pytest.importorskip("tensorflow")


def _step_function():  # type: ignore[no-untyped-def]
    @tf.function
    def train_step(x, step):  # type: ignore[no-untyped-def]
        return x * step

    return train_step


def test_context_manager_names_function_count_argument_values_and_fix(fresh_recording: None) -> None:
    train_step = _step_function()
    x = tf.ones([2])
    with pytest.raises(TraceAssertionError) as info, tfgraph_lab.assert_max_traces(train_step, 1):
        for step in range(3):
            train_step(x, step)
    error = info.value
    assert isinstance(error, AssertionError) and isinstance(error, TraceBudgetExceeded)
    tf_count = train_step.experimental_get_tracing_count()
    assert tf_count == 3
    assert error.overruns == [("_step_function.<locals>.train_step", tf_count, 1)]
    text = str(error)
    assert f"train_step traced {tf_count}× (budget 1)" in text
    assert "python-value-changed  step: 0 → 1" in text
    assert "step: 0 → 1 → 2" in text  # the argument's values, trace after trace
    assert "tf.constant(step)" in text  # the report's fix


def test_context_manager_within_the_limit_yields_the_watch(fresh_recording: None) -> None:
    train_step = _step_function()
    with tfgraph_lab.assert_max_traces(train_step, 1) as w:
        for _ in range(3):
            train_step(tf.ones([2]), tf.constant(2.0))
    assert w.report.function("train_step").calls == 3
    assert train_step.experimental_get_tracing_count() == 1


def test_counts_only_the_named_function(fresh_recording: None) -> None:
    train_step = _step_function()
    with tfgraph_lab.assert_max_traces(n=2):
        for step in range(2):
            train_step(tf.ones([2]), step)

    @tf.function
    def lonely(x):  # type: ignore[no-untyped-def]
        return x

    with tfgraph_lab.assert_max_traces(lonely, 1):  # train_step's 2 traces are not lonely's
        for step in range(2):
            train_step(tf.ones([2]), step + 5)
        lonely(tf.ones([1]))


def test_by_name_and_every_function(fresh_recording: None) -> None:
    train_step = _step_function()
    by_name = pytest.raises(TraceAssertionError, match=r"train_step traced 2× \(budget 1\)")
    with by_name, tfgraph_lab.assert_max_traces(train_step=1):
        train_step(tf.ones([2]), 1)
        train_step(tf.ones([2]), 2)
    every = pytest.raises(TraceAssertionError, match=r"traced 2× \(budget 1\)")
    with every, tfgraph_lab.assert_max_traces(1):
        train_step(tf.ones([3]), 1)
        train_step(tf.ones([3]), 2)


def test_an_unknown_name_warns_as_the_budget_does(fresh_recording: None) -> None:
    train_step = _step_function()
    with pytest.warns(UnknownBudgetName, match="train_stp"), tfgraph_lab.assert_max_traces(train_stp=1):
        train_step(tf.ones([2]), 1)


def test_decorator_over_a_tf_function_counts_every_call_since(fresh_recording: None) -> None:
    @tfgraph_lab.assert_max_traces(n=2)
    @tf.function
    def grow(x):  # type: ignore[no-untyped-def]
        return x + 1

    grow(tf.ones([2]))
    grow(tf.ones([2]))  # cached
    grow(tf.ones([3]))  # second trace: still within 2
    assert grow.experimental_get_tracing_count() == 2  # the tf.function's own methods pass through
    assert grow.get_concrete_function(tf.TensorSpec([3])) is not None
    with pytest.raises(TraceAssertionError) as info:
        grow(tf.ones([4]))
    assert grow.experimental_get_tracing_count() == 3
    text = str(info.value)
    assert "grow traced 3× (budget 2)" in text
    assert "call #3" in text and "call #4" in text  # numbered over every call, not per watch
    assert "x: (2,) → (3,) → (4,)" in text
    assert "input_signature" in text
    assert grow.__name__ == "grow"


def test_decorator_on_a_plain_function_watches_each_call(fresh_recording: None) -> None:
    train_step = _step_function()

    @tfgraph_lab.assert_max_traces(train_step=1)
    def run(values: list[int]) -> None:
        for step in values:
            train_step(tf.ones([2]), step)

    run([1, 1])
    run([2])  # a new watch per call: one more trace, within 1
    with pytest.raises(TraceAssertionError, match="step: 3 → 4"):
        run([3, 4])


def test_usage_problems() -> None:
    with pytest.raises(UsageProblem, match=r"must be a tf\.function"):
        tfgraph_lab.assert_max_traces(print, 1)
    with pytest.raises(UsageProblem):
        tfgraph_lab.assert_max_traces(n=-1)
