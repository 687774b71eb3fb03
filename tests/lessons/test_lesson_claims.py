"""The facts the lessons teach, checked against the installed TensorFlow (measured on 2.21).

Each test holds one sentence of a lesson (named in its docstring); when a TF release changes
the behaviour, the test names the lesson text to revise. Trace counts come from TF's own
``experimental_get_tracing_count()``.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")


#: tf.keras 2.15, the Keras the oldest supported TF (2.15) bundles: some lesson counts are
#: Keras 3's, and the lessons say so; these tests check the Keras 2 count the lesson states.
KERAS_2 = keras.__version__.startswith("2.")


def count(fn: Any) -> int:
    return int(fn.experimental_get_tracing_count())


ROOT = Path(__file__).resolve().parents[2]


def lesson_text(name: str) -> str:
    """The cells of lesson ``name`` as the build writes them (lessons/_build), joined."""
    build = str(ROOT / "lessons" / "_build")
    if build not in sys.path:
        sys.path.insert(0, build)
    from build_lessons import LESSONS

    return "\n".join(cell.source for cell in LESSONS[name]())


def page(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def tf_warnings(run: Any) -> list[str]:
    """The opening words of TF's retracing warnings logged while ``run()`` runs."""
    from unittest import mock

    pf = pytest.importorskip("tensorflow.python.eager.polymorphic_function.polymorphic_function")
    with mock.patch.object(pf.logging, "warning") as warning:
        run()
    found = [str(call.args[0]).split(" triggered")[0] for call in warning.call_args_list]
    return [text.split(" calls to")[0] for text in found if " out of the last " in text]


@dataclasses.dataclass(frozen=True)
class Frozen:
    scale: float


@pytest.mark.slow
def test_frozen_dataclass_is_keyed_by_value_while_alive() -> None:
    """06: an equal new object reuses the graph while the first is alive; a new value retraces."""

    @tf.function
    def apply(x: Any, cfg: Any) -> Any:
        return x * cfg.scale

    x = tf.ones([3])
    first = Frozen(2.0)
    apply(x, first)
    apply(x, Frozen(2.0))
    assert count(apply) == 1
    apply(x, Frozen(3.0))
    assert count(apply) == 2
    del first
    gc.collect()
    apply(x, Frozen(2.0))  # the entry died with its object: traced again
    assert count(apply) == 3


def test_last_batch_is_one_extra_graph_in_total() -> None:
    """04: the last batch's graph stays cached across epochs."""
    data = tf.data.Dataset.from_tensor_slices(tf.ones([100, 4])).batch(32)

    @tf.function
    def encode(batch: Any) -> Any:
        return tf.reduce_sum(batch)

    for _ in range(3):
        for batch in data:
            encode(batch)
    assert count(encode) == 2


def test_reduce_retracing_does_not_generalise_dtypes() -> None:
    """00/04: reduce_retracing=True is no fix for a dtype change."""

    @tf.function(reduce_retracing=True)
    def twice(v: Any) -> Any:
        return v * 2

    for dtype in (tf.float32, tf.float64, tf.int32, tf.float16):
        twice(tf.ones([4], dtype))
    assert count(twice) == 4


def test_first_tensor_after_python_floats_traces_once() -> None:
    """07: the first tensor call after Python floats traces (type change); later values do not."""

    @tf.function
    def loss_at(x: Any, t: Any) -> Any:
        return tf.reduce_mean(x / t)

    x = tf.ones([3])
    for t in (1.0, 2.0, 3.0):
        loss_at(x, t)
    loss_at(x, tf.constant(1.0))
    assert count(loss_at) == 4
    for t in (2.0, 3.0):
        loss_at(x, tf.constant(t))
    assert count(loss_at) == 4


def test_variable_argument_key_is_shape_dtype_trainable_and_aliasing() -> None:
    """05: ResourceVariable.__tf_tracing_type__ → VariableSpec(shape, dtype, trainable, alias_id)."""

    @tf.function
    def add(a: Any, b: Any) -> Any:
        return a + b

    v1, v2 = tf.Variable(1.0), tf.Variable(2.0)
    add(v1, v2)
    add(v2, v1)
    assert count(add) == 1
    add(v1, v1)
    assert count(add) == 2
    add(tf.Variable(3.0, trainable=False), v2)
    assert count(add) == 3
    v1.assign(10.0)
    add(v1, v2)
    assert count(add) == 3


