"""A report for CI systems: GitHub Actions annotations and JUnit XML
(``tfgraph-lab report FILE.json --format github|junit``).

GitHub: one ``::warning file=…,line=…::`` per line of the user's code whose calls retraced (a
call site: :class:`~tfgraph_lab.model.records.CallSite`), costliest first, so the retrace shows
on the pull request's diff at that line: the function, how many retraces and what they cost, the
argument responsible with the values it took, the fix, the reason's page. One annotation per
call site, not per retrace: a loop that retraces 500 times is one line to fix, and GitHub shows
only the first 10 warnings of a step. A broken budget is one ``::error`` per function over it,
at the line that defines the function. Paths are made relative to ``root`` (the workspace: the
repository's root), as GitHub matches them; a place outside it keeps its absolute path, a
notebook cell has no file.

JUnit: one ``testsuite`` of one ``testcase`` per function (``classname``: its file), a
``failure`` when it broke its budget, its figures as ``properties`` (named as the pytest plugin
names them: ``tracewatch.traces``...) and its call sites in ``system-out``.

Pure: reads the report's records and the overruns the caller computed.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..explain.fix_text import short_fix
from ..explain.fixes import code_name
from ..explain.pages import page_names, page_url
from ..model.records import CallSite, Event, FunctionSummary, Reason
from ..model.view import ViewOptions
from .format import fmt_seconds, plural, short_path
from .overrun import overrun_text, responsible, value_chains
from .sites import retraced_sites

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = ["github_annotations", "junit_xml", "split_place"]

Overrun = tuple[str, int, int]  # (label, count, budget), as watching.budget.TraceBudget.overruns


def split_place(place: str) -> tuple[str, int | None]:
    """``"/repo/train.py:12"`` → ``("/repo/train.py", 12)``; a place without a line → ``(place, None)``."""
    file, sep, line = place.rpartition(":")
    if sep and file and line.isdigit():
        return file, int(line)
    return place, None


def _relative(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def _data(text: str) -> str:
    """A workflow command's message, escaped as GitHub reads it (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property value (``file=``, ``title=``): also ``:`` and ``,``."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, message: str, title: str, file: str | None = None, line: int | None = None) -> str:
    props = []
    if file:
        props.append(f"file={_property(file)}")
        if line:
            props.append(f"line={line}")
    props.append(f"title={_property(title)}")
    return f"::{kind} {','.join(props)}::{_data(message)}"


def _in_file(place: str, report: TraceReport, root: str) -> tuple[str | None, int | None]:
    """The file and line of a place as GitHub names them; (None, None) for a notebook cell or a
    place that is no file (``<string>``)."""
    file, line = split_place(place)
    if not file or file in report.labels or file.startswith("<"):
        return None, None
    return _relative(file, root), line


def _is_cell(place: str, report: TraceReport) -> bool:
    file, _ = split_place(place)
    return file in report.labels or file.startswith("<")


def _site_events(report: TraceReport, site: CallSite) -> list[Event]:
    return [e for e in report.events if e.retraces and e.key == site.key and (e.caller or "") == site.caller]


def _site_message(report: TraceReport, site: CallSite, fn: FunctionSummary | None) -> str:
    reasons: list[Reason] = [r for e in _site_events(report, site) for r in e.reasons]
    codes = ", ".join(site.codes) or "a retrace"
    if not site.caller:
        where = "no line (a trace made without a call)"
    else:
        where = short_path(site.caller, report.labels) if _is_cell(site.caller, report) else "this line"
    lines = [
        f"tf.function {site.label} retraced {plural(site.retraces, 'time')} when called from {where} "
        f"({codes}), costing {fmt_seconds(site.retrace_seconds)}, its tracing included."
    ]
    chains = value_chains(reasons)
    if chains:
        text = responsible(chains)
        lines.append(text[0].upper() + text[1:])
    fixed = next((r for r in reasons if r.fix), None)
    if fixed is not None:
        short = short_fix(fixed, code_name(fn.qualname if fn else site.qualname))
        lines.append(f"Fix: {short.summary}")
        if short.code:
            lines.append(f"    {short.code}")
        if short.tradeoff:
            lines.append(f"Trade-off: {short.tradeoff}")
    for code in site.codes:
        if code in page_names():
            lines.append(f"What {code} means: {page_url(code)}")
    return "\n".join(lines)


def _functions_by_label(report: TraceReport) -> dict[str, FunctionSummary]:
    out: dict[str, FunctionSummary] = {}
    for fn in report.functions:
        out.setdefault(fn.label, fn)
    return out


