"""The recorder against TensorFlow's own counts, over every pattern it must see."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.watching.recorder import is_patched  # noqa: E402


def codes(report: Any, qualname: str) -> list[str]:
    return [r.code for e in report.events if e.qualname.endswith(qualname) for r in e.reasons]


def traced_by_tf(fn: Any, run: Callable[[], None]) -> tuple[int, Any]:
    before = fn.experimental_get_tracing_count()
    with tfgraph_lab.watch() as w:
        run()
    return fn.experimental_get_tracing_count() - before, w.report


def test_python_scalar_shapes_and_dtypes_match_tf() -> None:
    @tf.function
    def step(x, training):
        return x * 2 if training else x

    def run() -> None:
        for _ in range(3):
            step(tf.ones([32, 4]), True)
        step(tf.ones([32, 4]), False)
        step(tf.ones([7, 4]), False)
        step(tf.ones([7, 4], tf.int32), False)
        step(tf.ones([7]), False)

    expected, report = traced_by_tf(step, run)
    fn = report.function("step")
    assert fn.traces == expected == 5
    assert fn.calls == 7
    assert fn.retraces == 4
    assert sum(g.hits for g in fn.graphs) == 7
    assert [g.hits for g in fn.graphs] == [3, 1, 1, 1, 1]
    assert codes(report, "step") == [
        "first-trace",
        "python-value-changed",
        "shape-changed",
        "dtype-changed",
        "rank-changed",
    ]


def test_function_defined_before_the_watch_and_graphs_from_before() -> None:
    @tf.function
    def f(x):
        return x + 1

    f(tf.constant(1.0))
    expected, report = traced_by_tf(f, lambda: [f(tf.constant(2.0)), f(tf.ones([2]))])
    fn = report.function("f")
    assert fn.traces == expected == 1
    assert [(g.traced_in_watch, g.hits) for g in fn.graphs] == [(False, 1), (True, 1)]


class Counter(tf.Module):
    """Creates its variable on the first call (each instance has its own tf.function)."""

    def __init__(self) -> None:
        self.v: Any = None

    @tf.function
    def __call__(self, x):
        if self.v is None:
            self.v = tf.Variable(0.0)
        return self.v.assign_add(x)


def test_variable_creation_traces_twice_and_failed_trace_is_counted() -> None:
    @tf.function
    def bad(x):
        return tf.Variable(x)

    c = Counter()

    def run() -> None:
        c(tf.constant(1.0))
        c(tf.constant(1.0))
        with pytest.raises(ValueError):
            bad(tf.constant(1.0))

    with tfgraph_lab.watch() as w:
        run()
    report = w.report
    assert report.function("Counter.__call__").traces == c.__call__.experimental_get_tracing_count() == 2
    assert codes(report, "Counter.__call__") == ["first-trace", "variable-creation"]
    assert report.function("Counter.__call__").retraces == 0
    fn_bad = report.function("bad")
    assert fn_bad.traces == bad.experimental_get_tracing_count() == 1
    assert fn_bad.failed_traces == 1
    failed = [e for e in report.events if e.qualname.endswith(".bad")]
    assert failed[0].failed_trace and "ValueError" in (failed[0].error or "")


def test_methods_one_function_per_instance() -> None:
    class M:
        @tf.function
        def double(self, a):
            return a + a

    m1, m2 = M(), M()

    def run() -> None:
        m1.double(tf.constant(1))
        m1.double(tf.constant(1.0))
        m2.double(tf.constant(1))

    with tfgraph_lab.watch() as w:
        run()
    fn = w.report.function("M.double")
    assert (
        fn.traces
        == m1.double.experimental_get_tracing_count() + m2.double.experimental_get_tracing_count()
        == 3
    )
    assert fn.function_objects == 2
    assert codes(w.report, "M.double") == ["first-trace", "dtype-changed", "first-trace"]


def test_new_function_object_in_a_loop() -> None:
    def g():
        return tf.constant(1)

    objs = []
    with tfgraph_lab.watch() as w:
        for _ in range(4):
            fn = tf.function(g)
            fn()
            objs.append(fn)
    assert w.report.function("test_new_function_object_in_a_loop.<locals>.g").traces == 4
    assert sum(o.experimental_get_tracing_count() for o in objs) == 4
    assert codes(w.report, "g").count("new-function-object") >= 3


def test_get_concrete_function_and_tf_data_map_are_attributed() -> None:
    @tf.function
    def double(a):
        return a + a

    def scale(x):
        return x * 3

    with tfgraph_lab.watch() as w:
        double.get_concrete_function(tf.TensorSpec([None]))
        double(tf.ones([3]))
        ds = tf.data.Dataset.range(4).map(scale)
        list(ds)
    fn = w.report.function("double")
    assert fn.traces == double.experimental_get_tracing_count() == 1
    assert fn.graphs[0].hits == 1
    via = {e.via for e in w.report.events if e.qualname.endswith("scale")}
    assert via == {"tf.data"}
    assert not w.report.function("scale").framework


def test_threads_count_each_trace_once() -> None:
    @tf.function
    def stateless(x):
        return x * 2.0

    @tf.function
    def per_object(x):
        del x
        return tf.constant(1.0)

    objects = [object() for _ in range(12)]

    def run() -> None:
        threads = [
            threading.Thread(target=lambda: [stateless(tf.constant(1.0)) for _ in range(10)])
            for _ in range(8)
        ]
        threads += [threading.Thread(target=per_object, args=(o,)) for o in objects]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    with tfgraph_lab.watch() as w:
        run()
    assert w.report.function("stateless").traces == stateless.experimental_get_tracing_count() == 1
    assert w.report.function("stateless").calls == 80
    assert w.report.function("per_object").traces == per_object.experimental_get_tracing_count() == 12
    assert set(codes(w.report, "per_object")) == {"first-trace", "object-changed"}


def test_recursion_and_nested_functions() -> None:
    @tf.function
    def recursive(n):
        return recursive(n - 1) + 1 if n > 0 else tf.constant(0)

    @tf.function
    def inner(x):
        return x * 2

    @tf.function
    def outer(x):
        return inner(x) + 1

    with tfgraph_lab.watch() as w:
        recursive(4)
        outer(tf.constant(1.0))
        outer(tf.constant(2.0))
    assert w.report.function("recursive").traces == recursive.experimental_get_tracing_count() == 5
    assert w.report.function("inner").traces == inner.experimental_get_tracing_count() == 1
    assert w.report.function("outer").traces == 1
    assert w.report.function("outer").calls == 2


def test_function_garbage_collected_during_the_watch() -> None:
    with tfgraph_lab.watch() as w:
        for _ in range(3):
            fn = tf.function(lambda x: x + 1)
            fn(tf.constant(1))
            del fn
            gc.collect()
    assert w.report.function("<lambda>").traces == 3
    assert w.report.function("<lambda>").function_objects == 3


def test_run_functions_eagerly_is_reported_not_hidden() -> None:
    @tf.function
    def f(n):
        return tf.constant(n)

    tf.config.run_functions_eagerly(True)
    try:
        with tfgraph_lab.watch() as w:
            f(1)
            f(2)
    finally:
        tf.config.run_functions_eagerly(False)
    assert w.report.eager_calls == 2
    assert w.report.function("f").traces == 0
    assert "run_functions_eagerly" in str(w.report)


def test_restored_savedmodel_function(tmp_path: Any) -> None:
    class Foo(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None])])
        def __call__(self, x):
            return x * 2

    tf.saved_model.save(Foo(), str(tmp_path))
    restored = tf.saved_model.load(str(tmp_path))
    before = restored.__call__.experimental_get_tracing_count()
    with tfgraph_lab.watch() as w:
        for n in (1, 2, 3):
            restored(tf.ones([n]))
    traced = restored.__call__.experimental_get_tracing_count() - before
    restored_fns = [f for f in w.report.functions if f.label.startswith("restored ")]
    assert sum(f.traces for f in restored_fns) == traced
    # the label says it is restored; the qualname is the saved function's own name
    assert {f.label for f in restored_fns} == {"restored __call__"} and restored_fns[0].qualname == "__call__"
    assert not restored_fns[0].framework


def test_keras_fit_shows_the_models_steps_and_hides_keras_helpers() -> None:
    """A Keras user's fit under any watch (the magic, run, watch()) shows the model's train step
    and loop as rows, counted as TF counts them; Keras's tf.data helpers stay hidden. Was an
    empty report ("0 functions", everything hidden as TensorFlow/Keras's own)."""
    import numpy as np

    from tfgraph_lab.adapter.keras_steps import step_functions

    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.random.rand(10, 3).astype("float32")
    y = np.random.rand(10, 1).astype("float32")
    with tfgraph_lab.watch() as w:
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    steps = step_functions(model, "train")
    parts = {part for _, part in steps}
    assert parts == {"step", "loop"} or parts == {"step"}  # Keras 3, or Keras 2's one train_function
    assert w.report.traces == sum(fn.experimental_get_tracing_count() for fn, _ in steps) >= 1
    text = str(w.report)
    assert all(f"{model.name} · fit · train {part}" in text for part in parts)
    assert "hidden" in text  # the tf.data helpers
    assert w.report.totals("all").traces > w.report.traces
    shown = w.report.with_options(show_framework=True)
    assert shown.traces == w.report.traces  # a rendering option: the numbers stay the user's
    assert shown.shown_totals.traces == w.report.totals("all").traces
    assert f"{shown.shown_totals.traces} traces" in shown.headline()


def test_exception_and_keyboard_interrupt_leave_tf_clean() -> None:
    @tf.function
    def f(x):
        return x

    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(exc)), tfgraph_lab.watch() as w:
            f(tf.constant(1))
            raise exc
        assert not is_patched()
        assert w.report.function("f").calls == 1