def test_the_report_names_the_variable_field_that_changed() -> None:
    """05 (issue 34.1): the non-trainable Variable's trace is `variable-changed` on `a`, its
    trainable flag named (it was `context-changed`), and the graph rows show TF's own
    VariableSpec fields, so the rows of graphs #0 and #2 differ where TF's keys differ."""
    import tfgraph_lab

    @tf.function
    def add(a: Any, b: Any) -> Any:
        return a + b

    v1, v2 = tf.Variable(1.0), tf.Variable(2.0)
    with tfgraph_lab.watch() as w:
        add(v1, v2)
        add(v2, v1)
        add(v1, v1)
        add(tf.Variable(3.0, trainable=False), v2)
    assert count(add) == 3
    data = w.report.to_dict()
    reasons = [e["reasons"] for e in data["events"] if e["reasons"]]
    alias, frozen = reasons[-2][0], reasons[-1][0]
    assert (alias["code"], alias["argument"]) == ("variable-changed", "b")
    assert "aliasing pattern" in alias["message"] and "trainable" not in alias["message"]
    assert (frozen["code"], frozen["argument"]) == ("variable-changed", "a")
    assert "trainable flag" in frozen["message"] and "trainable=False" in frozen["after"]
    assert "trainable=False" not in frozen["before"] and "trainable" in frozen["fix"]
    rows = [g["signature"] for f in data["functions"] for g in f["graphs"]]
    assert len(set(rows)) == 3
    tf_rows = add.pretty_printed_concrete_signatures()
    assert sum("trainable=False" in row for row in rows) == 1 == tf_rows.count("trainable=False")
    explained = lesson_text("05_variables").split("variable_report")[2].split("## ")[0]
    assert "`a`'s trainable flag" in explained and "`alias_id`" in explained


def test_second_optimizer_raises_the_singleton_variable_error() -> None:
    """05: a second lazily built Keras optimizer in one tf.function; building it first works."""
    w = tf.Variable(2.0)

    @tf.function
    def train_step(w: Any, optimizer: Any) -> None:
        with tf.GradientTape() as tape:
            loss = tf.square(w - 1.0)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

    train_step(w, keras.optimizers.Adam(1e-2))
    with pytest.raises(ValueError, match=r"singleton tf\.Variables created on the first call"):
        train_step(w, keras.optimizers.Adam(1e-3))
    built = keras.optimizers.Adam(1e-3)
    built.build([w])
    train_step(w, built)


def test_input_signature_rejects_a_python_flag_and_takes_a_bool_tensor() -> None:
    """03: a flag outside the signature fails to bind; a bool TensorSpec gives one graph."""

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def forward(x: Any, training: bool = False) -> Any:
        return x * 0.5 if training else x

    x = tf.ones([3, 2])
    forward(x)
    forward(x, training=False)  # the default, passed explicitly: binds (issue 34.1)
    forward(x, False)
    assert count(forward) == 1
    with pytest.raises(TypeError, match="Binding inputs"):
        forward(x, training=True)
    text = lesson_text("03_python_scalar_trap")
    assert "pass the default again, and a\ncall that passes another value fails" in text

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32), tf.TensorSpec([], tf.bool)])
    def forward_flag(x: Any, training: Any) -> Any:
        if training:
            return x * 0.5
        return x

    assert float(forward_flag(x, True)[0, 0]) == 0.5 and float(forward_flag(x, False)[0, 0]) == 1.0
    assert count(forward_flag) == 1


def test_range_is_unrolled_and_tf_range_is_one_loop() -> None:
    """01: graph size grows with Python range(n); tf.range(n) keeps one graph of fixed size."""

    @tf.function
    def unrolled(x: Any, n: int) -> Any:
        for _ in range(n):
            x = x * 0.5 + 1.0
        return x

    @tf.function
    def rolled(x: Any, n: Any) -> Any:
        for _ in tf.range(n):
            x = x * 0.5 + 1.0
        return x

    v = tf.ones([3])
    nodes = {n: len(unrolled.get_concrete_function(v, n).graph.as_graph_def().node) for n in (10, 100)}
    loops = {
        n: len(rolled.get_concrete_function(v, tf.constant(n)).graph.as_graph_def().node) for n in (10, 100)
    }
    assert nodes[100] > 5 * nodes[10] and loops[10] == loops[100]
    assert count(unrolled) == 2 and count(rolled) == 1


