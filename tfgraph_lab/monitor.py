"""Public path of :func:`tfgraph_lab.monitor`; it lives in :mod:`tfgraph_lab.faces.monitor`."""

from __future__ import annotations

from .faces.monitor import *  # noqa: F403
from .faces.monitor import __all__  # noqa: F401
