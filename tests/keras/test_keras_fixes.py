"""Fixes for Keras's own step functions are Keras-level and work as printed: each suggestion is
run as written on a fresh model, and TensorFlow's ``experimental_get_tracing_count()`` holds the
promise (Keras 3)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.explain.fix_text import WHOLE_CHARS  # noqa: E402
from tfgraph_lab.keras import TraceCallback  # noqa: E402
from tfgraph_lab.keras.names import step_functions  # noqa: E402

X = np.random.default_rng(0).random((100, 4), dtype=np.float32)
Y = np.random.default_rng(1).random((100, 1), dtype=np.float32)


# Models built by earlier tests would make this module's first traces (true)
# new-function-objects: each test starts the recording state afresh.
pytestmark = pytest.mark.usefixtures("fresh_recording")


def model(**compile_options: Any) -> Any:
    m = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dropout(0.2), keras.layers.Dense(1)]
    )
    m.compile("adam", "mse", **compile_options)
    return m


def traces(m: Any, kind: str) -> dict[str, int]:
    return {part: fn.experimental_get_tracing_count() for fn, part in step_functions(m, kind)}


def code_of(suggestion: str) -> str:
    return "\n".join(line for line in suggestion.splitlines() if not line.lstrip().startswith("#"))


def keras_texts(report: Any) -> list[str]:
    texts = [f.suggestion or "" for f in report.shown_functions]
    return texts + [r.fix for e in report.events for r in e.reasons]


@pytest.mark.slow
def test_predict_on_three_lengths_nothing_to_do_then_padding_gives_one_graph() -> None:
    m, cb = model(), TraceCallback()
    for n in (10, 37, 64):
        m.predict(X[:n], verbose=0, callbacks=[cb])
    fn = cb.report.function("predict step")
    (reason,) = [r for e in cb.report.events for r in e.reasons if r.code == "shape-changed"]
    assert reason.fix.startswith("nothing to do") and not reason.plans
    assert fn.suggestion is not None and fn.suggestion.startswith("# nothing to do")
    assert not any("@tf.function" in t or "input_signature" in t for t in keras_texts(cb.report))
    # the padding is written on this test's own call (its names m, X, n, cb), as printed
    (call,) = [line for line in code_of(fn.suggestion).splitlines() if "  # " in line]
    assert call.endswith("was: m.predict(X[:n], verbose=0, callbacks=[cb])"), fn.suggestion
    fixed = model()
    for n in (10, 37, 64):
        scope = {"m": fixed, "X": X, "n": n, "cb": TraceCallback()}
        exec(code_of(fn.suggestion).replace(call, "y = " + call), scope)  # `import numpy as np` is in it
        np.testing.assert_allclose(scope["y"], fixed(X[:n]).numpy(), rtol=1e-5, atol=1e-6)
    assert traces(fixed, "predict") == {"step": 1}
    # the other way it offers: model(x) runs eagerly, no tf.function traced at all
    with tfgraph_lab.watch() as w:
        for n in (10, 37, 64):
            fixed(X[:n])
    assert w.report.traces == 0


@pytest.mark.slow
def test_predict_with_steps_per_execution_pads_to_whole_groups() -> None:
    m, cb = model(steps_per_execution=4), TraceCallback()
    for n in (10, 100, 64):
        m.predict(X[:n], batch_size=8, verbose=0, callbacks=[cb])
    fn = cb.report.function("predict loop")
    assert fn.retraces == 2 == traces(m, "predict")["loop"] - 1
    fixes = [r.fix for e in cb.report.events for r in e.reasons if r.code == "structure-changed"]
    assert len(fixes) == 2 and all("steps_per_execution" in fix for fix in fixes)
    # the padding, written on this test's own call: to whole groups of 8 × the model's
    # steps_per_execution (it used `x`, `batch_size`, `steps_per_execution`, names the user may not have)
    assert fn.suggestion is not None and "batch_size × steps_per_execution" in fn.suggestion
    (call,) = [line for line in code_of(fn.suggestion).splitlines() if "  # " in line]
    assert "(8 * m.steps_per_execution)" in call and call.endswith(
        "was: m.predict(X[:n], batch_size=8, verbose=0, callbacks=[cb])"
    )
    fixed = model(steps_per_execution=4)
    for n in (10, 100, 64):
        scope = {"m": fixed, "X": X, "n": n, "cb": TraceCallback()}
        exec(code_of(fn.suggestion).replace(call, "y = " + call), scope)
        assert scope["y"].shape == (n, 1)
    assert traces(fixed, "predict") == {"loop": 1}


@pytest.mark.slow
def test_fit_on_datasets_of_two_static_batch_sizes_and_the_drop_remainder_fix() -> None:
    m, cb = model(), TraceCallback()
    rows = tf.data.Dataset.from_tensor_slices((X, Y))
    for size in (32, 16):
        m.fit(rows.batch(size, drop_remainder=True), verbose=0, callbacks=[cb])
    loop = cb.report.function("fit · train loop")
    assert loop.retraces == 1 == traces(m, "train")["loop"] - 1
    assert loop.suggestion is not None and "drop_remainder" in loop.suggestion
    fixed = model()
    for size in (32, 16):
        scope = {"ds": rows, "batch_size": size}
        exec(code_of(loop.suggestion), scope)
        fixed.fit(scope["ds"], verbose=0)
    assert traces(fixed, "train") == {"loop": 1, "step": 2}  # 2: the optimizer's variables


@pytest.mark.slow
def test_fit_and_evaluate_on_arrays_of_two_batch_sizes_are_told_one_batch_size() -> None:
    """fit on 100 rows by 10 (validation: 20 rows by 10), then evaluate by 7: Keras 3 batches
    arrays at a fixed size when it divides the rows, else with a None batch dimension, and the
    test step traces again. Its suggestion printed ``ds = ds.batch(batch_size)``, a dataset the
    code does not have; it names each call's batch_size. One that divides: one graph."""
    m = model()
    with tfgraph_lab.watch() as w:
        m.fit(X, Y, batch_size=10, epochs=1, verbose=0, validation_split=0.2)
        m.evaluate(X, Y, batch_size=7, verbose=0)
    step = w.report.function("test step")
    assert step.retraces == 1 and traces(m, "test")["step"] == 2
    suggestion = step.suggestion or ""
    assert "ds = ds.batch" not in suggestion and "the same batch_size" in suggestion, suggestion
    assert re.fullmatch(
        r"# here: batch_size=10 at \S*test_keras_fixes\.py:\d+, batch_size=7 at \S*test_keras_fixes\.py:\d+",
        suggestion.splitlines()[-1],
    ), suggestion
    fixed = model()
    fixed.fit(X, Y, batch_size=10, epochs=1, verbose=0, validation_split=0.2)
    fixed.evaluate(X, Y, batch_size=10, verbose=0)
    assert traces(fixed, "test")["step"] == 1
    odd = model()  # rows the batch size does not divide: None, another graph, as the text says
    odd.fit(X, Y, batch_size=10, epochs=1, verbose=0, validation_split=0.2)
    odd.evaluate(X[:95], Y[:95], batch_size=10, verbose=0)
    assert traces(odd, "test")["step"] == 2


