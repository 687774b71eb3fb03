"""A function's Python ``qualname`` and the ``label`` people read (issue 33, item 5).

The JSON's ``functions[].qualname`` and ``events[].qualname`` are the Python ``__qualname__``
(docs/ARCHITECTURE.md, the JSON section: outside tools key on it); a name made for people
("sequential · fit · train step", "tf.data wrapper around preprocess", "replica clone of
replica_fn") is the additive ``label``, which the renderings show. ``report.function(name)`` and ``FN=N`` budgets take either, and a
report saved before labels (its qualname held the label) still loads.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tfgraph_lab.explain.fix_text import short_fix
from tfgraph_lab.explain.fixes import code_name
from tfgraph_lab.model.records import name_match
from tfgraph_lab.report import TraceReport
from tfgraph_lab.report.merge import merge_reports

KERAS_LABEL = "sequential · fit · train step"
KERAS_QUALNAME = "TensorFlowTrainer._make_function.<locals>.one_step_on_data"

# What a version before labels wrote for a recompiled Keras model: the label in `qualname`,
# no `label`, and a hoist plan on Keras's new function object.
OLD_REPORT: dict[str, Any] = {
    "version": 1,
    "functions": [
        {
            "qualname": KERAS_LABEL,
            "filename": "keras/src/backend/tensorflow/trainer.py",
            "firstlineno": 131,
            "calls": 6,
            "traces": 4,
            "retraces": 1,
            "framework": True,
        }
    ],
    "events": [
        {
            "index": 3,
            "qualname": KERAS_LABEL,
            "filename": "keras/src/backend/tensorflow/trainer.py",
            "traced": True,
            "traces": 1,
            "retraces": 1,
            "reasons": [
                {
                    "code": "new-function-object",
                    "message": "a new tf.function object wraps it",
                    "fix": f"create the tf.function once and reuse it: {KERAS_LABEL} = tf.function({KERAS_LABEL})",
                    "fix_plans": [{"hoist": True, "graphs": 1}],
                }
            ],
        }
    ],
}


def test_a_report_saved_before_labels_loads_with_its_qualname_as_label() -> None:
    report = TraceReport.from_json(json.dumps(OLD_REPORT))
    (fn,) = report.functions
    assert fn.label == fn.qualname == KERAS_LABEL
    assert report.events[0].label == KERAS_LABEL
    assert report.function("fit · train step") is fn  # as the label's ending, as before
    # the label in a saved report's qualname never becomes code: the code calls it `f`
    (reason,) = report.events[0].reasons
    code = short_fix(reason, code_name(report.events[0].qualname)).code
    assert KERAS_LABEL not in code and code.startswith("f = tf.function(f)")
    # written again, it gains the label and keeps what it read
    again = json.loads(report.to_json())
    assert again["functions"][0]["label"] == again["functions"][0]["qualname"] == KERAS_LABEL


def _row(qualname: str, label: str = "", traces: int = 2) -> dict[str, Any]:
    return {"qualname": qualname, "label": label or qualname, "filename": "trainer.py", "calls": 4, "traces": traces}


def test_function_finds_a_row_by_its_qualname_or_its_label() -> None:
    report = TraceReport.from_dict(
        {
            "version": 1,
            "functions": [
                _row(KERAS_QUALNAME, KERAS_LABEL),
                _row(KERAS_QUALNAME, "sequential · fit · validation / evaluate · test step"),
                _row("train.<locals>.step"),
            ],
            "events": [],
        }
    )
    train, test, step = report.functions
    assert report.function(KERAS_LABEL) is train
    assert report.function("fit · train step") is train
    assert report.function("test step") is test
    assert report.function(KERAS_QUALNAME) is train  # a qualname two rows share: the first
    assert report.function("one_step_on_data") is train
    assert report.function("step") is step and report.function("train.<locals>.step") is step
    with pytest.raises(KeyError, match="sequential · fit · train step"):  # the names people read
        report.function("nothing")
    assert name_match("ain step", KERAS_QUALNAME, KERAS_LABEL) == 0  # an ending is a whole part


def test_merged_rows_and_breakdown_keep_qualname_and_label_apart() -> None:
    def one() -> TraceReport:
        rows = [_row(KERAS_QUALNAME, KERAS_LABEL), _row(KERAS_QUALNAME, "sequential · predict step", 1)]
        return TraceReport.from_dict({"version": 1, "functions": rows, "events": []})

    merged = merge_reports([("a.json", one()), ("b.json", one())])
    rows = {f.label: f for f in merged.report.functions}
    assert rows[KERAS_LABEL].traces == 4 and rows["sequential · predict step"].traces == 2  # not summed together
    assert {f.qualname for f in merged.report.functions} == {KERAS_QUALNAME}
    (a, _) = [p["functions"] for p in merged.to_dict()["processes"]]
    assert {(c["qualname"], c["label"]) for c in a} == {
        (KERAS_QUALNAME, KERAS_LABEL),
        (KERAS_QUALNAME, "sequential · predict step"),
    }
    assert "sequential · predict step" in str(merged.report)


def _wrapper_report() -> TraceReport:
    """A tf.data wrapper row (the user's ``preprocess``, labelled for people) whose retrace has a
    call-site fix, as the JSON holds it."""
    label = "tf.data wrapper around preprocess"
    reason = {
        "code": "python-value-changed",
        "argument": "k",
        "before": "1.0",
        "after": "2.0",
        "message": "`k` took a new Python value",
        "fix": "pass `k` as a tensor: preprocess(..., k=tf.constant(k))  # at every call",
        "fix_plans": [{"call": [["k", "tf.constant(k)"]], "graphs": 1}],
    }
    fn = {**_row("make.<locals>.preprocess", label, traces=2), "retraces": 1, "calls": 2}
    events = [
        {"index": i, "qualname": "make.<locals>.preprocess", "label": label, "filename": "trainer.py",
         "traced": True, "traces": 1, "retraces": i, "reasons": [reason] if i else [], "call_number": i + 1}
        for i in (0, 1)
    ]
    return TraceReport.from_dict({"version": 1, "functions": [fn], "events": events})


def test_every_rendering_names_the_label_and_the_code_calls_the_python_name() -> None:
    from tfgraph_lab.render.notice import RetraceNotice
    from tfgraph_lab.render.overrun import overrun_text
    from tfgraph_lab.watching.budget import TraceBudget

    report = _wrapper_report()
    label = "tf.data wrapper around preprocess"
    summary = report.with_view(brevity="summary")
    overruns = TraceBudget.parse(["preprocess=1"]).overruns(report.functions)
    assert overruns == [(label, 2, 1)]  # a budget named by the Python name, said by the label
    for shown in (str(report), report._repr_html_(), str(summary), str(RetraceNotice(report)), overrun_text(report, overruns)):
        assert label in shown, shown
        assert "tf.function(tf.data" not in shown and "tf.data wrapper around preprocess(" not in shown
    assert "preprocess(..., k=tf.constant(k))" in str(report)  # the code: the Python name


@pytest.mark.slow
def test_keras_steps_json_qualname_is_keras_python_name_and_budgets_take_either() -> None:
    """fit/evaluate/predict in a watch: the JSON names Keras's step functions by their Python
    ``__qualname__`` (read from the model's own step tf.functions) and labels them for people;
    ``FN=N`` budgets apply by label and by qualname."""
    np = pytest.importorskip("numpy")
    keras = pytest.importorskip("keras")
    import tfgraph_lab
    from tfgraph_lab.adapter.keras_steps import KINDS, step_functions
    from tfgraph_lab.model.errors import TraceBudgetExceeded
    from tfgraph_lab.model.places import innermost_python_function

    x = np.ones((10, 4), "float32")
    y = np.ones((10, 1), "float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    with tfgraph_lab.watch() as w:
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)
        model.evaluate(x, y, verbose=0)
        model.predict(x, verbose=0)
    python_names = {
        innermost_python_function(fn.python_function).__qualname__
        for kind in KINDS
        for fn, _ in step_functions(model, kind)
    }
    data = w.report.to_dict()
    assert not any(" · " in e["qualname"] for e in data["events"])  # the JSON's qualname: Python's
    keras_rows = [f for f in data["functions"] if " · " in f["label"]]
    assert {f["label"] for f in keras_rows} >= {f"{model.name} · fit · train step", f"{model.name} · predict step"}
    assert {f["qualname"] for f in keras_rows} <= python_names and keras_rows
    assert {e["label"] for e in data["events"]} >= {f["label"] for f in keras_rows if f["calls"]}
    text = str(w.report)
    assert f"{model.name} · fit · train step" in text  # the renderings show the label

    train = w.report.function("fit · train step")
    assert train.qualname in python_names and train.qualname.endswith("one_step_on_data")
    for name in ("fit · train step", "one_step_on_data"):
        with pytest.raises(TraceBudgetExceeded) as raised, tfgraph_lab.watch(max_traces=[f"{name}=0"]):
            model.fit(x, y, batch_size=4, epochs=1, verbose=0)
            model.compile("sgd", "mse")  # new step functions: they trace in this watch
            model.fit(x, y, batch_size=4, epochs=1, verbose=0)
        assert f"{model.name} · fit · train step traced" in str(raised.value), str(raised.value)