def test_nested_watches_each_see_their_own_slice() -> None:
    @tf.function
    def f(x):
        return x

    with tfgraph_lab.watch() as outer:
        f(tf.constant(1))
        with tfgraph_lab.watch() as inner:
            f(tf.constant(1.0))
        assert is_patched()
        f(tf.constant(2.0))
    assert not is_patched()
    assert outer.report.function("f").calls == 3
    assert outer.report.function("f").traces == 2
    assert inner.report.function("f").calls == 1
    assert inner.report.function("f").traces == 1


def test_budget_raises_after_the_block() -> None:
    @tf.function
    def f(n):
        return tf.constant(n)

    with pytest.raises(tfgraph_lab.TraceBudgetExceeded) as info, tfgraph_lab.watch(max_traces="f=1"):
        f(1)
        f(2)
    ((name, traces, budget),) = info.value.overruns
    assert name.endswith(".f") and (traces, budget) == (2, 1)


def test_no_strong_references_to_functions_or_arguments() -> None:
    import weakref

    class Arg:
        pass

    @tf.function
    def f(a):
        del a
        return tf.constant(1)

    arg = Arg()
    with tfgraph_lab.watch() as w:
        f(arg)
    ref_fn, ref_arg = weakref.ref(f), weakref.ref(arg)
    del f, arg
    gc.collect()
    assert ref_arg() is None
    assert ref_fn() is None
    assert w.report.traces == 1


