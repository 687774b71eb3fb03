"""A loop's n retraces are each explained against the graphs before it; what is counted over
those graphs is rewritten once per graph, not once per retrace (issue 36: the report of 800
float retraces took 18 s, TF 2.21), and counts the same as when it was rewritten each time."""

from __future__ import annotations

import itertools
import random

import pytest

from tfgraph_lab.explain import arguments, fixes, trace
from tfgraph_lab.explain.fixes import call_plan
from tfgraph_lab.model.signatures import ArgLeaf, Signature
from tfgraph_lab.model.vocab import ReasonCode


def loop_graphs(n: int) -> list[Signature]:
    """The graphs of a loop passing a new Python float, with now and then a tensor for ``s``
    and another dtype of ``x``: rewriting ``s`` merges some, not all."""
    out = []
    for i in range(n):
        x = ArgLeaf("x", "tensor", "Tensor", "float32" if i % 5 else "float64", (2,))
        s = (
            ArgLeaf("s", "tensor", "Tensor", "float32", ())
            if i % 7 == 3
            else ArgLeaf("s", "python", "float", value=f"{i % 11}.5")
        )
        out.append(Signature((x, s), f"x, s #{i}"))
    return out


def test_a_keyed_count_is_the_count_rewritten_each_time() -> None:
    graphs = loop_graphs(60)
    as_tensor, key = arguments._python_as_tensor("s", "float32")
    for n in range(1, 60):
        history = graphs[:n]
        counted = call_plan(history, {"s": "tf.constant(s)"}, as_tensor, key=key).graphs
        assert counted == call_plan(history, {"s": "tf.constant(s)"}, as_tensor).graphs
        assert counted == len({tuple(as_tensor(leaf) for leaf in sig.leaves) for sig in history})


def test_each_graph_is_rewritten_once_for_all_the_retraces_after_it() -> None:
    graphs = loop_graphs(60)
    as_tensor, key = arguments._python_as_tensor("s", "float32")
    rewritten = 0

    def counting(leaf: ArgLeaf) -> ArgLeaf:
        nonlocal rewritten
        rewritten += 1
        return as_tensor(leaf)

    for n in range(1, 61):
        call_plan(graphs[:n], {"s": "tf.constant(s)"}, counting, key=key)
    assert rewritten == 60 * 2  # each graph's 2 leaves once, not 1 + 2 + … + 60 times


def test_a_loops_reasons_count_the_graphs_before_each_retrace() -> None:
    """Explained in order, as the report does: each reason's promise counts the graphs up to
    its retrace (as the graphs were rewritten for it alone)."""
    graphs = [
        Signature(
            (ArgLeaf("x", "tensor", "Tensor", "float32", (2,)), ArgLeaf("s", "python", "float", value=f"{i}.5")),
            f"x, s={i}.5",
        )
        for i in range(30)
    ]
    for n, new in itertools.islice(enumerate(graphs), 1, None):
        (reason,) = trace.explain_trace(new, graphs[:n], qualname="scale")
        assert reason.code == ReasonCode.PYTHON_VALUE_CHANGED
        fewer = f"{n} fewer graph{'s' if n != 1 else ''}: 1 graph instead of {n + 1}"
        assert fewer in reason.fix, reason.fix


def test_two_rewrites_of_the_same_graphs_are_kept_apart() -> None:
    """Each reason rewrites the graphs its own way: a count keyed for one rewrite is not read
    for another."""
    graphs = loop_graphs(40)
    as_tensor, key = arguments._python_as_tensor("s", "float32")

    def x_as_float32(leaf: ArgLeaf) -> ArgLeaf:
        if leaf.path != "x" or leaf.kind != "tensor":
            return leaf
        return ArgLeaf("x", "tensor", "Tensor", "float32", leaf.shape)

    for transform, name in ((as_tensor, key), (x_as_float32, "tensor x cast to float32"), (as_tensor, key)):
        keyed = call_plan(graphs, {}, transform, key=name).graphs
        assert keyed == call_plan(graphs, {}, transform).graphs
    assert call_plan(graphs, {}, as_tensor, key=key).graphs != call_plan(graphs, {}, x_as_float32).graphs


def relaxed_from_scratch(history: list[Signature]) -> list[tuple[ArgLeaf, ...]]:
    graphs: list[tuple[ArgLeaf, ...]] = []
    for sig in history:
        fixes._relax_into(graphs, sig.leaves)
    return graphs


def test_reduce_retracing_goes_on_from_the_count_before_only_for_the_same_graphs() -> None:
    """Histories that extend the one counted before (a loop's retraces, in order), histories
    that share its last graph but not the ones before it, a graph replaced by an equal one,
    shorter ones: each counts what counting from the first graph gives."""
    rng = random.Random(36)
    shapes = [(1, 3), (2, 3), (4, 3), (4, 5), (2, 3, 1), (None, 3)]
    graphs = [
        Signature((ArgLeaf("x", "tensor", "Tensor", rng.choice(["float32", "int32"]), rng.choice(shapes)),), f"#{i}")
        for i in range(80)
    ]
    histories = [graphs[:n] for n in range(1, 80)]  # the loop, in order
    histories += [rng.sample(graphs, rng.randint(1, 30)) for _ in range(200)]
    histories += [[*h[:-1], Signature(h[-1].leaves, "an equal copy")] for h in histories[:40]]
    histories += [graphs[:n] for n in range(79, 0, -7)]
    for history in histories:
        assert fixes._relaxed_graphs(history) == relaxed_from_scratch(history)
        assert fixes.graphs_with_reduce_retracing(history) == len(relaxed_from_scratch(history))


def test_a_shape_loops_reduce_retracing_counts_relax_each_graph_once(monkeypatch: pytest.MonkeyPatch) -> None:
    graphs = [Signature((ArgLeaf("x", "tensor", "Tensor", "float32", (i + 1, 3)),), f"#{i}") for i in range(60)]
    relaxed = 0
    real = fixes._relax_into

    def counting(into: list[tuple[ArgLeaf, ...]], leaves: tuple[ArgLeaf, ...]) -> None:
        nonlocal relaxed
        relaxed += 1
        real(into, leaves)

    monkeypatch.setattr(fixes, "_relax_into", counting)
    counts = [fixes.graphs_with_reduce_retracing(graphs[:n]) for n in range(1, 61)]
    assert counts == [1] + [2] * 59  # (1, 3), then (None, 3) for every later size
    assert relaxed == 60  # not 1 + 2 + … + 60
