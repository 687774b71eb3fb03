"""Small formatting helpers shared by the text and HTML renderers."""

from __future__ import annotations

import os

__all__ = ["fmt_count", "fmt_seconds", "plural", "short_path"]


def short_path(path: str) -> str:
    """A file path as a reader wants it: relative to the working directory when inside it,
    from the package on for installed code, unchanged otherwise (``<ipython-input-…>``)."""
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


def fmt_seconds(seconds: float) -> str:
    """``0.00412`` → ``4.1 ms``; ``2.5`` → ``2.50 s``; ``0.00004`` → ``40 µs``."""
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 0.001:
        ms = seconds * 1000
        return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def fmt_count(n: float) -> str:
    return f"{n:,.0f}"
