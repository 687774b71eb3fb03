"""One plan per function, counted over the whole watched run, each number checked under TensorFlow.

A fix is explained when its graph is traced; its numbers must still be those of every call of
the watch (the demo's lr fix said "2 graphs instead of 3" where the run needs 4 instead of 22),
one argument gets one rewrite (not "cast `x` to int32" at one retrace and "to float32" at the
next), graphs traced by earlier cells and not used count for nothing, and a change that saves no
graph for these calls is not offered. Each promised count is the count TensorFlow's own
``experimental_get_tracing_count()`` gives once the plan is applied to the same calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import tensorflow as tf

import tfgraph_lab
from tfgraph_lab.explain import fixes as plans
from tfgraph_lab.explain import trace, whole_run
from tfgraph_lab.explain.arguments import LAST_BATCH_FIX
from tfgraph_lab.explain.whole_run import WholeRun
from tfgraph_lab.model.records import FixPlan, Reason
from tfgraph_lab.model.signatures import ArgLeaf, Signature

Call = tuple[tuple[Any, ...], dict[str, Any]]


def _apply(body: Callable[..., Any], params: list[str], calls: list[Call], plan: FixPlan) -> int:
    """TensorFlow's trace count once ``plan`` is applied to ``calls`` of a fresh tf.function."""
    kwargs = dict(eval(f"dict({plan.decorator})", {"tf": tf})) if plan.decorator else {}
    fn = tf.function(body, **kwargs)
    for args, named in calls:
        bound = dict(zip(params, args), **named)
        for param, expression in plan.call:
            bound[param] = eval(expression, {"tf": tf}, {param: bound[param]})
        fn(**bound)
    return int(fn.experimental_get_tracing_count())


def _reasons(report: Any, name: str) -> list[Reason]:
    return [r for e in report.events if e.qualname.endswith(name) for r in e.reasons if r.plans]


def trap_step(x, lr, training):  # type: ignore[no-untyped-def]
    y = x * lr
    if training:
        y = y * 2.0
    return tf.reduce_sum(y)


def test_the_lr_fix_counts_every_call_of_the_run_not_those_before_it() -> None:
    # the demo's shape: lr halves every epoch, the last batch is smaller, then an eval pass
    calls: list[Call] = []
    lr = 0.1
    for _ in range(4):
        calls += [((tf.ones([4, 2]), lr, True), {}), ((tf.ones([2, 2]), lr, True), {})]
        lr *= 0.5
    calls += [((tf.ones([4, 2]), lr, False), {}), ((tf.ones([2, 2]), lr, False), {})]
    watched = tf.function(trap_step)
    with tfgraph_lab.watch() as w:
        for args, named in calls:
            watched(*args, **named)
    traced = watched.experimental_get_tracing_count()
    assert traced == 10
    params = ["x", "lr", "training"]
    reasons = _reasons(w.report, "trap_step")
    (lr_plan,) = {p for r in reasons if r.argument == "lr" for p in r.plans}
    assert lr_plan.promise.startswith("6 fewer graphs: 4 graphs instead of 10 for the calls seen")
    assert _apply(trap_step, params, calls, lr_plan) == lr_plan.graphs == 4
    # reduce_retracing relaxes the smaller batch, but lr makes the graphs: it saves none here
    relaxed = FixPlan(decorator="reduce_retracing=True")
    assert _apply(trap_step, params, calls, relaxed) == traced
    assert not any(p.decorator == "reduce_retracing=True" for r in reasons for p in r.plans)
    assert "reduce_retracing" not in str(w.report).split("suggested fix")[0]
    for plan in {p for r in reasons for p in r.plans}:
        assert _apply(trap_step, params, calls, plan) == plan.graphs, plan.code("trap_step")


def add_one(x):  # type: ignore[no-untyped-def]
    return x + 1


