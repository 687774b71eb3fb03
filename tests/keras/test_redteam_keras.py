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
from tfgraph_lab.watching.recorder import is_patched  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_recording")  # no earlier object of this code


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


@pytest.mark.skipif(
    keras.__version__.startswith("2."),
    reason="Keras 2.15 itself: after a fit whose step's trace failed, the next fit raises "
    "'Creating variables on a non-first call' with no callback at all",
)
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


# ---------------------------------- an error outside a step: another callback, Keras's own code


class Raises(keras.callbacks.Callback):  # type: ignore[misc]
    """A user's callback that raises in one hook."""

    def __init__(self, hook: str, error: BaseException) -> None:
        super().__init__()
        self.error = error
        setattr(self, hook, self._raise)

    def _raise(self, *args: Any, **kwargs: Any) -> None:
        raise self.error


def _unrelated_calls_are_not_recorded(cb: Any) -> None:
    recorded = sum(f.calls for f in cb.report.functions)

    @tf.function
    def unrelated(x: Any) -> Any:
        return x + 1

    unrelated(tf.ones([2]))
    assert sum(f.calls for f in cb.report.functions) == recorded, "recorded a call after the failure"


OTHER_CALLBACK = {
    "on_epoch_end, listed after": ("on_epoch_end", "after", "fit"),
    "on_epoch_end, listed before": ("on_epoch_end", "before", "fit"),
    "on_train_batch_end": ("on_train_batch_end", "after", "fit"),
    "on_epoch_begin": ("on_epoch_begin", "before", "fit"),
    "on_test_batch_end": ("on_test_batch_end", "after", "evaluate"),
    "on_predict_batch_begin": ("on_predict_batch_begin", "before", "predict"),
    "on_train_end, listed before": ("on_train_end", "before", "fit"),
}
# Another callback's on_*_begin, after ours in the list: the CallbackList's on_*_begin was already
# running when ours began, so its guard cannot wrap it; an Exception still ends the watch through
# Keras's traceback filter (KeyboardInterrupt there, in that one call, would not: keras_guard).
BEGIN_AFTER = {
    "on_train_begin, listed after": ("on_train_begin", "after", "fit"),
    "on_test_begin, listed after": ("on_test_begin", "after", "evaluate"),
}
CASES = [
    (case, error)
    for case in OTHER_CALLBACK
    for error in (RuntimeError("a user's callback broke"), KeyboardInterrupt())
]
CASES += [(case, RuntimeError("a user's callback broke")) for case in BEGIN_AFTER]
OTHER_CALLBACK.update(BEGIN_AFTER)


@pytest.mark.parametrize("case, error", CASES, ids=[f"{c}-{type(e).__name__}" for c, e in CASES])
def test_another_callback_raising_unpatches_tensorflow_as_the_error_leaves(
    case: str, error: BaseException
) -> None:
    hook, where, call = OTHER_CALLBACK[case]
    logger = logging.getLogger("tfgraph_lab")
    propagate = logger.propagate
    model = tiny_model()
    cb = TraceCallback()
    other = Raises(hook, error)
    callbacks = [other, cb] if where == "before" else [cb, other]
    run = {
        "fit": lambda: model.fit(GOOD_X, GOOD_Y, epochs=2, batch_size=4, verbose=0, callbacks=callbacks),
        "evaluate": lambda: model.evaluate(GOOD_X, GOOD_Y, batch_size=4, verbose=0, callbacks=callbacks),
        "predict": lambda: model.predict(GOOD_X, batch_size=4, verbose=0, callbacks=callbacks),
    }[call]
    with pytest.raises(type(error)):
        run()
    assert not is_patched(), "TensorFlow left patched after another callback raised"
    assert logger.propagate == propagate, "the tfgraph_lab logger was left changed"
    _unrelated_calls_are_not_recorded(cb)
    cb.close()


def test_a_callback_list_passed_in_is_left_as_it_was() -> None:
    model = tiny_model()
    cb = TraceCallback()
    callbacks = keras.callbacks.CallbackList([cb, Raises("on_epoch_end", RuntimeError("x"))], model=model)
    before = dict(vars(callbacks))
    with pytest.raises(RuntimeError):
        model.fit(GOOD_X, GOOD_Y, epochs=2, batch_size=4, verbose=0, callbacks=callbacks)
    assert not is_patched()
    assert {k for k in vars(callbacks) if k.startswith("on_")} == {k for k in before if k.startswith("on_")}
    model.fit(GOOD_X, GOOD_Y, epochs=1, batch_size=4, verbose=0, callbacks=[cb])
    assert not is_patched()
    cb.close()


