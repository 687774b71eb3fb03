"""Small HTML building blocks shared by the report, the labs and the live view: stats, tables.

Each reads as plain words when the stylesheet is gone (``3 traces (TF's own count: 3)``, real
table rows). Pure strings; imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["stat_html", "stats_html", "table_html"]


def stat_html(
    label: str, value: object, note: str = "", big: bool = False, classes: str = "", value_class: str = ""
) -> str:
    """A stat box: the number, then its label (and a note), words apart."""
    cls = "tfgl-stat" + (" tfgl-big" if big else "") + (f" {classes}" if classes else "")
    small = f"<small> ({escape(note)})</small>" if note else ""
    value_cls = "tfgl-value" + (f" {value_class}" if value_class else "")
    return (
        f"<span class='{cls}'><b class='{value_cls}'>{escape(str(value))}</b> {escape(label)}{small}</span>"
    )


def count_html(n: int, word: str, many: str, note: str = "", big: bool = False) -> str:
    """A stat box for a count, its word agreeing with it: ``1 trace``, ``2 traces``."""
    return stat_html(word if n == 1 else many, f"{n:,}", note, big)


def stats_html(*boxes: str) -> str:
    """A row of stat boxes; without styles it reads ``3 traces · 5 calls`` (the dots are hidden
    from sight, not from screen readers or a stripped page)."""
    return "<div class='tfgl-stats'>" + "<span class='tfgl-sep'> · </span>".join(boxes) + "</div>"


def table_html(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    row_classes: Sequence[str] = (),
    numeric: Sequence[int] = (),
) -> str:
    """A table of already-escaped cells (callers escape: cells may hold markup)."""
    head = "".join(
        f"<th class='tfgl-num'>{h}</th>" if i in numeric else f"<th>{h}</th>" for i, h in enumerate(header)
    )
    body = []
    for r, row in enumerate(rows):
        cls = row_classes[r] if r < len(row_classes) and row_classes[r] else ""
        cells = "".join(
            f"<td class='tfgl-num'>{c}</td>" if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr class='{cls}'>{cells}</tr>" if cls else f"<tr>{cells}</tr>")
    thead = f"<thead><tr>{head}</tr></thead>" if any(header) else ""
    return f"<table class='tfgl-table'>{thead}<tbody>{''.join(body)}</tbody></table>"