def test_attributes_of_an_object_passed_in_go_stale() -> None:
    """06: identity-keyed objects: a changed attribute neither retraces nor shows."""

    class Settings:
        scale = 2.0

    @tf.function
    def apply(settings: Any, v: Any) -> Any:
        return v * settings.scale

    settings = Settings()
    apply(settings, tf.ones([2]))
    settings.scale = 5.0
    assert float(apply(settings, tf.ones([2]))[0]) == 2.0 and count(apply) == 1


def test_tf_retracing_warning_constants_and_text() -> None:
    """03/07: the warning's window, threshold and per-function cap, and its opening words."""
    import inspect

    pf = pytest.importorskip("tensorflow.python.eager.polymorphic_function.polymorphic_function")
    assert pf.FREQUENT_TRACING_WARNING_MAX_CALL_HISTORY == 10
    assert pf.FREQUENT_TRACING_WARNING_THRESHOLD == 5
    assert pf.FREQUENT_TRACING_WARNING_MAX_WARNING_PER_DETECTOR == 2
    source = inspect.getsource(pf._FrequentTracingDetector)
    assert '"{} out of the last {} calls to {} triggered tf.function "' in source


def test_keras_auto_jit_compile_is_off_on_a_cpu_only_machine() -> None:
    """07: jit_compile="auto" turns XLA on only when TF sees a non-CPU device."""
    if any(d.device_type != "CPU" for d in tf.config.list_physical_devices()):
        pytest.skip("an accelerator is present")
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    if KERAS_2:  # tf.keras 2.15 (the oldest TF): no "auto", None is off; 07 scopes it to Keras 3
        assert model.jit_compile is None
        assert '`compile(jit_compile="auto")` — Keras 3\'s default' in lesson_text("07_training_loop_clinic")
        return
    assert model.jit_compile is False


def test_which_dataclasses_raise_and_which_go_stale_silently() -> None:
    """06: only the default @dataclass (eq=True sets __hash__ = None) raises; eq=False is keyed
    by identity and unsafe_hash=True by the hash it had when traced: mutate a field and the next
    call returns the stale result, with no retrace."""

    @dataclasses.dataclass
    class Default:
        scale: float

    @dataclasses.dataclass(eq=False)
    class ByIdentity:
        scale: float

    @dataclasses.dataclass(unsafe_hash=True)
    class Hashed:
        scale: float

    @tf.function
    def apply(x: Any, cfg: Any) -> Any:
        return x * cfg.scale

    x = tf.ones([2])
    with pytest.raises(TypeError, match="Could not generate a generic TraceType"):
        apply(x, Default(2.0))
    for kind in (ByIdentity, Hashed):

        @tf.function
        def applied(x: Any, cfg: Any) -> Any:
            return x * cfg.scale

        cfg = kind(2.0)
        applied(x, cfg)
        cfg.scale = 5.0
        assert float(applied(x, cfg)[0]) == 2.0, kind  # eagerly: 5.0
        assert count(applied) == 1, kind


def test_cache_entries_outlive_the_objects_they_were_traced_for() -> None:
    """06: after the object is collected, an equal new object traces another graph and the cache
    holds both (short-lived object arguments grow the cache)."""

    @tf.function
    def apply(x: Any, cfg: Any) -> Any:
        return x * cfg.scale

    x = tf.ones([3])
    first = Frozen(2.0)
    apply(x, first)
    del first
    gc.collect()
    apply(x, Frozen(2.0))
    assert count(apply) == 2
    # TF 2.21 has no public count of cached graphs; this is the list SavedModel export uses.
    assert len(apply._list_all_concrete_functions()) == 2


