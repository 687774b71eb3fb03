"""TraceReport as data: JSON round trip, renderings, escaping. No TensorFlow needed."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from tfgraph_lab.model.records import CallRun, Event, FunctionSummary, GraphSummary, Reason
from tfgraph_lab.report import TraceReport


def make_report(name: str = "train_step", arg: str = "x", calls: int = 40) -> TraceReport:
    graphs = (
        GraphSummary("x: TensorSpec(shape=(32, 128), dtype=tf.float32)", calls - 2),
        GraphSummary("x: TensorSpec(shape=(17, 128), dtype=tf.float32)", 2),
    )
    fn = FunctionSummary(
        name,
        "train.py",
        12,
        calls,
        2,
        0,
        0.02,
        0.04,
        False,
        graphs,
        objects_traced=1,
        traced_calls=2,
        retraces=1,
        suggestion="@tf.function(...)",
    )
    keras = FunctionSummary("Trainer.one_step_on_data", "keras/trainer.py", 1, 3, 1, 0, 0.01, 0.02, True)
    events = [
        Event(
            0,
            name,
            "train.py",
            0,
            "call",
            True,
            1,
            0.01,
            0,
            reasons=(Reason("first-trace", message="first"),),
        )
    ]
    events += [Event(i, name, "train.py", 0, "call", False, 0, 0.0005, 0) for i in range(1, calls - 1)]
    events.append(
        Event(
            calls - 1,
            name,
            "train.py",
            0,
            "call",
            True,
            1,
            0.01,
            1,
            caller="train.py:40",
            reasons=(Reason("shape-changed", arg, "(32, 128)", "(17, 128)", "changed", "use None"),),
        )
    )
    return TraceReport(
        functions=(fn, keras),
        events=tuple(replace(e, call_number=e.index + 1) for e in events),  # one function's calls
        warnings=("TF warned",),
        tf_version="2.21.0",
    )


def test_json_round_trip_and_contract_keys() -> None:
    report = make_report()
    data = json.loads(report.to_json())
    assert data["version"] == 1
    fn = data["functions"][0]
    for key in (
        "qualname",
        "filename",
        "firstlineno",
        "calls",
        "traces",
        "failed_traces",
        "trace_seconds",
        "call_seconds",
        "framework",
        "graphs",
    ):
        assert key in fn
    assert fn["graphs"][0] == {
        "signature": "x: TensorSpec(shape=(32, 128), dtype=tf.float32)",
        "hits": 38,
        "traced_in_watch": True,
        "via": "call",
        "scope": "",
        "generalised": False,
    }
    event = data["events"][-1]
    assert {"qualname", "traced", "via", "seconds", "reasons"} <= set(event)
    assert event["reasons"][0]["code"] == "shape-changed"
    again = TraceReport.from_json(report.to_json())
    assert again.to_dict() == report.to_dict()
    assert again.suggest("train_step") == "@tf.function(...)"


def test_every_field_of_a_report_survives_json() -> None:
    """from_dict reads back all that to_dict writes: the rebuilt report equals the original."""
    base = make_report()
    first = base.functions[0]
    graphs = (
        GraphSummary("x: TensorSpec(shape=(2,), dtype=tf.float32)", 0, True, "call", "variable-creation"),
        GraphSummary(
            "x: TensorSpec(shape=(None,), dtype=tf.float32)", 5, False, "get_concrete_function", "", True
        ),
    )
    fn = replace(
        first,
        graphs=graphs,
        function_objects=3,
        eager_calls=1,
        reduce_retracing=True,
        input_signature="[tf.TensorSpec([None], tf.float32)]",
        wasted_retraces=1,
        hints=("`lr` was 0.1 when …",),
    )
    event = replace(
        base.events[-1],
        eager=True,
        failed_trace=True,
        wasted=True,
        error="ValueError: boom",
        thread="worker-1",
        signature="x: TensorSpec(shape=(17, 128), dtype=tf.float32)",
    )
    report = replace(
        base,
        functions=(fn, *base.functions[1:]),
        events=(*base.events[:-1], event),
        seconds=1.5,
        eager_calls=1,
        degraded=("ConcreteFunction._call_flat",),
        budget="train_step=1",
        compare_eager={"eager_seconds": 0.5, "graph_seconds": 0.25},
        runs=(CallRun(3, 1000, 0.2, 0.01, ("train_step",)),),
    )
    again = TraceReport.from_json(report.to_json())
    assert again == report
    assert [g.scope for g in again.functions[0].graphs] == ["variable-creation", ""]


def test_headline_and_framework_folding() -> None:
    report = make_report()
    text = str(report)
    assert "1 function · 40 calls · 2 traces, 1 of them retrace" in text
    assert "1 TensorFlow/Keras function hidden" in text
    assert "Trainer.one_step_on_data" not in text
    assert "Trainer.one_step_on_data" in str(report.with_options(show_framework=True))
    html = report._repr_html_()
    assert "<details class='tfgl-framework'>" in html  # folded, shown on request


def test_html_has_stable_classes_and_timeline() -> None:
    html = make_report()._repr_mimebundle_()["text/html"]
    for cls in (
        "tfgl-report",
        "tfgl-traces-count",
        "tfgl-cache-table",
        "tfgl-reason-shape-changed",
        "tfgl-timeline-chart",
        "tfgl-suggestion",
    ):
        assert cls in html


@pytest.mark.parametrize("evil", ["<script>alert(1)</script>", "\"'><img src=x onerror=alert(1)>"])
def test_html_escapes_user_strings(evil: str) -> None:
    html = make_report(name=evil, arg=evil).__class__._repr_html_(make_report(name=evil, arg=evil))
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;" in html


def test_timeline_is_summarised_for_many_calls() -> None:
    html = make_report(calls=100_000)._repr_html_()
    svg = _timeline_svg(html)
    assert 100 <= svg.count("<rect") <= 300
    assert len(html) < 200_000


def _timeline_svg(html: str) -> str:
    """The SVG inside the timeline's ``<img src='data:image/svg+xml;base64,…'>``."""
    match = re.search(
        r"<img class='tfgl-chart tfgl-timeline-chart' src='data:image/svg\+xml;base64,([^']+)'", html
    )
    assert match, "the timeline is an image with a data: URI"
    return base64.b64decode(match.group(1)).decode()


