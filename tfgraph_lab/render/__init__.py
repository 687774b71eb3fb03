"""Renderers: a TraceReport → text, HTML or a timeline, each ``render_*(report) -> str``.

They read the report's plain data only; none imports TensorFlow, IPython or ipywidgets.
"""

from __future__ import annotations

from .html import render_html
from .text import headline, render_text

__all__ = ["headline", "render_html", "render_text"]