def test_input_signature_converts_python_and_numpy_but_not_tensors() -> None:
    """04 and the cheat sheet: a float64 NumPy array is converted to the declared float32; a
    float64 tf.Tensor (e.g. a dataset built on float64 NumPy) raises."""
    np = pytest.importorskip("numpy")

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def enc(batch: Any) -> Any:
        return batch * 2

    assert enc(np.ones([2, 4])).dtype == tf.float32
    assert enc([[1.0, 2.0, 3.0, 4.0]]).dtype == tf.float32
    with pytest.raises(TypeError, match="Can not cast TensorSpec"):
        enc(tf.constant(np.ones([2, 4])))
    data = tf.data.Dataset.from_tensor_slices(np.ones([4, 4])).batch(2)
    with pytest.raises(TypeError, match="float64"):
        enc(next(iter(data)))


def test_python_values_are_keyed_at_trace_time_even_without_autograph() -> None:
    """01: a Python bool is baked into the graph by the value-keyed cache, not by AutoGraph:
    autograph=False still traces twice for True then False."""

    @tf.function(autograph=False)
    def layer(x: Any, training: bool) -> Any:
        if training:
            return x * 0.5
        return x

    x = tf.ones([2])
    layer(x, True)
    layer(x, False)
    assert count(layer) == 2


def test_equal_python_values_share_one_graph() -> None:
    """02 and the cheat sheet: 1, 1.0 and True compare equal, so they share one graph, and the
    later calls get what the graph traced for 1 computes (eagerly they differ)."""

    @tf.function
    def fill(value: Any) -> Any:
        return tf.fill([2], value)

    results = [fill(1), fill(1.0), fill(True)]
    assert count(fill) == 1
    assert [r.dtype for r in results] == [tf.int32] * 3
    assert tf.fill([2], 1.0).dtype == tf.float32 and tf.fill([2], True).dtype == tf.bool


def test_retracing_warning_window_is_not_a_fixed_ten_calls() -> None:
    """03, 07, cheat sheet: TF keeps each tracing call with the cached calls after it, forgets the
    oldest group once more than 10 calls followed it, and warns at 5 remembered traces — so the
    text reads "5 out of the last 8" or "5 out of the last 15"."""
    from unittest import mock

    pf = pytest.importorskip("tensorflow.python.eager.polymorphic_function.polymorphic_function")

    def messages(pattern: str) -> list[str]:
        detector = pf._FrequentTracingDetector()
        with mock.patch.object(pf.logging, "warning") as warning:
            for traced in pattern:
                if traced == "T":
                    detector.called_with_tracing("f", omit_warning=False)
                else:
                    detector.called_without_tracing()
        return [call.args[0].split(" triggered")[0] for call in warning.call_args_list]

    assert messages("TTTTT") == ["5 out of the last 5 calls to f"]
    assert messages("T.T.T.TT") == ["5 out of the last 8 calls to f"]
    assert messages("T" + "." * 10 + "TTTT") == ["5 out of the last 15 calls to f"]
    # 8 + 1 calls after the first two traces' groups: both forgotten, 3 remembered, no warning
    assert messages("T..." + "TTT" + "." * 8 + "T") == []


def test_keras_fit_traces_once_because_the_batch_dimension_is_unknown() -> None:
    """07: fit's step sees the dataset's unknown batch dimension (None), and Keras wraps it with
    reduce_retracing=True; jit_compile="auto" is also off under a distribution strategy or with
    op determinism (keras/src/trainers/trainer.py)."""
    import inspect

    np = pytest.importorskip("numpy")
    if KERAS_2:
        # tf.keras 2.15 (the oldest TF): the dataset's batch is None too, so the short last
        # batch adds no trace; the step traces twice because its optimizer creates variables on
        # the first call (lesson 05), with or without a short batch — as lesson 07 says.
        counts = []
        for rows in (192, 200):
            model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
            model.compile(optimizer="sgd", loss="mse")
            x, y = np.ones([rows, 8], "float32"), np.ones([rows, 1], "float32")
            model.fit(x, y, batch_size=32, epochs=3, verbose=0)
            counts.append(count(model.train_function))
        assert counts == [2, 2]  # 192 rows: no short batch; 200: a last batch of 8, no more traces
        assert "shape=(None, 8)" in model.train_function.pretty_printed_concrete_signatures()
        assert "Keras 2 (TF 2.15) traces it twice" in lesson_text("07_training_loop_clinic")
        return
    from keras.src.backend.tensorflow import trainer as tf_trainer
    from keras.src.trainers import trainer
    from keras.src.trainers.data_adapters import array_data_adapter

    adapter = array_data_adapter.ArrayDataAdapter(
        np.ones([200, 8], "float32"), np.ones([200, 1], "float32"), batch_size=32
    )
    assert [spec.shape[0] for spec in adapter.get_tf_dataset().element_spec] == [None, None]
    assert "reduce_retracing=True" in inspect.getsource(tf_trainer.TensorFlowTrainer._make_function)
    assert "self._distribute_strategy" in inspect.getsource(trainer.Trainer._resolve_auto_jit_compile)
    assert "is_op_determinism_enabled" in inspect.getsource(trainer.model_supports_jit)


