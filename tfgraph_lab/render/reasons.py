"""The one rendering of retrace reasons: HTML boxes (report, labs, live view) and text lines.

A reason is a box: an optional label (``call #3``), the reason code as a badge, the argument's
change (``x: (32, 16) → (20, 16)``), the one-line message and the fix. Classes are a contract
(tests, lesson authors): ``tfgl-reason-box tfgl-reason-<code>``, plus ``tfgl-retrace`` when it
is a retrace. Words and spaces carry the meaning, so it reads the same without the stylesheet.
Every string is escaped. The text twin, :func:`reason_lines`, gives the same parts as indented
lines for the text report's retraces and XLA compilations. Imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from html import escape

from ..explain.fix_text import short_fix
from ..explain.pages import page_name, page_names, page_url
from ..explain.trace import NOT_RETRACES
from ..model.records import Reason

__all__ = ["argument_change", "code_html", "failure_html", "fix_html", "reason_html", "reason_lines", "reasons_html"]


def fix_html(reason: Reason, name: str = "f", shown_at: str = "") -> str:
    """The fix in its short form (what to change, the code, the trade-off), the full text folded
    under it; ``shown_at`` (``call #2``): the same change was shown there, said once."""
    short = short_fix(reason, name)
    full = (
        f"<details><summary>full fix</summary>{escape(reason.fix)}</details>"
        if reason.fix != short.summary
        else ""
    )
    if shown_at:
        said = f"{short.summary.rstrip(' ,:;')}: the change shown at {shown_at}"
        return f"<div class='tfgl-fix'><b>fix:</b> {escape(said)}{full}</div>"
    code = f"<div><code>{escape(short.code)}</code></div>" if short.code else ""
    trade = f"<div>trade-off: {escape(short.tradeoff)}</div>" if short.tradeoff else ""
    return f"<div class='tfgl-fix'><b>fix:</b> {escape(short.summary)}{code}{trade}{full}</div>"


def reason_html(
    reason: Reason,
    label: str = "",
    explain: bool = True,
    retrace: bool = True,
    name: str = "f",
    shown_at: str = "",
) -> str:
    """One reason box; ``explain=False`` leaves out the message and fix (said before);
    ``retrace=False`` for a reason that is not a trace's (an XLA compilation); ``shown_at``:
    where the same change was shown (:func:`fix_html`)."""
    r = reason
    change = (
        f" <code>{escape(r.argument)}</code>: <code>{escape(r.before)}</code> → <code>{escape(r.after)}</code>"
        if r.argument
        else ""
    )
    prefix = f"<span class='tfgl-muted'>{escape(label)}</span> " if label else ""
    why = f"<div>{escape(r.message)}</div>" if explain and r.message else ""
    fix = fix_html(r, name, shown_at) if explain and r.fix else ""
    retrace_class = "" if r.code in NOT_RETRACES or not retrace else " tfgl-retrace"
    return (
        f"<div class='tfgl-reason-box tfgl-reason-{escape(r.code, quote=True)}{retrace_class}'>"
        f"{prefix}{code_html(r.code, xla=not retrace)}{change}{why}{fix}</div>"
    )


def code_html(code: str, xla: bool = False) -> str:
    """A reason code as a badge linked to its page (``docs/reasons/CODE.md``; an XLA
    compilation's code to ``xla-CODE.md``); a code without a page (a report from a newer
    version) is the badge alone."""
    badge = f"<span class='tfgl-code'>{escape(code)}</span>"
    if page_name(code, xla) not in page_names():
        return badge
    url = escape(page_url(code, xla), quote=True)
    return f"<a class='tfgl-code-page' href='{url}' target='_blank' title='what {escape(code, quote=True)} means'>{badge}</a>"


def reasons_html(
    reasons: Iterable[Reason],
    label: str = "",
    said: set[tuple[str, str]] | None = None,
    retrace: bool = True,
    name: str = "f",
) -> str:
    """Reason boxes in order. With ``said``, each (code, argument)'s message and fix is shown
    once across calls, and a change another reason showed is named, not repeated (the set is
    updated, as :func:`reason_lines` does)."""
    blocks = []
    for r in reasons:
        first, shown_at = True, ""
        if said is not None:
            first = (r.code, r.argument) not in said
            said.add((r.code, r.argument))
            code = short_fix(r, name).code if first and r.fix else ""
            if code:
                shown_at = next((at for key, at in said if key == "code:" + code), "")
                if not shown_at:
                    said.add(("code:" + code, label))
        blocks.append(reason_html(r, label, explain=first, retrace=retrace, name=name, shown_at=shown_at))
    return "".join(blocks)


def failure_html(error: str, label: str = "") -> str:
    """A trace that raised: TensorFlow's message, as it said it (on a tint: no muted text)."""
    prefix = f"{escape(label)} " if label else ""
    return (
        f"<div class='tfgl-reason-box tfgl-error tfgl-reason-failed'>{prefix}"
        f"<span class='tfgl-code'>trace failed</span> <code>{escape(error)}</code></div>"
    )


def argument_change(reason: Reason) -> str:
    """``x: (32, 16) → (20, 16)``, or nothing for a reason without an argument."""
    return f"{reason.argument}: {reason.before} → {reason.after}" if reason.argument else ""


def reason_lines(
    reasons: Iterable[Reason],
    label: str,
    said: set[tuple[str, str]],
    change: Callable[[Reason], str] = argument_change,
    name: str = "f",
) -> list[str]:
    """Text lines of reasons: ``label  code  change``, then ``why:`` and the fix's short form
    (what to change, the code, the trade-off) the first time a (code, argument) pair is met
    (``said`` keeps those across calls). A fix that applies to several arguments is said once:
    the others read ``fix: as for `x` above``; a change another reason already showed (one
    rewrite of `x` for its dtype, its kind and its value) reads ``…: the change shown at call #2``."""
    lines = []
    for r in reasons:
        lines.append(f"{label}  {r.code}  {change(r)}".rstrip())
        if (r.code, r.argument) in said:
            continue
        said.add((r.code, r.argument))
        if r.message:
            lines.append(f"        why: {r.message}")
        if not r.fix:
            continue
        first = next((arg for fix, arg in said if fix == "fix:" + r.fix), None)
        if first is not None:
            lines.append(f"        fix: as for `{first}` above" if first else "        fix: as above")
            continue
        said.add(("fix:" + r.fix, r.argument))
        short = short_fix(r, name)
        where = next((at for code, at in said if code == "code:" + short.code), None) if short.code else None
        if where is not None:  # another reason of the function asked for the same change
            lines.append(f"        fix: {short.summary.rstrip(' ,:;')}: the change shown at {where}")
            continue
        said.add(("code:" + short.code, label.strip()))
        lines.append(f"        fix: {short.lines()[0]}")
        lines += [f"             {line}" for line in short.lines()[1:]]
    return lines
