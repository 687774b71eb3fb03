"""Small formatting helpers shared by the text and HTML renderers."""

from __future__ import annotations

__all__ = ["fmt_count", "fmt_seconds", "plural"]


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
