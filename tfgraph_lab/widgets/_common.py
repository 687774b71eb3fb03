"""HTML fragments and CSS shared by the lab, the live dashboard and the explorer.

Pure string building over plain data (session state, report records); every user-derived string
is escaped. Imports neither TensorFlow nor ipywidgets, so the live view can use it without them.
Class names (``tfgl-…``) are a contract for tests and lesson authors.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ..datatypes import Reason
from ..explain import NOT_RETRACES
from ..render.format import fmt_seconds

__all__ = ["CSS", "chart_svg", "reasons_html", "stat_html", "table_html"]

CSS = """<style>
.tfgl-lab{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;color:#1f2328}
.tfgl-lab code,.tfgl-lab pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
.tfgl-lab-title{font-size:16px;font-weight:600;margin:0 0 2px}
.tfgl-lab-sub{color:#57606a;margin:0 0 6px}
.tfgl-section{font-weight:600;color:#57606a;text-transform:uppercase;font-size:11px;
 letter-spacing:.04em;margin:8px 0 2px}
.tfgl-stats{display:flex;gap:8px;flex-wrap:wrap}
.tfgl-stat{background:#f6f8fa;border:1px solid #d0d7de;border-radius:8px;padding:6px 12px;
 min-width:84px}
.tfgl-stat .tfgl-value{display:block;font-size:22px;line-height:1.15;
 font-variant-numeric:tabular-nums}
.tfgl-stat.tfgl-big .tfgl-value{font-size:40px;color:#bc4c00}
.tfgl-stat.tfgl-big{background:#fff1e5;border-color:#fb8f44;min-width:120px}
.tfgl-stat small{display:block;color:#57606a;font-size:11px}
.tfgl-table{border-collapse:collapse;width:100%}
.tfgl-table th,.tfgl-table td{padding:3px 8px;border-bottom:1px solid #d8dee4;text-align:left;
 vertical-align:top}
.tfgl-table td.tfgl-num,.tfgl-table th.tfgl-num{text-align:right;font-variant-numeric:tabular-nums}
.tfgl-table tr.tfgl-hit td{background:#ddf4ff}
.tfgl-table tr.tfgl-new td{background:#fff1e5}
.tfgl-table code{word-break:break-word}
.tfgl-reason-box{margin:4px 0;padding:6px 8px;background:#f6f8fa;border-radius:6px;
 border-left:3px solid #8c959f}
.tfgl-reason-box.tfgl-retrace{border-left-color:#fb8f44}
.tfgl-reason-box.tfgl-error{border-left-color:#cf222e;background:#ffebe9}
.tfgl-reason-box.tfgl-ok{border-left-color:#1a7f37;background:#dafbe1}
.tfgl-badge{display:inline-block;font-weight:600;border-radius:10px;padding:0 8px;
 background:#ddf4ff;color:#0969da;margin-right:4px}
.tfgl-fix{color:#1a7f37;margin-top:2px}
.tfgl-muted{color:#57606a}
.tfgl-code-block pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px;
 margin:2px 0;  white-space:pre;overflow-x:auto;line-height:1.35}
.tfgl-verdict-right{color:#1a7f37;font-weight:600}
.tfgl-verdict-miss{color:#cf222e;font-weight:600}
.tfgl-control-label{display:block;text-align:right;padding-right:8px;color:var(--jp-widgets-label-color,#1f2328)}
</style>"""


def stat_html(label: str, value: object, note: str = "", big: bool = False) -> str:
    cls = "tfgl-stat tfgl-big" if big else "tfgl-stat"
    small = f"<small>{escape(note)}</small>" if note else ""
    return f"<div class='{cls}'><b class='tfgl-value'>{escape(str(value))}</b>{escape(label)}{small}</div>"


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
    return f"<table class='tfgl-table'><tr>{head}</tr>{''.join(body)}</table>"


def reasons_html(reasons: Sequence[Reason], label: str = "") -> str:
    blocks = []
    for r in reasons:
        retrace = r.code not in NOT_RETRACES
        change = (
            f" <code>{escape(r.argument)}</code>: <code>{escape(r.before)}</code>"
            f" → <code>{escape(r.after)}</code>"
            if r.argument
            else ""
        )
        fix = f"<div class='tfgl-fix'>fix: {escape(r.fix)}</div>" if r.fix else ""
        prefix = f"<span class='tfgl-muted'>{escape(label)}</span> " if label else ""
        classes = f"tfgl-reason-box tfgl-reason-{escape(r.code, quote=True)}" + (
            " tfgl-retrace" if retrace else ""
        )
        blocks.append(
            f"<div class='{classes}'>"
            f"{prefix}<span class='tfgl-badge'>{escape(r.code)}</span>{change}"
            f"<div>{escape(r.message)}</div>{fix}</div>"
        )
    return "".join(blocks)


def chart_svg(
    points: Sequence[tuple[int, float, bool, bool]], width: int = 460, height: int = 110, title: str = ""
) -> str:
    """Bars of call times ``(number, seconds, traced, failed)``: traced orange, failed red, cached grey.

    A log scale: a trace costs ~100× a cached call, and both must stay visible.
    """
    if not points:
        return f"<div class='tfgl-muted'>{escape(title or 'no calls yet')}</div>"
    import math

    lo = min(p[1] for p in points if p[1] > 0) if any(p[1] > 0 for p in points) else 1e-6
    hi = max(p[1] for p in points) or 1e-6
    lo = min(lo, hi / 10)
    span = math.log10(hi) - math.log10(lo) or 1.0
    plot_h = height - 18
    bar = width / max(len(points), 20)
    bars = []
    for i, (number, seconds, traced, failed) in enumerate(points):
        frac = (math.log10(max(seconds, lo)) - math.log10(lo)) / span
        h = max(2.0, 4 + frac * (plot_h - 4))
        color = "#cf222e" if failed else ("#e16f24" if traced else "#8c959f")
        tip = f"call {number}: {fmt_seconds(seconds)}" + (
            " (failed)" if failed else " (traced)" if traced else ""
        )
        bars.append(
            f"<rect class='tfgl-bar{' tfgl-bar-traced' if traced else ''}' x='{i * bar:.1f}' "
            f"y='{plot_h - h:.1f}' width='{max(bar - 1.5, 1):.1f}' height='{h:.1f}' fill='{color}'>"
            f"<title>{escape(tip)}</title></rect>"
        )
    legend = (
        f"{escape(title)} <span style='color:#e16f24'>■</span> traced "
        "<span style='color:#8c959f'>■</span> cached "
        "<span style='color:#cf222e'>■</span> failed · "
        f"log scale, {escape(fmt_seconds(lo))} – {escape(fmt_seconds(hi))}"
    )
    return (
        f"<div class='tfgl-muted'>{legend}</div>"
        f"<svg class='tfgl-chart' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img' "
        f"aria-label='time per call'>{''.join(bars)}"
        f"<line x1='0' y1='{plot_h}' x2='{width}' y2='{plot_h}' stroke='#d0d7de'/></svg>"
    )
