"""TraceCallback on Keras 2 (``tf.keras`` as TensorFlow 2.15 bundles it): run by the oldest-TF CI
job (``.ci/oldest_tf.sh``), skipped where Keras 3 is installed.

Keras 2.15 makes ``model.train_function``, ``test_function`` and ``predict_function`` one
tf.function each (keras/src/engine/training.py), so each call has one row, named as on Keras 3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
pytestmark = [
    pytest.mark.skipif(
        not keras.__version__.startswith("2."),
        reason=f"Keras {keras.__version__}: the Keras 2 job runs on TF 2.15",
    ),
    pytest.mark.usefixtures("fresh_recording"),  # no earlier object of this code
]

import tfgraph_lab  # noqa: E402
from tfgraph_lab.keras import TraceCallback  # noqa: E402

X = np.random.default_rng(0).random((100, 4), dtype=np.float32)
Y = np.random.default_rng(1).random((100, 1), dtype=np.float32)


def model(name: str | None = None) -> Any:
    m = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dropout(0.2), keras.layers.Dense(1)],
        name=name,
    )
    m.compile("adam", "mse")
    return m


def test_fit_evaluate_predict_rows_on_keras_2(tmp_path: Path) -> None:
    m = model()
    cb = TraceCallback(log_dir=tmp_path / "tb")
    m.fit(X, Y, validation_split=0.2, epochs=2, batch_size=32, verbose=0, callbacks=[cb])
    m.evaluate(X, Y, verbose=0, callbacks=[cb])
    for n in (10, 37, 64):
        m.predict(X[:n], verbose=0, callbacks=[cb])
    cb.close()
    shown = {f.label: f for f in cb.report.shown_functions}
    expected = {
        "fit · train step": m.train_function,
        "fit · validation / evaluate · test step": m.test_function,
        "predict step": m.predict_function,
    }
    assert set(shown) == set(expected)
    for name, fn in expected.items():
        assert shown[name].traces == fn.experimental_get_tracing_count(), name
    assert cb.retraces == 0  # Keras 2 feeds predict from an iterator: the batch dimension is None
    steps = []
    for path in sorted((tmp_path / "tb").glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            steps += [event.step for value in event.summary.value if value.tag == "tfgraph_lab/retraces"]
    assert steps == list(range(6))  # 2 epochs, evaluate, 3 predicts: forward only


def test_a_second_model_is_no_retrace_and_recompiling_is_on_keras_2() -> None:
    model().predict(X[:8], verbose=0, callbacks=[TraceCallback()])
    second = model()
    cb = TraceCallback(max_retraces=0)
    second.predict(X[:8], verbose=0, callbacks=[cb])
    assert cb.retraces == 0
    second.compile("adam", "mse")
    with pytest.raises(tfgraph_lab.TraceBudgetExceeded, match="predict step ×1"):
        second.predict(X[:8], verbose=0, callbacks=[cb])
    (reason,) = [r for e in cb.report.events for r in e.reasons if r.code == "new-function-object"]
    assert "compile() ran again on this model" in reason.message


def test_a_tensor_training_flag_works_in_keras_2_layers() -> None:
    """Keras 2.15's Dropout takes a tensor training flag (Keras 3.15 raises): so the flag fix for
    a plain function stays on offer here, and applied it makes one graph for both modes."""
    m = model()

    @tf.function
    def step(x, training):  # type: ignore[no-untyped-def]
        return m(x, training=training)

    with tfgraph_lab.watch() as w:
        for training in (True, False):
            step(tf.ones((8, 4)), training)
    (reason,) = [r for e in w.report.events for r in e.reasons if r.code == "python-value-changed"]
    (plan,) = reason.plans
    assert plan.call == (("training", "tf.constant(training)"),)
    fixed = tf.function(lambda x, training: m(x, training=training))
    for training in (True, False):
        fixed(tf.ones((8, 4)), tf.constant(training))
    assert fixed.experimental_get_tracing_count() == 1 == plan.graphs