@pytest.mark.slow
def test_train_on_batch_of_two_sizes_is_told_one_batch_size_not_a_dataset() -> None:
    """``train_on_batch`` with 4 then 2 rows (case 33): the step retraces and reduce_retracing
    relaxes it. Its suggestion printed ``ds = ds.batch(batch_size)``, a dataset the code does
    not have, after "nothing to do"; now it names train_on_batch and says the one retrace is
    optional. One batch size gives one graph (TF's count)."""
    m = model()
    with tfgraph_lab.watch() as w:
        for n in (4, 4, 2):
            m.train_on_batch(X[:n], Y[:n])
    step = w.report.function("train step")
    assert step.retraces >= 1, step
    suggestion = step.suggestion or ""
    assert suggestion.startswith("# nothing to do: reduce_retracing made one graph for every batch size; to avoid")
    assert "train_on_batch" in suggestion and "ds = ds.batch" not in suggestion, suggestion
    steady = model()
    steady.optimizer.build(steady.trainable_variables)
    for n in (4, 4, 4):
        steady.train_on_batch(X[:n], Y[:n])
    assert traces(steady, "train")["step"] == 1


@pytest.mark.slow
def test_the_first_train_step_traces_twice_unless_the_optimizer_is_built() -> None:
    m, cb = model(), TraceCallback()
    m.fit(X, Y, batch_size=32, verbose=0, callbacks=[cb])
    (reason,) = [r for e in cb.report.events for r in e.reasons if r.code == "variable-creation"]
    assert traces(m, "train")["step"] == 2
    statement = re.search(r"before fit: (.+)$", reason.fix)
    assert statement is not None
    fixed = model()
    exec(statement.group(1), {"model": fixed})
    fixed.fit(X, Y, batch_size=32, verbose=0)
    assert traces(fixed, "train") == {"loop": 1, "step": 1}