def test_one_argument_gets_one_rewrite_and_earlier_graphs_count_for_nothing() -> None:
    fn = tf.function(add_one)
    fn(tf.constant(1))  # an earlier cell's graphs: this one the watch uses again,
    fn(tf.constant([1, 2]))  # this one not (lesson 02's add_one)
    calls: list[Call] = [((v,), {}) for v in (tf.constant(5), tf.constant(5.0), 3, 3, 4)]
    with tfgraph_lab.watch() as w:
        for args, _ in calls:
            fn(*args)
    reasons = _reasons(w.report, "add_one")
    assert {r.code for r in reasons} == {"dtype-changed", "type-changed", "python-value-changed"}
    plans = {p for r in reasons for p in r.plans if p.call}
    assert {p.call for p in plans} == {(("x", "tf.cast(x, tf.float32)"),)}, plans
    (plan,) = plans
    assert plan.promise.startswith("3 fewer graphs: 1 graph instead of 4 for the calls seen")
    assert _apply(add_one, ["x"], calls, plan) == plan.graphs == 1
    assert _apply(add_one, ["x"], calls, FixPlan()) == 4  # the 4 the plan compares with
    text = str(w.report)
    assert "tf.int32" not in (w.report.function("add_one").suggestion or "")
    # said once, in the plan above the traces; each reason asking for it names it
    assert text.count("tf.cast(x, tf.float32)") == 1, text
    assert text.count("the change shown at fix 1") == 3  # the dtype, the kind and the value: one change
    assert w.report._repr_html_().count("the change shown at fix 1") == 3


def test_a_flag_fix_that_saves_nothing_here_says_so() -> None:
    a, b = ArgLeaf("lr", "python", "float", value="0.1"), ArgLeaf("lr", "python", "float", value="0.05")
    on, off = (
        ArgLeaf("training", "python", "bool", value="True"),
        ArgLeaf("training", "python", "bool", value="False"),
    )
    history = [Signature((a, on), "a"), Signature((b, off), "b")]
    plan = FixPlan(call=(("training", "tf.constant(training)"),), promise="old")
    reason = Reason(
        "python-value-changed", "training", fix=f"share one graph: {plan.text('f')}", plans=(plan,)
    )
    counted = WholeRun(history, "f").reason(reason)
    # a change that saves no graph is not offered as a fix (issue 32.3): the fix says so instead
    assert counted.plans == ()
    assert counted.fix == (
        "share one graph; passing `training` as `tf.constant(training)` at every call of f would save "
        "no graph for these calls (other arguments make them)"
    )


def scaled(x, lr):  # type: ignore[no-untyped-def]
    return tf.reduce_sum(x) * lr


def test_reduce_retracing_promises_what_it_saves_over_the_run_with_other_causes_left() -> None:
    calls: list[Call] = [((tf.ones([n, 2]), lr), {}) for lr in (0.1, 0.2) for n in (4, 3, 2)]
    watched = tf.function(scaled)
    with tfgraph_lab.watch() as w:
        for args, named in calls:
            watched(*args, **named)
    assert watched.experimental_get_tracing_count() == 6
    plans = {p for r in _reasons(w.report, "scaled") for p in r.plans}
    (relaxed,) = [p for p in plans if p.decorator == "reduce_retracing=True"]
    assert relaxed.promise.startswith("2 fewer graphs: 4 graphs instead of 6 for the calls seen")
    for plan in plans:  # reduce_retracing, the input_signature, lr as a tensor
        assert _apply(scaled, ["x", "lr"], calls, plan) == plan.graphs, plan.code("scaled")
    assert len(plans) == 3


