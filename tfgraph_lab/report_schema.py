"""Public path of the report's JSON schema; it lives in :mod:`tfgraph_lab.report.schema`."""

from __future__ import annotations

from .report.schema import *  # noqa: F403
from .report.schema import __all__  # noqa: F401
