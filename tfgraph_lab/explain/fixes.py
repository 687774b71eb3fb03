"""Fixes as data: code changes a learner can paste and a program can apply.

A :class:`~tfgraph_lab.model.records.FixPlan` is one change — keyword arguments for ``tf.function``,
a rewrite of some arguments at every call site, or "create the tf.function once" — with the
number of graphs TensorFlow would keep for the calls seen once it is applied, and what it gives
up. The explainer and the suggester build their fix texts from these plans, so the text a
learner reads is the change a test applies (``tests/explain/test_fix_table.py``).

What each cure cures was measured on TensorFlow 2.21 (``reduce_retracing=True`` relaxes tensor
and tf.Variable shapes and ranks; it does not relax a dtype, a Python value, an object's
identity, a container's length, a new tf.function object or variable creation), and an
``input_signature`` must cover every positional parameter (a parameter with a default that it
leaves out is frozen to that default: another value raises TypeError); it cannot describe
keyword-only parameters or ``**kwargs`` without defaults; a Python bool/int/float given a
``tf.TensorSpec([], ...)`` is converted to a tensor by TensorFlow itself.

Pure: plain records only. Imports neither TensorFlow, IPython nor ipywidgets.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..model.records import FixPlan
from ..model.signatures import ArgLeaf, Signature, parent_path
from .folds import PrefixFolds, texts_seen

__all__ = [
    "NOT_CASTABLE",
    "OTHERS_MAKE_THEM",
    "PYTHON_TENSOR_DTYPES",
    "RELAXING_TRACES",
    "autograph_caveat",
    "call_plan",
    "code_name",
    "graphs_with_reduce_retracing",
    "input_signature_plan",
    "input_signature_text",
    "on_your_def",
    "reduce_retracing_helps",
    "reduce_retracing_plan",
    "relaxing_keeps_shape_graphs",
    "relaxing_plan",
    "shape_free_graphs",
    "spec_for_shapes",
    "stacked_history",
    "why_no_input_signature",
]

# The dtype TensorFlow gives a Python scalar converted by a TensorSpec or tf.constant.
PYTHON_TENSOR_DTYPES = {"bool": "bool", "int": "int32", "float": "float32"}

# Tensor dtypes tf.cast cannot turn into a number (nor a number into): a string (TF 2.21:
# "Cast string to float is not supported"), and the handles of resources and variants.
NOT_CASTABLE = frozenset({"string", "resource", "variant"})

Shape = tuple[int | None, ...]


def spec_for_shapes(shapes: Sequence[Shape | None], dtype: str | None) -> str:
    """``tf.TensorSpec([None, 128], tf.float32)``: every dimension that varied becomes None;
    ``tf.TensorSpec(None, …)`` (any rank) when the rank varied or was unknown."""
    known = [s for s in shapes if s is not None]
    if not known or len({len(s) for s in known}) != 1 or len(known) != len(shapes):
        return _tensor_spec_text(None, dtype)
    return _tensor_spec_text([column[0] if len(set(column)) == 1 else None for column in zip(*known)], dtype)


def _tensor_spec_text(dims: Sequence[int | None] | None, dtype: str | None) -> str:
    """``tf.TensorSpec([None, 128], tf.float32)``; ``dims`` None: any rank."""
    dtype_text = f"tf.{dtype}" if dtype else "tf.float32"
    if dims is None:
        return f"tf.TensorSpec(None, {dtype_text})"
    inner = ", ".join("None" if d is None else str(d) for d in dims)
    return f"tf.TensorSpec([{inner}], {dtype_text})"


def code_name(qualname: str) -> str:
    """The name a fix's code calls the function by: the last part of its Python qualname, when
    that is a Python name (``f`` for a lambda, and for anything else that is not: a label such
    as ``sequential · fit · train step``, which a report saved before labels has as its qualname,
    is never written into code)."""
    short = qualname.rsplit(".", 1)[-1] if qualname else "f"
    return short if short.isidentifier() and not keyword.iskeyword(short) else "f"


def on_your_def(name: str) -> str:
    """The line under a suggested decorator: where it goes, as a comment (every line a fix
    prints is valid Python; ``def step(...): ...`` was not)."""
    return f"# ↑ on your def {name}(...), unchanged"


def top_parameters(sig: Signature) -> list[str]:
    """The function's parameters, in order (``self`` of a method is never among them)."""
    return [leaf.path for leaf in sig.leaves if parent_path(leaf.path) is None]


