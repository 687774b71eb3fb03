"""A page per reason code: what TensorFlow compares, an example that retraces, every fix with
its trade-off, what the tool cannot see.

The pages are Markdown files shipped in the wheel (``explain/reason_pages/CODE.md``, package
data): the one source of truth. ``docs/reasons/`` is generated from them
(``python -m tfgraph_lab.explain.pages docs/reasons``; ``tests/explain/test_pages.py`` checks it
matches). A retrace's code names its page as it is (``shape-changed``); an XLA compilation's
code is prefixed (``xla-shape-changed``), since two XLA codes share a retrace code's name.
``tfgraph-lab explain CODE`` prints one; the HTML report and the live log link to
:func:`page_url`. Imports nothing of the project but the vocabulary.
"""

from __future__ import annotations

import difflib
import sys
from importlib import resources
from pathlib import Path

from ..model.vocab import ReasonCode, XlaCode

__all__ = [
    "DOCS_URL",
    "XLA_PREFIX",
    "close_matches",
    "index_text",
    "page_name",
    "page_names",
    "page_text",
    "page_url",
    "write_docs",
]

# The repository's docs/reasons/ folder on its default branch: pyproject's [project.urls]
# Repository + /blob/main/docs/reasons/ (tests/explain/test_pages.py checks it is built from it).
DOCS_URL = "https://github.com/tfgraph-lab/tfgraph_lab/blob/main/docs/reasons/"
XLA_PREFIX = "xla-"


def page_name(code: str, xla: bool = False) -> str:
    """The page of a retrace's reason code, or of an XLA compilation's (``xla=True``)."""
    return f"{XLA_PREFIX}{code}" if xla else str(code)


def page_names() -> list[str]:
    """Every page, retrace codes first (in the vocabulary's order), then XLA codes."""
    return [page_name(c) for c in ReasonCode] + [page_name(c, xla=True) for c in XlaCode]


def page_url(code: str, xla: bool = False) -> str:
    """The page's stable address in the repository's docs."""
    return f"{DOCS_URL}{page_name(code, xla)}.md"


def page_text(name: str) -> str:
    """The Markdown of one page (a name from :func:`page_names`); KeyError for another name."""
    if name not in page_names():
        raise KeyError(name)
    return (resources.files(__package__) / "reason_pages" / f"{name}.md").read_text(encoding="utf-8")


def close_matches(name: str) -> list[str]:
    """The page names close to a mistyped one (``shape-change`` → ``shape-changed``, ...)."""
    names = page_names()
    found = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return found or [n for n in names if name and name in n][:3]


def summary_line(name: str) -> str:
    """A page's one-sentence summary: its first paragraph after the title."""
    return page_text(name).split("\n\n", 2)[1].strip()


def index_text() -> str:
    """docs/reasons/README.md: every page, one line each."""
    lines = [
        "# Reason codes",
        "",
        "Why a tf.function traced again, and why XLA compiled again: one page per stable code.",
        "Generated from `tfgraph_lab/explain/reason_pages/` (`python -m tfgraph_lab.explain.pages docs/reasons`);",
        "`tfgraph-lab explain CODE` prints a page in the terminal.",
        "",
        "## Retraces (`events[].reasons[].code`)",
        "",
    ]
    lines += [f"- [`{c}`]({page_name(c)}.md): {summary_line(page_name(c))}" for c in ReasonCode]
    lines += ["", "## XLA compilations (`events[].xla_reasons[].code`)", ""]
    lines += [f"- [`{c}`]({page_name(c, True)}.md): {summary_line(page_name(c, True))}" for c in XlaCode]
    return "\n".join(lines) + "\n"


def write_docs(folder: Path) -> None:
    """Write every page and the index into ``folder`` (the repository's docs/reasons)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in page_names():
        (folder / f"{name}.md").write_text(page_text(name), encoding="utf-8")
    (folder / "README.md").write_text(index_text(), encoding="utf-8")


if __name__ == "__main__":
    write_docs(Path(sys.argv[1]))
