"""A retrace fix under XLA stops traces, not compilations: the fix says so, and TF's log agrees.

Where the function (or one it calls) has ``jit_compile=True``, "pass `k` as tf.constant(k)" and
an ``input_signature`` with ``None`` leave one graph, but XLA compiles once per concrete shape
and once per value of a tensor that sets a shape. The fixes say this trade; the numbers are
TensorFlow's own: a subprocess with its compile log on (``TF_CPP_VMODULE=device_compiler=2``)
applies each fix, and the test counts the "Instantly compiling" lines itself, not the model.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.recording.xla_log import compile_name_parts  # noqa: E402

_SCRIPT = textwrap.dedent(
    """
    import json, os
    import tensorflow as tf
    import tfgraph_lab

    def make():
        @tf.function(jit_compile=True)
        def head(x, k):  # k sets a shape: a compile-time constant for XLA
            return tf.reduce_sum(x[:k])

        @tf.function(jit_compile=True)
        def scale(x, k):  # k is only a value
            return x * tf.cast(k, tf.float32)

        @tf.function(jit_compile=True)
        def inner(x, k):
            return tf.reduce_sum(x[:k])

        @tf.function
        def outer(x, k):  # plain, around an XLA function
            return inner(x, k) + 1.0

        @tf.function(jit_compile=True)
        def sized(x):
            return x * 2.0

        return head, scale, outer, inner, sized

    head, scale, outer, inner, sized = make()
    with tfgraph_lab.watch() as w:  # as written: Python ints, and new sizes
        for k in [1, 2, 3]:
            head(tf.ones([5]), k)
            scale(tf.ones([5]), k)
            outer(tf.ones([5]), k)
        for n in [4, 3, 2]:
            sized(tf.ones([n]))
    fixes = {}
    for f in w.report.functions:
        retraced = [r for e in w.report.events if e.qualname == f.qualname for r in e.reasons
                    if r.code not in ("first-trace",)]
        fixes[f.qualname.rsplit(".", 1)[-1]] = {
            "fix": [r.fix for r in retraced],
            "trade": [p.trade for r in retraced for p in r.plans],
            "suggestion": f.suggestion or "",
        }
    text = str(w.report)

    os.write(2, b"==FIXED==\\n")  # the fixes, as the report gives them; TF's log counts below
    head, scale, outer, inner, sized = make()
    sized = tf.function(sized.python_function, jit_compile=True,
                        input_signature=[tf.TensorSpec([None], tf.float32)])
    for k in [1, 2, 3, 2]:
        head(tf.ones([5]), tf.constant(k))
        scale(tf.ones([5]), tf.constant(k))
        outer(tf.ones([5]), tf.constant(k))
    for n in [4, 3, 2, 3]:
        sized(tf.ones([n]))

    @tf.function(jit_compile=True)
    def ranged(k):  # the caveat's other examples: a tf.range limit, a reshape
        return tf.reduce_sum(tf.range(k))

    @tf.function(jit_compile=True)
    def reshaped(x, k):
        return tf.reduce_sum(tf.reshape(x, [k, -1]))

    for k in [1, 2, 3, 2]:
        ranged(tf.constant(k))
        reshaped(tf.ones([6]), tf.constant(k))
    traces = {f.python_function.__name__: f.experimental_get_tracing_count()
              for f in (head, scale, outer, inner, sized, ranged, reshaped)}
    print("REPORT " + json.dumps({"fixes": fixes, "text": text, "traces": traces}))
    """
)

_LOGGED = re.compile(r"device_compiler\.\w+:\d+\] Instantly compiling for signature: (\S+)")


@pytest.mark.slow
def test_fixes_under_xla_say_the_compilations_remain_as_tensorflow_logs_them(tmp_path: Path) -> None:
    script = tmp_path / "caveats.py"
    script.write_text(_SCRIPT)
    env = dict(
        os.environ, TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_VMODULE="device_compiler=2", TF_CPP_MIN_LOG_LEVEL="0"
    )
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(tfgraph_lab.__file__).parent.parent), env.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=540
    )
    assert done.returncode == 0, done.stderr[-4000:]
    after = done.stderr.split("==FIXED==", 1)[1]
    compiles = Counter(compile_name_parts(name)[0] for name in _LOGGED.findall(after))
    if not compiles:
        pytest.skip("this TensorFlow does not log XLA compilations under TF_CPP_VMODULE=device_compiler=2")
    report = json.loads(done.stdout.split("REPORT ", 1)[1])
    fixes, traces = report["fixes"], report["traces"]

    # TF's own counts with each fix applied: 1 trace each; the compilations the fixes keep
    assert set(traces.values()) == {1}, traces
    assert compiles["ranged"] == compiles["reshaped"] == 3  # a tf.range limit, a reshape: per value
    assert compiles["head"] == 3  # k = 1, 2, 3 as a tensor that sets a shape: once per value
    assert compiles["scale"] == 1  # k only a value: the tensor stops the compilations too
    assert compiles["inner"] == 3  # the same, nested in a plain tf.function
    assert compiles["sized"] == 3  # input_signature [None]: once per concrete size (4, 3, 2)

    # ... and each fix says so: "if it sets a shape", so true for scale as well as head
    value = "stops the retraces, not the compilations, where its value sets a shape"
    for name, where in (
        ("head", "(jit_compile=True)"),
        ("outer", "(in the jit_compile=True function it calls)"),
    ):
        (fix,) = fixes[name]["fix"][-1:]
        assert f"under XLA {where} a tensor `k` {value}" in fix, fix
        assert "tf.constant(k)" in fix and "pad or bucket" in fix
        assert any(f"a tensor `k` {value}" in t for t in fixes[name]["trade"]), fixes[name]["trade"]
        assert "still compiles once per value with XLA" in fixes[name]["suggestion"], fixes[name][
            "suggestion"
        ]
    shape = "one graph still compiles once per concrete shape"
    assert any(f"under XLA (jit_compile=True) {shape}" in f for f in fixes["sized"]["fix"]), fixes["sized"]
    assert "input_signature=" in fixes["sized"]["suggestion"]
    assert "XLA still compiles once per concrete shape" in fixes["sized"]["suggestion"]
    shown = " ".join(report["text"].split())  # the text report wraps its lines
    assert "trade-off: tf.constant(k) is an int32 tensor" in shown  # the short form shows it too
    assert f"under XLA (jit_compile=True) a tensor `k` {value}" in shown


def test_a_function_without_xla_gets_no_xla_caveat() -> None:
    @tf.function
    def head(x: Any, k: Any) -> Any:
        return tf.reduce_sum(x[:k])

    @tf.function
    def sized(x: Any) -> Any:
        return x * 2.0

    with tfgraph_lab.watch() as w:
        for k in (1, 2):
            head(tf.ones([5]), k)
        for n in (4, 3):
            sized(tf.ones([n]))
    reasons = [r for e in w.report.events for r in e.reasons if r.code != "first-trace"]
    assert {r.code for r in reasons} == {"python-value-changed", "shape-changed"}
    assert not any("under XLA" in r.fix or any("XLA" in p.trade for p in r.plans) for r in reasons)
    assert not any("XLA" in (f.suggestion or "") for f in w.report.functions)


def test_the_trade_survives_the_whole_run_rebuild_of_the_plans() -> None:
    """A plain tf.function around an XLA loss, under a tape: its rank change offers an
    input_signature, and the reduce_retracing plan that saves no graph is dropped when the plans
    are counted over the whole run; the XLA trade stays (it went with the dropped plan once)."""
    v = tf.Variable(tf.ones([3]))

    @tf.function(jit_compile=True)
    def tape_loss(x: Any) -> Any:
        return tf.reduce_sum(tf.tanh(x * v))

    @tf.function
    def grad_step(x: Any) -> Any:
        with tf.GradientTape() as tape:
            y = tape_loss(x)
        return tape.gradient(y, v)

    with tfgraph_lab.watch() as w:
        for shape in ([3], [3], [2, 3]):
            grad_step(tf.ones(shape))
    (reason,) = [r for e in w.report.events if e.qualname.endswith("grad_step") for r in e.reasons if r.plans]
    assert reason.code == "rank-changed" and "reduce_retracing" not in reason.fix
    trade = "under XLA (in the jit_compile=True function it calls) one graph still compiles once per concrete shape"
    assert trade in reason.fix and trade in reason.plans[0].trade
    suggestion = w.report.function("grad_step").suggestion or ""
    assert "input_signature=" in suggestion and "XLA still compiles once per concrete shape" in suggestion


_STRATEGY = textwrap.dedent(
    """
    import json
    import tensorflow as tf
    import tfgraph_lab

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        w = tf.Variable(tf.ones([3, 1]))

    def run(**options):
        def compute_loss(x):
            return tf.reduce_sum(tf.matmul(x, w))

        loss = tf.function(compute_loss, jit_compile=True, **options)

        def replica_step(x):
            with tf.GradientTape() as tape:
                y = loss(x)
            return tape.gradient(y, w)

        def train_step(b):
            return strategy.run(replica_step, args=(b,))

        for batch, drop in ((8, False), (4, True)):  # per replica 4, 1, then 2 rows
            step = tf.function(train_step)
            ds = tf.data.Dataset.from_tensor_slices(tf.ones([10, 3])).batch(batch, drop_remainder=drop)
            for b in strategy.experimental_distribute_dataset(ds):
                step(b)
        return loss.experimental_get_tracing_count()

    with tfgraph_lab.watch() as rec:
        as_written = run()
    fixes = [
        r.fix for e in rec.report.events if e.qualname.endswith("compute_loss")
        for r in e.reasons if r.code == "shape-changed" and r.plans
    ]
    signature = run(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    relaxed = run(reduce_retracing=True)
    print("REPORT " + json.dumps({"traces": [as_written, signature, relaxed], "fixes": fixes}))
    """
)


@pytest.mark.slow
def test_graph_counts_under_a_strategy_are_per_device(tmp_path: Path) -> None:
    """MirroredStrategy over 2 logical CPUs: each replica traces its own graphs, so a fix's
    count is per device — TF's own tracing counts with each fix applied: 6 as written,
    2 with the input_signature (it promised "1 graph for every call"), 4 with reduce_retracing."""
    script = tmp_path / "strategy.py"
    script.write_text(_STRATEGY)
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(tfgraph_lab.__file__).parent.parent), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=540
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.split("REPORT ", 1)[1])
    assert report["traces"] == [6, 2, 4]
    fix = report["fixes"][-1]
    assert "input_signature=[tf.TensorSpec([None, 3], tf.float32)], jit_compile=True) → 4 fewer graphs: 2 graphs instead of 6 for the calls seen, 1 per device" in fix, fix
    assert "reduce_retracing=True, jit_compile=True) → 2 fewer graphs: 4 graphs instead of 6" in fix, fix
    assert "1 graph for every call" not in fix