def _top_parameters(sig: Signature) -> tuple[str, ...]:
    """:func:`top_parameters`, read once per signature: every retrace's input_signature checks
    the graphs before it."""
    return sig.derived("top_parameters", lambda s: tuple(top_parameters(s)))


def _children(sig: Signature, path: str) -> list[str]:
    return [leaf.path for leaf in sig.leaves if parent_path(leaf.path) == path]


class _PathSeen:
    """What the graphs of a history passed at one path: how many had it, their kinds, dtypes,
    values, and their shapes folded as :func:`spec_for_shapes` reads them."""

    __slots__ = ("dims", "dtypes", "kinds", "present", "ranks", "unknown_shape", "values", "varied")

    def __init__(self) -> None:
        self.present = 0
        self.kinds: set[tuple[str, str]] = set()
        self.dtypes: set[str] = set()
        self.values: set[str | None] = set()
        self.unknown_shape = False
        self.ranks: set[int] = set()
        self.dims: Shape | None = None  # the first known shape
        self.varied: list[bool] = []  # per dimension of it: another shape of its rank differed

    def add(self, leaf: ArgLeaf) -> None:
        self.present += 1
        self.kinds.add((leaf.kind, leaf.type_name))
        self.dtypes.add(leaf.dtype or "")
        self.values.add(leaf.value)
        shape = leaf.shape
        if shape is None:
            self.unknown_shape = True
            return
        self.ranks.add(len(shape))
        if self.dims is None:
            self.dims, self.varied = shape, [False] * len(shape)
        elif len(shape) == len(self.dims):
            for i, d in enumerate(shape):
                if d != self.dims[i]:
                    self.varied[i] = True

    def copy(self) -> _PathSeen:
        other = _PathSeen()
        other.present, other.unknown_shape, other.dims = self.present, self.unknown_shape, self.dims
        other.kinds, other.dtypes, other.values = set(self.kinds), set(self.dtypes), set(self.values)
        other.ranks, other.varied = set(self.ranks), list(self.varied)
        return other

    def tensor_spec(self, dtype: str) -> str:
        """:func:`spec_for_shapes` of the shapes seen."""
        if self.unknown_shape or len(self.ranks) != 1 or self.dims is None:
            return _tensor_spec_text(None, dtype)
        return _tensor_spec_text([None if v else d for d, v in zip(self.dims, self.varied)], dtype)


class _HistorySeen:
    """A history's graphs, folded one at a time: what each path held, and the parameter lists."""

    def __init__(self) -> None:
        self.count = 0
        self.first: Signature | None = None
        self.paths: dict[str, _PathSeen] = {}
        self.parameter_lists: set[tuple[str, ...]] = set()

    def add(self, sig: Signature) -> None:
        self.count += 1
        if self.first is None:
            self.first = sig
        self.parameter_lists.add(_top_parameters(sig))
        for leaf in sig.leaves:
            seen = self.paths.get(leaf.path)
            if seen is None:
                seen = self.paths[leaf.path] = _PathSeen()
            seen.add(leaf)

    def copy(self) -> _HistorySeen:
        other = _HistorySeen()
        other.count, other.first = self.count, self.first
        other.paths = {path: seen.copy() for path, seen in self.paths.items()}
        other.parameter_lists = set(self.parameter_lists)
        return other


class _SpecBuilder:
    """The nested spec of one parameter over every graph seen, or None when none fits."""

    def __init__(self, seen: _HistorySeen, dtypes: dict[str, str]) -> None:
        self.seen = seen
        self.dtypes = dtypes
        self.converted: list[str] = []  # Python scalars the spec turns into tensors

    def spec(self, path: str) -> str | None:
        seen = self.seen.paths.get(path)
        if seen is None or seen.present != self.seen.count or len(seen.kinds) != 1:
            return None  # a graph without it, or two kinds of value
        kind, type_name = next(iter(seen.kinds))
        if kind == "tensor":
            dtypes = {self.dtypes[path]} if path in self.dtypes else seen.dtypes
            if len(dtypes) != 1:
                return None
            return seen.tensor_spec(next(iter(dtypes)))
        if kind == "python" and type_name in PYTHON_TENSOR_DTYPES:
            self.converted.append(path)
            return f"tf.TensorSpec([], tf.{PYTHON_TENSOR_DTYPES[type_name]})"
        if kind == "container" and type_name in ("list", "tuple", "dict"):
            if len(seen.values) != 1:
                return None
            assert self.seen.first is not None
            children = _children(self.seen.first, path)
            parts = []
            for child in children:
                inner = self.spec(child)
                if inner is None:
                    return None
                if type_name == "dict":
                    parts.append(f"{child[len(path) + 1 : -1]}: {inner}")
                else:
                    parts.append(inner)
            if type_name == "dict":
                return "{" + ", ".join(parts) + "}"
            if type_name == "tuple":
                return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
            return "[" + ", ".join(parts) + "]"
        return None  # objects, variables, strings, None, composites: no TensorSpec fits