def test_second_lazily_built_model_raises_and_model_build_cures_it() -> None:
    """05 and the cheat sheet: a second Keras model built lazily inside one tf.function raises the
    singleton-Variable error; model.build(input_shape) before the call makes it one retrace."""

    @tf.function
    def predict(model: Any, x: Any) -> Any:
        return model(x)

    x = tf.ones([2, 4])
    predict(keras.Sequential([keras.layers.Dense(3)]), x)
    with pytest.raises(ValueError, match=r"singleton tf\.Variables created on the first call"):
        predict(keras.Sequential([keras.layers.Dense(3)]), x)
    built = keras.Sequential([keras.layers.Dense(3)])
    built.build((None, 4))
    assert predict(built, x).shape == (2, 3)


def test_tf_cond_traces_both_branches() -> None:
    """Cheat sheet: tf.cond traces both branches, so Python side effects of either run while
    tracing, also for the branch a call does not take."""
    seen: list[str] = []

    @tf.function
    def branchy(x: Any, training: Any) -> Any:
        def train() -> Any:
            seen.append("train")
            return x * 0.5

        def evaluate() -> Any:
            seen.append("evaluate")
            return x

        return tf.cond(training, train, evaluate)

    branchy(tf.ones([2]), tf.constant(False))
    assert sorted(seen) == ["evaluate", "train"]


def test_run_functions_eagerly_runs_the_python_body_on_every_call() -> None:
    """Cheat sheet: run_functions_eagerly(True) runs a tf.function as plain Python on every
    call (print and a debugger work) and traces nothing."""
    calls: list[int] = []

    @tf.function
    def step(x: Any) -> Any:
        calls.append(1)
        return x + 1

    tf.config.run_functions_eagerly(True)
    try:
        for _ in range(3):
            step(tf.constant(1))
    finally:
        tf.config.run_functions_eagerly(False)
    assert len(calls) == 3 and count(step) == 0


def test_lesson_00s_first_report_offers_one_fix() -> None:
    """00: the first report's four calls (float32 vectors of 2, 2, 3, 3) make one retrace with
    one fix, no alternative, and the suggested fix is the same input_signature."""
    import tfgraph_lab
    from tfgraph_lab.explain.fix_text import short_fix

    @tf.function
    def double(x: Any) -> Any:
        return x * 2

    with tfgraph_lab.watch() as w:
        for values in ([1.0, 2.0], [3.0, 4.0], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]):
            double(tf.constant(values))
    assert count(double) == 2
    reasons = [r for e in w.report.retrace_events for r in e.reasons]
    assert [r.code for r in reasons] == ["shape-changed"]
    short = short_fix(reasons[0], "double")
    assert short.others == () and "input_signature=[tf.TensorSpec([None], tf.float32)]" in short.code
    assert "call #3  shape-changed" in str(w.report)  # the third call of double
    suggestion = w.report.function("double").suggestion
    assert suggestion.splitlines()[0] == "@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])"


