"""Reading and writing reports as files: the one place that opens a path a user gave us.

``read_report`` checks a saved report against JSON version 1's schema
(:mod:`tfgraph_lab.report_schema`) before building it, so a file of the wrong shape is a
ValueError naming the first bad place, never a traceback.

``write_json`` writes exactly the path it is given (nothing next to it, no temp files) and turns
every OS error into a :class:`~tfgraph_lab.model.errors.TfgraphLabError` that names the path and the
cause. No TensorFlow, no IPython.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from ..model.errors import TfgraphLabError
from ..report.schema import first_problem
from ..report.trace_report import TraceReport

__all__ = [
    "OUTPUTS",
    "Output",
    "check_outputs",
    "check_writable",
    "finish",
    "read_report",
    "report_stream",
    "write_chrome_trace",
    "write_html",
    "write_json",
    "write_text",
]


def write_json(report: TraceReport, path: str | os.PathLike[str]) -> str:
    """Write ``report.to_json()`` to ``path``; return the path written."""
    return write_text(report.to_json(indent=1) + "\n", path, "--json", "the JSON report", "report.json")


def write_chrome_trace(report: TraceReport, path: str | os.PathLike[str]) -> str:
    """Write ``report.to_chrome_trace()`` (Perfetto / chrome://tracing JSON) to ``path``."""
    text = json.dumps(report.to_chrome_trace(), ensure_ascii=False, separators=(",", ":"))
    return write_text(text + "\n", path, "--trace", "the timeline", "trace.json")


def write_html(html: str, path: str | os.PathLike[str]) -> str:
    """Write a standalone HTML page to ``path``."""
    return write_text(html, path, "--html", "the HTML report", "report.html")


def check_writable(path: str | os.PathLike[str], flag: str, example: str = "report.json") -> str:
    """``path`` made absolute, once it is clear a file can be written there: before the cell or
    script runs (its side effects must not happen for a report that cannot be saved), and so a
    ``os.chdir`` in between does not move it. Creates nothing. A full disk still shows only on
    writing (``write_text`` says so then)."""
    target = os.fspath(path)
    if not target or target.strip() != target:
        raise TfgraphLabError(f"{flag} needs a file path, got {target!r}")
    if os.path.isdir(target):
        raise TfgraphLabError(f"{flag} {target!r} is a directory; give a file path such as {example}")
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        why = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise TfgraphLabError(
            f"{flag} {target!r}: the folder {folder!r} {why}; create it or choose another path"
        )
    exists = os.path.exists(target)
    if not os.access(target if exists else folder, os.W_OK):
        where = "the file is read-only" if exists else f"the folder {folder!r} is not writable"
        raise TfgraphLabError(f"{flag} {target!r}: {where}; choose a writable path")
    return os.path.abspath(target)


def write_text(text: str, path: str | os.PathLike[str], flag: str, what: str, example: str) -> str:
    """Write ``text`` to exactly ``path``; OS errors become a TfgraphLabError naming ``flag``."""
    target = os.fspath(path)
    if not target or target.strip() != target:
        raise TfgraphLabError(f"{flag} needs a file path, got {target!r}")
    if os.path.isdir(target):
        raise TfgraphLabError(f"{flag} {target!r} is a directory; give a file path such as {example}")
    try:
        # a lone surrogate in a name (JSON's "\\ud800" reads as one) has no UTF-8: written as that
        # same escape, which in a JSON string means the same character (was UnicodeEncodeError)
        with open(target, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
    except OSError as exc:
        raise TfgraphLabError(
            f"could not write {what} to {target!r}: {exc.strerror or exc}. "
            "The report above is complete; choose a writable path."
        ) from None
    return target


def read_report(path: str | os.PathLike[str]) -> TraceReport:
    """A saved report, checked against JSON version 1's schema first: ValueError names the
    first bad place (``$.functions[0].qualname: expected a string, got null``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise ValueError(exc.strerror or str(exc)) from None
    except RecursionError:
        raise ValueError("its JSON is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, bad UTF-8
        raise ValueError(f"not JSON: {exc}") from None
    problem = first_problem(data)
    if problem is not None:
        raise ValueError(f"not the shape of a report (JSON version 1): {problem}")
    try:
        return TraceReport.from_dict(data)
    except (ValueError, KeyError, TypeError, OverflowError) as exc:
        raise ValueError(f"not the shape of a report (JSON version 1): {exc!r}") from None


def report_stream() -> TextIO:
    """Where a command-line report goes: stderr, even when the script closed ``sys.stderr``."""
    for stream in (sys.stderr, sys.__stderr__):
        if stream is not None and not stream.closed:
            return stream
    return open(2, "w", closefd=False)  # fd 2 itself stays open


@dataclass(frozen=True)
class Output:
    """One file (or folder) a finished watch can write: its flag, an example path, its writer,
    and its check (``(path, name) -> path to write``), run before the watched code runs."""

    flag: str
    example: str
    write: Callable[[TraceReport, str], Any]
    check: Callable[[str, str], str]


def _check_file(example: str) -> Callable[[str, str], str]:
    return lambda path, name: check_writable(path, name, example)


def _check_log_dir(path: str, name: str) -> str:
    from .tensorboard import check_log_dir

    checked = check_log_dir(path, name)  # TensorFlow's writer creates the folder
    return checked if "://" in checked else os.path.abspath(checked)  # gs://, s3://: TF's own


def _write_tensorboard(report: TraceReport, path: str) -> None:
    from .tensorboard import write_watch_scalars

    write_watch_scalars(report, path)


# Every output of a watch by its option name: the magic, `tfgraph-lab run` and watch() write
# these through one finish() (lifecycle.Lifecycle), as pyinstrument picks a renderer by name.
OUTPUTS: dict[str, Output] = {
    "json": Output("--json", "report.json", write_json, _check_file("report.json")),
    "trace": Output("--trace", "trace.json", write_chrome_trace, _check_file("trace.json")),
    "tensorboard": Output("--tensorboard", "logs", _write_tensorboard, _check_log_dir),
}


def check_outputs(
    asked: Mapping[str, Any],
    unquote: Callable[[str], str] = str,
    names: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``{name: path}`` of the outputs ``asked`` names (keys as in :data:`OUTPUTS`, a value of
    None: not asked), each checked before the watched code runs (its side effects must not
    happen for a report that cannot be saved) and made absolute (the code may ``os.chdir``).
    ``names`` spell an output's option for error messages (default: its flag)."""
    out: dict[str, str] = {}
    for name, spec in OUTPUTS.items():
        path = asked.get(name)
        if path is None:
            continue
        out[name] = spec.check(unquote(os.fspath(path)), (names or {}).get(name, spec.flag))
    return out


def finish(report: TraceReport, outputs: Mapping[str, str]) -> list[TfgraphLabError]:
    """Write every output asked for (``check_outputs``); a file that cannot be written does not
    stop the others. Returns the errors, for the front end to show its way."""
    errors: list[TfgraphLabError] = []
    for name, path in outputs.items():
        try:
            OUTPUTS[name].write(report, path)
        except TfgraphLabError as exc:
            errors.append(exc)
    return errors