def test_keras_own_code_raising_between_steps_unpatches_too() -> None:
    """Validation data whose lengths differ: Keras 3.15 builds its iterator after the first
    epoch, in fit's own code (no step, no callback), and raises ValueError there."""
    logger = logging.getLogger("tfgraph_lab")
    propagate = logger.propagate
    model = tiny_model()
    cb = TraceCallback()
    bad_validation = (np.zeros((5, 4), "float32"), np.zeros((3, 1), "float32"))
    with pytest.raises(ValueError):
        model.fit(GOOD_X, GOOD_Y, validation_data=bad_validation, verbose=0, callbacks=[cb])
    assert sum(f.calls for f in cb.report.functions) > 0  # the first epoch ran, watched
    assert not is_patched(), "TensorFlow left patched after Keras's own code raised"
    assert logger.propagate == propagate
    _unrelated_calls_are_not_recorded(cb)
    cb.close()


def test_keras_is_left_as_it_was() -> None:
    """The guards wrap Keras's traceback filter and a CallbackList only while a call runs."""
    from keras.src.utils import traceback_utils

    original = traceback_utils._process_traceback_frames
    model = tiny_model()
    cb = TraceCallback()
    model.fit(GOOD_X, GOOD_Y, epochs=1, batch_size=4, verbose=0, callbacks=[cb])
    assert traceback_utils._process_traceback_frames is original
    with pytest.raises(ValueError):
        model.fit(GOOD_X, GOOD_Y, validation_data=(GOOD_X[:5], GOOD_Y[:3]), verbose=0, callbacks=[cb])
    assert traceback_utils._process_traceback_frames is original
    cb.close()


def test_with_keras_traceback_filtering_off_a_callback_error_still_unpatches() -> None:
    # Keras 3 keeps its own switch; Keras 2.15 reads TensorFlow's
    switch = getattr(keras, "config", None) if keras.__version__.startswith("3.") else tf.debugging
    switch.disable_traceback_filtering()
    try:
        model = tiny_model()
        cb = TraceCallback()
        with pytest.raises(RuntimeError):
            model.fit(
                GOOD_X, GOOD_Y, epochs=2, verbose=0, callbacks=[cb, Raises("on_epoch_end", RuntimeError("x"))]
            )
        assert not is_patched()
        cb.close()
    finally:
        switch.enable_traceback_filtering()


def test_a_watch_no_guard_saw_fail_still_ends_when_the_callback_is_collected() -> None:
    """Keras's own code raising with traceback filtering off (no guard sees it): the watch ends
    when the callback is garbage-collected; the guards keep nothing of Keras's alive."""
    import gc

    switch = getattr(keras, "config", None) if keras.__version__.startswith("3.") else tf.debugging
    switch.disable_traceback_filtering()
    try:
        model = tiny_model()
        cb = TraceCallback()
        try:
            model.fit(GOOD_X, GOOD_Y, validation_data=(GOOD_X[:5], GOOD_Y[:3]), verbose=0, callbacks=[cb])
        except ValueError:
            pass
        assert is_patched()  # the documented gap: nothing of Keras's ran on this failure path
        del cb
        gc.collect()
        assert not is_patched(), "a guard kept the callback alive: its watch never ends"
    finally:
        switch.enable_traceback_filtering()


def test_inside_an_outer_watch_a_failing_fit_ends_only_its_own() -> None:
    import tfgraph_lab

    model = tiny_model()
    cb = TraceCallback()
    with tfgraph_lab.watch() as outer:
        with pytest.raises(RuntimeError):
            model.fit(
                GOOD_X, GOOD_Y, epochs=2, verbose=0, callbacks=[cb, Raises("on_epoch_end", RuntimeError("x"))]
            )
        assert is_patched()  # the outer watch goes on: TF as it was before fit (patched by it)
        _unrelated_calls_are_not_recorded(cb)
    assert not is_patched()
    assert any(f.qualname.endswith("unrelated") for f in outer.report.functions)  # the outer one saw it
    cb.close()
