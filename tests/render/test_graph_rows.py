"""Cache rows that read alike say what tells them apart (issue 32.6): a Keras fit, a recompile and
a fit again showed four identical ``(None, 8)`` rows for the train step, two with 0 hits, without
saying that they belong to two function objects, nor that a 0-hit row is the first trace, which
created the variables (TensorFlow traced the same signature again and calls run that graph)."""

from __future__ import annotations

import json
import re

import keras
import numpy as np
import pytest

import tfgraph_lab
from tfgraph_lab.report.trace_report import TraceReport


@pytest.mark.usefixtures("fresh_recording")
def test_rows_of_two_function_objects_and_the_variable_creating_trace_are_named() -> None:
    x = np.ones((40, 8), "float32")
    y = np.ones((40, 1), "float32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    with tfgraph_lab.watch() as w:
        model.compile("adam", "mse")
        model.fit(x, y, batch_size=40, epochs=1, verbose=0)
        model.compile("adam", "mse")
        model.fit(x, y, batch_size=40, epochs=1, verbose=0)
    report = w.report.with_view(framework=True)
    step = next(f for f in report.functions if f.label.endswith("train step"))
    assert step.function_objects == 2 and step.traces == 4 == len(step.graphs)
    assert len({g.signature for g in step.graphs}) == 1  # four rows alike
    text = str(report)
    unwrapped = text.replace("\n" + " " * 8, " ")  # a long row goes on 4 deeper than it starts
    rows = [line for line in unwrapped.splitlines() if re.match(r"    #\d+  ", line)][: len(step.graphs)]
    assert all(step.graphs[0].signature in r for r in rows), text
    assert [("function object 1 of 2" in r, "function object 2 of 2" in r) for r in rows] == [
        (True, False),
        (True, False),
        (False, True),
        (False, True),
    ], text
    first = [r for r in rows if "— 0 hits" in r]
    assert len(first) == 2 and all("created the variables" in r for r in first), text
    assert not any("created the variables" in r for r in rows if "— 0 hits" not in r), text
    assert "function object 2 of 2" in report._repr_html_()
    # the JSON carries it, and reads back the same
    data = json.loads(report.to_json())
    numbers = [
        g.get("function_object") for f in data["functions"] if f["label"] == step.label for g in f["graphs"]
    ]
    assert len(set(numbers)) == 2 and None not in numbers
    assert TraceReport.from_json(report.to_json()).function(step.label).graphs == step.graphs


@pytest.mark.usefixtures("fresh_recording")
def test_a_function_of_one_object_writes_no_object_number() -> None:
    import tensorflow as tf

    fn = tf.function(lambda v: v * 2)
    with tfgraph_lab.watch() as w:
        fn(tf.ones([2]))
        fn(tf.ones([3]))
    data = json.loads(w.report.to_json())
    assert all("function_object" not in g for f in data["functions"] for g in f["graphs"])
    assert "function object" not in str(w.report)