def input_signature_plan(
    history: Sequence[Signature], *, dtypes: dict[str, str] | None = None
) -> FixPlan | None:
    """An ``input_signature`` covering every parameter, in order, with the dimensions that
    varied across ``history`` set to None (``dtypes`` overrides a parameter's dtype), or None
    when no input_signature can serve these calls."""
    if not history:
        return None
    last = history[-1]
    if last.keyword_only:
        return None  # keyword-only parameters (and **kwargs) cannot be in an input_signature
    params = top_parameters(last)
    seen = _HISTORIES.over(history)
    if not params or len(seen.parameter_lists) != 1:
        return None
    builder = _SpecBuilder(seen, dtypes or {})
    specs = []
    for param in params:
        spec = builder.spec(param)
        if spec is None:
            return None
        specs.append(spec)
    trade = "another dtype or rank then raises TypeError instead of tracing again"
    note = ""
    if builder.converted:
        kinds = {p: _leaf_type(last, p) for p in builder.converted}
        note = "; ".join(
            f"`{p}` becomes a tf.{PYTHON_TENSOR_DTYPES[k]} scalar tensor" for p, k in kinds.items()
        )
        note += " (TensorFlow converts the Python value you pass, as tf.constant does)"
        flags = [p for p, k in kinds.items() if k == "bool"]
        if flags:
            note += f"; AutoGraph turns `if {flags[0]}:` into tf.cond, one graph for both branches"
            note += f" — {autograph_caveat(flags[0])}"
        trade += "; code that needs a real Python value there must use tf ops instead"
    return FixPlan(
        decorator="input_signature=[" + ", ".join(specs) + "]",
        graphs=1,
        promise="1 graph for every call",
        trade=trade,
        note=note,
    )


def autograph_caveat(flag: str, loops: bool = False) -> str:
    """AutoGraph converts `if flag:` only when it can read the function's source. TF 2.21, for
    code built by exec(): "AutoGraph could not transform", then OperatorNotAllowedInGraphError
    on the tensor flag; written as tf.cond it works (1 trace for both values)."""
    if loops:
        return "it reads the source: for exec'd code write tf.cond/tf.while_loop yourself"
    return (
        f"it reads the source: for exec'd code write tf.cond({flag}, lambda: ..., lambda: ...); "
        f"safe where your own code reads `{flag}`, not when it is passed on to Keras 3 layers "
        "(Dropout, BatchNormalization need a Python bool)"
    )


def _leaf_type(sig: Signature, path: str) -> str:
    leaf = sig.by_path().get(path)
    return leaf.type_name if leaf is not None else ""


def reduce_retracing_plan(history: Sequence[Signature]) -> FixPlan:
    """``reduce_retracing=True``: it relaxes shapes after the second one it sees, nothing else
    (measured on TF 2.21: dtype, Python values and objects still retrace)."""
    graphs = graphs_with_reduce_retracing(history)
    python = [leaf.path for leaf in history[-1].leaves if leaf.kind == "python"] if history else []
    trade = "its graphs take unknown dimensions"
    if python:
        trade += f"; `{python[0]}` stays a Python value: one graph per value"
    return FixPlan(
        decorator="reduce_retracing=True",
        graphs=graphs,
        promise=f"{graphs} graph{'s' if graphs != 1 else ''} for these calls "
        "(the second shape seen is traced with its varying dimensions as None, and later "
        "sizes reuse that graph)",
        trade=trade,
    )


def _supertype(a: ArgLeaf, b: ArgLeaf) -> ArgLeaf | None:
    """The most specific leaf both fit in, as TF's reduce_retracing computes it (TF 2.21
    ``TensorSpec.most_specific_common_supertype``): same dtype, dims kept where equal."""
    if (a.path, a.kind, a.type_name, a.dtype, a.value) != (b.path, b.kind, b.type_name, b.dtype, b.value):
        return None
    if a.kind not in ("tensor", "variable") or a.shape == b.shape:
        return a
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        shape: Shape | None = None
    else:
        shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
    return ArgLeaf(a.path, a.kind, a.type_name, a.dtype, shape, a.value)


