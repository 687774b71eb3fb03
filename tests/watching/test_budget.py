"""Trace budgets: parsing (table-driven) and checking."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tfgraph_lab.model.errors import UsageProblem
from tfgraph_lab.watching.budget import TraceBudget


@dataclass
class Fn:
    qualname: str
    traces: int
    framework: bool = False
    wraps: str = ""  # set on a graph TF built around a function: never over a trace budget
    label: str = ""  # the name shown (Keras's "sequential · fit · train step"); "" is the qualname

    def __post_init__(self) -> None:
        self.label = self.label or self.qualname


@pytest.mark.parametrize(
    ("value", "default", "per_function"),
    [
        (None, None, None),
        (2, 2, {}),
        ("3", 3, {}),
        ("train_step=1", None, {"train_step": 1}),
        (["2", "train_step=1", "eval_step=0"], 2, {"train_step": 1, "eval_step": 0}),
        ({"f": 4}, None, {"f": 4}),
        ([" f = 2 "], None, {"f": 2}),
    ],
)
def test_parse(value: object, default: int | None, per_function: dict[str, int] | None) -> None:
    budget = TraceBudget.parse(value)  # type: ignore[arg-type]
    if per_function is None:
        assert budget is None
        return
    assert budget is not None
    assert budget.default == default
    assert dict(budget.per_function) == per_function


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x", "not a whole number"),
        ("-1", ">= 0"),
        ("=3", "function name before '=' is empty"),
        ("f=", "not a whole number"),
        (["1", "2"], "two plain numbers"),
        (True, "must be a number"),
        (-5, ">= 0"),
        ({"f": "2"}, "whole number"),
    ],
)
def test_parse_errors_say_what_is_valid(value: object, message: str) -> None:
    with pytest.raises(UsageProblem, match=message):
        TraceBudget.parse(value)  # type: ignore[arg-type]


def test_overruns_per_function_and_default() -> None:
    budget = TraceBudget.parse(["1", "Model.train_step=2"])
    assert budget is not None
    fns = [Fn("f", 1), Fn("g", 2), Fn("Model.train_step", 2), Fn("keras_internal", 9, framework=True)]
    assert budget.overruns(fns) == [("g", 2, 1)]
    assert budget.overruns([Fn("f", 3, wraps="f", label="tf.data wrapper around f")]) == []


def test_suffix_match_and_framework_only_when_named() -> None:
    budget = TraceBudget.parse(["train_step=1", "one_step_on_data=1"])
    assert budget is not None
    fns = [Fn("Model.train_step", 3), Fn("Trainer.one_step_on_data", 2, framework=True)]
    assert budget.overruns(fns) == [("Model.train_step", 3, 1), ("Trainer.one_step_on_data", 2, 1)]
