"""What a check shows: :class:`Feedback` (✓/✗, what was measured, a hint) and :class:`Solution`
(a hint or the worked solution). Both render as text and as HTML in Jupyter."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from .measuring import Measurement, _graph_rows

__all__ = ["Feedback", "Solution"]

#: Secondary text in the host's theme (JupyterLab, then VS Code, then a light fallback), as the
#: report's stylesheet (:mod:`tfgraph_lab.render.style`) does.
_MUTED = "var(--jp-content-font-color2,var(--vscode-descriptionForeground,#57606a))"


# --------------------------------------------------------------------------- displayable results
@dataclass(frozen=True)
class Feedback:
    """The result of a check: passed (✓), failed (✗) or not attempted yet (…).

    ``measured`` lists ``(what, value)`` pairs the check measured; ``hint`` is shown when the
    check did not pass. ``bool(feedback)`` is ``True`` only when it passed.
    """

    exercise_id: str
    passed: bool | None
    summary: str
    measured: tuple[tuple[str, str], ...] = ()
    hint: str = ""
    details: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.passed is True

    @property
    def mark(self) -> str:
        return {True: "✓", False: "✗", None: "…"}[self.passed]

    def __str__(self) -> str:
        lines = [f"{self.mark} {self.exercise_id}: {self.summary}"]
        lines += [f"    {what}: {value}" for what, value in self.measured]
        lines += [f"    · {d}" for d in self.details]
        if self.hint and self.passed is not True:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Feedback {self.mark} {self.exercise_id}: {self.summary}>"

    def _repr_html_(self) -> str:
        # Accents colour the border only: text keeps the theme's own colours, which reach WCAG AA
        # contrast in JupyterLab Light/Dark and VS Code (an accent-coloured text did not: green
        # #1a7f37 on JupyterLab Dark's #111 is 3.8:1). Without styles (an untrusted notebook) the
        # mark and the words still say passed/failed.
        colour = {True: "#2da44e", False: "#e5534b", None: "#d4a72c"}[self.passed]
        e = html.escape
        rows = "".join(
            f"<tr><td style='padding:1px 12px 1px 0;color:{_MUTED}'>{e(w)}</td>"
            f"<td style='padding:1px 0'><code>{e(v)}</code></td></tr>"
            for w, v in self.measured
        )
        details = "".join(f"<li>{e(d)}</li>" for d in self.details)
        hint = (
            f"<div style='margin-top:4px'><b>Hint:</b> {e(self.hint)}</div>"
            if self.hint and self.passed is not True
            else ""
        )
        return (
            f"<div class='tfgl-feedback' style='border-left:4px solid {colour};padding:4px 10px;"
            f"margin:4px 0'><div style='font-weight:bold'>{e(self.mark)} "
            f"{e(self.exercise_id)}: {e(self.summary)}</div>"
            f"{'<table>' + rows + '</table>' if rows else ''}"
            f"{'<ul style=margin:2px>' + details + '</ul>' if details else ''}{hint}</div>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}


@dataclass(frozen=True)
class Solution:
    """A worked solution (or a hint): plain text and a code block, displayable in Jupyter."""

    exercise_id: str
    title: str
    code: str = ""
    notes: str = ""

    def __str__(self) -> str:
        parts = [f"{self.exercise_id} — {self.title}"]
        if self.notes:
            parts.append(self.notes)
        if self.code:
            parts.append(self.code.rstrip())
        return "\n\n".join(parts)

    def _repr_html_(self) -> str:
        e = html.escape
        code = f"<pre style='margin:4px 0'>{e(self.code.rstrip())}</pre>" if self.code else ""
        notes = f"<p style='margin:4px 0'>{e(self.notes)}</p>" if self.notes else ""
        return (
            f"<div class='tfgl-solution' style='border-left:4px solid #0969da;padding:4px 10px'>"
            f"<b>{e(self.exercise_id)} — {e(self.title)}</b>{notes}{code}</div>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}


def _error_feedback(ex: Any, error: BaseException, m: Measurement | None = None) -> Feedback:
    """What a learner reads when their code raised: the exception's own sentence (TF's, not the
    user-code lines before it), what was measured, the exercise's first hint. ``ex``: the
    :class:`~tfgraph_lab.exercises.checks.Exercise` (its ``id`` and ``hints``)."""
    message = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    first = message[0] if message else ""
    for line in message:  # TF puts its own "ValueError: …" sentence after the user-code lines
        found = re.match(r"^\w*(Error|Exception): (.+)", line)
        if found:
            first = found.group(2)
            break
    measured = _graph_rows(m) if m is not None else ()
    return Feedback(
        ex.id,
        False,
        f"your code raised {type(error).__name__}",
        (*measured, ("error", first[:300])),
        ex.hints[0] if ex.hints else "",
    )
