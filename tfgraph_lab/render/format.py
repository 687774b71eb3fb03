"""Small formatting helpers shared by the text and HTML renderers."""

from __future__ import annotations

import os
import sys

__all__ = ["fmt_count", "fmt_seconds", "place", "plural", "short_path"]


def short_path(path: str) -> str:
    """A file path as a reader wants it: ``In [3]`` for a notebook cell, relative to the
    working directory when inside it, from the package on for installed code."""
    cell = _notebook_cell(path.rsplit(":", 1)[0] if ":" in path[2:] else path)
    if cell is not None:
        line = path.rsplit(":", 1)[1] if ":" in path[2:] else ""
        return f"{cell}, line {line}" if line.isdigit() else cell
    if not path or path.startswith("<"):
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    if not rel.startswith(".."):
        return rel
    marker = f"site-packages{os.sep}"
    if marker in path:
        return path.split(marker, 1)[1]
    return path


def place(filename: str, line: int | None) -> str:
    """Where a function is defined, as the caller lines say it: ``In [1], line 7`` for a
    notebook cell, ``train.py:7`` for a file."""
    return short_path(f"{filename}:{line}" if line else filename)


def fmt_seconds(seconds: float) -> str:
    """``0.00412`` → ``4.1 ms``; ``2.5`` → ``2.50 s``; ``0.00004`` → ``40 µs``."""
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 0.001:
        ms = seconds * 1000
        return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _notebook_cell(filename: str) -> str | None:
    """``In [3]`` when ``filename`` is a cell IPython compiled (ipykernel names cells
    ``/tmp/ipykernel_<pid>/<hash>.py``). Looks only if IPython is already imported."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        number = shell.compile._filename_map.get(filename) if shell is not None else None
    except Exception:  # an IPython without that map: keep the path
        return None
    return None if number is None else f"In [{number}]"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def fmt_count(n: float) -> str:
    return f"{n:,.0f}"
