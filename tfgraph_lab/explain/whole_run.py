"""One plan per function, counted over the whole watched run.

A reason is explained when its graph is traced, against the graphs seen so far, so its plans
count the calls up to that moment: the demo's first ``lr`` retrace promised "2 graphs instead
of 3" where the whole run needs 4 instead of 22, and one argument could get "cast `x` to int32"
at one retrace and "cast `x` to float32" at the next. When the watch ends, :class:`WholeRun`
rebuilds every plan of a function from the graphs its calls used in this watch (graphs only
earlier cells used are left out) and rewrites the fix texts that show them:

- each argument gets one call-site rewrite, whatever reason asked for it (a cast to the first
  floating dtype seen for it, else to its first dtype; ``tf.constant`` for Python values only);
- every promise counts the whole run, "N fewer graphs: G graphs instead of H for the calls
  seen", H the graphs the calls used, G those left once the change is applied to every call;
- ``reduce_retracing=True`` is dropped where it saves no graph for these calls (it relaxes
  shapes but not the other arguments that make the graphs).
- under a distribution strategy every count is per device: each replica traces its own graphs
  (TF 2.21, 2 logical CPUs: an input_signature leaves 2, not "1 graph for every call").

Pure: plain records only. Imports neither TensorFlow, IPython nor ipywidgets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ..model.records import CallSource, FixPlan, Reason
from ..model.signatures import ArgLeaf, Signature, parent_path
from ..model.vocab import ReasonCode
from .arguments import LAST_BATCH_FIX, SIGNATURE_CURE
from .call_edits import call_edits, meets_floats_only
from .fixes import (
    NOT_CASTABLE,
    OTHERS_MAKE_THEM,
    PYTHON_TENSOR_DTYPES,
    RELAXING_TRACES,
    call_plan,
    graphs_with_reduce_retracing,
    input_signature_plan,
    relaxing_keeps_shape_graphs,
    stacked_history,
    why_no_input_signature,
)

__all__ = ["ONE_OFF", "PER_DEVICE_PROMISE", "WholeRun", "devices_of", "promise_text"]

ONE_OFF = "one-off second trace of the first call"  # explain._with_one_off's words
PER_DEVICE_PROMISE = "1 graph per device (under a distribution strategy each replica keeps its own)"
_T = TypeVar("_T")
_FLOATS = ("float16", "bfloat16", "float32", "float64")
# What a fix says of a dropped change, unless told why otherwise (WholeRun._none_said).
_SAVES_NONE = f"would save no graph for these calls ({OTHERS_MAKE_THEM})"
# Where a text names a plan that may be dropped: the words around it (argument_reasons' shapes).
_DROPPED_AROUND = ("; or ", "; to make another dtype an error: ", "; for a shape that varies: ")


def promise_text(graphs: int, before: int, what: str, bound: str = "", why: str = OTHERS_MAKE_THEM) -> str:
    """``18 fewer graphs: 4 graphs instead of 22 for the calls seen, whatever the value``
    (``what``: "for the calls seen…"; ``bound``: "at most "); a change that saves nothing says
    why (``why``: :data:`~tfgraph_lab.explain.fixes.OTHERS_MAKE_THEM` or ``RELAXING_TRACES``)."""
    noun = "graph" if graphs == 1 else "graphs"
    saved = before - graphs
    if saved <= 0:
        return f"no fewer graphs for the calls seen ({graphs} either way: {why})"
    fewer = f"{saved} fewer graph{'s' if saved != 1 else ''}"
    return f"{fewer}: {bound}{graphs} {noun} instead of {before} {what}"


class WholeRun:
    """The plans of one function rebuilt over ``history``: the signatures of the graphs its
    calls used in this watch, in cache order; an input_signature covers ``known`` too (every
    graph it holds) where it can. ``name``: the function as the fix's code calls it."""

    def __init__(
        self,
        history: Sequence[Signature],
        name: str,
        known: Sequence[Signature] = (),
        before: int | None = None,
        sources: Sequence[CallSource] = (),
        body: str = "",
        objects: Sequence[object] = (),
        relaxing: bool = False,
    ) -> None:
        self.history = list(history)
        # the function is reduce_retracing=True already: a call-site rewrite leaves the graphs
        # that relaxing leaves (TF 2.21: f(tf.ones([n]), n) for n in 1, 2, 3 keeps 3 graphs,
        # and 2 with `n` a tensor: the shapes then relax; counted as distinct, it "saved none")
        self.relaxing = relaxing
        # the graphs of each cache a fix acts in: one per function object (``objects``, one
        # per graph of ``history``; none given: one object) and calling context (eager, inside
        # another graph, a device, SavedModel saving: TF keys each apart). Case 37 (one object
        # saved after get_concrete_function, another called on 5 shapes): reduce_retracing was
        # promised "1 graph instead of 7" over the mixed history; TF 2.21 keeps 2 + 2 = 4.
        self.caches = _caches(self.history, objects)
        # the function's own source (its def), "" when unread: a Python int that only meets
        # floats in it is passed as a float32 tensor (``call_edits.meets_floats_only``)
        self.body = body
        # the function's calls that traced, as written: a call-site rewrite is printed on them
        self.sources = tuple(sources)
        # every graph the function holds (earlier cells' too): an input_signature must cover them
        self.known = list(known) or self.history
        self.name = name
        # under a distribution strategy each replica's device keeps its own graphs (measured, TF
        # 2.21, MirroredStrategy over 2 logical CPUs: an input_signature leaves 2 graphs, one per
        # device; reduce_retracing 4 for batch sizes 4, 1, 2): every count is per device
        self.devices = devices_of(self.history)
        # what a fix keeps at best: one graph per distinct signature (and device)
        self.distinct = len({(sig.leaves, _device(sig.context)) for sig in self.history})
        # the graphs the calls used (``explain.plan.graphs_before``: every object's, the one-off
        # second trace of a variable-creating first call included), when the caller counted them
        self.before = before
        self._cache: dict[Reason, Reason] = {}
        self._extra = 0
        # per argument and per change (:meth:`_once`): the history is fixed, and a loop's n
        # retraces each ask the same questions of it (O(n²) before: 800 retraces took seconds)
        self._counted: dict[tuple[Any, ...], Any] = {}

    @property
    def _before(self) -> int:
        return self.before if self.before is not None else self.distinct + self._extra

    def reason(self, reason: Reason) -> Reason:
        """``reason`` with its plans and fix text counted over the whole run."""
        if not reason.plans or not self.history:
            return reason
        if (self.before if self.before is not None else self.distinct) <= 1:
            # the watch's calls used one graph (a lab's single call after earlier ones): nothing
            # to count a saving over, the reason stays as explained against the cache it met
            return reason
        done = self._cache.get(reason)
        if done is None:
            done = self._cache[reason] = self._rebuild(reason)
        return done

    def reasons(self, reasons: Sequence[Reason]) -> tuple[Reason, ...]:
        return tuple(self.reason(r) for r in reasons)

    # -- one reason

    def _rebuild(self, reason: Reason) -> Reason:
        # a first call that created variables traced twice: one graph more, with or without a fix
        self._extra = int(ONE_OFF in reason.fix)
        fix, plans, olds = reason.fix, [], reason.plans
        stuck = sorted({path for old in olds for path, _ in old.call if self.uncastable(path)})
        if stuck:  # a rewrite at every call would raise at some: those plans go, and the text says why
            olds = tuple(old for old in olds if not old.call)
            fix = self._no_one_dtype(stuck[0])
        for old in olds:
            new = self._plan(old)
            # a change that saves no graph for these calls is never offered as a fix
            if new is None or 0 < new.graphs >= self._before:
                dropped = _without(fix, old.text(self.name), _in_words(old, self.name), self._none_said(old, new))
                fix = fix if dropped is None else dropped
                continue
            new = self._as_floats(new or old)
            fix = fix.replace(old.text(self.name), new.text(self.name))
            if new.call and self.sources:  # the user's own calls, rewritten
                edits, missing = call_edits(new.call, self.sources, self.history[-1])
                new = replace(new, call_edits=edits, call_edits_note=missing)
            plans.append(new)
        plans.sort(key=lambda p: p.graphs if p.graphs > 0 else self._before)  # the reason's best first
        target = self.target(reason.argument) if reason.code == ReasonCode.TYPE_CHANGED else None
        if target is not None:  # type_changed names the dtype: "always a float32 tensor"
            fix = _retarget(fix, target)
        return replace(reason, fix=fix, plans=tuple(plans))

    def _as_floats(self, plan: FixPlan) -> FixPlan:
        """``tf.constant(step)`` for a Python int that meets only floats in the function's body
        becomes ``tf.constant(step, tf.float32)``: as printed, the int32 tensor would raise
        TypeError at ``1.0 / (1 + step)`` (TF 2.21)."""
        if not self.body or not plan.call:
            return plan
        call, said = [], []
        for parameter, expression in plan.call:
            if expression == f"tf.constant({parameter})" and self._int(parameter) and meets_floats_only(parameter, self.body):
                expression = f"tf.constant({parameter}, tf.float32)"
                said.append(parameter)
            call.append((parameter, expression))
        if not said:
            return plan
        names = ", ".join(f"`{p}`" for p in said)
        note = f"float32, not int32: {names} only meet{'s' if len(said) == 1 else ''} Python floats in {self.name}"
        trade = "" if plan.trade.startswith("tf.constant(") and "int32 tensor" in plan.trade else plan.trade
        return replace(plan, call=tuple(call), trade=trade, note="; ".join(n for n in (plan.note, note) if n))

    def _int(self, parameter: str) -> bool:
        return any(
            leaf.path == parameter and leaf.kind == "python" and leaf.type_name == "int"
            for sig in self.history[-1:]
            for leaf in sig.leaves
        )

    def _plan(self, old: FixPlan) -> FixPlan | None:
        """``old`` rebuilt over the whole run; None when it no longer serves these calls (a
        ``reduce_retracing`` plan that saves no graph is the caller's to drop)."""
        if old.hoist:  # one object keeps one graph per distinct signature
            graphs = max(1, self.distinct + self._extra)
            return replace(old, graphs=graphs, promise=promise_text(graphs, self._before, "for the calls seen"))
        if old.decorator.startswith("input_signature="):
            dtypes = {}
            for path, _ in old.call:
                dtype = self.target(path)
                if dtype is not None:
                    dtypes[path] = dtype
            plan = self._once(
                ("input_signature", tuple(dtypes.items())),
                lambda: input_signature_plan(self.known, dtypes=dtypes)
                or input_signature_plan(self.history, dtypes=dtypes),
            )
            if plan is None:
                return None
            call = tuple((p, self.rewrite(p) or e) for p, e in old.call)
            graphs = len(self.caches) + self._extra * self.devices  # one graph per cache
            promise = promise_text(graphs, self._before, "for the calls seen")
            if self.devices > 1:  # "4 fewer graphs: 2 graphs instead of 6 for the calls seen, 1 per device (…)"
                promise = promise_text(graphs, self._before, "for the calls seen, 1 per device" + PER_DEVICE_PROMISE.split("device", 1)[1])
            return replace(
                old,
                decorator=plan.decorator,
                call=call,
                graphs=graphs,
                promise=promise,
                note=plan.note or old.note,
            )
        if old.decorator == "reduce_retracing=True":
            return self._relaxed(old)
        if old.call and not old.decorator:
            return self._call_plan(old)
        return old  # another change (jit_compile=False …): not counted from signatures

    def _none_said(self, old: FixPlan, new: FixPlan | None) -> str:
        """What is said of ``old`` when it is dropped: it no longer fits every call (an
        input_signature), or it saves no graph and why: reduce_retracing's own relaxing trace,
        in some cache, or the other arguments that tell the graphs apart."""
        if old.decorator.startswith("input_signature="):
            if new is None:
                why = why_no_input_signature(self.known).removeprefix(": ") or "no tf.TensorSpec describes every argument"
                return f"would not fit every call ({why})"
            return "would save no graph for these calls (each function object and calling context keeps one)"
        return f"would save no graph for these calls ({self._why_none(old)})"

    def _why_none(self, plan: FixPlan) -> str:
        """Why ``plan`` saves no graph for these calls: reduce_retracing's own relaxing trace,
        in some cache, or the other arguments that tell the graphs apart."""
        if plan.decorator != "reduce_retracing=True":
            return OTHERS_MAKE_THEM
        own = self._once(("relaxing traces",), lambda: any(relaxing_keeps_shape_graphs(c) for c in self.caches))
        return RELAXING_TRACES if own else OTHERS_MAKE_THEM

    def _relaxed(self, old: FixPlan) -> FixPlan | None:
        relaxed = self._once(("reduce_retracing", old.call), lambda: self._relaxed_graphs(old.call))
        if relaxed is None:
            return None
        graphs = relaxed + self._extra
        tail = old.promise.split(" (", 1)[1] if " (" in old.promise and graphs < self._before else ""
        # the count is modelled on TF's relaxation (fixes.graphs_with_reduce_retracing), checked
        # against experimental_get_tracing_count() (tests/explain/test_plan_e2e.py): not a bound
        promise = promise_text(graphs, self._before, "for the calls seen", why=self._why_none(old))
        return replace(old, graphs=graphs, promise=promise + (f" ({tail}" if tail else ""))

    def _relaxed_graphs(self, call: tuple[tuple[str, str], ...]) -> int | None:
        total = 0
        for cache in self.caches:  # each cache relaxes its own graphs
            history: Sequence[Signature] | None = cache
            for path, _ in call:  # tf.stack(path): count the stacked calls
                history = stacked_history(path, cache)
            if history is None:
                return None
            total += graphs_with_reduce_retracing(history)
        return total

    def _once(self, key: tuple[Any, ...], count: Callable[[], _T]) -> _T:
        """``count()``, made once per key: what is read of the run's history, which is fixed."""
        if key not in self._counted:
            self._counted[key] = count()
        return self._counted[key]  # type: ignore[no-any-return]

    def _call_plan(self, old: FixPlan) -> FixPlan:
        call = tuple((p, self.rewrite(p) or e) for p, e in old.call)
        targets = {p: self.target(p) for p, _ in call}

        def rewritten(leaf: ArgLeaf) -> ArgLeaf:
            dtype = targets.get(leaf.path)
            if dtype is None or leaf.kind not in ("tensor", "python"):
                return leaf
            shape = leaf.shape if leaf.kind == "tensor" else ()
            return ArgLeaf(leaf.path, "tensor", "Tensor", dtype, shape)

        def count(cache: list[Signature]) -> int:
            if not self.relaxing:
                return call_plan(cache, dict(call), rewritten).graphs
            return graphs_with_reduce_retracing([replace(sig, leaves=tuple(map(rewritten, sig.leaves))) for sig in cache])

        counted = self._once(("call", call), lambda: sum(count(cache) for cache in self.caches))
        graphs = counted + self._extra
        python_only = all(e.startswith("tf.constant(") for _, e in call)
        what = "for the calls seen" + (", whatever the value" if python_only else ", all in one dtype")
        trade = old.trade if call == old.call else ""
        promise = promise_text(graphs, self._before, what)
        return replace(old, call=call, graphs=graphs, promise=promise, trade=trade)

    # -- one argument

    def target(self, path: str) -> str | None:
        """The one dtype every call passes ``path`` as: the first floating dtype seen for it (a
        cast to an integer would cut 2.5 to 2), else the first dtype seen."""
        return self._once(("target", path), lambda: self._target(path))

    def _target(self, path: str) -> str | None:
        seen = []
        for sig in self.history:
            leaf = sig.by_path().get(path)
            if leaf is None or parent_path(path) is not None:
                continue
            if leaf.kind == "tensor" and leaf.dtype:
                seen.append(leaf.dtype)
            elif leaf.kind == "python" and leaf.type_name in PYTHON_TENSOR_DTYPES:
                seen.append(PYTHON_TENSOR_DTYPES[leaf.type_name])
        floats = [d for d in seen if d in _FLOATS]
        first = floats or seen
        return first[0] if first else None

    def uncastable(self, path: str) -> bool:
        """Some call passed ``path`` as what no one tensor dtype holds with the others: a string
        tensor (``tf.cast`` of a string to a number raises UnimplementedError, TF 2.21), a
        Python None or str. Case 01 (TF's guide: ``double`` on an int, a float and a string)
        was offered ``double(tf.cast(tf.constant("a"), tf.float32))``, which raises."""
        return self._once(("uncastable", path), lambda: _uncastable(path, self.history))

    def _no_one_dtype(self, path: str) -> str:
        target = self.target(path) or "float32"
        return (
            f"cast `{path}` to one dtype where it is a number, tf.cast({path}, tf.{target}), and the "
            "numbers stop making graphs of their own; a string tensor (or a Python None or str) has "
            "no cast to a number (tf.cast raises) and keeps a graph of its own"
        )

    def rewrite(self, path: str) -> str | None:
        """``tf.constant(x)`` when ``x`` was only ever a Python value of one kind, else
        ``tf.cast(x, tf.<target>)``; None when no dtype fits."""
        return self._once(("rewrite", path), lambda: self._rewrite(path))

    def _rewrite(self, path: str) -> str | None:
        dtype = self.target(path)
        if dtype is None:
            return None
        kinds = {
            (leaf.kind, leaf.type_name) for sig in self.history for leaf in sig.leaves if leaf.path == path
        }
        if len(kinds) == 1 and next(iter(kinds))[0] == "python":
            return f"tf.constant({path})"
        return f"tf.cast({path}, tf.{dtype})"


