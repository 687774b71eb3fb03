"""One recording state (the hub) with one reset: what outlives a watch — which code earlier
function objects traced, the XLA keys seen, cell labels — is forgotten by
``recorder.reset_recording()`` and by nothing else."""

from __future__ import annotations

from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.watching.recorder import reset_recording  # noqa: E402


def body(x: Any) -> Any:
    return x * 3


def first_codes(fn: Any) -> list[str]:
    with tfgraph_lab.watch() as w:
        fn(tf.ones([2]))
    return [e.reasons[0].code for e in w.report.events if e.traced]


def test_reset_forgets_earlier_function_objects_of_the_same_code() -> None:
    reset_recording()
    assert first_codes(tf.function(body)) == ["first-trace"]
    assert first_codes(tf.function(body)) == ["new-function-object"]  # TF's cache starts empty again
    reset_recording()
    assert first_codes(tf.function(body)) == ["first-trace"]


def test_reset_is_refused_while_a_watch_records() -> None:
    with tfgraph_lab.watch(), pytest.raises(RuntimeError, match="between watches"):
        reset_recording()
