"""One ranked plan per function: its fixes, best first, each with the one count it promises.

A function's reasons each carry the plans that cure them (:mod:`tfgraph_lab.explain.fixes`),
counted over the whole watched run when the watch ends (:mod:`tfgraph_lab.explain.whole_run`).
Read reason by reason, the best change could be the last one shown: in a custom loop with a
Python-float learning rate, a ``training`` flag and a smaller last batch, ``tf.constant(lr)``
(13 graphs → 3) came after ``reduce_retracing=True``, which saved none. :func:`plan_fixes`
gathers every distinct change of the function's retraces once and ranks them:

- by the graphs they save for the calls seen (``before`` − the graphs left), then by the
  tracing time that saves (the function's mean time per trace × the graphs saved), then in the
  order the report first met them;
- a change that saves no graph is not a fix and is left out;
- each keeps the one count its plan holds (``FixPlan.graphs``, what TensorFlow's
  ``experimental_get_tracing_count()`` reads once it is applied to the same calls), said in
  one sentence, :func:`promise_text`.

Every view shows this order (the text and HTML reports, the summary, the suggestion, the
explorer), and ``--try-fix`` tries :attr:`FunctionPlan.best`.

Pure: plain records only. Imports neither TensorFlow, IPython nor ipywidgets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model.records import FixPlan, FunctionSummary, Reason
from .fix_text import edit_lines, fix_head
from .fixes import code_name, on_your_def
from .trace import NOT_RETRACES
from .whole_run import promise_text

__all__ = ["FunctionPlan", "PlannedFix", "graphs_before", "plan_fixes", "plan_kind"]


def graphs_before(fn: FunctionSummary) -> int:
    """The graphs the function's calls used in the watch: those it traced (TensorFlow's count)
    and those traced before the watch that its calls used (a fresh run of the same calls traces
    them too); every object's, so a tf.function re-created in a loop counts each one's. The
    recording counts :class:`~tfgraph_lab.explain.whole_run.WholeRun`'s promises from the same
    rows."""
    used = sum(1 for g in fn.graphs if g.traced_in_watch or g.hits)
    return used or fn.traces


def plan_kind(plan: FixPlan) -> tuple[str, tuple[tuple[str, str], ...], bool]:
    """What a plan changes: the decorator keyword, the call-site rewrites, hoisting (two plans of
    one kind are one change, counted the same over the whole run)."""
    return plan.decorator.split("=", 1)[0], plan.call, plan.hoist


@dataclass(frozen=True, slots=True)
class PlannedFix:
    """One change of a function's plan and what it saves for the calls seen."""

    plan: FixPlan
    before: int  # the graphs the calls used without it
    seconds_saved: float  # tracing time saved: the mean time per trace × the graphs saved
    code: str  # retrace reason code the change was offered for (the first met)

    @property
    def graphs(self) -> int:
        """The graphs TensorFlow keeps for the same calls once the change is applied."""
        return self.plan.graphs

    @property
    def saves(self) -> int:
        return self.before - self.plan.graphs

    @property
    def promise(self) -> str:
        """``10 fewer graphs: 3 graphs instead of 13 for the calls seen``: the plan's own words
        (:class:`~tfgraph_lab.explain.whole_run.WholeRun` wrote them from the same count), so the
        reason that offers the change and the plan say it alike."""
        if self.plan.promise:  # its count, without the words on how (`` (the second shape seen …)``)
            return self.plan.promise.split(" (", 1)[0]
        return promise_text(self.graphs, self.before, "for the calls seen")

    def line(self, name: str = "f") -> str:
        """The change as pasted, then its promise: ``@tf.function(reduce_retracing=True) → 2
        fewer graphs: …``; a change made at the user's calls in words, ``pass `lr` as
        `tf.constant(lr)` at every call of step → 10 fewer graphs: 3 graphs instead of 13 for the
        calls seen`` (:meth:`edits` below it)."""
        return f"{fix_head(self.plan, name)} → {self.promise}"

    def one_line(self, name: str = "f") -> str:
        """:meth:`line` for a view with one line per function (the summary): a change at one
        call of the user's is that call rewritten, ``h(tf.constant(i))  # h.py:9, was: h(i) → …``;
        at several, the words and how many calls."""
        edits = self.plan.call_edits
        if len(edits) == 1 and not self.plan.call_edits_note and not (self.plan.decorator or self.plan.hoist):
            return f"{edits[0].text('code')} → {self.promise}"
        if len(edits) > 1 and not (self.plan.decorator or self.plan.hoist):
            head = fix_head(self.plan, name)
            return f"{head} ({len(edits)} calls: {', '.join(e.where for e in edits[:3])}{', …' if len(edits) > 3 else ''}) → {self.promise}"
        return self.line(name)

    def edits(self, name: str = "f", layout: str = "report") -> list[str]:
        """The user's calls the change rewrites, one line each (:func:`~tfgraph_lab.explain.fix_text.edit_lines`)."""
        return edit_lines(self.plan, name, layout)


