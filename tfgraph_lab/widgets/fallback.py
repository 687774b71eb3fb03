"""What a lab leaves where widgets cannot run, and what it tells screen readers.

- Static fallbacks: a widget's output in a saved notebook carries ``text/plain`` and
  ``text/html`` beside the widget view. Untrusted notebooks, ``nbconvert --to html``, nbviewer
  and GitHub show those (sanitized), so they say what the lab showed when it was displayed and
  how to get it back. ``RetraceLab.snapshot()`` gives the same for its current state.
- ``live_region()``: a persistent ARIA live region, so screen readers announce the trace count
  when it changes. ipywidgets' own views replace their inner HTML at every update, which assistive
  technology does not announce; an anywidget owns its element and changes only its text.

Imports ipywidgets (and anywidget when there) lazily; no TensorFlow.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..render.blocks import count_html, stats_html, table_html
from ..render.format import plural, visible
from ..render.reasons import reasons_html
from ..render.style import style_tag
from ..render.xla import xla_count
from .lab_panels import xla_count_html

__all__ = ["lab_snapshot_html", "lab_text", "live_region", "set_live_text", "snapshot_bundle"]

NO_WIDGETS = (
    "a static copy: the live lab needs a running kernel with ipywidgets "
    "(JupyterLab, Notebook 7, Voila); run the cell to use it"
)

_LIVE_REGION_ESM = """
function render({ model, el }) {
  el.setAttribute("role", "status");
  el.setAttribute("aria-live", "polite");
  el.setAttribute("aria-atomic", "true");
  el.classList.add("tfgl-sr");
  const show = () => { el.textContent = model.get("text"); };
  show();
  model.on("change:text", show);
}
export default { render };
"""


def live_region(text: str = "") -> Any:
    """A widget whose text screen readers announce politely each time it changes."""
    try:
        import anywidget
        import traitlets
    except ImportError:  # no anywidget: an HTML status box (re-created on change: best effort)
        import ipywidgets as W

        return W.HTML(f"<div role='status' aria-live='polite' class='tfgl-sr'>{escape(text)}</div>")

    class LiveRegion(anywidget.AnyWidget):  # type: ignore[misc]
        _esm = _LIVE_REGION_ESM
        text = traitlets.Unicode("").tag(sync=True)

    region = LiveRegion(text=text)
    region.add_class("tfgl-live-region")
    return region


def set_live_text(region: Any, text: str) -> None:
    if hasattr(region, "text"):
        region.text = text
    else:
        region.value = f"<div role='status' aria-live='polite' class='tfgl-sr'>{escape(text)}</div>"


def lab_snapshot_html(lab: Any) -> str:
    """The lab's current state as self-contained HTML: counts, the graph cache, the last reason."""
    session, state = lab.session, lab.session.state
    stats = stats_html(
        count_html(state.traces, "trace", "traces", f"TF's own count: {state.tf_traces}", big=True),
        count_html(state.calls, "call", "calls"),
        count_html(len(state.graphs), "graph in cache", "graphs in cache"),
        *([xla_count_html(state)] if session.built.jit_compile else []),
    )
    rows = [
        [f"#{i}", f"<code>{escape(row.signature or '()')}</code>", f"{row.hits:,}"]
        for i, row in enumerate(state.graphs)
    ]
    cache = (
        table_html(["graph", "signature", "hits"], rows, numeric=(2,))
        if rows
        else "<div>graph cache: empty</div>"
    )
    reason = (
        reasons_html(state.last_trace, f"why call {state.last_trace_call} traced:")
        if state.last_trace
        else ""
    )
    return (
        f"<div class='tfgl tfgl-lab-snapshot'>{style_tag()}"
        f"<div class='tfgl-lab-title'>RetraceLab · <code>{escape(session.scenario.name)}</code></div>"
        + (
            f"<div class='tfgl-lab-goal'><b>Goal:</b> {escape(visible(lab.goal))}</div>"
            if getattr(lab, "goal", "")
            else ""
        )
        + f"<div class='tfgl-lab-sub'>{escape(NO_WIDGETS)}. It showed:</div>"
        f"{stats}{cache}{reason}"
        f"<details><summary>the code these settings amount to</summary><pre>{escape(session.code())}</pre>"
        "</details></div>"
    )


def lab_text(lab: Any) -> str:
    state = lab.session.state
    lines = [
        f"RetraceLab({lab.session.scenario.name}): {plural(state.traces, 'trace')}, "
        + (
            f"compiled by XLA {xla_count(state.xla_compiles, state.xla_kinds)}, "
            if lab.session.built.jit_compile
            else ""
        )
        + f"{plural(state.calls, 'call')}, {plural(len(state.graphs), 'graph')} in the cache "
        f"({NO_WIDGETS})",
    ]
    lines += [f"  #{i} {row.signature}  hits {row.hits}" for i, row in enumerate(state.graphs)]
    fixed = state.fixed
    if fixed is not None:  # «Apply the fix»: what it did to the cache, or TF's error
        outcome = (
            fixed.error
            or f"{fixed.graphs_before} → {fixed.graphs_after} graphs for the same {fixed.calls} calls"
        )
        lines.append(f"Applied {fixed.plan.code(lab.session.scenario.name)}: {outcome}")
    if getattr(lab, "goal", ""):
        lines.append(f"Goal: {visible(lab.goal)}")
    return "\n".join(lines)


class _Snapshot:
    def __init__(self, bundle: dict[str, str]) -> None:
        self.bundle = bundle

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return self.bundle


def snapshot_bundle(lab: Any) -> Any:
    """A displayable copy of the lab as it is now (text and HTML, no widget)."""
    return _Snapshot({"text/plain": lab_text(lab), "text/html": lab_snapshot_html(lab)})