def fit_losses(m: Any, **kw: Any) -> list[float]:
    return [float(v) for v in m.fit(X, Y, batch_size=16, verbose=0, **kw).history["loss"]]


def step_traces(m: Any) -> int:
    return sum(traces(m, "train").values())


def recompile_reasons(report: Any) -> list[Any]:
    return [r for e in report.events for r in e.reasons if r.code == "new-function-object"]


def small_model(seed: int = 0) -> Any:
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])


@pytest.mark.slow
def test_a_recompile_that_changes_only_the_learning_rate_gets_the_assign_fix_with_its_rate() -> None:
    def compile_with(m: Any, rate: float) -> None:
        m.compile(keras.optimizers.SGD(rate, momentum=0.9), "mse", metrics=["mae"])

    m, cb = small_model(), TraceCallback()
    compile_with(m, 0.05)
    fit_losses(m, epochs=3, callbacks=[cb])
    compile_with(m, 0.01)
    as_written = fit_losses(m, epochs=3, callbacks=[cb])
    step = cb.report.function("fit · train step")
    (reason, *_) = recompile_reasons(cb.report)
    assert (reason.argument, reason.before, reason.after) == ("learning rate", "0.05", "0.01")
    assert "model.optimizer.learning_rate.assign(0.01)" in reason.fix and len(reason.fix) <= WHOLE_CHARS
    # the user's optimizer, rate and metrics are kept: nothing but the assign, as printed
    assert step.suggestion is not None and "compile(" not in code_of(step.suggestion).split("#")[0]
    fixed = small_model()
    compile_with(fixed, 0.05)
    started = fit_losses(fixed, epochs=3)[0]
    before = step_traces(fixed)
    exec(step.suggestion, {"model": fixed})
    fixed_losses = fit_losses(fixed, epochs=3)
    assert step_traces(fixed) == before  # the promise: no new functions, no new traces
    assert fixed.optimizer.learning_rate.numpy() == pytest.approx(0.01)
    assert type(fixed.optimizer).__name__ == "SGD" and "mae" in fixed.get_compile_config()["metrics"]
    # it trains as well as with the recompile (which only reset the momentum)
    assert fixed_losses[-1] < started / 2 and fixed_losses[-1] <= as_written[-1] * 1.5


@pytest.mark.slow
def test_a_recompile_that_changes_nothing_is_advised_away() -> None:
    m, cb = small_model(), TraceCallback()
    m.compile("adam", "mse")
    fit_losses(m, callbacks=[cb])
    m.compile("adam", "mse")
    fit_losses(m, callbacks=[cb])
    step = cb.report.function("fit · train step")
    (reason, *_) = recompile_reasons(cb.report)
    assert reason.argument == "optimizer object" and reason.fix.startswith("remove the repeated")
    assert step.suggestion is not None and not code_of(step.suggestion).strip()  # nothing to add
    fixed = small_model()
    fixed.compile("adam", "mse")
    first = fit_losses(fixed)
    before = step_traces(fixed)
    second = fit_losses(fixed)  # without the repeated compile
    assert step_traces(fixed) == before and second[-1] < first[0]


