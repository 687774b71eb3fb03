"""Red team, the Keras callback (issue 23, item 7): when ``fit``/``evaluate``/``predict`` raises,
Keras calls no ``on_*_end``; TensorFlow must still be unpatched and the ``tfgraph_lab`` logger
restored the moment the error leaves the call, and nothing after it recorded. Each case failed
before its fix (TF stayed patched until ``cb.close()`` or garbage collection)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from tfgraph_lab.keras import TraceCallback  # noqa: E402
from tfgraph_lab.recorder import is_patched  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_history(monkeypatch: Any) -> None:
    from tfgraph_lab import _history

    monkeypatch.setattr(_history.HISTORY, "objects_per_code", {})
    monkeypatch.setattr(_history.HISTORY, "last_graphs", {})


def tiny_model() -> Any:
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


GOOD_X, GOOD_Y = np.zeros((8, 4), "float32"), np.zeros((8, 1), "float32")
BAD_X = np.zeros((8, 3), "float32")  # the wrong width: the step's trace raises ValueError

CALLS = {
    "fit": lambda m, cb: m.fit(BAD_X, GOOD_Y, verbose=0, callbacks=[cb]),
    "evaluate": lambda m, cb: m.evaluate(BAD_X, GOOD_Y, verbose=0, callbacks=[cb]),
    "predict": lambda m, cb: m.predict(BAD_X, verbose=0, callbacks=[cb]),
    "fit, in validation": lambda m, cb: m.fit(
        GOOD_X, GOOD_Y, validation_data=(BAD_X, GOOD_Y), verbose=0, callbacks=[cb]
    ),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_a_failing_call_unpatches_tensorflow_as_the_error_leaves_it(call: str) -> None:
    logger = logging.getLogger("tfgraph_lab")
    propagate = logger.propagate
    model = tiny_model()
    cb = TraceCallback()
    with pytest.raises(ValueError):
        CALLS[call](model, cb)
    assert not is_patched(), "TensorFlow left patched after the call failed"
    assert logger.propagate == propagate, "the tfgraph_lab logger was left changed"
    recorded = sum(f.calls for f in cb.report.functions)

    @tf.function
    def unrelated(x: Any) -> Any:
        return x + 1

    unrelated(tf.ones([2]))
    assert sum(f.calls for f in cb.report.functions) == recorded, "recorded a call after the failure"
    assert all(f.qualname != "unrelated" for f in cb.report.functions)
    # the model's own step functions are Keras's again (no wrapper of ours left on the model)
    for name in ("train_function", "test_function", "predict_function"):
        assert not getattr(type(getattr(model, name, None)), "_tfgraph_lab_step_guard", False)
    cb.close()


def test_the_callback_works_again_after_a_failed_fit() -> None:
    model = tiny_model()
    cb = TraceCallback()
    with pytest.raises(ValueError):
        model.fit(BAD_X, GOOD_Y, verbose=0, callbacks=[cb])
    model.fit(GOOD_X, GOOD_Y, epochs=2, batch_size=4, verbose=0, callbacks=[cb])
    assert not is_patched()
    train = [f for f in cb.report.functions if f.qualname.startswith("fit · ")]
    assert sum(f.calls for f in train) >= 4  # 2 epochs × 2 batches, counted after the failure
    assert not getattr(type(model.train_function), "_tfgraph_lab_step_guard", False)  # Keras's own
    cb.close()


def test_interrupted_in_a_step_unpatches_too() -> None:
    """Ctrl-C lands in the step (where fit spends its time): KeyboardInterrupt, not only Exception."""

    class Interrupted(keras.Sequential):  # type: ignore[misc]
        def train_step(self, data: Any) -> Any:
            raise KeyboardInterrupt  # run_eagerly: raised from the step, as Ctrl-C would be

    model = Interrupted([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", run_eagerly=True)
    cb = TraceCallback()
    with pytest.raises(KeyboardInterrupt):
        model.fit(GOOD_X, GOOD_Y, batch_size=4, verbose=0, callbacks=[cb])
    assert not is_patched()
    cb.close()
