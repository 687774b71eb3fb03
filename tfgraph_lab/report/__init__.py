"""The report as data: :class:`TraceReport` (what one watch saw, and its JSON), merging the
reports of many processes, the JSON schema, and the data of a fix trial. Plain data only: it
imports nothing of the recording side, and neither TensorFlow, IPython nor ipywidgets.

``tfgraph_lab.report`` is a public path: ``from tfgraph_lab.report import TraceReport``.
"""

from __future__ import annotations

from .trace_report import TraceReport

__all__ = ["TraceReport"]
