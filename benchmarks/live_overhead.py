"""Overhead of the live dashboard on a loop of a trivial tf.function.

Runs the same loop under ``tfgraph_lab.watch()`` with and without a ``LiveDisplay`` (which
renders every update, its output discarded), alternating, and prints the median ratio
live / not-live. The budget is a ratio under 1.02 at ≤ 5 updates a second.

    python benchmarks/live_overhead.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000, help="calls per loop (default 20000)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    args = parser.parse_args()

    import tensorflow as tf

    import tfgraph_lab
    from tfgraph_lab.faces.live_view import LiveDisplay

    @tf.function
    def step(x: tf.Tensor) -> tf.Tensor:
        return x + 1

    x = tf.constant(1.0)
    step(x)
    published: list[int] = []

    def loop(live: bool) -> tuple[float, LiveDisplay | None]:
        gc.collect()  # every loop starts with the same garbage: none
        with tfgraph_lab.watch() as recorder:
            dash = LiveDisplay(recorder, publish=lambda b: published.append(len(b["text/html"])))
            if live:
                dash.start()
            t0 = time.perf_counter()
            for _ in range(args.calls):
                step(x)
            seconds = time.perf_counter() - t0
            if live:
                dash.close()
        return seconds, dash if live else None

    loop(False)  # warm up the hooks
    plain, plain2, live, rates, shares = [], [], [], [], []
    for r in range(args.rounds):
        # Alternate the order (A B B' / B' B A) so that a drift of the machine cancels out.
        if r % 2:
            seconds, dash = loop(True)
            plain2.append(loop(False)[0])
            plain.append(loop(False)[0])
        else:
            plain.append(loop(False)[0])
            plain2.append(loop(False)[0])
            seconds, dash = loop(True)
        live.append(seconds)
        assert dash is not None
        rates.append(dash.updates / seconds)
        shares.append(dash.update_seconds / seconds)
    ratio = statistics.median(lv / pl for lv, pl in zip(live, plain))
    noise = statistics.median(p2 / pl for p2, pl in zip(plain2, plain))
    print(
        f"TensorFlow {tf.__version__}; {args.calls:,} calls of a trivial tf.function per loop, {args.rounds} rounds"
    )
    print(f"watch() only:          median {statistics.median(plain):.3f} s")
    print(f"watch() + live view:   median {statistics.median(live):.3f} s")
    print(f"updates per second:    median {statistics.median(rates):.1f} (bound 5)")
    print(f"snapshot time / loop:  median {statistics.median(shares):.2%} (budget 2%)")
    print(f"ratio live / not-live: {ratio:.3f} (noise floor, not-live / not-live: {noise:.3f})")


if __name__ == "__main__":
    main()