@dataclass(frozen=True, slots=True)
class FunctionPlan:
    """A function's fixes, best first (see the module)."""

    qualname: str
    filename: str
    before: int
    fixes: tuple[PlannedFix, ...] = ()
    label: str = ""  # the function as the report shows it ("" means the qualname)

    @property
    def best(self) -> PlannedFix | None:
        return self.fixes[0] if self.fixes else None

    @property
    def name(self) -> str:
        """The function as the fixes' code calls it."""
        return code_name(self.qualname)

    def suggestion(self) -> str:
        """The plan as the report's ``suggestion``: the best change as code with its promise,
        then each other one as ``# or: …`` (empty without a fix)."""
        if not self.fixes:
            return ""
        best, *others = self.fixes
        lines = _code_lines(best.plan, self.name, best.promise)
        if best.plan.trade:
            lines.append(f"# trade-off: {best.plan.trade}")
        for f in others:
            lines.append(f"# or: {f.line(self.name)}")
            lines += [f"#     {e.lstrip('# ')}" for e in f.edits(self.name, "code")]
        return "\n".join(lines)


def _code_lines(plan: FixPlan, name: str, promise: str) -> list[str]:
    if plan.hoist:
        return [f"{name}_fn = tf.function({name})  # once, outside the loop or cell; call {name}_fn → {promise}"]
    lines = []
    if plan.decorator:
        lines += [f"@tf.function({plan.decorator})", on_your_def(name)]
    if plan.call and plan.call_edits:  # the user's own calls, rewritten, each line valid Python
        change = ", ".join(f"`{p}` as `{e}`" for p, e in plan.call)
        lines.append(f"# {'and ' if plan.decorator else ''}pass {change} at every call of {name} → {promise}")
        return lines + edit_lines(plan, name, "code")
    if plan.call:
        lines.append(f"{plan.call_code(name)}  # at every call")
    lines[-1] += f" → {promise}"  # both lines end in a comment: every line stays valid Python
    return lines + edit_lines(plan, name, "code")  # a template: the comment says why


def plan_fixes(fn: FunctionSummary, reasons: Sequence[Reason]) -> FunctionPlan:
    """The ranked plan of ``fn`` from the reasons of its traces (every event's, in order)."""
    before = graphs_before(fn)
    per_trace = fn.trace_seconds / fn.traces if fn.traces else 0.0
    seen: dict[tuple[object, ...], tuple[FixPlan, str]] = {}
    for r in reasons:
        if r.code in NOT_RETRACES:
            continue
        for p in r.plans:
            kind = plan_kind(p)
            # the last plan of a kind is counted over the most calls (a reason read back from
            # JSON written before whole-run counting); its place is the first one's
            seen[kind] = (p, seen[kind][1] if kind in seen else r.code)
    fixes = [
        PlannedFix(p, before, max(0, before - p.graphs) * per_trace, code)
        for p, code in seen.values()
        if 0 < p.graphs < before
    ]
    order = {id(f): i for i, f in enumerate(fixes)}
    fixes.sort(key=lambda f: (-f.saves, -f.seconds_saved, order[id(f)]))
    return FunctionPlan(fn.qualname, fn.filename, before, tuple(fixes), fn.label)