def github_annotations(
    report: TraceReport,
    view: ViewOptions,
    overruns: Sequence[Overrun] = (),
    xla_overruns: Sequence[Overrun] = (),
    root: str | None = None,
    notes: Iterable[str] = (),
) -> str:
    """The workflow commands, one a line: an ``::error`` per function over budget, then a
    ``::warning`` per call site that retraced (costliest first), then a ``::warning`` per note
    (a budget that named no function)."""
    root = os.path.abspath(root or os.getcwd())
    by_label = _functions_by_label(report)
    out = []
    for over, xla in [(o, False) for o in overruns] + [(o, True) for o in xla_overruns]:
        label, count, limit = over
        fn = by_label.get(label)
        file, line = _in_file(f"{fn.filename}:{fn.firstlineno}", report, root) if fn else (None, None)
        what = "XLA compile budget" if xla else "trace budget"
        text = overrun_text(report, [] if xla else [over], [over] if xla else [])
        out.append(_command("error", text, f"{label} over its {what}: {count} > {limit}", file, line))
    for site in retraced_sites(report, view):
        fn = by_label.get(site.label)
        file, line = _in_file(site.caller, report, root) if site.caller else (None, None)
        here = "here"
        if file is None:  # a notebook cell, or no calling line: at the function's own line
            here = f"from {short_path(site.caller, report.labels)}" if site.caller else "without a call"
            if fn is not None:
                file, line = _in_file(f"{fn.filename}:{fn.firstlineno}", report, root)
        title = f"{site.label} retraced {site.retraces}× {here} ({fmt_seconds(site.retrace_seconds)})"
        out.append(_command("warning", _site_message(report, site, fn), title, file, line))
    out += [_command("warning", note, "tfgraph_lab budget") for note in notes]
    return "\n".join(out)


def _text(value: str) -> str:
    """XML 1.0 allows no control characters but tab and newlines: written out instead."""
    return "".join(ch if ch in "\t\n\r" or ord(ch) >= 0x20 else f"\\x{ord(ch):02x}" for ch in value)


def junit_xml(
    report: TraceReport,
    view: ViewOptions,
    overruns: Sequence[Overrun] = (),
    xla_overruns: Sequence[Overrun] = (),
    root: str | None = None,
    name: str = "tfgraph_lab",
) -> str:
    """The report as JUnit XML: a testcase per listed function, failed when over budget."""
    root = os.path.abspath(root or os.getcwd())
    over: dict[str, list[str]] = {}
    for label, count, limit in overruns:
        over.setdefault(label, []).append(overrun_text(report, [(label, count, limit)]))
    for label, count, limit in xla_overruns:
        over.setdefault(label, []).append(overrun_text(report, [], [(label, count, limit)]))
    functions = [f for f in report.listed(view) if not f.wraps]
    functions += [f for f in report.functions if f.label in over and f not in functions]  # a framework step over an XLA budget
    sites = retraced_sites(report, view)
    suites = ET.Element("testsuites", name=name)
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=name,
        tests=str(len(functions)),
        failures=str(sum(1 for f in functions if f.label in over)),
        errors="0",
        time=f"{report.seconds:.6f}",
    )
    for fn in functions:
        file, line = _in_file(f"{fn.filename}:{fn.firstlineno}", report, root)
        attrs = {"classname": _text(file or fn.filename or "tfgraph_lab"), "name": _text(fn.label)}
        attrs["time"] = f"{fn.trace_seconds:.6f}"
        if file:
            attrs["file"], attrs["line"] = _text(file), str(line or 0)
        case = ET.SubElement(suite, "testcase", attrs)
        props = ET.SubElement(case, "properties")
        mine = [s for s in sites if s.key == fn.key]
        figures: Mapping[str, object] = {
            "calls": fn.calls,
            "traces": fn.traces,
            "retraces": fn.retraces,
            "retrace_seconds": round(report.retrace_seconds(fn), 6),
            "xla_compiles": fn.xla_compiles,
        }
        for key, value in figures.items():
            ET.SubElement(props, "property", name=f"tracewatch.{key}", value=str(value))
        for s in mine:
            file_at, line_at = _in_file(s.caller, report, root) if s.caller else (None, None)
            where = f"{file_at}:{line_at}" if file_at and line_at else s.caller or "(no calling line)"
            ET.SubElement(
                props,
                "property",
                name="tracewatch.call_site",
                value=_text(f"{where}: {plural(s.retraces, 'retrace')}, {fmt_seconds(s.retrace_seconds)} ({', '.join(s.codes)})"),
            )
        for text in over.get(fn.label, []):
            failure = ET.SubElement(case, "failure", type="TraceBudgetExceeded", message=_text(text.splitlines()[0]))
            failure.text = _text(text)
        if mine:
            out = ET.SubElement(case, "system-out")
            out.text = _text("\n\n".join(_site_message(report, s, fn) for s in mine))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode")
