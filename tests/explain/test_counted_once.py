"""A loop's n retraces are each explained against the graphs before it; what is counted over
those graphs is rewritten once per graph, not once per retrace (issue 36: the report of 800
float retraces took 18 s, TF 2.21), and counts the same as when it was rewritten each time."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

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


class SpecBuilderBefore:
    """``fixes._SpecBuilder`` as it was before it read a folded history (tfgraph_lab 2b12197)."""

    def __init__(self, history: Sequence[Signature], dtypes: dict[str, str]) -> None:
        self.history = history
        self.maps = [sig.by_path() for sig in history]
        self.dtypes = dtypes
        self.converted: list[str] = []  # Python scalars the spec turns into tensors

    def spec(self, path: str) -> str | None:
        leaves = [m.get(path) for m in self.maps]
        if any(leaf is None for leaf in leaves):
            return None
        present = [leaf for leaf in leaves if leaf is not None]
        first = present[0]
        if any(leaf.kind != first.kind or leaf.type_name != first.type_name for leaf in present):
            return None
        if first.kind == "tensor":
            dtypes = {self.dtypes.get(path, leaf.dtype or "") for leaf in present}
            if len(dtypes) != 1:
                return None
            return fixes.spec_for_shapes([leaf.shape for leaf in present], dtypes.pop())
        if first.kind == "python" and first.type_name in fixes.PYTHON_TENSOR_DTYPES:
            self.converted.append(path)
            return f"tf.TensorSpec([], tf.{fixes.PYTHON_TENSOR_DTYPES[first.type_name]})"
        if first.kind == "container" and first.type_name in ("list", "tuple", "dict"):
            if any(leaf.value != first.value for leaf in present):
                return None
            children = fixes._children(self.history[0], path)
            parts = []
            for child in children:
                inner = self.spec(child)
                if inner is None:
                    return None
                if first.type_name == "dict":
                    parts.append(f"{child[len(path) + 1 : -1]}: {inner}")
                else:
                    parts.append(inner)
            if first.type_name == "dict":
                return "{" + ", ".join(parts) + "}"
            if first.type_name == "tuple":
                return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
            return "[" + ", ".join(parts) + "]"
        return None  # objects, variables, strings, None, composites: no TensorSpec fits


def specs_before(history: list[Signature], dtypes: dict[str, str]) -> tuple[list[str | None], list[str]] | None:
    params = fixes.top_parameters(history[-1])
    if not params or any(fixes.top_parameters(sig) != params for sig in history):
        return None
    builder = SpecBuilderBefore(history, dtypes)
    return [builder.spec(p) for p in params], builder.converted


def specs_now(history: list[Signature], dtypes: dict[str, str]) -> tuple[list[str | None], list[str]] | None:
    params = fixes.top_parameters(history[-1])
    seen = fixes._HISTORIES.over(history)
    if not params or len(seen.parameter_lists) != 1:
        return None
    builder = fixes._SpecBuilder(seen, dtypes)
    return [builder.spec(p) for p in params], builder.converted


def test_an_input_signature_read_from_the_folded_graphs_is_the_one_read_from_each_graph() -> None:
    """Histories of tensors of varying shapes and dtypes, Python values, containers and
    objects, a parameter missing from some graphs; read in a loop's order (each history the one
    before and a graph more) and at random: the specs are those read graph by graph."""
    rng = random.Random(36)

    def leaves(i: int) -> tuple[ArgLeaf, ...]:
        x = rng.choice([
            ArgLeaf("x", "tensor", "Tensor", "float32", (i % 4 + 1, 3)),
            ArgLeaf("x", "tensor", "Tensor", "float32", (2, 3)),
            ArgLeaf("x", "tensor", "Tensor", "int32", (2, 3)),
            ArgLeaf("x", "tensor", "Tensor", "float32", (None, 3)),
            ArgLeaf("x", "tensor", "Tensor", "float32", None),
            ArgLeaf("x", "tensor", "Tensor", "float32", (2, 3, 1)),
            ArgLeaf("x", "python", "float", value=f"{i}.5"),
        ])
        pair = rng.choice([
            (ArgLeaf("p", "container", "tuple", value="of length 2"),
             ArgLeaf("p[0]", "tensor", "Tensor", "float32", (i % 3,)),
             ArgLeaf("p[1]", "python", "int", value=str(i % 2))),
            (ArgLeaf("p", "container", "list", value="of length 1"),
             ArgLeaf("p[0]", "tensor", "Tensor", "float32", (4,))),
            (ArgLeaf("p", "object", "Config", value="#1 at 0x1"),),
        ])
        flag = (ArgLeaf("training", "python", "bool", value=str(i % 2 == 0)),) if i % 5 else ()
        return (x, *pair, *flag)

    graphs = [Signature(leaves(i), f"#{i}") for i in range(120)]
    histories = [graphs[:n] for n in range(1, 121)]
    shapes = [Signature((ArgLeaf("x", "tensor", "Tensor", "float32", (1 + i % 3, 3)),), f"s{i}") for i in range(40)]
    histories += [shapes[:n] for n in range(1, 41)]  # a shape loop: the spec relaxes at its 2nd graph
    histories += [shapes[:n] for n in range(40, 0, -1)]  # again: the counts kept for it are the same
    histories += [rng.sample(graphs, rng.randint(1, 12)) for _ in range(400)]
    checked = 0
    for history in histories:
        for dtypes in ({}, {"x": "float32"}, {"x": "int64", "p[0]": "float64"}):
            assert specs_now(history, dtypes) == specs_before(history, dtypes), history
            checked += specs_before(history, dtypes) is not None
    assert checked > 300