def test_a_loops_reasons_are_counted_over_the_run_once_per_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop of 60 retraces on a Python float: each reason gets the plan a WholeRun built for
    it alone, and the graphs a change leaves are counted once for the run (not once per reason:
    O(n²), seconds for 800 retraces, TF 2.21)."""
    x = ArgLeaf("x", "tensor", "Tensor", "float32", (2,))
    graphs = [
        Signature((x, ArgLeaf("s", "python", "float", value=f"{i}.5")), f"x, s={i}.5") for i in range(60)
    ]
    reasons = [r for i in range(1, 60) for r in trace.explain_trace(graphs[i], graphs[:i], qualname="scale")]
    counted: list[FixPlan] = []

    def call_plan(*args: Any, **kwargs: Any) -> FixPlan:
        counted.append(plans.call_plan(*args, **kwargs))
        return counted[-1]

    monkeypatch.setattr(whole_run, "call_plan", call_plan)
    together = WholeRun(graphs, "scale").reasons(reasons)
    assert len(counted) == 1
    assert together == tuple(WholeRun(graphs, "scale").reason(r) for r in reasons)
    assert "59 fewer graphs: 1 graph instead of 60 for the calls seen" in together[-1].fix


def _two_objects(tmp_path: Any, **options: Any) -> int:
    """Case 37: one object prepared with get_concrete_function and saved, another called on 5
    lengths; TF's count over both objects."""

    class Foo(tf.train.Checkpoint):
        @tf.function(**options)
        def __call__(self, x):  # type: ignore[no-untyped-def]
            return x

    flexible = Foo()
    flexible.__call__.get_concrete_function(tf.TensorSpec([None], tf.int32))
    tf.saved_model.save(flexible, str(tmp_path / f"saved{len(options)}"))
    fixed = Foo()
    for n in range(1, 6):
        fixed(tf.range(n))
    return int(flexible.__call__.experimental_get_tracing_count() + fixed.__call__.experimental_get_tracing_count())


@pytest.mark.slow
def test_each_function_object_and_calling_context_keeps_its_own_graphs(tmp_path: Any) -> None:
    """A fix is counted per function object and calling context (SavedModel saving is one):
    over the two objects of case 37 the report promised "1 graph instead of 7" for both the
    input_signature and reduce_retracing; TF 2.21 keeps 3 and 4."""
    with tfgraph_lab.watch() as w:
        before = _two_objects(tmp_path)
    plan = w.report.plan("Foo.__call__")
    assert plan.before == before == 7, plan
    promised = {fix.plan.decorator.split("=")[0]: fix.graphs for fix in plan.fixes}
    measured = {
        "input_signature": _two_objects(tmp_path, input_signature=[tf.TensorSpec([None], tf.int32)]),
        "reduce_retracing": _two_objects(tmp_path, reduce_retracing=True),
    }
    assert promised == measured == {"input_signature": 3, "reduce_retracing": 4}, (promised, measured)


def test_reduce_retracing_on_a_last_batch_saves_none_by_its_own_trace_not_other_arguments() -> None:
    """A custom Keras loop, batches 32, 32, 32, 4 with ``training`` passed on to Dropout: the
    report said reduce_retracing "would save no graph (other arguments make them)" and suggested
    "(these calls differ in more than shapes)", where only the shapes differ. TF 2.21 keeps 2
    graphs under reduce_retracing (the second shape is traced, relaxed), 1 on full batches."""
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dropout(0.3), keras.layers.Dense(1)])
    xs = tf.ones((100, 8))

    def body(x, training):  # type: ignore[no-untyped-def]
        return tf.reduce_sum(model(x, training=training))

    step = tf.function(body)
    with tfgraph_lab.watch() as w:
        for i in range(0, 100, 32):
            step(xs[i : i + 32], True)
    text, suggestion = str(w.report), w.report.function("body").suggestion or ""
    assert "other arguments make them" not in text and "differ in more than shapes" not in text, text
    first, *why = suggestion.splitlines()
    assert first == f"# call body with tensors of one shape: {LAST_BATCH_FIX}"
    assert why[0] == "# no input_signature: it would make `training` a tensor, and Keras 3's layers need a Python bool"
    assert why[-1] == f"# @tf.function(reduce_retracing=True) would save no graph: {plans.RELAXING_TRACES}"
    (shape,) = {r.fix for e in w.report.events for r in e.reasons if r.code == "shape-changed"}
    assert shape.endswith(f"would save no graph for these calls ({plans.RELAXING_TRACES})"), shape

    relaxed = tf.function(body, reduce_retracing=True)  # as TensorFlow counts it
    for i in range(0, 100, 32):
        relaxed(xs[i : i + 32], True)
    assert relaxed.experimental_get_tracing_count() == 2
    full = tf.function(body)  # full batches only
    for i in range(0, 96, 32):
        full(xs[i : i + 32], True)
    assert full.experimental_get_tracing_count() == 1


