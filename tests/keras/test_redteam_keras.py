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
    assert len(cb.ended_early) == 1 and f"watch of {call.split(',')[0]} ended early" in cb.ended_early[0]
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
    train = [f for f in cb.report.functions if f.label.startswith("fit · ")]
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
# running when ours began, so its guard cannot wrap it; an Exception ends the watch through Keras's
# traceback filter, a KeyboardInterrupt through the once-only guard on the later callbacks' hook
# (issue 33.7: Ctrl-C there left TensorFlow patched until garbage collection).
BEGIN_AFTER = {
    "on_train_begin, listed after": ("on_train_begin", "after", "fit"),
    "on_test_begin, listed after": ("on_test_begin", "after", "evaluate"),
}
CASES = [
    (case, error)
    for case in OTHER_CALLBACK
    for error in (RuntimeError("a user's callback broke"), KeyboardInterrupt())
]
CASES += [(case, error) for case in BEGIN_AFTER for error in (RuntimeError("a user's callback broke"), KeyboardInterrupt())]
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
    assert cb.ended_early and type(error).__name__ in cb.ended_early[-1]  # said, not silent
    assert hook in vars(other) and getattr(other, hook) == other._raise  # its own hook put back
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


# ------------------------- issue 33.7: errors caught inside fit end nothing; the watch goes on


class EpochProbe(keras.callbacks.Callback):  # type: ignore[misc]
    """Whether the watch runs at each epoch's end, and the calls it has counted by then."""

    def __init__(self, cb: Any) -> None:
        super().__init__()
        self.cb, self.seen = cb, []

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.seen.append((is_patched(), sum(f.calls for f in self.cb.report.functions)))


def _watched_every_epoch(probe: EpochProbe, cb: Any, model: Any, epochs: int) -> None:
    assert [patched for patched, _ in probe.seen] == [True] * epochs, probe.seen  # ended after epoch 1
    counted = [calls for _, calls in probe.seen]
    assert counted == sorted(set(counted)), counted  # every epoch's calls counted
    assert not is_patched() and cb.ended_early == []
    from tfgraph_lab.adapter.keras_steps import step_functions

    rows = {f.label: f.traces for f in cb.report.functions}
    steps = step_functions(model, "train")
    assert steps and all(  # TF's own count of each of Keras's train tf.functions
        rows[f"fit · train {part}"] == fn.experimental_get_tracing_count() for fn, part in steps
    ), (rows, [(part, fn.experimental_get_tracing_count()) for fn, part in steps])


def test_a_dataset_of_unknown_size_is_watched_to_the_last_epoch() -> None:
    """Keras 3.15 ends such an epoch when the step raises OutOfRangeError/StopIteration, and
    catches it; the step guard took it for a failure and ended the watch after the first epoch."""
    data = tf.data.Dataset.from_tensor_slices((GOOD_X, GOOD_Y)).filter(lambda x, y: True).batch(4)
    assert data.cardinality() == tf.data.UNKNOWN_CARDINALITY
    model, cb = tiny_model(), TraceCallback()
    probe = EpochProbe(cb)
    model.fit(data, epochs=3, verbose=0, callbacks=[cb, probe])
    _watched_every_epoch(probe, cb, model, 3)
    cb.close()


@pytest.mark.parametrize("watched", [False, True], ids=["evaluate unwatched", "evaluate given the callback"])
def test_an_evaluate_error_the_users_callback_catches_ends_nothing(watched: bool) -> None:
    model, cb = tiny_model(), TraceCallback()
    caught: list[str] = []

    class EvaluatesBadData(keras.callbacks.Callback):  # type: ignore[misc]
        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            try:
                self.model.evaluate(BAD_X, GOOD_Y, verbose=0, callbacks=[cb] if watched else [])
            except Exception as exc:  # the user's own handling
                caught.append(type(exc).__name__)

    probe = EpochProbe(cb)
    model.fit(
        GOOD_X, GOOD_Y, epochs=3, batch_size=4, validation_data=(GOOD_X, GOOD_Y), verbose=0,
        callbacks=[cb, EvaluatesBadData(), probe],
    )  # fmt: skip
    assert len(caught) == 3
    _watched_every_epoch(probe, cb, model, 3)  # the fit's own end ended the watch (was: never)
    _unrelated_calls_are_not_recorded(cb)
    cb.close()
