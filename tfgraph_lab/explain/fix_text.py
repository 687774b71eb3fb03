"""The short form of a fix: what to change in one line, then the code, then the trade-off.

A reason's ``fix`` is a paragraph (about 1,200 characters for a shape change with a Python flag):
right, and work to read. :func:`short_fix` shapes it as a :class:`ShortFix` — ``summary``, one
line of what to change (about 120 characters); ``code``, the first plan's change to paste with
what it gives for these calls; ``others``, the other plans' code; ``tradeoff``, what the first
plan gives up. The text report, the HTML report and the live log show this form; the full text
stays in ``Reason.fix`` (the JSON, the live log's structured record, the HTML's folded "full
fix"). ``--try-fix`` and other programs read the same fields, or the plans themselves.

Pure: plain records only. Imports neither TensorFlow, IPython nor ipywidgets.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.records import FixPlan, Reason

__all__ = [
    "MAX_EDITS_SHOWN",
    "SUMMARY_CHARS",
    "ShortFix",
    "clip",
    "code_with_promise",
    "edit_lines",
    "fix_head",
    "plan_summary",
    "short_fix",
]

MAX_EDITS_SHOWN = 5  # call sites a fix prints rewritten; the JSON's call_edits keeps every one

SUMMARY_CHARS = 125  # one line of what to change, read in seconds (about 120)
WHOLE_CHARS = 180  # a fix without a plan this short is its own summary (its alternatives kept)


@dataclass(frozen=True, slots=True)
class ShortFix:
    """A fix as a person reads it in seconds (see the module)."""

    summary: str
    code: str = ""
    tradeoff: str = ""
    others: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """``summary``, the code, each other way (``or: …``), then the trade-off."""
        out = [self.summary]
        if self.code:
            out.append(self.code)
        if self.tradeoff:
            out.append(f"trade-off: {self.tradeoff}")
        out += [f"or: {other}" for other in self.others]
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "summary": self.summary,
            "code": self.code,
            "tradeoff": self.tradeoff,
            "others": list(self.others),
        }


def clip(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, ``…`` marking the cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:—(") + "…"


def plan_summary(plan: FixPlan, name: str = "f") -> str:
    """What a plan changes, in words, and briefly what it gives for these calls."""
    if plan.hoist:
        what = f"create the tf.function once and call that one, not a new {name}"
    elif plan.decorator.startswith("input_signature="):
        what = "declare an input_signature (None where dimensions vary)"
    elif plan.decorator:
        what = f"add {plan.decorator} to @tf.function"
    else:
        what = "pass " + ", ".join(f"`{p}` as `{e}`" for p, e in plan.call) + " at every call"
    promise = _promise(plan)
    return f"{what} → {promise}" if promise else what


def _promise(plan: FixPlan) -> str:
    return plan.promise.split(" (", 1)[0]


def _at_calls(plan: FixPlan) -> bool:
    """The plan is a call-site change alone, printed on the user's own calls."""
    return bool(plan.call_edits) and not (plan.decorator or plan.hoist)


def fix_head(plan: FixPlan, name: str) -> str:
    """A plan's first line: its code (``@tf.function(reduce_retracing=True)``), or, for a
    change printed on the user's own calls (:func:`edit_lines` below it), the change in words:
    ``pass `lr` as `tf.constant(lr)` at every call of train_step``."""
    if _at_calls(plan):
        return "pass " + ", ".join(f"`{p}` as `{e}`" for p, e in plan.call) + f" at every call of {name}"
    return plan.code(name)


