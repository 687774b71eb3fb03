"""ipywidgets labs over the core: ``RetraceLab``, ``LiveDashboard`` / ``live_view``, ``ReportExplorer``.

This package is the only part of tfgraph_lab that imports ipywidgets, and it does so lazily:
importing ``tfgraph_lab.widgets`` loads nothing heavy; the pure logic (``scenario``, ``session``,
``predict``) and the live view's HTML work without ipywidgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "LabSession",
    "LabSettings",
    "LiveDashboard",
    "PredictionGame",
    "ReportExplorer",
    "RetraceLab",
    "explore",
    "live_view",
]

if TYPE_CHECKING:
    from .explorer import ReportExplorer, explore
    from .lab import RetraceLab
    from .live import LiveDashboard, live_view
    from .predict import PredictionGame
    from .scenario import LabSettings
    from .session import LabSession

_LAZY = {
    "LabSession": "session",
    "LabSettings": "scenario",
    "LiveDashboard": "live",
    "PredictionGame": "predict",
    "ReportExplorer": "explorer",
    "RetraceLab": "lab",
    "explore": "explorer",
    "live_view": "live",
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