@pytest.mark.usefixtures("small_call_log")
def test_long_watches_fold_cache_hits_but_keep_counts_exact() -> None:
    @tf.function
    def f(x):
        return x + 1

    with tfgraph_lab.watch() as outer:
        for i in range(400):
            f(tf.constant(1.0))
            if i == 200:
                f(tf.ones([2]))  # a retrace in the middle of folded hits stays an event
        with tfgraph_lab.watch() as inner:
            for _ in range(30):
                f(tf.constant(1.0))
    report = outer.report
    fn = report.function("f")
    assert fn.calls == 431 and fn.traces == f.experimental_get_tracing_count() == 2
    assert sum(g.hits for g in fn.graphs) == 431
    assert report.summarised_calls > 0
    assert len(report.events) + report.summarised_calls == 431
    assert [e.index for e in report.events if e.traced] == [0, 201]
    assert "cached calls summarised" in str(report)
    assert inner.report.function("f").calls == 30
    assert json_roundtrip(report).summarised_calls == report.summarised_calls


def json_roundtrip(report: Any) -> Any:
    from tfgraph_lab.report import TraceReport

    return TraceReport.from_json(report.to_json())


# --- Which graph a cache hit ran, with and without the ConcreteFunction._call_flat hook --------
# The hub infers the graph while every watched function has one graph that a hit can run, and
# installs the _call_flat hook (which reports the graph that ran) only when one has two. Each
# scenario below runs twice on fresh function objects: as the hub chooses, and with the hook
# forced from the start; the per-graph hits and eager calls must be the same.


