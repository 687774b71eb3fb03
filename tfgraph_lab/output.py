"""Writing reports to files: the one place that opens a path a user gave us.

``write_json`` writes exactly the path it is given (nothing next to it, no temp files) and turns
every OS error into a :class:`~tfgraph_lab.errors.TfgraphLabError` that names the path and the
cause. No TensorFlow, no IPython.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .errors import TfgraphLabError

if TYPE_CHECKING:
    from .report import TraceReport

__all__ = ["write_json"]


def write_json(report: TraceReport, path: str | os.PathLike[str]) -> str:
    """Write ``report.to_json()`` to ``path``; return the path written."""
    target = os.fspath(path)
    if not target or target.strip() != target:
        raise TfgraphLabError(f"--json needs a file path, got {target!r}")
    if os.path.isdir(target):
        raise TfgraphLabError(f"--json {target!r} is a directory; give a file path such as report.json")
    text = report.to_json(indent=1)
    try:
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.write("\n")
    except OSError as exc:
        raise TfgraphLabError(
            f"could not write the JSON report to {target!r}: {exc.strerror or exc}. "
            "The report above is complete; choose a writable path."
        ) from None
    return target
