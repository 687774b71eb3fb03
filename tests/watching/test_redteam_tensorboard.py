"""Red team, TensorBoard (issue 23, item 8): a log directory that cannot be written is a clear
error before anything runs, and a write that fails later never replaces the user's own exception
nor aborts training. Each case failed before its fix (TF's raw NotFoundError, TF left patched)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.keras import TraceCallback  # noqa: E402
from tfgraph_lab.watching.recorder import is_patched  # noqa: E402


@tf.function
def tb_step(x: Any) -> Any:
    return x * 2


def unwritable(tmp_path: Path) -> Path:
    (tmp_path / "afile").write_text("not a folder\n")
    return tmp_path / "afile" / "logs"


def test_callback_with_an_unwritable_log_dir_fails_before_training(tmp_path: Path) -> None:
    bad = unwritable(tmp_path)
    with pytest.raises(tfgraph_lab.TfgraphLabError) as caught:
        TraceCallback(log_dir=bad)
    message = str(caught.value)
    assert "log_dir" in message and str(bad) in message and "not a directory" in message, message
    assert not is_patched()


def test_watch_with_an_unwritable_dir_fails_before_the_block(tmp_path: Path) -> None:
    bad = unwritable(tmp_path)
    ran = []
    with pytest.raises(tfgraph_lab.TfgraphLabError, match="tensorboard_dir"), tfgraph_lab.watch(tensorboard_dir=bad):
        ran.append(True)
    assert not ran and not is_patched()


def test_a_failing_write_never_replaces_the_users_exception(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    with (
        pytest.warns(UserWarning, match="TensorBoard"),
        pytest.raises(KeyError, match="mine"),
        tfgraph_lab.watch(tensorboard_dir=logs),
    ):
        tb_step(tf.ones([2]))
        logs.rmdir() if logs.exists() else None
        logs.write_text("now a file\n")  # the directory became unwritable meanwhile
        raise KeyError("mine")
    assert not is_patched()


def test_a_failing_write_in_fit_warns_and_training_goes_on(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = TraceCallback(log_dir=logs)

    class BreakTheDir(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_begin(self, logs_: Any = None) -> None:
            if logs.exists():
                logs.rmdir()
            logs.write_text("now a file\n")

    x, y = np.zeros((8, 4), "float32"), np.zeros((8, 1), "float32")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        history = model.fit(x, y, epochs=2, verbose=0, callbacks=[BreakTheDir(), cb])
    assert len(history.history["loss"]) == 2, "training was aborted"
    assert any("TensorBoard" in str(w.message) for w in seen), [str(w.message) for w in seen]
    assert not is_patched()
    cb.close()