def test_shapes_that_change_with_a_python_value_are_made_by_other_arguments() -> None:
    """Each new shape comes with a new Python value: reduce_retracing saves nothing because the
    value makes the graphs (TF 2.21: 3 graphs with it, as without)."""
    history = [
        Signature((ArgLeaf("x", "tensor", "Tensor", "float32", (n,)), ArgLeaf("n", "python", "int", value=str(n))), str(n))
        for n in (1, 2, 3)
    ]
    assert plans.shape_free_graphs(history) == 3 and not plans.relaxing_keeps_shape_graphs(history)
    lone = [Signature((ArgLeaf("x", "tensor", "Tensor", "float32", (n, 8)),), str(n)) for n in (32, 4)]
    assert plans.shape_free_graphs(lone) == 1 and plans.relaxing_keeps_shape_graphs(lone)
    fn = tf.function(lambda x, n: x * n, reduce_retracing=True)
    for n in (1, 2, 3):
        fn(tf.ones([n]), n)
    assert fn.experimental_get_tracing_count() == 3


def test_a_call_site_rewrite_is_counted_under_the_reduce_retracing_the_function_has() -> None:
    """``@tf.function(reduce_retracing=True)`` on ``f(tf.ones([n]), n)``: with `n` a tensor the
    shapes relax, 2 graphs instead of 3 (TF 2.21). Counted as distinct signatures, the rewrite
    "would save no graph (other arguments make them)"."""

    def body(x, n):  # type: ignore[no-untyped-def]
        return tf.reduce_sum(x) * tf.cast(n, tf.float32)

    fn = tf.function(body, reduce_retracing=True)
    with tfgraph_lab.watch() as w:
        for n in (1, 2, 3):
            fn(tf.ones([n]), n)
    plan = next(p.plan for p in w.report.plan(w.report.function("body")).fixes if p.plan.call)
    assert plan.call == (("n", "tf.constant(n)"),) and plan.graphs == 2, plan
    assert "other arguments make them" not in str(w.report)
    fixed = tf.function(body, reduce_retracing=True)
    for n in (1, 2, 3):
        fixed(tf.ones([n]), tf.constant(n))
    assert fixed.experimental_get_tracing_count() == plan.graphs


def test_a_plan_that_no_longer_saves_a_graph_is_never_left_on_offer() -> None:
    """Case 35 (TF's guide): a graph for (None,) from get_concrete_function, then (2, 2), then a
    string. The rank's fix kept ``@tf.function(reduce_retracing=True)  # → no fewer graphs``
    (its text was cut with the input_signature's before it was dropped). TF 2.21 keeps 3 graphs
    under reduce_retracing, as without."""

    def body(a):  # type: ignore[no-untyped-def]
        return a + a

    fn = tf.function(body)
    with tfgraph_lab.watch() as w:
        fn.get_concrete_function(tf.TensorSpec([None], tf.float32))
        fn(tf.ones([3]))
        fn(tf.ones([2, 2]))
        fn(tf.constant("a"))
    (rank,) = [r for e in w.report.events for r in e.reasons if r.code == "rank-changed"]
    assert rank.plans == () and rank.fix == (
        "pass tensors of one rank (reshape first); @tf.function(reduce_retracing=True) would save no "
        f"graph for these calls ({plans.RELAXING_TRACES})"
    )
    assert "no fewer graphs" not in str(w.report)
    relaxed = tf.function(body, reduce_retracing=True)
    relaxed.get_concrete_function(tf.TensorSpec([None], tf.float32))
    for a in (tf.ones([3]), tf.ones([2, 2]), tf.constant("a")):
        relaxed(a)
    assert relaxed.experimental_get_tracing_count() == 3
