"""The vocabularies (``vocab``: how a graph came, its scope, reason codes) are ``str`` enums
whose JSON is the plain strings' byte for byte: a known report, recorded from real TensorFlow,
is compared with the JSON written before the enums existed (``data/known_report.json``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402

KNOWN = Path(__file__).parents[1] / "data" / "known_report.json"
# Texts other work rewrites (fix wording, plans) and times vary: left out of the comparison.
VOLATILE_TEXT = {"message", "fix", "suggestion", "hints", "warnings", "fix_plans", "tf_version", "watch_seconds"}


def scenario() -> Any:
    """Every way a graph comes (call, get_concrete_function, tf.data), both scopes and most
    reason codes, recorded in one watch."""

    @tf.function
    def step(x, n):  # python-value-changed, shape, rank, dtype, structure below
        return x * n

    class Scaler(tf.Module):
        def __init__(self) -> None:
            self.v: Any = None

        @tf.function
        def __call__(self, x):  # creates a variable on its first call: variable-creation scope
            if self.v is None:
                self.v = tf.Variable(2.0)
            return x * self.v

    def body(x):
        return x + 1

    with tfgraph_lab.watch() as w:
        step(tf.ones([2]), 1)
        step(tf.ones([2]), 2)
        step(tf.ones([3]), 2)
        step(tf.ones([3, 1]), 2)
        step(tf.ones([3, 1], tf.int32), 2)
        step([tf.ones([1]), tf.ones([1])], 2)
        step.get_concrete_function(tf.TensorSpec([5]), 3)
        Scaler()(tf.ones([2]))
        for _ in range(2):
            tf.function(body)(tf.ones([2]))  # new-function-object
        list(tf.data.Dataset.range(3).map(lambda i: i * 2))
    return w.report


def normalised(data: Any) -> Any:
    """Times zeroed, volatile texts dropped, this file's path named ``scenario.py``."""
    if isinstance(data, dict):
        return {k: normalised(v) for k, v in data.items() if k not in VOLATILE_TEXT}
    if isinstance(data, list):
        return [normalised(v) for v in data]
    if isinstance(data, float):
        return 0.0
    if isinstance(data, str):
        return data.replace(os.path.abspath(__file__), "scenario.py")
    return data


def known_json(report: Any) -> str:
    return json.dumps(normalised(json.loads(report.to_json())), indent=1, ensure_ascii=False) + "\n"


@pytest.mark.usefixtures("fresh_recording")
def test_the_json_of_a_known_report_is_what_plain_strings_wrote() -> None:
    report = scenario()
    if os.environ.get("TFGRAPH_LAB_WRITE_KNOWN"):  # how data/known_report.json was written
        KNOWN.write_text(known_json(report), encoding="utf-8")
    assert known_json(report) == KNOWN.read_text(encoding="utf-8")