def _uncastable(path: str, history: Sequence[Signature]) -> bool:
    for sig in history:
        leaf = sig.by_path().get(path)
        if leaf is None:
            continue
        if leaf.kind == "tensor" and leaf.dtype in NOT_CASTABLE:
            return True
        if leaf.kind == "python" and leaf.type_name not in PYTHON_TENSOR_DTYPES:
            return True
    return False


def _caches(history: Sequence[Signature], objects: Sequence[object]) -> list[list[Signature]]:
    """``history`` split by function object and calling context, in order. A first trace that
    created variables and its second trace differ only in the variable-creation scope: one cache.
    A graph whose context was not read (traced before the watch began) joins its object's
    first cache."""
    keys: list[tuple[object, str]] = []
    for i, sig in enumerate(history):
        owner = objects[i] if i < len(objects) else None
        keys.append((owner, "; ".join(p for p in sig.context.split("; ") if p != "variable-creation scope")))
    read = [key for key in keys if key[1]]
    caches: dict[tuple[object, str], list[Signature]] = {}
    for key, sig in zip(keys, history):  # in order: reduce_retracing relaxes in call order
        if not key[1]:
            key = next((k for k in read if k[0] == key[0]), key)
        caches.setdefault(key, []).append(sig)
    return list(caches.values()) or [[]]


