"""Cached-call overhead of watching: watched vs unwatched, alternated in one process.

Prints the median ratio (watched / unwatched) of the time per cached call, for a trivial
tf.function and for a small Keras train step. Rounds alternate so machine noise hits both
sides alike. Run: ``python benchmarks/overhead.py [--rounds 30] [--calls 300]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import tensorflow as tf

import tfgraph_lab


def trivial() -> tuple[object, tuple[object, ...]]:
    @tf.function
    def add_one(x):
        return x + 1

    return add_one, (tf.constant(1.0),)


def keras_train_step() -> tuple[object, tuple[object, ...]]:
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


def time_calls(fn: object, args: tuple[object, ...], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)  # type: ignore[operator]
    return (time.perf_counter() - t0) / calls


def measure(name: str, make: object, rounds: int, calls: int) -> float:
    """Median time per cached call of many short batches, watched and unwatched, interleaved
    A-B-B-A so order and drift cancel; the noise floor compares two halves of the unwatched
    batches the same way."""
    fn, args = make()  # type: ignore[operator]
    for _ in range(50):
        fn(*args)  # warm: trace and settle
    plain: list[float] = []
    watched: list[float] = []
    recorder = tfgraph_lab.TraceRecorder()
    for i in range(rounds):
        order = (False, True, True, False) if i % 2 else (True, False, False, True)
        for watch_it in order:
            if watch_it:
                recorder.start()
                watched.append(time_calls(fn, args, calls))
                recorder.stop()
                recorder = tfgraph_lab.TraceRecorder()
            else:
                plain.append(time_calls(fn, args, calls))
    ratio = statistics.median(watched) / statistics.median(plain)
    floor = statistics.median(plain[0::2]) / statistics.median(plain[1::2])
    print(
        f"{name:<22} cached call {statistics.median(plain) * 1e6:7.1f} µs unwatched, "
        f"{statistics.median(watched) * 1e6:7.1f} µs watched · ratio watched/unwatched {ratio:.3f} "
        f"· noise floor {floor:.3f} (batches={2 * rounds} each, calls/batch={calls})"
    )
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    print(f"TensorFlow {tf.__version__}")
    measure("trivial tf.function", trivial, args.rounds, args.calls)
    measure("keras train step", keras_train_step, args.rounds, args.calls)


if __name__ == "__main__":
    main()
