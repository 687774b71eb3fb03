"""A function's ranked fixes, best first: text and HTML twins of one ``FunctionPlan``.

The plan (:mod:`tfgraph_lab.explain.plan`) sits at the top of a function's section, before its
graph cache and traces: the change that saves most is the first fix a reader meets. The traces
below name a change the plan shows (``the change shown at fix 1``) instead of repeating it:
:func:`mark_shown` tells the reason renderers which code lines the plan showed.
"""

from __future__ import annotations

from html import escape

from ..explain.fix_text import code_with_promise, fix_head
from ..explain.plan import FunctionPlan
from .format import plural, visible

__all__ = ["MAX_FIXES_SHOWN", "mark_shown", "plan_html", "plan_lines", "plan_title"]

MAX_FIXES_SHOWN = 3  # more would bury the best again; the suggestion and JSON keep every one


def plan_title(plan: FunctionPlan) -> str:
    """``fixes, best first (13 graphs for the calls seen):`` / ``fix (…):`` for one."""
    what = "fix" if len(plan.fixes) == 1 else "fixes, best first"
    return f"{what} ({plural(plan.before, 'graph')} for the calls seen):"


def plan_lines(plan: FunctionPlan, indent: str = "  ") -> list[str]:
    """The plan as text lines: the title, then ``1. <change> → <what it saves>`` and its
    trade-off per fix (at most :data:`MAX_FIXES_SHOWN`); nothing without a fix."""
    if not plan.fixes:
        return []
    lines = [indent + plan_title(plan)]
    for i, fix in enumerate(plan.fixes[:MAX_FIXES_SHOWN], 1):
        lines.append(f"{indent}  {i}. {fix.line(plan.name)}")
        lines += [f"{indent}     {edit}" for edit in fix.edits(plan.name)]  # the user's calls, rewritten
        if fix.plan.trade:
            lines.append(f"{indent}     trade-off: {fix.plan.trade}")
        if i == 1 and fix.plan.note:
            lines.append(f"{indent}     note: {fix.plan.note}")
    if len(plan.fixes) > MAX_FIXES_SHOWN:
        lines.append(f"{indent}  … {plural(len(plan.fixes) - MAX_FIXES_SHOWN, 'more fix', 'more fixes')} (the suggestion lists them)")
    return lines


def plan_html(plan: FunctionPlan, named: bool = False) -> str:
    """The HTML twin of :func:`plan_lines` (every string escaped); ``named``: the title names the
    function (a view listing several functions' plans: the explorer)."""
    if not plan.fixes:
        return ""
    title = escape(plan_title(plan))
    if named:
        title = f"<code>{escape(visible(plan.label or plan.qualname))}</code> {title}"
    items = []
    for fix in plan.fixes[:MAX_FIXES_SHOWN]:
        trade = f"<div>trade-off: {escape(fix.plan.trade)}</div>" if fix.plan.trade else ""
        edits = "".join(f"<div><code>{escape(edit)}</code></div>" for edit in fix.edits(plan.name))
        items.append(
            f"<li><code>{escape(fix_head(fix.plan, plan.name))}</code> → {escape(fix.promise)}{edits}{trade}</li>"
        )
    more = len(plan.fixes) - MAX_FIXES_SHOWN
    tail = f"<p class='tfgl-muted'>… {escape(plural(more, 'more fix', 'more fixes'))}</p>" if more > 0 else ""
    return (
        f"<div class='tfgl-plan'><div>{title}</div>"
        f"<ol class='tfgl-suggestion'>{''.join(items)}</ol>{tail}</div>"
    )


def mark_shown(plan: FunctionPlan, said: set[tuple[str, str]]) -> None:
    """Tell :func:`~tfgraph_lab.render.reasons.reason_lines` / ``reasons_html`` that the plan
    showed its fixes' code (``said`` keys ``code:<code line>``), so a reason offering the same
    change says ``the change shown at fix 1`` instead of repeating it."""
    for i, fix in enumerate(plan.fixes[:MAX_FIXES_SHOWN], 1):
        said.add(("code:" + code_with_promise(fix.plan, plan.name), f"fix {i}"))
