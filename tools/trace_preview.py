"""Draw a tfgraph_lab timeline (Chrome Trace Event Format JSON) as a static SVG preview.

One row per thread (of each process, in a merged report), one bar per complete event at its ``ts``/``dur``: calls that traced in
orange (retraces darker, labelled with their reason codes), cached calls in blue, summarised
runs of cached calls in grey. A preview for documentation; Perfetto (ui.perfetto.dev) shows the
same file interactively. Run: ``python tools/trace_preview.py trace.json preview.svg``.
"""

from __future__ import annotations

import argparse
import json
from html import escape
from typing import Any

WIDTH, LEFT, ROW, TOP = 1100, 110, 60, 40


def render(trace: dict[str, Any], title: str) -> str:
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e.get("name") == "process_name"}
    # one row per thread of each process (a merged report has a process per file)
    names = {
        (e["pid"], e["tid"]): (f"{processes[e['pid']]} · " if len(processes) > 1 else "") + e["args"]["name"]
        for e in meta
        if e.get("name") == "thread_name"
    }
    tids = sorted({(e["pid"], e["tid"]) for e in events})
    end = max((e["ts"] + e["dur"] for e in events), default=1.0) or 1.0
    scale = (WIDTH - LEFT - 20) / end
    height = TOP + ROW * len(tids) + 40
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' "
        "font-family='DejaVu Sans, sans-serif' font-size='12'>",
        f"<rect width='{WIDTH}' height='{height}' fill='#ffffff'/>",
        f"<text x='10' y='22' font-size='14' font-weight='bold'>{escape(title)}</text>",
    ]
    for row, tid in enumerate(tids):
        y = TOP + row * ROW
        label_end = 0.0  # labels that would overlap the previous one are left out
        out.append(f"<rect x='0' y='{y}' width='{WIDTH}' height='{ROW - 4}' fill='#f6f8fa'/>")
        out.append(f"<text x='10' y='{y + 25}'>{escape(str(names.get(tid, tid)))}</text>")
        for e in (e for e in events if (e["pid"], e["tid"]) == tid):
            x = LEFT + e["ts"] * scale
            w = max(1.0, e["dur"] * scale)
            args = e.get("args", {})
            if e["cat"] == "trace":
                fill = "#bc4c00" if args.get("retrace") else "#fb8f44"
            elif args.get("summarised"):
                fill = "#8c959f"
            else:
                fill = "#0969da"
            tip = escape(f"{e['name']} · {e['dur'] / 1000:.2f} ms · {', '.join(args.get('reasons', []))}")
            out.append(
                f"<rect x='{x:.2f}' y='{y + 6}' width='{w:.2f}' height='{ROW - 30}' fill='{fill}'>"
                f"<title>{tip}</title></rect>"
            )
            if args.get("retrace") and x >= label_end:
                label = ", ".join(args["reasons"])
                fits = x + 7.5 * (len(label) + 2) < WIDTH
                at = f"x='{x:.2f}'" if fits else f"x='{WIDTH - 4}' text-anchor='end'"
                out.append(f"<text {at} y='{y + ROW - 10}' fill='#bc4c00'>▲ {escape(label)}</text>")
                label_end = x + 7.5 * (len(label) + 2)
    axis = TOP + ROW * len(tids) + 14
    for i in range(6):
        t = end * i / 5
        x = LEFT + t * scale
        anchor = "end" if i == 5 else "start"
        out.append(
            f"<text x='{x:.1f}' y='{axis + 12}' fill='#57606a' text-anchor='{anchor}'>{t / 1000:.0f} ms</text>"
        )
    out.append(
        f"<text x='{WIDTH - 470}' y='22' fill='#57606a'>orange: traced (darker: retrace) · blue: "
        "cached call · grey: summarised run</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="a JSON file written by --trace or to_chrome_trace()")
    parser.add_argument("svg", help="where to write the SVG")
    parser.add_argument("--title", default="tfgraph_lab timeline")
    args = parser.parse_args()
    with open(args.trace, encoding="utf-8") as fh:
        trace = json.load(fh)
    with open(args.svg, "w", encoding="utf-8") as fh:
        fh.write(render(trace, args.title))


if __name__ == "__main__":
    main()