class _Sanitized(HTMLParser):
    """What JupyterLab 4.6 shows of an untrusted output (sanitize-html with its allowed tags):
    ``<style>`` is dropped with its text; ``<svg>`` and its children are unwrapped, their text kept."""

    DROPPED_WITH_TEXT = frozenset({"style", "script", "textarea", "noscript"})

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.DROPPED_WITH_TEXT:
            self._skip += 1
        if tag == "img":
            self.images.append(dict(attrs))
        if tag in ("div", "tr", "li", "h4", "p", "table", "pre", "br"):
            self.text.append("\n")
        if tag in ("td", "th"):
            self.text.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.DROPPED_WITH_TEXT:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)


def sanitized(html: str) -> _Sanitized:
    parser = _Sanitized()
    parser.feed(html)
    parser.close()
    return parser


def test_report_reads_without_styles_or_svg() -> None:
    """An untrusted notebook, GitHub: numbers keep their words, no tooltip spills, the timeline
    is an image with a text alternative."""
    page = sanitized(make_report()._repr_html_())
    lines = [" ".join(line.split()) for line in "".join(page.text).splitlines()]
    assert "1 function · 40 calls · 2 traces · 1 retrace · 20.0 ms tracing" in lines
    assert "tracing took 20.0 ms ≈ 38 cached calls" in lines
    text = "\n".join(lines)
    assert "time per call (log scale, 500 µs to 10.0 ms): orange: traced, grey: cached" in lines
    assert "call 0:" not in text and "(traced)" not in text  # no chart tooltip in the page
    assert "| train_step | 40 | 2 | 1 |" in text  # a real table row
    assert "call #40 shape-changed x: (32, 128) → (17, 128)" in text
    [image] = page.images
    assert (image["src"] or "").startswith("data:image/svg+xml;base64,")
    assert image["alt"] == (
        "Bar chart of the time per call, 40 calls in 40 bars: 2 traced (orange), the rest cached "
        "(grey); log scale from 500 µs to 10.0 ms."
    )


def test_one_scoped_stylesheet_for_report_and_labs() -> None:
    """Every rule is under the root class, so a report and a lab on one page agree."""
    from tfgraph_lab.render.style import STYLESHEET, style_tag

    html = make_report()._repr_html_()
    assert html.startswith("<div class='tfgl tfgl-report'>" + style_tag())
    assert html.count("<style>") == 1
    css = re.sub(r"/\*.*?\*/", "", STYLESHEET, flags=re.S)
    for block in css.split("}"):
        if "{" not in block:
            continue
        for selector in block.split("{")[0].split(","):
            assert selector.strip().startswith(".tfgl"), selector
    # No text colour but the theme's: accents only mark borders, tints and bars.
    colours = re.findall(r"(?<![-\w])color:([^;}]+)", css)
    assert colours and all(
        c.startswith(("var(--tfgl-fg)", "var(--tfgl-muted)", "inherit")) for c in colours
    ), colours


def test_unknown_function_error_lists_known_ones() -> None:
    with pytest.raises(KeyError, match=r"functions seen: Trainer\.one_step_on_data, train_step"):
        make_report().function("nope")


def test_json_version_is_checked() -> None:
    with pytest.raises(ValueError, match="unsupported tfgraph_lab JSON version"):
        TraceReport.from_dict({"version": 99})


@pytest.mark.parametrize(
    ("ratio", "said"),
    [
        (0.2, "less than one cached call"),
        (1.3, "≈ 1 cached call"),
        (2.0, "≈ 2 cached calls"),
        (1150.4, "≈ 1,150 cached calls"),
    ],
)
def test_a_time_in_cached_calls_reads_as_english(ratio: float, said: str) -> None:
    """Was '≈ 0 cached calls' and '≈ 1 cached calls' (a trace quicker than a slow cached call)."""
    from tfgraph_lab.render.format import as_cached_calls

    assert as_cached_calls(ratio) == said
