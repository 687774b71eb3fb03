"""Keras glue: :class:`TraceCallback` (a watch over ``fit``/``evaluate``/``predict``), the guard
that ends its watch when Keras stops early, and the names of Keras's step functions.

``tfgraph_lab.keras.TraceCallback`` is a public path.
"""

from __future__ import annotations

from .callback import TraceCallback

__all__ = ["TraceCallback"]
