"""Small widget builders the labs share: section headings, labelled rows, CSS class tags.

``RetraceLab`` and ``ReportExplorer`` lay out their controls with these, so a heading or a
label column looks (and is styled by ``render.style``) the same in both. Imports ipywidgets;
no TensorFlow.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

import ipywidgets as W

__all__ = ["LABEL_WIDTH", "add_classes", "labelled", "section"]

LABEL_WIDTH = "118px"  # the label column of sliders and labelled rows


def section(text: str) -> Any:
    """A section heading between groups of controls."""
    return W.HTML(f"<div class='tfgl-section'>{escape(text)}</div>")


def labelled(label: str, widget: Any) -> Any:
    """A label in the sliders' label column, then the widget (ToggleButtons wrap their own)."""
    text = W.HTML(
        f"<span class='tfgl-control-label'>{escape(label)}</span>", layout=W.Layout(width=LABEL_WIDTH)
    )
    return W.HBox([text, widget], layout=W.Layout(align_items="center"))


def add_classes(owner: Any, names: Iterable[str], prefix: str = "tfgl-") -> None:
    """Give each widget attribute of ``owner`` named in ``names`` the CSS class ``prefix`` + its
    name in kebab case (``call_button`` → ``tfgl-call-button``): what the stylesheet, the browser
    tests and the lessons find it by."""
    for name in names:
        getattr(owner, name).add_class(prefix + name.replace("_", "-"))