def devices_of(history: Sequence[Signature]) -> int:
    """How many devices the calls of ``history`` ran on (a distribution strategy's replicas), at least 1."""
    return max(1, len({_device(sig.context) for sig in history} - {""}))


def _device(context: str) -> str:
    """The device a signature's context names (``eager; device /device:CPU:1; …``), or ""."""
    match = re.search(r"(?:^|; )device (\S+?)(?:;|$)", context)
    return match.group(1) if match else ""


def _in_words(plan: FixPlan, name: str) -> str:
    """A plan as a sentence names it: a call-site change in words (``pass `lr` as
    `tf.constant(lr)` at every call of step``: its code, ``step(..., lr=tf.constant(lr))  # at every
    call``, ends in a comment), a decorator as code."""
    if plan.call and not (plan.decorator or plan.hoist):
        return "pass " + ", ".join(f"`{p}` as `{e}`" for p, e in plan.call) + f" at every call of {name}"
    return plan.code(name)


def _without(fix: str, text: str, code: str = "", said: str = _SAVES_NONE) -> str | None:
    """``fix`` without the plan ``text`` and the words that join it, or None. A plan that is the
    fix's only cure (``…, or @tf.function(reduce_retracing=True) → … (no input_signature fits
    …)``) goes with what follows it (words about that change), and the fix says it would save
    nothing. A last batch's other way (``; or pass full batches only …``, after the cure) is
    about no plan: it stays, first when nothing else is left to do."""
    tail = "; or " + LAST_BATCH_FIX
    if fix.endswith(tail):
        rest = _without(fix[: -len(tail)], text, code, said)
        if rest is None:
            return None
        if rest in ("", _saves_none(code, said)):
            return f"{LAST_BATCH_FIX}; {rest}" if rest else LAST_BATCH_FIX
        return rest + tail
    for around in _DROPPED_AROUND:
        if around + text in fix:
            return fix.replace(around + text, "", 1)
    if SIGNATURE_CURE + text + "; or " in fix:  # the shape's other cure, reduce_retracing, stays
        return fix.replace(SIGNATURE_CURE + text + "; or ", "", 1)
    at = fix.find(text)
    if at < 0:
        return None
    head = fix[:at].rstrip()
    for join in _DANGLING:
        if head.endswith(join):
            head = head[: -len(join)].rstrip()
            break
    saved_none = _saves_none(code, said)
    if not head:
        return saved_none
    return f"{head}; {saved_none}" if saved_none else head


def _saves_none(code: str, said: str = _SAVES_NONE) -> str:
    """What a fix says of the dropped change ``code`` ("" for no code): ``said`` of it."""
    # "pass `x` as … at every call of f" is an imperative: as the subject it reads "passing …"
    subject = "passing " + code[len("pass ") :] if code.startswith("pass ") else code
    return f"{subject} {said}" if code else ""


# the words before a plan that is a fix's only cure (explain.arguments' texts)
_DANGLING = (", or accept any rank:", "; to share one graph:", ", or", ":", ";")


def _retarget(fix: str, dtype: str) -> str:
    start = fix.find("always a ")
    end = fix.find(" tensor:", start)
    if start < 0 or end < 0:
        return fix
    return fix[: start + len("always a ")] + dtype + fix[end:]
