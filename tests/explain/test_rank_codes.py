"""Ranking the cached graphs reads only the codes :func:`_diff` would give (issue 36): checked
against the reasons ``_diff`` builds, and ``_diff`` against the comparison it had before (kept
here as written then), over signatures that differ in every kind of leaf."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import pytest

from tfgraph_lab.explain import arguments as build
from tfgraph_lab.explain import fixes, trace
from tfgraph_lab.model.records import Reason
from tfgraph_lab.model.signatures import ArgLeaf, Signature, is_under, parent_path
from tfgraph_lab.model.vocab import ReasonCode

BREAKS = {ReasonCode.STRUCTURE_CHANGED, ReasonCode.TYPE_CHANGED, ReasonCode.OBJECT_CHANGED}

# For one argument path, leaves of each kind in a few variants (equal, changed, other kind).
VARIANTS = [
    ArgLeaf("x", "tensor", "Tensor", "float32", (2, 3)),
    ArgLeaf("x", "tensor", "Tensor", "float32", (4, 3)),
    ArgLeaf("x", "tensor", "Tensor", "float32", (None, 3)),
    ArgLeaf("x", "tensor", "Tensor", "float32", None),
    ArgLeaf("x", "tensor", "Tensor", "int32", (2, 3)),
    ArgLeaf("x", "tensor", "Tensor", "float32", (2, 3, 1)),
    ArgLeaf("x", "python", "float", value="0.5"),
    ArgLeaf("x", "python", "float", value="1.5"),
    ArgLeaf("x", "python", "int", value="1"),
    ArgLeaf("x", "python", "bool", value="True"),
    ArgLeaf("x", "variable", "Variable", "float32", (2,), value="v1"),
    ArgLeaf("x", "variable", "Variable", "float32", (3,), value="v1"),
    ArgLeaf("x", "object", "Config", value="at 0x1"),
    ArgLeaf("x", "object", "Config", value="at 0x2"),
    ArgLeaf("x", "object", "Config", value="Config(lr=0.1) #1"),
    ArgLeaf("x", "object", "Config", value="Config(lr=0.2) #2"),
    ArgLeaf("x", "container", "list", value="of length 2"),
    ArgLeaf("x", "container", "list", value="of length 3"),
    ArgLeaf("x", "container", "tuple", value="of length 2"),
    ArgLeaf("x", "composite", "RaggedTensor", value="RaggedTensorSpec(tf.float32, [None, None])"),
    ArgLeaf("x", "composite", "RaggedTensor", value="RaggedTensorSpec(tf.int32, [None, None])"),
    ArgLeaf("x", "composite", "RaggedTensor", value="RaggedTensorSpec(tf.float32, [2, None])"),
    ArgLeaf("x", "other", "Thing", value="a"),
    ArgLeaf("x", "other", "Thing", value="b"),
]


def diff_before(before: Signature, after: Signature, history: Sequence[Signature]) -> list[Reason]:
    """``_diff`` as it was before the ranking read codes (tfgraph_lab 87338c8)."""
    old, new = before.by_path(), after.by_path()
    reasons: list[Reason] = []
    broken: list[str] = []
    for path, leaf in new.items():
        if any(is_under(path, b) for b in broken):
            continue
        prev = old.get(path)
        if prev is None:
            if parent_path(path) is None:
                reasons.append(build.argument_added_or_removed(path, None, leaf))
                broken.append(path)
            continue
        reason = compare_before(path, prev, leaf, history)
        if reason is not None:
            reasons.append(reason)
            if reason.code in BREAKS:
                broken.append(path)
    for path, prev in old.items():
        if path not in new and parent_path(path) is None:
            reasons.append(build.argument_added_or_removed(path, prev, None))
    return reasons


def compare_before(path: str, prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature]) -> Reason | None:
    name = "f"
    # Since then, one change on purpose: two Python values of different types (None → True,
    # 1 → 0.5) are a value's change (TF keys both by value), no longer a kind's.
    if prev.kind != leaf.kind or (prev.kind == "composite" and prev.type_name != leaf.type_name):
        return build.type_changed(path, prev, leaf, history, name)
    if leaf.kind == "tensor":
        return build.tensor_changed(path, prev, leaf, history, name)
    if leaf.kind == "python":
        return build.python_value_changed(path, prev, leaf, history, name) if prev.value != leaf.value else None
    if leaf.kind == "variable":
        if (prev.dtype, prev.shape, prev.value) != (leaf.dtype, leaf.shape, leaf.value):
            return build.variable_changed(path, prev, leaf, history, name)
        return None
    if leaf.kind == "object":
        if prev.value != leaf.value or prev.type_name != leaf.type_name:
            return build.object_changed(path, prev, leaf)
        return None
    if leaf.kind == "container":
        if prev.type_name != leaf.type_name:
            return build.type_changed(path, prev, leaf, history, name)
        if prev.value != leaf.value:
            return build.structure_changed(path, prev, leaf, history, name)
        return None
    return build.composite_changed(path, prev, leaf) if prev.value != leaf.value else None


def signature(*leaves: ArgLeaf) -> Signature:
    return Signature(tuple(leaves), ", ".join(f"{leaf.path}={leaf.value or leaf.shape}" for leaf in leaves))


def with_items(leaf: ArgLeaf, n: int) -> list[ArgLeaf]:
    """A container leaf followed by its items, as the recorder writes them."""
    if leaf.kind != "container":
        return [leaf]
    return [leaf, *(ArgLeaf(f"x[{i}]", "python", "int", value=str(i * n)) for i in range(n))]


def pairs() -> list[tuple[Signature, Signature]]:
    out = []
    for a, b in itertools.product(VARIANTS, repeat=2):
        for n, m in ((2, 2), (2, 3)):
            y = ArgLeaf("y", "python", "int", value=str(n))
            before = signature(*with_items(a, 2), y)
            after = signature(*with_items(b, m), ArgLeaf("y", "python", "int", value=str(m)))
            out.append((before, after))
            out.append((before, signature(*with_items(b, m))))  # an argument removed
            out.append((signature(*with_items(a, 2)), after))  # an argument added
    return out


def test_the_codes_rank_as_the_reasons_do() -> None:
    checked = 0
    for before, after in pairs():
        reasons = trace._diff(before, after, history=[before, after], name="f")
        assert reasons == diff_before(before, after, [before, after]), (before, after)
        codes = trace._diff_codes(before, after)
        assert len(codes) == len(reasons), (before, after, codes, reasons)
        for code, reason in zip(codes, reasons, strict=True):
            assert (code in BREAKS) == (reason.code in BREAKS), (code, reason.code)
            if code in BREAKS or code in (ReasonCode.PYTHON_VALUE_CHANGED, ReasonCode.VARIABLE_CHANGED):
                assert code == reason.code
        assert trace._rank_codes(codes) == trace._rank_codes([r.code for r in reasons])
        checked += 1
    assert checked > 3000


def test_the_graph_chosen_is_the_one_full_reasons_rank_first() -> None:
    """Over sets of three cached graphs, the reasons given are those of the graph the full
    reasons of every candidate rank first (the ranking as it was, ties to the most recent)."""
    sigs = [s for pair in pairs()[::7] for s in pair]
    checked = 0
    for i in range(0, len(sigs) - 3, 3):
        cached, new = sigs[i : i + 3], sigs[i + 3]
        ranked = []
        for against in reversed(cached):
            full = diff_before(against, new, ())
            structural = sum(r.code in (ReasonCode.STRUCTURE_CHANGED, ReasonCode.TYPE_CHANGED) for r in full)
            ranked.append(((structural, len(full), trace._distance(against, new)), against))
        best = min(ranked, key=lambda pair: pair[0])  # min keeps the first of equals: the most recent
        expected = diff_before(best[1], new, [*cached, new])
        if not expected:
            continue
        assert trace.explain_trace(new, cached, qualname="f") == [trace._stable(r) for r in expected]
        checked += 1
    assert checked > 100


def test_the_graph_explained_against_is_the_closest_by_the_full_reasons() -> None:
    """Among cached graphs that differ in different ways, the one chosen is the one the full
    reasons rank first (fewest structural changes, then fewest reasons, then the distance)."""
    x = ArgLeaf("x", "tensor", "Tensor", "float32", (2, 3))
    cached = [
        signature(ArgLeaf("x", "python", "float", value="1.0"), ArgLeaf("y", "python", "int", value="1")),
        signature(ArgLeaf("x", "tensor", "Tensor", "float32", (4, 3)), ArgLeaf("y", "python", "int", value="2")),
        signature(ArgLeaf("x", "tensor", "Tensor", "float32", (2, 5)), ArgLeaf("y", "python", "int", value="1")),
    ]
    new = signature(x, ArgLeaf("y", "python", "int", value="1"))
    reasons = trace.explain_trace(new, cached, qualname="f")
    assert [r.code for r in reasons] == [ReasonCode.SHAPE_CHANGED]
    assert (reasons[0].before, reasons[0].after) == ("(2, 5)", "(2, 3)")


def chosen_by_full_scan(new: Signature, cached: Sequence[Signature]) -> list[Reason]:
    """``explain_trace``'s reasons with every cached graph ranked (the scan before it could stop
    at a graph one change away, tfgraph_lab 81b7828)."""
    best_against, best_rank = None, None
    for against in reversed(cached):
        rank = (*trace._rank_codes(trace._diff_codes(against, new)), trace._distance(against, new))
        if best_rank is None or rank < best_rank:
            best_against, best_rank = against, rank
    assert best_against is not None and best_rank is not None
    best = trace._diff(best_against, new, history=[*cached, new], name="f") if best_rank[1] else []
    if not best:
        return [trace._context_changed(best_against, new)]
    return [trace._stable(r) for r in best]


class CountedDiffCodes:
    """``trace._diff_codes``, counting the pairs it compares."""

    def __init__(self) -> None:
        self.calls = 0
        self.real = trace._diff_codes

    def __call__(self, before: Signature, after: Signature) -> list[str]:
        self.calls += 1
        return self.real(before, after)


def test_the_scan_that_stops_early_chooses_what_the_full_scan_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lists of up to 8 cached graphs, drawn from leaves of every kind, with graphs one change
    away, graphs with no reason at all (a compatible shape, another context) and both orders:
    the reasons are those of the full scan."""
    rng = random.Random(36)
    xs = [v for v in VARIANTS if v.kind != "container"]
    ys = [ArgLeaf("y", "python", "int", value=str(i)) for i in range(3)]
    pool = [signature(x, y) for x in xs for y in ys]
    pool += [Signature(s.leaves, s.text, context="eager; device /device:CPU:1") for s in pool[::5]]
    counted = CountedDiffCodes()
    monkeypatch.setattr(trace, "_diff_codes", counted)
    stopped_early = 0
    for _ in range(3000):
        new = rng.choice(pool)
        cached = [s for s in rng.sample(pool, rng.randint(1, 8)) if s != new]
        if not cached:
            continue
        before = counted.calls
        got = trace.explain_trace(new, cached, qualname="f")
        stopped_early += counted.calls - before < len(cached)
        assert got == chosen_by_full_scan(new, cached), (new, cached)
    assert stopped_early > 300  # the early stop is exercised, not only the full scan


