"""Small formatting helpers shared by the text and HTML renderers.

Places read cell labels from the mapping they are given (a report's ``labels``, resolved when
the calls were recorded): nothing here asks a running IPython.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..model.places import reader_place
from ..model.vocab import Via

if TYPE_CHECKING:
    from ..model.records import Event

__all__ = [
    "as_cached_calls",
    "call_label",
    "fmt_count",
    "fmt_seconds",
    "place",
    "plural",
    "runs_on",
    "short_path",
    "visible",
]

# Characters that change how text around them reads without showing themselves: bidirectional
# embeddings, overrides and isolates (a name can read backwards: "Trojan Source",
# CVE-2021-42574), marks, and zero-width characters (two names that look the same differ).
# Also the characters a terminal or a reader acts on instead of showing: C0 controls but the
# newline and tab the renderings are made of (a NUL, a carriage return or an escape sequence in a
# name drove the terminal), DEL and the C1 controls, the line and paragraph separators
# U+2028/U+2029 (a line break to some readers, none to others), and lone surrogates (a JSON
# ``"\ud800"`` reads as one; no UTF-8 encodes it: printing the report raised UnicodeEncodeError).
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064"
    "\u2066-\u2069\ufeff\ud800-\udfff]"
)


def _written_out(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every invisible, direction-changing or control character written out
    as an escape (``\\u202e``, ``\\x00``), so a rendered name shows what it holds
    and every rendering encodes as UTF-8. Newlines and tabs stay. The one escaping of every
    output: the text and HTML reports, the merged per-process table, notices, the live view and
    the labs' boxes. Renderings only: the report's data and JSON keep names verbatim."""
    return _INVISIBLE.sub(_written_out, text)


def short_path(path: str, labels: Mapping[str, str] | None = None) -> str:
    """A file path (``file`` or ``file:line``) as a reader wants it: the notebook cell's label
    from ``labels`` (a report's ``labels``: ``In [3], line 7``), relative to the working
    directory when inside it, from the package on for installed code
    (:func:`tfgraph_lab.model.places.reader_place`)."""
    return reader_place(path, labels)


def place(filename: str, line: int | None, labels: Mapping[str, str] | None = None) -> str:
    """Where a function is defined, as the caller lines say it: ``In [1], line 7`` for a
    notebook cell (named in ``labels``), ``train.py:7`` for a file."""
    return short_path(f"{filename}:{line}" if line else filename, labels)


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


def as_cached_calls(ratio: float) -> str:
    """A time said as cached calls: ``≈ 22 cached calls``, ``≈ 1 cached call``, or ``less than
    one cached call`` (a trace can be quicker than a slow cached call, e.g. an XLA graph's)."""
    if ratio < 0.5:
        return "less than one cached call"
    count = round(ratio)
    return f"≈ {count:,} cached call" + ("" if count == 1 else "s")


def call_label(event: Event) -> str:
    """``call #2``: the call's number among its function's calls (a report saved before they
    were numbered per function says ``call #5 of the watch``); a trace made without a call
    names how (``get_concrete_function``)."""
    if event.via != Via.CALL:
        return event.via
    if event.call_number is not None:
        return f"call #{event.call_number}"
    return f"call #{event.index + 1} of the watch"


def runs_on(process: str | None, thread: str | None) -> list[str]:
    """``["process w0.json", "thread Thread-1"]``: where a call ran, for a caller line (a merged
    report's ``thread`` starts with its process: said once)."""
    out = [f"process {process}"] if process else []
    if process and thread is not None and (thread == process or thread.startswith(process + "/")):
        thread = thread[len(process) + 1 :] or None
    if thread:
        out.append(f"thread {thread}")
    return out
