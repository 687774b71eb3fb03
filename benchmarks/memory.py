"""Memory of a long watch: RSS growth over 1,000,000 watched calls of a trivial tf.function.

First the same calls unwatched (the baseline: TensorFlow's own growth), then watched; RSS is
printed every ``--every`` calls for both, side by side, with bytes per call. At the end: the time
to build the TraceReport from the log, its size, and RSS after the watch is dropped.
Run: ``python benchmarks/memory.py [--calls 1000000] [--every 100000] [--baseline 200000]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import tensorflow as tf

import tfgraph_lab


def rss_bytes() -> int:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except ImportError:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def mib(n: float) -> str:
    return f"{n / 2**20:8.1f} MiB"


def run(fn: object, x: object, calls: int, every: int, label: str) -> list[tuple[int, int]]:
    points = [(0, rss_bytes())]
    t0 = time.perf_counter()
    for i in range(1, calls + 1):
        fn(x)  # type: ignore[operator]
        if i % every == 0:
            points.append((i, rss_bytes()))
            grown = points[-1][1] - points[0][1]
            print(
                f"  {label:<9} {i:>9,} calls  rss {mib(points[-1][1])}  +{mib(grown)} since start  "
                f"{grown / i:7.1f} B/call  {(time.perf_counter() - t0) / i * 1e6:6.1f} µs/call",
                flush=True,
            )
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--every", type=int, default=100_000)
    parser.add_argument("--baseline", type=int, default=200_000, help="unwatched calls first")
    args = parser.parse_args()

    @tf.function
    def add_one(x):
        return x + 1

    x = tf.constant(1.0)
    for _ in range(100):
        add_one(x)
    gc.collect()
    print(f"TensorFlow {tf.__version__} · start rss {mib(rss_bytes())}")
    base = run(add_one, x, args.baseline, args.every, "unwatched")
    gc.collect()
    with tfgraph_lab.watch() as w:
        watched = run(add_one, x, args.calls, args.every, "watched")
    t0 = time.perf_counter()
    report = w.report
    build = time.perf_counter() - t0
    rss_report = rss_bytes()
    t0 = time.perf_counter()
    html = report._repr_html_()
    html_s = time.perf_counter() - t0
    base_rate = (base[-1][1] - base[0][1]) / max(1, base[-1][0])
    watched_rate = (watched[-1][1] - watched[0][1]) / max(1, watched[-1][0])
    print(
        f"growth per call: watched {watched_rate:.1f} B vs unwatched {base_rate:.1f} B "
        f"(watched − unwatched ≈ {(watched_rate - base_rate):.1f} B/call)"
    )
    fn = report.function("add_one")
    print(
        f"report: built in {build:.2f} s · {len(report.events):,} events kept · calls={fn.calls:,} "
        f"traces={fn.traces} · rss after build {mib(rss_report)} · html {html_s:.2f} s, {len(html):,} chars"
    )
    del report, html, w
    gc.collect()
    print(f"rss after dropping the watch and report {mib(rss_bytes())}")


if __name__ == "__main__":
    main()
