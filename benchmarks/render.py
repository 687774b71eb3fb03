"""Rendering cost of a big report: 100,000 events as HTML and as text, side by side.

Builds a TraceReport from plain records (no TensorFlow): one function with 100,000 calls, a
retrace every 1,000 calls, plus a framework function. Prints the median seconds of each
rendering over a few repeats, the HTML size, the number of bars in the timeline (an SVG image), and the
ratio against the 0.5 s budget of issue 7. Run: ``python benchmarks/render.py [--events N]``.
"""

from __future__ import annotations

import argparse
import base64
import re
import statistics
import time

from tfgraph_lab.model.records import Event, FunctionSummary, GraphSummary, Reason
from tfgraph_lab.report import TraceReport

BUDGET_SECONDS = 0.5


def make_report(events: int, retrace_every: int = 1000) -> TraceReport:
    name, filename = "train_step", "train.py"
    out: list[Event] = []
    graphs: list[GraphSummary] = []
    graph = -1
    for i in range(events):
        if i % retrace_every == 0:
            graph += 1
            reason = (
                Reason("first-trace", message="first")
                if graph == 0
                else Reason(
                    "shape-changed", "x", f"({graph - 1}, 128)", f"({graph}, 128)", "changed", "use None"
                )
            )
            out.append(
                Event(
                    i,
                    name,
                    filename,
                    0,
                    "call",
                    True,
                    1,
                    0.004,
                    graph,
                    caller="train.py:40",
                    reasons=(reason,),
                )
            )
            graphs.append(GraphSummary(f"x: TensorSpec(shape=({graph}, 128), dtype=tf.float32)", 0))
        else:
            out.append(Event(i, name, filename, 0, "call", False, 0, 0.0002, graph))
    hits = [retrace_every] * len(graphs)
    graphs = [GraphSummary(g.signature, h) for g, h in zip(graphs, hits)]
    traces = len(graphs)
    fn = FunctionSummary(
        name,
        filename,
        12,
        events,
        traces,
        0,
        0.004 * traces,
        0.0002 * events,
        False,
        tuple(graphs),
        objects_traced=1,
        traced_calls=traces,
        retraces=traces - 1,
    )
    keras = FunctionSummary("Trainer.one_step_on_data", "keras/trainer.py", 1, 3, 1, 0, 0.01, 0.02, True)
    return TraceReport(functions=(fn, keras), events=tuple(out), warnings=("TF warned",), tf_version="2.21.0")


def timed(render, repeats: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = render()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    t0 = time.perf_counter()
    report = make_report(args.events)
    build = time.perf_counter() - t0
    html_s, html = timed(report._repr_html_, args.repeats)
    text_s, text = timed(lambda: str(report), args.repeats)
    json_s, js = timed(report.to_json, max(1, args.repeats // 2))
    html_text = str(html)
    match = re.search(r"data:image/svg\+xml;base64,([^']+)", html_text)
    bars = base64.b64decode(match.group(1)).decode().count("<rect") if match else 0
    print(
        f"report of {args.events:,} events ({report.functions[0].traces} traces), records built in {build:.3f} s"
    )
    print(
        f"  html  {html_s:.3f} s  ({html_s / BUDGET_SECONDS:.2f}× the {BUDGET_SECONDS} s budget) · "
        f"{len(html_text):,} chars · {bars} bars in the timeline image · {html_text.count('<')} tags"
    )
    print(f"  text  {text_s:.3f} s  ({text_s / BUDGET_SECONDS:.2f}× the budget) · {len(str(text)):,} chars")
    print(f"  json  {json_s:.3f} s  (no budget; for scale) · {len(str(js)):,} chars")
    print(
        f"  html/text time ratio {html_s / text_s:.2f} · bytes per event in html {len(html_text) / args.events:.2f}"
    )


if __name__ == "__main__":
    main()