@pytest.mark.slow
def test_the_fine_tuning_recompile_is_expected_and_offers_no_fix() -> None:
    """Keras's transfer-learning guide: freeze the base, fit, unfreeze, recompile with a low
    learning rate, fit again. The recompile is what trains the unfrozen layers."""

    def fine_tuned(recompile: bool, cb: Any = None) -> tuple[Any, Any]:
        keras.utils.set_random_seed(0)
        base = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu")], name="base")
        inputs = keras.Input((4,))
        m = keras.Model(inputs, keras.layers.Dense(1)(base(inputs, training=False)))
        base.trainable = False
        loss = keras.losses.MeanSquaredError()
        m.compile(keras.optimizers.Adam(), loss, metrics=[keras.metrics.MeanAbsoluteError()])
        callbacks = [cb] if cb is not None else []
        fit_losses(m, epochs=2, callbacks=callbacks)
        base.trainable = True
        if recompile:
            m.compile(keras.optimizers.Adam(1e-5), loss, metrics=[keras.metrics.MeanAbsoluteError()])
        kernel = base.layers[0].kernel.numpy().copy()
        fit_losses(m, epochs=1, callbacks=callbacks)
        return m, np.abs(base.layers[0].kernel.numpy() - kernel).max()

    cb = TraceCallback()
    m, moved = fine_tuned(True, cb)
    step = cb.report.function("fit · train step")
    (reason, *_) = recompile_reasons(cb.report)
    assert reason.argument == "trainable weights, learning rate"
    assert (reason.before, reason.after) == ("2 trainable weights; 0.001", "4 trainable weights; 1e-05")
    assert (
        reason.fix.startswith("nothing to fix: keep the recompile") and "resets the optimizer" in reason.fix
    )
    assert (
        "weights made trainable stay untrained" in reason.fix and len(reason.fix) <= WHOLE_CHARS
    )  # shown whole
    assert step.suggestion is None and not reason.plans  # no code offered
    assert moved > 0  # as written (the recompile kept) the unfrozen base trains
    # what each compile costs is what TF counts: 2 traces per train step object (variables)
    assert step.traces == 4 and traces(m, "train")["step"] == 2
    assert fine_tuned(False)[1] == 0  # without it the base stays untrained (the old advice)


@pytest.mark.slow
def test_xla_compiles_of_keras_steps_get_keras_level_fixes() -> None:
    def xla_rows(jit: bool, padded: bool) -> tuple[dict[str, int], list[str]]:
        m, cb = model(jit_compile=jit), TraceCallback()
        for n in (10, 37, 64):
            x = np.pad(X[:n], [(0, -n % 32), (0, 0)]) if padded else X[:n]
            m.predict(x, verbose=0, callbacks=[cb])
        fixes = [r.fix for e in cb.report.events for r in e.xla_reasons or () if r.fix]
        return {f.label: f.xla_compiles for f in cb.report.shown_functions if f.xla_compiles}, fixes

    compiles, fixes = xla_rows(True, False)
    assert compiles["predict step (XLA)"] >= 2 and fixes  # TF's compile log: 3 (one per size)
    assert all("model.compile(..., jit_compile=False)" in fix and "pad x" in fix for fix in fixes)
    assert not any("@tf.function" in fix or "input_signature" in fix for fix in fixes)
    assert xla_rows(True, True)[0] == {"predict step (XLA)": 1}  # padded: one size, one compile
    assert xla_rows(False, False)[0] == {}  # jit_compile=False: no XLA


@pytest.mark.slow
def test_xla_compiles_of_fit_on_arrays_get_a_fix_for_arrays() -> None:
    """fit on NumPy arrays has no drop_remainder: the fix names a batch_size that divides the
    samples (100 rows: 25) beside tf.data's drop_remainder, and both compile once, as printed."""

    def fit_rows(data: Any, batch_size: int | None = None) -> tuple[int, list[str]]:
        m, cb = model(jit_compile=True), TraceCallback()
        if batch_size is None:
            m.fit(data, epochs=2, verbose=0, callbacks=[cb])
        else:
            m.fit(*data, batch_size=batch_size, epochs=2, verbose=0, callbacks=[cb])
        fixes = [r.fix for e in cb.report.events for r in e.xla_reasons or () if r.fix]
        compiles = [f.xla_compiles for f in cb.report.shown_functions if "train step" in f.label]
        return sum(compiles), fixes

    y = X[:, :1]
    compiles, fixes = fit_rows((X, y), 32)
    assert compiles >= 2 and fixes, fixes  # 32 rows, then the short 4
    assert all("fit, evaluate: a batch_size that divides the number of samples" in fix for fix in fixes), fixes
    assert all("drop_remainder=True" in fix for fix in fixes)
    assert fit_rows((X, y), 25)[0] == 1  # 100 = 4 × 25: one size, one compile
    dataset = tf.data.Dataset.from_tensor_slices((X, y)).batch(32, drop_remainder=True)
    assert fit_rows(dataset)[0] == 1