def _call_flat_hooked() -> bool:
    from tfgraph_lab.adapter import handles

    cls = handles().concrete_function_class
    return bool(getattr(cls.__dict__["_call_flat"], "_tfgraph_lab_hook", False))


def _hits(report: Any) -> dict[str, Any]:
    return {
        f.qualname: (f.calls, f.traces, [g.hits for g in f.graphs], f.eager_calls)
        for f in report.functions
        if not f.framework
    }


def _scenario_shapes() -> Callable[[], None]:
    @tf.function
    def step(x, training):
        return x * 2 if training else x

    def run() -> None:
        for n in (32, 32, 7, 32, 7, 7):
            step(tf.ones([n, 4]), True)
        step(tf.ones([7, 4]), False)

    return run


def _scenario_variable_created_on_first_call() -> Callable[[], None]:
    counter = Counter()

    def run() -> None:
        for _ in range(4):
            counter(tf.constant(1.0))

    return run


def _scenario_graphs_from_before_the_watch() -> Callable[[], None]:
    v: list[Any] = []

    @tf.function
    def make(x):
        if not v:
            v.append(tf.Variable(1.0))
        return v[0] * x

    @tf.function
    def two(x):
        return x + 1

    make(tf.constant(1.0))  # both graphs (with and without variable creation) exist already
    two(tf.constant(1.0))
    two(tf.ones([2]))

    def run() -> None:
        for _ in range(3):
            make(tf.constant(2.0))
            two(tf.ones([2]))
        two(tf.constant(3.0))

    return run


def _scenario_nested_and_signature() -> Callable[[], None]:
    @tf.function(input_signature=[tf.TensorSpec([None])])
    def inner(x):
        return x * 2

    @tf.function
    def outer(x):
        return inner(x) + 1

    def run() -> None:
        for n in (1, 2, 3):
            inner(tf.ones([n]))
            outer(tf.ones([n]))

    return run


def _scenario_eager_toggle() -> Callable[[], None]:
    @tf.function
    def f(x):
        return x + 1

    f(tf.constant(1.0))

    def run() -> None:
        f(tf.constant(1.0))
        tf.config.run_functions_eagerly(True)
        try:
            f(tf.constant(1.0))
            f(tf.constant(2.0))
        finally:
            tf.config.run_functions_eagerly(False)
        f(tf.constant(1.0))

    return run


SCENARIOS = {
    "shapes": _scenario_shapes,
    "variable-created-on-first-call": _scenario_variable_created_on_first_call,
    "graphs-from-before-the-watch": _scenario_graphs_from_before_the_watch,
    "nested-and-input-signature": _scenario_nested_and_signature,
    "eager-toggle": _scenario_eager_toggle,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_inferred_hits_equal_the_hits_the_call_flat_hook_reports(name: str) -> None:
    from tfgraph_lab.recording.hub import HUB

    run = SCENARIOS[name]()
    with tfgraph_lab.watch() as inferred:
        run()
    run = SCENARIOS[name]()
    with tfgraph_lab.watch() as hooked:
        HUB.need_call_flat_hook()
        assert _call_flat_hooked()
        run()
    assert _hits(inferred.report) == _hits(hooked.report)
    assert all(
        sum(g.hits for g in f.graphs) + f.eager_calls == f.calls
        for f in inferred.report.functions
        if not f.framework
    ), _hits(inferred.report)


def test_call_flat_hook_only_once_a_function_has_two_graphs_a_hit_could_run() -> None:
    @tf.function
    def f(x):
        return x + 1

    with tfgraph_lab.watch() as w:
        for _ in range(3):
            f(tf.constant(1.0))
        assert not _call_flat_hooked()  # one graph: every hit ran it
        _scenario_variable_created_on_first_call()()
        assert not _call_flat_hooked()  # two graphs, but hits only run the one without creation
        f(tf.ones([2]))
        assert _call_flat_hooked()  # now a hit of f could run either graph
        f(tf.constant(2.0))
        f(tf.ones([2]))
    assert not is_patched()
    assert [g.hits for g in w.report.function("f").graphs] == [4, 2]


def test_calls_run_eagerly_are_not_counted_as_hits_of_the_one_graph() -> None:
    run = _scenario_eager_toggle()
    with tfgraph_lab.watch() as w:
        run()
    fn = w.report.function("f")
    assert (fn.calls, [g.hits for g in fn.graphs], fn.eager_calls) == (4, [2], 2)