def _fits(leaves: tuple[ArgLeaf, ...], graph: tuple[ArgLeaf, ...]) -> bool:
    """True when the graph's leaves are the supertype of these (``_supertype(x, g) == g`` for each
    pair), decided without building the supertype: this runs for every graph of every call a
    retrace's reasons count."""
    return len(leaves) == len(graph) and all(_fits_leaf(x, g) for x, g in zip(leaves, graph))


def _fits_leaf(x: ArgLeaf, g: ArgLeaf) -> bool:
    if (x.path, x.kind, x.type_name, x.dtype, x.value) != (g.path, g.kind, g.type_name, g.dtype, g.value):
        return False
    if x.kind not in ("tensor", "variable"):
        return x.shape == g.shape
    if x.shape == g.shape or g.shape is None:
        return True
    return (
        x.shape is not None
        and len(x.shape) == len(g.shape)
        and all(d is None or d == e for e, d in zip(x.shape, g.shape))
    )


def graphs_with_reduce_retracing(history: Sequence[Signature]) -> int:
    """How many graphs TF 2.21 keeps for these calls, in order, under reduce_retracing=True:
    a call no graph fits is traced with its type relaxed against every cached one it has a
    common supertype with."""
    return len(_relaxed_graphs(history))


def reduce_retracing_helps(history: Sequence[Signature]) -> bool:
    """True when reduce_retracing relaxes a graph for these calls (later sizes then reuse it)
    and keeps no more graphs than the calls made without it."""
    graphs = _relaxed_graphs(history)
    seen = texts_seen(history, "leaves", Signature.leaves_key)
    return len(graphs) <= len(seen) and any(repr(g) not in seen for g in graphs)


def shape_free_graphs(history: Sequence[Signature]) -> int:
    """The graphs these calls would keep if no tensor's shape told two apart (every tensor's
    shape erased): no cure of shapes goes below it."""

    def erased(sig: Signature) -> str:
        return sig.derived(
            "shape-free leaves",
            lambda s: repr(tuple(
                replace(x, shape=None) if x.kind in ("tensor", "variable") else x for x in s.leaves
            )),
        )  # fmt: skip

    return len(texts_seen(history, "shape-free leaves", erased))


# Why a change saves no graph for the calls seen. reduce_retracing relaxes a shape by tracing
# the call that brings the second one (TF 2.21: a loop of batches 32, 32, 32, 4 keeps 2 graphs
# with it too: (32, 8), then (None, 8)), so two sizes keep two graphs whatever else the calls
# pass; the shapes' own graphs are then not "made by other arguments".
OTHERS_MAKE_THEM = "other arguments make them"
RELAXING_TRACES = "the second shape seen is traced too, to relax it"


def relaxing_keeps_shape_graphs(history: Sequence[Signature]) -> bool:
    """reduce_retracing keeps more graphs for ``history`` than its shape-free signatures: some
    are its own relaxing traces, not made by other arguments (then :data:`RELAXING_TRACES`
    says why it saves none)."""
    return graphs_with_reduce_retracing(history) > shape_free_graphs(history)


def _relaxed_graphs(history: Sequence[Signature]) -> list[tuple[ArgLeaf, ...]]:
    return list(_RELAXED.over(history))


def _relax_into(graphs: list[tuple[ArgLeaf, ...]], leaves: tuple[ArgLeaf, ...]) -> None:
    """One call under reduce_retracing: a graph it fits serves it, or it is traced relaxed."""
    if any(_fits(leaves, g) for g in graphs):
        return
    relaxed = leaves
    for g in graphs:
        if len(g) != len(relaxed):
            continue
        merged = [_supertype(x, y) for x, y in zip(relaxed, g)]
        if all(m is not None for m in merged):
            relaxed = tuple(m for m in merged if m is not None)
    graphs.append(relaxed)