def test_explaining_a_loop_of_retraces_compares_each_graph_with_one_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A loop that passes a new Python float on each call: the n-th retrace is explained against
    the graph before it without ranking the n graphs (800 retraces took 18 s to report, TF 2.21,
    when each was ranked against all the graphs before it)."""
    x = ArgLeaf("x", "tensor", "Tensor", "float32", (2,))
    graphs = [signature(x, ArgLeaf("s", "python", "float", value=f"{i}.5")) for i in range(60)]
    counted = CountedDiffCodes()
    monkeypatch.setattr(trace, "_diff_codes", counted)
    reasons = [trace.explain_trace(graphs[i], graphs[:i], qualname="f") for i in range(1, 60)]
    assert counted.calls == 59  # one comparison per retrace, not 1 + 2 + … + 59 = 1770
    assert all(r[0].code == ReasonCode.PYTHON_VALUE_CHANGED for r in reasons)
    assert (reasons[-1][0].before, reasons[-1][0].after) == ("58.5", "59.5")


def test_a_graph_fits_a_call_where_its_leaves_are_their_supertype() -> None:
    """``fixes._fits``, which decides without building the supertype, against its definition
    (``_supertype(x, g) == g`` for each leaf) over leaves of every kind and shape."""
    shaped = [
        ArgLeaf("x", "tensor", "Tensor", "float32", shape)
        for shape in ((2, 3), (4, 3), (None, 3), (2, None), (None, None), (2,), (), None)
    ]
    shaped += [ArgLeaf("x", "variable", "Variable", "float32", s, value="v1") for s in ((2,), (None,), None)]
    leaves = [*VARIANTS, *shaped, ArgLeaf("y", "tensor", "Tensor", "float32", (2, 3))]
    for x, g in itertools.product(leaves, repeat=2):
        assert fixes._fits((x,), (g,)) == (fixes._supertype(x, g) == g), (x, g)
        assert fixes._fits((x, x), (g,)) is False


def test_whether_an_older_graph_could_have_no_reason_is_read_from_the_keys_folded() -> None:
    """``_older_may_have_no_reason`` (the keys of the graphs before, folded on from the history
    before) says what asking each older graph says: its first key equal to the call's, and its
    second key equal or either None."""

    def may_have_no_reason(a: tuple[object, object], b: tuple[object, object]) -> bool:
        return a[0] == b[0] and (a[1] is None or b[1] is None or a[1] == b[1])

    rng = random.Random(7)
    shaped = [ArgLeaf("x", "tensor", "Tensor", "float32", s) for s in ((2, 3), (4, 3), (None, 3), None)]
    pool = [signature(x, y) for x in [*VARIANTS, *shaped] for y in (ArgLeaf("y", "python", "int", value="1"),)]
    loop = [rng.choice(pool) for _ in range(60)]
    asked = [loop[:n] for n in range(61)] + [rng.sample(pool, rng.randint(0, 10)) for _ in range(300)]
    for older in asked:
        for new in rng.sample(pool, 5):
            alike = trace._code_free_key(new)
            expected = any(may_have_no_reason(trace._code_free_key(o), alike) for o in older)
            assert trace._older_may_have_no_reason(older, alike) == expected, (older, new)
