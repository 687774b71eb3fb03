"""``tfgraph-lab demo``: the retracing trap and its cure on a tiny model, side by side.

The trap is the training loop most people write first: a Python float learning rate that
decays every epoch, a ``training`` flag passed as a Python bool, and a dataset whose last batch
is smaller. The cure passes tensors, fixes the signature with ``None`` batch dimensions and
keeps the variables outside the step. Both run under :func:`tfgraph_lab.watch`; the demo
prints both reports and what the cure saved. Data is generated here: nothing is downloaded.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from ..model.view import ViewOptions
from ..render.format import fmt_seconds, plural
from ..watching.recorder import watch

__all__ = ["EPOCHS", "cure", "run_demo", "trap"]

EPOCHS = 10
SAMPLES = 200  # batches of 32 leave a last batch of 8
BATCH = 32
FEATURES = 8


def _data() -> Any:
    import tensorflow as tf

    gen = tf.random.Generator.from_seed(0)
    x = gen.normal([SAMPLES, FEATURES])
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)


def _warm_up() -> None:
    """Pay TensorFlow's one-off start-up costs (kernels, tf.data, tapes) before timing."""
    import tensorflow as tf

    for x, _ in _data():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.matmul(x, tf.ones([FEATURES, 1])))
        tape.gradient(y, x)
    tf.function(lambda: tf.constant(0.0))()


def trap() -> Any:
    """The slow version: returns its TraceReport."""
    import tensorflow as tf

    w = tf.Variable(tf.zeros([FEATURES, 1]))
    data = _data()

    @tf.function
    def train_step(x, y, lr, training):
        with tf.GradientTape() as tape:
            pred = tf.matmul(x, w)
            if training:
                pred = tf.nn.dropout(pred, 0.1)
            loss = tf.reduce_mean((pred - y) ** 2)
        w.assign_sub(lr * tape.gradient(loss, w))
        return loss

    with watch() as recorder:
        lr = 0.1
        for _ in range(EPOCHS):
            for x, y in data:
                train_step(x, y, lr, True)
            lr *= 0.5  # a new Python float every epoch: a new graph every epoch
        for x, y in data:
            train_step(x, y, lr, False)
    return recorder.report


def cure() -> Any:
    """The fixed version: tensors for lr and training, None batch dimension."""
    import tensorflow as tf

    w = tf.Variable(tf.zeros([FEATURES, 1]))
    lr = tf.Variable(0.1)
    data = _data()

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, FEATURES], tf.float32),
            tf.TensorSpec([None, 1], tf.float32),
            tf.TensorSpec([], tf.bool),
        ]
    )
    def train_step(x, y, training):
        with tf.GradientTape() as tape:
            pred = tf.matmul(x, w)
            pred = tf.cond(training, lambda: tf.nn.dropout(pred, 0.1), lambda: pred)
            loss = tf.reduce_mean((pred - y) ** 2)
        w.assign_sub(lr * tape.gradient(loss, w))
        return loss

    with watch() as recorder:
        for _ in range(EPOCHS):
            for x, y in data:
                train_step(x, y, tf.constant(True))
            lr.assign(lr * 0.5)
        for x, y in data:
            train_step(x, y, tf.constant(False))
    return recorder.report


def run_demo(out: TextIO = sys.stdout, show_all: bool = False) -> tuple[Any, Any]:
    """Run the trap and the cure, print both reports (every graph row with ``show_all``, as
    ``--all``) and the comparison."""
    _warm_up()
    t0 = time.perf_counter()
    slow = trap()
    t1 = time.perf_counter()
    fast = cure()
    t2 = time.perf_counter()
    rule = "─" * 78
    print(rule, file=out)
    print("THE TRAP: Python float lr, Python bool flag, smaller last batch", file=out)
    print(rule, file=out)
    print(slow.with_view(ViewOptions.everything()) if show_all else slow, file=out)
    print("", file=out)
    print(rule, file=out)
    print("THE CURE: tensors for lr and the flag, input_signature with None batch dims", file=out)
    print(rule, file=out)
    print(fast.with_view(ViewOptions.everything()) if show_all else fast, file=out)
    print("", file=out)
    print(rule, file=out)
    print(
        f"trap: {slow.traces} traces, tracing {fmt_seconds(slow.trace_seconds)}, "
        f"loop {fmt_seconds(t1 - t0)}  |  cure: {plural(fast.traces, 'trace')}, tracing "
        f"{fmt_seconds(fast.trace_seconds)}, loop {fmt_seconds(t2 - t1)}  |  "
        f"the cure ran {(t1 - t0) / (t2 - t1):.1f}× as fast (measured now, side by side)",
        file=out,
    )
    print(
        "Try it in a notebook: %load_ext tfgraph_lab, then %%tracewatch on your own cell.",
        file=out,
    )
    return slow, fast
