"""What a Keras user sees in ``cb.report``: Keras's step functions as their own rows, named for
the call that ran them, counted as TensorFlow counts them; a new model is no retrace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf  # noqa: E402

import tfgraph_lab  # noqa: E402
from tfgraph_lab.keras import TraceCallback  # noqa: E402

# Models built by earlier tests would make this module's first traces (true)
# new-function-objects: each test starts the recording state afresh.
pytestmark = pytest.mark.usefixtures("fresh_recording")


def data(n: int = 100) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((n, 4), dtype=np.float32), rng.random((n, 1), dtype=np.float32)


def dropout_model(name: str | None = None) -> Any:
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dropout(0.2), keras.layers.Dense(1)],
        name=name,
    )
    model.compile("adam", "mse")
    return model


def tf_functions(fn: Any) -> dict[str, Any]:
    """TF's own Function objects behind a Keras 3 train/test closure, by their Python name
    (walked here with TF's class, independently of tfgraph_lab.keras.names)."""
    out: dict[str, Any] = {}

    def walk(value: Any, depth: int) -> None:
        for cell in getattr(value, "__closure__", None) or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if isinstance(inner, pf.Function):
                out[inner.python_function.__name__] = inner
                walk(inner.python_function, depth + 1)
            elif callable(inner) and depth < 3:
                walk(inner, depth + 1)

    walk(fn, 0)
    return out


@pytest.mark.slow
def test_fit_evaluate_predict_rows_are_named_and_counted_as_tensorflow_counts() -> None:
    x, y = data()
    model = dropout_model()
    cb = TraceCallback()
    model.fit(x, y, validation_split=0.2, epochs=2, batch_size=32, verbose=0, callbacks=[cb])
    model.evaluate(x, y, verbose=0, callbacks=[cb])
    for n in (10, 37, 64):
        model.predict(x[:n], verbose=0, callbacks=[cb])
    report = cb.report
    train, test = tf_functions(model.train_function), tf_functions(model.test_function)
    expected = {
        "fit · train step": train["one_step_on_data"],
        "fit · train loop": train["multi_step_on_iterator"],
        "fit · validation / evaluate · test step": test["one_step_on_data"],
        "fit · validation / evaluate · test loop": test["multi_step_on_iterator"],
        "predict step": model.predict_function,
    }
    shown = {f.label: f for f in report.shown_functions}
    assert set(shown) == set(expected)  # shown by default; train and test apart
    for name, fn in expected.items():
        assert shown[name].traces == fn.experimental_get_tracing_count(), name
    # the loop runs once per batch: 3 train batches (80 rows) x 2 epochs; 1 validation batch x 2
    # plus 4 evaluate batches
    assert (
        shown["fit · train loop"].calls == 6 and shown["fit · validation / evaluate · test loop"].calls == 6
    )
    assert shown["predict step"].retraces == 1 == report.retraces
    hidden = [f for f in report.functions if f not in report.shown_functions]
    assert hidden and all(f.framework and f.qualname.startswith("ArrayDataAdapter") for f in hidden)
    text = str(report)
    assert text.startswith("tracewatch · 5 functions") and "fit · train step" in text
    table = text.split("\n\n", 2)[1]  # the rows (TF's own warning, quoted below, names its functions)
    assert "one_step_on_data" not in table and "_make_function" not in table and "predict step" in table


@pytest.mark.slow
def test_two_models_are_named_apart_and_the_first_is_renamed_when_the_second_comes() -> None:
    x, y = data(64)
    first, second = dropout_model("encoder"), dropout_model("decoder")
    cb = TraceCallback()
    first.fit(x, y, epochs=1, batch_size=32, verbose=0, callbacks=[cb])
    assert {f.label for f in cb.report.shown_functions} == {"fit · train step", "fit · train loop"}
    second.fit(x, y, epochs=1, batch_size=32, verbose=0, callbacks=[cb])
    names = {f.label for f in cb.report.shown_functions}
    assert names == {f"{m} · fit · train {p}" for m in ("encoder", "decoder") for p in ("step", "loop")}
    assert cb.retraces == 0 == cb.report.retraces  # each model traces its own once


def test_a_new_model_is_no_retrace_and_recompiling_the_same_model_is() -> None:
    x, _ = data(8)
    first = dropout_model()
    first.predict(x, verbose=0, callbacks=[TraceCallback()])
    second = dropout_model()
    cb = TraceCallback(max_retraces=0)
    second.predict(x, verbose=0, callbacks=[cb])  # raised TraceBudgetExceeded before
    assert cb.retraces == 0 and [r.code for e in cb.report.events for r in e.reasons] == ["first-trace"]
    second.compile("adam", "mse")  # drops the model's predict function: Keras builds it anew
    with pytest.raises(tfgraph_lab.TraceBudgetExceeded) as caught:
        second.predict(x, verbose=0, callbacks=[cb])
    (reason,) = [r for e in cb.report.events for r in e.reasons if r.code == "new-function-object"]
    assert "compile() ran again on this model" in reason.message and "another model" not in reason.message
    assert reason.fix.startswith("remove the repeated model.compile")  # it changed nothing
    assert "predict step ×1" in str(caught.value)