def edit_lines(plan: FixPlan, name: str, layout: str = "report", limit: int = MAX_EDITS_SHOWN) -> list[str]:
    """The user's calls the plan rewrites, one line each (``train.py:42   train_step(x,
    tf.constant(lr))  # was: train_step(x, lr)``; ``layout="code"``: valid Python, the place in
    the comment), at most ``limit``, then the calls it could not rewrite and why. Empty for a
    plan without recorded calls (its code is the template)."""
    comment = "# " if layout == "code" else ""
    lines = [e.text(layout) for e in plan.call_edits[:limit]]
    more = len(plan.call_edits) - limit
    if more > 0:
        lines.append(f"{comment}… and {more} more call site{'s' if more != 1 else ''} (the JSON's call_edits lists them all)")
    if lines:
        # A call that only ran a cached graph is not placed (keeping every call's place would
        # cost each cached call): a line of the user's that never traced is not listed, yet
        # left as it is it traces again once the listed calls pass tensors.
        lines.append(f"{comment}(the calls that traced; change any other call of {name} the same way)")
    if plan.call_edits_note:
        if plan.call_edits:
            change = ", ".join(f"`{p}` as `{e}`" for p, e in plan.call)
            lines.append(f"{comment}not rewritten here, pass {change} there too: {plan.call_edits_note}")
        else:
            lines.append(f"{comment}(shown as a template: {plan.call_edits_note})")
    return lines


def code_with_promise(plan: FixPlan, name: str) -> str:
    """A plan's code line as the short fix shows it: ``pass `lr` as `tf.constant(lr)` at every
    call of f  # → 10 fewer graphs: …`` (a view that showed it names it instead of repeating
    it: ``render.reasons``). A change printed on the user's own calls gives its one call
    rewritten (``train_step(x, y, tf.constant(lr), True)  # train.py:42, was: …``), or its words
    when it has several."""
    code, promise = plan.code(name), _promise(plan)
    if _at_calls(plan):
        if len(plan.call_edits) == 1 and not plan.call_edits_note:
            return plan.call_edits[0].text("code") + (f" → {promise}" if promise else "")
        return f"# {fix_head(plan, name)}" + (f" → {promise}" if promise else "")
    return f"{code}  # → {promise}" if promise else code


_with_promise = code_with_promise


def _lead(text: str) -> str:
    """The first clause of a fix text: up to its first ``; `` or ``: `` outside brackets and
    backticks (``pass `lr` as a tensor so one graph serves every value``)."""
    depth, quoted = 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch in "([{":
            depth += 1
        elif not quoted and ch in ")]}":
            depth = max(0, depth - 1)
        elif not quoted and depth == 0 and ch in ";:" and text[i + 1 : i + 2] == " " and i >= 20:
            return text[:i]
    return text


def short_fix(reason: Reason, name: str = "f") -> ShortFix:
    """The short form of ``reason``'s fix (``name``: the function as the fix's code calls it)."""
    if not reason.fix:
        return ShortFix("")
    if not reason.plans:
        whole = len(reason.fix) <= WHOLE_CHARS
        return ShortFix(reason.fix if whole else clip(_lead(reason.fix), SUMMARY_CHARS))
    plan, *others = reason.plans
    code = plan.code(name)
    at = reason.fix.find(code) if code else -1
    lead = reason.fix[:at].rstrip(" :;—,") if at > 20 else _lead(reason.fix)
    if " → " in lead:  # it holds another plan and its promise (the cast before the input_signature)
        lead = _lead(reason.fix)
    summary = lead if lead and lead != reason.fix else plan_summary(plan, name)
    rest = tuple(_with_promise(p, name) + (f"; trade-off: {p.trade}" if p.trade else "") for p in others)
    return ShortFix(_clip_summary(summary), _with_promise(plan, name), plan.trade, rest)


def _clip_summary(text: str) -> str:
    """A summary that names two ways ("pass tensors of one rank (…), or accept any rank: …") is
    cut after the first way, ending ``, or:`` — the code line below it is the other way — rather
    than mid-sentence."""
    if len(text) <= SUMMARY_CHARS:
        return text
    cut = text.rfind(", or ", 0, SUMMARY_CHARS - 4)
    return text[:cut] + ", or:" if cut > SUMMARY_CHARS // 3 else clip(text, SUMMARY_CHARS)
