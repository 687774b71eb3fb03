"""What reading the report costs as a loop retraces more: the reasons and fixes are built when
the report is first read, for every retrace, against the graphs before it.

For loops of n = 50, 200 and 800 retraces (a new Python float each call; a new shape each call),
times ``w.report`` (the first read builds it) and prints it per retrace and as a share of the
watched loop's own time, and how the cost per retrace grows from the smallest loop to the
largest (1.0: the report's cost grows as the loop does; n²-like: it grows with n).

Run: ``python benchmarks/report_scaling.py [--sizes 50 200 800]`` (about a minute).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import tensorflow as tf

import tfgraph_lab


def float_loop(n: int) -> None:
    @tf.function
    def scale(x, s):  # type: ignore[no-untyped-def]
        return x * s

    x = tf.constant(2.0)
    for i in range(n):
        scale(x, 0.5 + i)


def shape_loop(n: int) -> None:
    @tf.function
    def total(x):  # type: ignore[no-untyped-def]
        return tf.reduce_sum(x * 2.0)

    for i in range(n):
        total(tf.ones([i + 1, 3]))


LOOPS: dict[str, Callable[[int], None]] = {"a new Python float": float_loop, "a new shape": shape_loop}


def measure(loop: Callable[[int], None], n: int) -> tuple[float, float]:
    """(the watched loop's seconds, the first read of its report in seconds)."""
    start = time.perf_counter()
    with tfgraph_lab.watch() as w:
        loop(n)
    looped = time.perf_counter() - start
    start = time.perf_counter()
    report = w.report
    built = time.perf_counter() - start
    assert report.traces == n, (report.traces, n)
    return looped, built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 800], help="retraces per loop")
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPUs; report built at its first read")
    for name, loop in LOOPS.items():
        per_retrace = {}
        for n in sizes:
            looped, built = measure(loop, n)
            per_retrace[n] = built / n
            print(
                f"{name:>20}, {n:4d} retraces: report {built * 1e3:8.1f} ms, "
                f"{built / n * 1e3:.3f} ms per retrace, {100 * built / looped:5.1f}% of the loop's {looped:.2f} s"
            )
        first, last = sizes[0], sizes[-1]
        print(
            f"{name:>20}: cost per retrace at {last} against {first} retraces: "
            f"{per_retrace[last] / per_retrace[first]:.2f}× (1.0: the report grows as the loop does)"
        )


if __name__ == "__main__":
    main()
