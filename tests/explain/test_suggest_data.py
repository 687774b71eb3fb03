"""`suggest` recognises a case by data (reason codes, failure kinds, argument types, device
scopes), never by the text of a reason: reworded messages give the same suggestion.
(The distributed cases, a PerReplica batch and replicas on two devices, are checked against
real TensorFlow in test_xla_log.py.)"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.explain.failures import VARIABLE_PER_TRACE  # noqa: E402
from tfgraph_lab.explain.suggest import PER_REPLICA_FIX, suggest_fix  # noqa: E402
from tfgraph_lab.model.records import Reason  # noqa: E402
from tfgraph_lab.model.signatures import ArgLeaf, Signature  # noqa: E402
from tfgraph_lab.model.vocab import ReasonCode  # noqa: E402

SUGGEST = Path(__file__).resolve().parents[2] / "tfgraph_lab" / "explain" / "suggest.py"


def test_suggest_reads_no_reason_text() -> None:
    text = SUGGEST.read_text(encoding="utf-8")
    assert not re.search(r"\.(message|before|after|fix)\b", text), "suggest.py reads a reason's text"


def test_a_variable_made_on_every_trace_is_recognised_by_its_failure_kind() -> None:
    @tf.function
    def makes_variable(x: Any) -> Any:
        v = tf.Variable(1.0)  # on every trace: TF's second trace (no variable scope) fails
        return x * v

    with pytest.raises(ValueError), tfgraph_lab.watch() as w:
        makes_variable(tf.ones([2]))
    summary = w.report.function("makes_variable")
    assert summary.failed_traces == 1 and "self.v = tf.Variable(...)" in (summary.suggestion or "")
    reasons = [r for e in w.report.events for r in e.reasons]
    reworded = [replace(r, message="(reworded)", fix="(reworded)") for r in reasons]
    assert suggest_fix(summary, reworded, [], failures={VARIABLE_PER_TRACE}) == summary.suggestion
    assert suggest_fix(summary, reasons, [], failures=set()) != summary.suggestion


def test_a_per_replica_argument_is_recognised_by_its_type() -> None:
    def sig(n: int, type_name: str) -> Signature:
        return Signature(
            (ArgLeaf("batch", "composite", type_name, value=f"spec of {n} rows"),), f"batch: {n}"
        )

    from tfgraph_lab.model.records import FunctionSummary

    summary = FunctionSummary("step", "s.py", 1, 2, 2, 0, 0.0, 0.0, False, retraces=1)
    shape = Reason(ReasonCode.SHAPE_CHANGED, "batch", "spec of 4 rows", "spec of 1 rows")
    spec = "PerReplicaSpec"  # TF 2.21's type spec of a distributed batch
    assert suggest_fix(summary, [shape], [sig(4, spec), sig(1, spec)]) == PER_REPLICA_FIX
    said = replace(shape, before="PerReplica(4 rows)", after="PerReplica(1 row)")
    assert suggest_fix(summary, [said], [sig(4, "Dataset"), sig(1, "Dataset")]) != PER_REPLICA_FIX


def test_a_list_then_a_dataset_is_told_one_kind_not_a_tensor() -> None:
    """TF's guide passes a Python list, then a tf.data.Dataset (case 08): "the same kind
    (always a tensor)" named a kind neither call used; Python value then tensor keeps it."""
    from tfgraph_lab.model.records import FunctionSummary

    summary = FunctionSummary("train", "t.py", 1, 2, 2, 0, 0.0, 0.0, False, retraces=1)
    reason = Reason(ReasonCode.TYPE_CHANGED, "data")
    listed = ArgLeaf("data", "container", "list", value="of length 3")
    dataset = ArgLeaf("data", "composite", "Dataset", value="DatasetSpec(...)")
    history = [Signature((listed,), "data: [...]"), Signature((dataset,), "data: DatasetSpec(...)")]
    text = suggest_fix(summary, [reason], history) or ""
    assert "the same kind on every call" in text and "tensor" not in text, text
    number = ArgLeaf("data", "python", "int", value="3")
    tensor = ArgLeaf("data", "tensor", "Tensor", "int32", ())
    history = [Signature((number,), "data: 3"), Signature((tensor,), "data: TensorSpec(...)")]
    text = suggest_fix(summary, [reason], history) or ""
    assert text == "# pass data as the same kind (always a tensor) on every call", text


def test_shape_suggestions_say_why_no_decorator_from_the_graphs() -> None:
    """Only the suggestion's reasons for no decorator changed, each read from the graphs and
    checked under TF 2.21. A vector that grows (case 17) is no last batch; a function already
    reduce_retracing=True whose iterators relaxed (case 22, TF's own test) was told "(these
    calls differ in more than shapes)", and its relaxed graph read ``<unknown>``."""

    @tf.function
    def grows(x, mode):  # type: ignore[no-untyped-def]
        return x * 2.0

    @tf.function(reduce_retracing=True)
    def relaxed(it):  # type: ignore[no-untyped-def]
        return it._type_spec is not None

    def iterator(shape: list[int]) -> Any:
        return iter(tf.data.Dataset.from_tensors(tf.zeros(shape)))

    with tfgraph_lab.watch() as w:
        grows(tf.ones([2]), "a")
        grows(tf.ones([3]), "a")
        for shape in ([1, 2], [2, 2], [3, 2], [2, 1]):
            relaxed(iterator(shape))
    assert relaxed.experimental_get_tracing_count() == 3  # (1, 2), then (None, 2), then (None, None)
    grown = w.report.function("grows").suggestion or ""
    assert grown.splitlines() == [
        "# call grows with tensors of one shape",
        "# no input_signature fits these arguments: `mode` cannot be described by a tf.TensorSpec",
        "# @tf.function(reduce_retracing=True) would save no graph: the second shape seen is traced too, to relax it",
    ]
    on = w.report.function("relaxed").suggestion or ""
    assert on.startswith("# nothing more to do: reduce_retracing is on and relaxed the shapes") and "more than shapes" not in on
    said = [r.message for e in w.report.events for r in e.reasons if r.code == "shape-changed" and "generalised it to" in r.message]
    assert said and all("<unknown>" not in m and "TensorSpec(shape=(None, 2)" in m for m in said[:1]), said
    # the same iterators into a plain tf.function: shapes in a type spec, not "more than shapes"
    plain = tf.function(relaxed.python_function)
    with tfgraph_lab.watch() as w2:
        for shape in ([1, 2], [2, 2], [3, 2]):
            plain(iterator(shape))
    assert (w2.report.function("relaxed").suggestion or "").splitlines() == [
        "# call relaxed with inputs of one shape (a dataset or iterator: elements of one shape)",
        "# or @tf.function(reduce_retracing=True) on relaxed: it relaxes an iterator's element shapes as a tensor's",
    ]
    again_relaxed = tf.function(relaxed.python_function, reduce_retracing=True)
    for shape in ([1, 2], [2, 2], [3, 2]):
        again_relaxed(iterator(shape))
    assert (plain.experimental_get_tracing_count(), again_relaxed.experimental_get_tracing_count()) == (3, 2)
    # as TF counts the claim: under reduce_retracing `grows` keeps 2 graphs too
    again = tf.function(grows.python_function, reduce_retracing=True)
    again(tf.ones([2]), "a")
    again(tf.ones([3]), "a")
    assert again.experimental_get_tracing_count() == 2
