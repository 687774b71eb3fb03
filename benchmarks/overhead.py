"""Cached-call overhead of watching: watched vs unwatched, alternated in one process.

For a trivial tf.function (also with a handler on the live log attached), a tiny Keras train
step (32 → 64 → 1), an MNIST-sized one (784 → 128 → 10 with Adam) and a ``jit_compile=True``
function (its cached calls are too fast to have compiled: XLA's cache key is read only for
slower ones), prints the median time of one cached call watched and unwatched and
their ratio, with a 95% interval and the noise floor (the same ratio between two halves of the
unwatched samples). Also prints what the hooks cost per call around a no-op.

How it measures, because a cached call on a shared 2-core machine varies by ±30% from call to
call: every call is timed on its own and the ratio is of medians over thousands of calls; the
watched and unwatched batches alternate A-B-B-A so a drift of the machine hits both alike; each
batch starts with a few untimed calls, because installing or removing the hooks (a class
attribute) makes Python 3.11 re-specialise TensorFlow's call path, a one-off cost per switch
that a real watch pays once, not per call. The interval is a bootstrap over batch pairs.

Run: ``python benchmarks/overhead.py [--rounds 300] [--calls 50]`` (about 2 minutes).
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import random
import statistics
import time
import timeit
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import tensorflow as tf

import tfgraph_lab
from tfgraph_lab.recording.hooks import NO_COMPILE_SECONDS

SETTLE = 20  # untimed calls after each switch (Python 3.11 re-specialises within a few calls)

Workload = tuple[Callable[..., object], tuple[object, ...]]


def trivial() -> Workload:
    @tf.function
    def add_one(x):
        return x + 1

    return add_one, (tf.constant(1.0),)


def keras_train_step() -> Workload:
    model = tf.keras.Sequential(
        [tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(1)]
    )
    optimizer = tf.keras.optimizers.SGD(0.01)
    x = tf.random.normal([64, 32])
    y = tf.random.normal([64, 1])

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return train_step, (x, y)


def mnist_train_step() -> Workload:
    """The canonical first Keras model: an MLP on MNIST-sized inputs, Adam, batch 64 (random
    data: nothing is downloaded). Adam creates its slot variables on the first call, so the
    function holds two graphs, one of which every later call runs."""
    model = tf.keras.Sequential(
        [tf.keras.Input((784,)), tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)]
    )
    optimizer = tf.keras.optimizers.Adam(1e-3)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x = tf.random.normal([64, 784])
    y = tf.random.uniform([64], maxval=10, dtype=tf.int32)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return train_step, (x, y)


def xla_stack() -> Workload:
    """The XLA case of issue 15: ``jit_compile=True`` on a 20-layer tanh stack, a cached call
    at a batch size XLA already compiled for (a call under ``NO_COMPILE_SECONDS`` reads no key)."""

    @tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None, 64], tf.float32)])
    def stack(x):
        for _ in range(20):
            x = tf.tanh(tf.matmul(x, tf.ones([64, 64]) * 0.01) + 0.1)
        return x

    return stack, (tf.ones([32, 64]),)


WORKLOADS = {
    "trivial tf.function": trivial,
    "keras train step": keras_train_step,
    "mnist-sized step": mnist_train_step,
    "xla (jit_compile)": xla_stack,
}


def sample_calls(fn: Callable[..., object], args: tuple[object, ...], calls: int) -> list[float]:
    """Seconds of each of ``calls`` cached calls, after ``SETTLE`` untimed ones."""
    for _ in range(SETTLE):
        fn(*args)
    perf = time.perf_counter
    out = []
    for _ in range(calls):
        t0 = perf()
        fn(*args)
        out.append(perf() - t0)
    return out


def ratio_of_medians(watched: list[list[float]], plain: list[list[float]]) -> float:
    return statistics.median(x for b in watched for x in b) / statistics.median(x for b in plain for x in b)


def bootstrap_interval(
    watched: list[list[float]], plain: list[list[float]], draws: int = 200
) -> tuple[float, float]:
    """95% interval of the ratio, resampling whole rounds (a watched and a plain batch pair)."""
    rng = random.Random(0)
    pairs = list(zip(watched, plain, strict=True))
    ratios = []
    for _ in range(draws):
        pick = [rng.choice(pairs) for _ in pairs]
        ratios.append(ratio_of_medians([w for w, _ in pick], [p for _, p in pick]))
    ratios.sort()
    return ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]


def measure(
    name: str, make: Callable[[], Workload], rounds: int, calls: int, live_logger: bool = False
) -> float:
    """``live_logger``: the watched batches run with a handler on the ``tfgraph_lab`` logger,
    as under ``tfgraph-lab run`` (records are made on traces only, so hits should not notice)."""
    fn, args = make()
    sink = logging.StreamHandler(io.StringIO())
    logger = logging.getLogger("tfgraph_lab")
    for _ in range(100):
        fn(*args)  # trace once, then settle
    plain: list[list[float]] = []
    watched: list[list[float]] = []
    for i in range(rounds):
        order = (False, True, True, False) if i % 2 else (True, False, False, True)
        for watch_it in order:
            if watch_it:
                if live_logger:
                    logger.addHandler(sink)
                try:
                    with tfgraph_lab.watch() as recorder:
                        watched.append(sample_calls(fn, args, calls))
                finally:
                    logger.removeHandler(sink)
                report = recorder.report
                assert report.calls == SETTLE + calls and report.traces == 0, report.headline()
            else:
                plain.append(sample_calls(fn, args, calls))
    flat_plain = [x for b in plain for x in b]
    flat_watched = [x for b in watched for x in b]
    ratio = ratio_of_medians(watched, plain)
    low, high = bootstrap_interval(watched, plain)
    floor = ratio_of_medians(plain[0::2], plain[1::2])
    print(
        f"{name:<20} median cached call {statistics.median(flat_plain) * 1e6:6.1f} µs unwatched, "
        f"{statistics.median(flat_watched) * 1e6:6.1f} µs watched · ratio {ratio:.4f} "
        f"(95% {low:.4f}–{high:.4f}) · noise floor {floor:.4f} · "
        f"{len(flat_plain)} calls each side"
    )
    return ratio


def hook_cost_us() -> tuple[float, float]:
    """µs the hooks add to one call whose TensorFlow part is a no-op: for a function with one
    graph (no ``_call_flat`` hook needed) and for one with two (that hook runs too)."""
    from tfgraph_lab.recording.hooks import make_call_flat_hook, make_call_hook
    from tfgraph_lab.recording.hub import HUB

    @tf.function
    def identity(x):
        return x

    x = tf.constant(1.0)
    cf = identity.get_concrete_function(x)

    def no_op_flat(cf: object, *a: object, **k: object) -> None:
        return None

    flat = no_op_flat

    def no_op_call(fn: object, *a: object, **k: object) -> None:
        flat(cf, (x,), ())  # what TF's __call__ does last: run the chosen graph

    def per_call(fn: Callable[..., object]) -> float:
        n = 100_000
        return min(timeit.repeat(lambda: fn(identity, x), number=n, repeat=5)) / n

    bare = per_call(no_op_call)
    costs = []
    with tfgraph_lab.watch():
        hooked = make_call_hook(HUB, no_op_call)
        for graphs in (1, 2):
            if graphs == 2:
                identity(tf.ones([2]))  # a second graph: the hub installs the _call_flat hook
                flat = make_call_flat_hook(HUB, no_op_flat)
            hooked(identity, x)  # registers the function with the hub
            costs.append((per_call(hooked) - bare) * 1e6)
    return costs[0], costs[1]


def xla_path_cost_us() -> tuple[float, float]:
    """µs the XLA path adds to a cached call of a ``jit_compile=True`` function (its cache key
    read and looked up), and that call's own median time, measured here side by side."""
    from tfgraph_lab.adapter import xla_key_reader

    fn, args = xla_stack()
    key = xla_key_reader()
    assert key is not None
    for _ in range(20):
        fn(*args)
    seen = {key(args, {})}
    n = 20_000
    per_key = min(timeit.repeat(lambda: key(args, {}) in seen, number=n, repeat=5)) / n
    call = statistics.median(sample_calls(fn, args, 500))
    return per_key * 1e6, call * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300, help="A-B-B-A rounds (default 300)")
    parser.add_argument("--calls", type=int, default=50, help="timed calls per batch (default 50)")
    parser.add_argument("--only", choices=sorted(WORKLOADS), help="measure one workload")
    args = parser.parse_args()
    print(f"TensorFlow {tf.__version__}")
    for name, make in WORKLOADS.items():
        if args.only in (None, name):
            measure(name, make, args.rounds, args.calls)
    if args.only in (None, "trivial tf.function"):
        measure("trivial + live log", trivial, args.rounds, args.calls, live_logger=True)
    one, two = hook_cost_us()
    print(
        f"hooks' own work around a no-op: +{one:.2f} µs per call (one graph), +{two:.2f} µs (two "
        "graphs); a real call also sheds TF's traceback-filtering wrapper, which the hook replaces"
    )
    key_us, call_us = xla_path_cost_us()
    print(
        f"XLA cache key read and looked up: {key_us:.2f} µs = {key_us / call_us:.2%} of a "
        f"{call_us:.0f} µs cached jit_compile call; the hook skips it for calls under "
        f"{NO_COMPILE_SECONDS * 1e6:.0f} µs (too fast to have compiled)"
    )


if __name__ == "__main__":
    main()