def test_the_warning_counts_vary_and_a_long_cached_run_stays_in_its_window() -> None:
    """03 and the cheat sheet (issue 34.1): TF 2.21's own warnings for the lesson's 8 new Python
    floats read "5 out of the last 5", then "6 out of the last 6"; a trace, 100 cached calls and
    4 traces read "5 out of the last 105" (the first trace's group holds its cached calls)."""

    @tf.function
    def scaled(x: Any, factor: Any) -> Any:
        return tf.reduce_sum(x) * factor

    x = tf.ones([4, 8])
    assert tf_warnings(lambda: [scaled(x, step * 0.5) for step in range(8)]) == [
        "5 out of the last 5",
        "6 out of the last 6",
    ]

    @tf.function
    def late(x: Any, factor: Any) -> Any:
        return tf.reduce_sum(x) * factor

    def run() -> None:
        for _ in range(101):
            late(x, 1.0)
        for value in (2.0, 3.0, 4.0, 5.0):
            late(x, value)

    assert tf_warnings(run) == ["5 out of the last 105"] and count(late) == 5
    for text in (lesson_text("03_python_scalar_trap"), page("lessons/CHEATSHEET.md")):
        text = " ".join(text.split())
        assert '"5 out of the last 5"' in text and '"6 out of the last 6"' in text
        assert "100 cached calls" in text and '"5 out of the last 105"' in text
    assert "once more than 10 calls came after it," not in page("lessons/CHEATSHEET.md")


@pytest.mark.parametrize(("steps", "warned"), [(4, False), (7, False), (3, True)])
def test_traces_four_or_more_calls_apart_never_warn(steps: int, warned: bool) -> None:
    """03, 07 and the cheat sheet (issue 34.1): a Python learning rate changed once per epoch of
    4 or more steps retraces every epoch and TF 2.21 never warns (50 epochs, 50 traces, 0
    warnings); with 3 steps per epoch it warns."""

    @tf.function
    def lr_step(x: Any, lr: Any) -> Any:
        return tf.reduce_sum(x) * lr

    x = tf.ones([4, 8])

    def epochs() -> None:
        lr = 0.1
        for _epoch in range(50):
            for _batch in range(steps):
                lr_step(x, lr)
            lr *= 0.9

    assert bool(tf_warnings(epochs)) is warned and count(lr_step) == 50
    text = lesson_text("03_python_scalar_trap")
    assert "Traces 4 or more calls apart never warn" in text
    assert "(TF 2.21: 50 epochs, 50 traces, 0 warnings; 3 steps per epoch do warn)" in text
    assert "for batch in range(4):" in text and "for epoch in range(50):" in text
    assert "50 epochs, 50 traces, 0 warnings" in page("lessons/CHEATSHEET.md")


def test_a_frozen_dataclass_made_per_call_traces_every_call() -> None:
    """Cheat sheet (issue 34.1): a frozen dataclass is the fix only when it is kept; one created
    per call gives 20 traces for 20 equal calls, all 20 graphs kept (TF 2.21)."""

    @tf.function
    def apply(x: Any, cfg: Any) -> Any:
        return x * cfg.scale

    x = tf.ones([3])
    for _ in range(20):
        apply(x, Frozen(2.0))
    assert count(apply) == 20 and len(apply._list_all_concrete_functions()) == 20
    kept = Frozen(2.0)
    for _ in range(20):
        apply(x, kept)
    assert count(apply) == 21
    assert "(20 equal calls: 20 traces)" in page("lessons/CHEATSHEET.md")


def test_a_concrete_function_with_a_none_spec_before_the_first_call_is_one_trace() -> None:
    """WORKSHOP.md and 02 (issue 34.1): not only an input_signature gets one trace:
    get_concrete_function with a None spec, before the first call, serves every length."""

    @tf.function
    def square_sum(x: Any) -> Any:
        return tf.reduce_sum(x * x)

    square_sum.get_concrete_function(tf.TensorSpec([None], tf.float32))
    for n in range(1, 6):
        square_sum(tf.ones([n]))
    assert count(square_sum) == 1

    @tf.function(reduce_retracing=True)
    def relaxed(x: Any) -> Any:
        return tf.reduce_sum(x)

    for n in (32, 16, 20, 8):
        relaxed(tf.ones([n]))
    assert count(relaxed) == 2
    workshop = page("docs/WORKSHOP.md")
    assert "Only an `input_signature` gets one trace" not in workshop
    assert "`get_concrete_function` with a\n  `None` spec before the first call" in workshop