def call_plan(
    history: Sequence[Signature],
    rewrites: dict[str, str],
    transform: Callable[[ArgLeaf], ArgLeaf],
    *,
    promise: str = "",
    trade: str = "",
    note: str = "",
    key: str = "",
) -> FixPlan:
    """Rewrite arguments at every call site (``x=tf.cast(x, tf.float32)``); the graphs it
    leaves are the distinct signatures once ``transform`` has rewritten those leaves.

    ``key`` names ``transform`` exactly (the same key, the same transform): each signature's
    rewritten leaves are then kept on it as text (:meth:`Signature.derived`), so the n
    retraces of a loop, each counted over the graphs before it, rewrite each graph once."""
    if key:

        def rewritten(sig: Signature) -> str:
            return sig.derived(f"call_plan {key}", lambda s: repr(tuple(transform(leaf) for leaf in s.leaves)))

        count = len(texts_seen(history, f"call_plan {key}", rewritten))
    else:
        count = len({tuple(transform(leaf) for leaf in sig.leaves) for sig in history})
    return FixPlan(
        call=tuple(rewrites.items()),
        graphs=max(1, count),
        promise=promise,
        trade=trade,
        note=note,
    )


def relaxing_plan(prev: ArgLeaf, leaf: ArgLeaf, history: Sequence[Signature]) -> FixPlan | None:
    """``reduce_retracing=True`` for a tf.Variable (or tensor) whose shape alone changed, when it
    saves a trace for these calls (measured on TF 2.21: Variables of 5 shapes trace 5 times,
    2 with reduce_retracing; a SparseTensor's dense shape likewise 4 → 2, not planned here)."""
    if (prev.kind, prev.dtype, prev.value) != (leaf.kind, leaf.dtype, leaf.value) or prev.shape == leaf.shape:
        return None
    return reduce_retracing_plan(history) if reduce_retracing_helps(history) else None


def stacked_history(path: str, history: Sequence[Signature]) -> list[Signature] | None:
    """The graphs seen, with the list ``path`` replaced by its tf.stack: None unless every item
    of every call is a tensor of one dtype and shape."""
    out = []
    for sig in history:
        items = [leaf for leaf in sig.leaves if leaf.path.startswith(path + "[")]
        if not items or any(i.kind != "tensor" or "[" in i.path[len(path) + 1 : -1] for i in items):
            return None
        if len({(i.dtype, i.shape) for i in items}) != 1 or items[0].shape is None:
            return None
        stacked = ArgLeaf(path, "tensor", "Tensor", items[0].dtype, (len(items), *items[0].shape))
        leaves = [stacked if x.path == path else x for x in sig.leaves if x not in items]
        out.append(Signature(tuple(leaves), sig.text, sig.context, sig.keyword_only))
    return out


def why_no_input_signature(history: Sequence[Signature]) -> str:
    last = history[-1] if history else None
    if last is None:
        return ""
    if last.keyword_only:
        return ": keyword-only arguments (" + ", ".join(last.keyword_only) + ") cannot be in one"
    odd = [
        leaf.path
        for leaf in last.leaves
        if leaf.kind not in ("tensor", "container")
        and not (leaf.kind == "python" and leaf.type_name in PYTHON_TENSOR_DTYPES)
    ]
    if odd:
        return ": " + ", ".join(f"`{p}`" for p in odd[:3]) + " cannot be described by a tf.TensorSpec"
    dtypes: dict[str, list[str]] = {}
    for sig in history:
        for leaf in sig.leaves:
            if leaf.kind == "tensor" and leaf.dtype and leaf.dtype not in dtypes.setdefault(leaf.path, []):
                dtypes[leaf.path].append(leaf.dtype)
    varied = next(((p, d) for p, d in dtypes.items() if len(d) > 1), None)
    if varied is not None:  # one TensorSpec has one dtype
        return f": `{varied[0]}` comes as {' and '.join(varied[1][:3])}"
    return ""


def input_signature_text(path: str, history: Sequence[Signature], dtype: str | None) -> str:
    """``@tf.function(input_signature=[...])`` covering every argument of the graphs in
    ``history`` (the varying dimensions of ``path`` set to None), or, when no input_signature
    can cover them, the spec of ``path`` alone."""
    plan = input_signature_plan(history, dtypes={path: dtype} if dtype else None)
    if plan is not None:
        return f"@tf.function({plan.decorator})"
    shapes = [
        leaf.shape
        for sig in history
        for leaf in sig.leaves
        if leaf.path == path and leaf.kind == "tensor" and leaf.dtype == dtype
    ]
    return f"a tf.TensorSpec for `{path}`: {spec_for_shapes(shapes, dtype)}"


_RELAXED: PrefixFolds[list[tuple[ArgLeaf, ...]]] = PrefixFolds(
    list, lambda graphs, sig: _relax_into(graphs, sig.leaves), list
)
_HISTORIES: PrefixFolds[_HistorySeen] = PrefixFolds(_HistorySeen, _HistorySeen.add, _HistorySeen.copy)
