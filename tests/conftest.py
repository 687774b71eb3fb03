"""Shared test set-up: quiet TensorFlow, fail any test that leaves TensorFlow patched, and the one
IPython shell fixture every magic test module uses."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

from collections.abc import Iterator
from typing import Any

import pytest


def _tf_state() -> tuple[object, ...] | None:
    from tfgraph_lab import adapter as tfa

    h = tfa.loaded_handles()
    if h is None:
        return None
    import logging

    return (
        h.function_class.__dict__.get("__call__"),
        h.function_class.__dict__.get("_get_concrete_function_garbage_collected"),
        None if h.concrete_function_class is None else h.concrete_function_class.__dict__.get("_call_flat"),
        tuple(h.callbacks or ()),
        tuple(logging.getLogger("tensorflow").handlers),
        h.run_functions_eagerly(),
    )


@pytest.fixture(autouse=True)
def tensorflow_left_as_found() -> Iterator[None]:
    """Every test must leave TensorFlow exactly as it found it (no hook, no callback, no handler)."""
    before = _tf_state()
    yield
    from tfgraph_lab.watching.recorder import is_patched

    assert not is_patched(), "a tfgraph_lab hook is still installed in TensorFlow"
    after = _tf_state()
    if before is not None:
        assert after == before, "TensorFlow's state changed during the test"


@pytest.fixture
def small_call_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """The call log summarises cache hits after 50 calls, in windows of 100 and blocks of 20
    (instead of 20,000 calls), so a test of a long watch stays short."""
    from tfgraph_lab.recording import calllog as _calllog

    monkeypatch.setattr(_calllog, "KEEP_FIRST", 50)
    monkeypatch.setattr(_calllog, "WINDOW", 100)
    monkeypatch.setattr(_calllog, "BLOCK", 20)


@pytest.fixture
def fresh_recording() -> None:
    """Start the recording state afresh (no earlier function objects per code, no XLA keys, no
    cell labels): a model built by an earlier test would make this test's first trace a true
    new-function-object. The one reset (``recorder.reset_recording``), not monkeypatching."""
    from tfgraph_lab.watching.recorder import reset_recording

    reset_recording()


@pytest.fixture(scope="module")
def shell(request: pytest.FixtureRequest) -> Iterator[Any]:
    """IPython's shell with ``%load_ext tfgraph_lab``, shared by the tests of one module.

    A module that needs cells run first (imports, a tf.function its tests share) names them in a
    module-level ``SHELL_SETUP`` string. Each module starts from a fresh recording state, so a
    function object an earlier module defined from the same source is not this module's
    new-function-object retrace; after the module, monitoring is off and the extension unloaded.
    """
    from IPython.core.interactiveshell import InteractiveShell

    from tfgraph_lab.watching.recorder import reset_recording

    ip = InteractiveShell.instance()
    reset_recording()
    ip.run_line_magic("load_ext", "tfgraph_lab")
    setup = getattr(request.module, "SHELL_SETUP", "")
    if setup:
        result = ip.run_cell(setup)
        assert result.success, f"SHELL_SETUP of {request.module.__name__} failed: {result.error_in_exec!r}"
    yield ip
    # A cell that bound `_` itself (`for _ in range(3):`) stops IPython updating it for every
    # later module sharing this shell: forget the module's own `_`, `__`, `___`.
    for unders in ("_", "__", "___"):
        if unders in ip.user_ns and ip.user_ns[unders] is not getattr(ip.displayhook, unders, None):
            del ip.user_ns[unders]
    from tfgraph_lab.faces.monitor import shell_monitor

    shell_monitor(ip).stop()  # before unloading: an unload while on would resume at the next load
    if "tfgraph_lab" in ip.extension_manager.loaded:
        ip.run_line_magic("unload_ext", "tfgraph_lab")
