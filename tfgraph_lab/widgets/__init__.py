"""ipywidgets labs over the core: ``RetraceLab`` (with ``PredictionGame``) and ``ReportExplorer``.

This package is the only part of tfgraph_lab that imports ipywidgets, and it does so lazily:
importing ``tfgraph_lab.widgets`` loads nothing heavy; the pure logic (``scenario``, ``session``,
``predict``) works without ipywidgets. The live counters of ``%%tracewatch --live`` are not a
widget: see :mod:`tfgraph_lab.faces.live_view`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "LabSession",
    "LabSettings",
    "PredictionGame",
    "ReportExplorer",
    "RetraceLab",
    "explore",
]

if TYPE_CHECKING:
    from .explorer import ReportExplorer, explore
    from .lab import RetraceLab
    from .predict import PredictionGame
    from .scenario import LabSettings
    from .session import LabSession

_LAZY = {
    "LabSession": "session",
    "LabSettings": "scenario",
    "PredictionGame": "predict",
    "ReportExplorer": "explorer",
    "RetraceLab": "lab",
    "explore": "explorer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tfgraph_lab.widgets' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
