"""The explainer over hand-built signatures: no TensorFlow needed (table-driven)."""

from __future__ import annotations

import pytest

from tfgraph_lab.explain.fixes import input_signature_text
from tfgraph_lab.explain.trace import CODES, explain_trace
from tfgraph_lab.model.signatures import ArgLeaf, Signature


def t(path: str, shape: tuple[int | None, ...] | None, dtype: str = "float32") -> ArgLeaf:
    return ArgLeaf(path, "tensor", "Tensor", dtype, shape)


def py(path: str, value: object) -> ArgLeaf:
    return ArgLeaf(path, "python", type(value).__name__, value=repr(value))


def obj(path: str, address: str, type_name: str = "M") -> ArgLeaf:
    return ArgLeaf(path, "object", type_name, value=f"at {address}")


def lst(path: str, n: int) -> ArgLeaf:
    return ArgLeaf(path, "container", "list", value=f"of length {n}")


def var(path: str, shape: tuple[int, ...], dtype: str = "float32") -> ArgLeaf:
    return ArgLeaf(path, "variable", "Variable", dtype, shape)


def sig(*leaves: ArgLeaf, context: str = "eager") -> Signature:
    return Signature(tuple(leaves), ", ".join(leaf.path for leaf in leaves), context)


CASES = [
    # (name, cached, new, expected [(code, argument, before, after)])
    ("first", [], sig(t("x", (2,))), [("first-trace", "", "", "")]),
    (
        "shape",
        [sig(t("x", (32, 128)))],
        sig(t("x", (17, 128))),
        [("shape-changed", "x", "(32, 128)", "(17, 128)")],
    ),
    ("rank", [sig(t("x", (2, 2)))], sig(t("x", ())), [("rank-changed", "x", "(2, 2)", "()")]),
    (
        "dtype",
        [sig(t("a", (), "int32"))],
        sig(t("a", (), "float32")),
        [("dtype-changed", "a", "int32", "float32")],
    ),
    ("python int", [sig(py("n", 10))], sig(py("n", 20)), [("python-value-changed", "n", "10", "20")]),
    (
        "python bool",
        [sig(py("training", True))],
        sig(py("training", False)),
        [("python-value-changed", "training", "True", "False")],
    ),
    (
        "python to tensor",
        [sig(py("n", 10))],
        sig(t("n", ())),
        [("type-changed", "n", "Python value (int)", "Tensor (Tensor)")],
    ),
    (
        "list length",
        [sig(lst("l", 2), t("l[0]", (1,)), t("l[1]", (1,)))],
        sig(lst("l", 3), t("l[0]", (1,)), t("l[1]", (1,)), t("l[2]", (1,))),
        [("structure-changed", "l", "list of length 2", "list of length 3")],
    ),
    (
        "nested path",
        [sig(ArgLeaf("cfg", "container", "dict", value="keys ['lr']"), py("cfg['lr']", 0.1))],
        sig(ArgLeaf("cfg", "container", "dict", value="keys ['lr']"), py("cfg['lr']", 0.2)),
        [("python-value-changed", "cfg['lr']", "0.1", "0.2")],
    ),
    (
        "object",
        [sig(obj("module", "0x1"))],
        sig(obj("module", "0x2")),
        [("object-changed", "module", "M object at 0x1", "M object at 0x2")],
    ),
    (
        "variable",
        [sig(var("v", (2,)))],
        sig(var("v", (3,))),
        [
            (
                "variable-changed",
                "v",
                "Variable(shape=(2,), dtype=float32)",
                "Variable(shape=(3,), dtype=float32)",
            )
        ],
    ),
    (
        "argument added",
        [sig(t("x", (2,)))],
        sig(t("x", (2,)), py("y", 1)),
        [("structure-changed", "y", "absent", "int 1")],
    ),
    (
        "context",
        [sig(t("x", (2,)), context="eager")],
        sig(t("x", (2,)), context="inside graph outer"),
        [("context-changed", "", "eager", "inside graph outer")],
    ),
]


@pytest.mark.parametrize(("name", "cached", "new", "expected"), CASES, ids=[c[0] for c in CASES])
def test_reasons(
    name: str, cached: list[Signature], new: Signature, expected: list[tuple[str, str, str, str]]
) -> None:
    reasons = explain_trace(new, cached)
    assert [(r.code, r.argument, r.before, r.after) for r in reasons] == expected
    for r in reasons:
        assert r.code in CODES
        assert r.message
        if r.code != "first-trace":
            assert r.fix, f"{r.code} has no fix"


def test_closest_cached_graph_wins() -> None:
    cached = [sig(t("x", (4, 3)), py("n", 2)), sig(t("x", (2, 3)), py("n", 2))]
    reasons = explain_trace(sig(t("x", (2, 3)), py("n", 3)), cached)
    assert [(r.code, r.argument) for r in reasons] == [("python-value-changed", "n")]


def test_variable_creation_second_trace() -> None:
    first = sig(t("x", ()))
    reasons = explain_trace(sig(t("x", ())), [first], cached_scopes=["variable-creation"], scope="")
    assert [r.code for r in reasons] == ["variable-creation"]


def test_new_function_object_and_method_instances() -> None:
    new = sig(t("x", ()))
    assert [r.code for r in explain_trace(new, [], other_objects=[new], qualname="f")] == [
        "new-function-object"
    ]
    method = explain_trace(new, [], other_objects=[new], qualname="M.f", kind="method")
    assert [r.code for r in method] == ["first-trace"]
    assert "instance" in method[0].message


def test_reduce_retracing_says_what_it_generalised_to() -> None:
    call = sig(t("x", (5,)))
    graph = sig(t("x", (None,)))
    reasons = explain_trace(graph, [sig(t("x", (3,)))], call=call, reduce_retracing=True)
    assert [(r.code, r.before, r.after) for r in reasons] == [("shape-changed", "(3,)", "(5,)")]
    assert "generalised it to (None,)" in reasons[0].message


def test_last_partial_batch_fix_leads_with_the_none_dim_then_drop_remainder() -> None:
    (reason,) = explain_trace(sig(t("images", (18, 28))), [sig(t("images", (32, 28)))])
    # the None dimension works whatever made the batches; drop_remainder only for tf.data
    assert reason.fix.index("tf.TensorSpec([None, 28], tf.float32)") < reason.fix.index(
        "tf.data: .batch(..., drop_remainder=True)"
    )
    assert "dataset" not in reason.message and "smaller last batch" in reason.message


def test_last_partial_batch_with_no_plan_still_names_full_batches() -> None:
    # a new object too: no input_signature describes it, reduce_retracing would save nothing
    shape, _ = explain_trace(sig(t("x", (8, 4)), obj("m", "0x2")), [sig(t("x", (32, 4)), obj("m", "0x1"))])
    assert shape.code == "shape-changed" and not shape.plans
    assert shape.fix == (
        "pass full batches only (tf.data: .batch(..., drop_remainder=True)): "
        "these calls also differ in more than shapes"
    )


@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        ([(32, 128), (17, 128)], "@tf.function(input_signature=[tf.TensorSpec([None, 128], tf.float32)])"),
        ([(3,), (5,), (7,)], "@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])"),
        ([(2, 2), ()], "@tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])"),
        ([(4, 4)], "@tf.function(input_signature=[tf.TensorSpec([4, 4], tf.float32)])"),
    ],
)
def test_input_signature_from_shapes_seen(shapes: list[tuple[int, ...]], expected: str) -> None:
    history = [sig(t("x", s)) for s in shapes]
    assert input_signature_text("x", history, "float32") == expected
