"""``%%tracewatch --try-fix`` and ``report.try_fix``: the report's fix, tried on the learner's code.

Every case runs a real cell in a real IPython shell, takes the trial the magic shows, and checks
its figures against the fix applied by hand (the cell's decorator edited as a learner would, or
the function re-wrapped in a cell): TensorFlow's own ``experimental_get_tracing_count()`` of the
by-hand function equals the trial's "after" traces. The namespace holds the first run's names
afterwards. Failing fixes are findings, each recorded here (FINDINGS): the trial must say so.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("tensorflow")
import tensorflow as tf
from _trial import try_cell

import tfgraph_lab
from tfgraph_lab.report.fix_trial import FixTrial
from tfgraph_lab.trial import tryfix

# Fixes that do not do what they promise on real code, measured on TF 2.21 (see the tests).
FINDINGS = {
    "python-shape-loop": "input_signature with a None dimension: `range(x.shape[0])` raises "
    "TypeError ('NoneType' object cannot be interpreted as an integer)",
    "python-shape-test": "input_signature with a None dimension: `x.shape[0] == 4` is False in the "
    "one graph, so full batches take the other branch — the outputs change",
    "def-in-loop": "create the tf.function once: the loop also re-creates the Python function, so "
    "one tf.function per Python function remains — no fewer traces",
}


SHELL_SETUP = "import tensorflow as tf"  # run once in the shared `shell` (conftest.py)


def by_hand(shell: Any, cell: str, name: str, trial: FixTrial) -> int:
    """Apply the trial's fix as a learner would (edit the decorator), run the cell, read TF's count."""
    assert trial.plan is not None
    fixed = cell.replace("@tf.function\n", f"@tf.function({trial.plan.decorator})\n", 1)
    assert fixed != cell
    shell.run_cell(fixed)
    return int(shell.ev(f"{name}.experimental_get_tracing_count()"))


TRAP = """\
w = tf.Variable(tf.zeros([8, 1]))
x = tf.random.Generator.from_seed(0).normal([100, 8])
data = tf.data.Dataset.from_tensor_slices((x, tf.reduce_sum(x, axis=1, keepdims=True))).batch(32)

@tf.function
def train_step(x, y, lr, training):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w)
        if training:
            pred = tf.nn.dropout(pred, 0.1)
        loss = tf.reduce_mean((pred - y) ** 2)
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss

lr = 0.1
for _ in range(3):
    for x, y in data:
        train_step(x, y, lr, True)
    lr *= 0.5
for x, y in data:
    train_step(x, y, lr, False)
"""


def test_the_demo_trap(shell: Any, trials: list[FixTrial]) -> None:
    """The demo's trap (tfgraph_lab.faces.demo, 3 epochs): the first fix is the input_signature."""
    trial = try_cell(shell, trials, TRAP)
    assert trial.plan is not None and trial.plan.decorator.startswith("input_signature=[")
    assert trial.verdict == "works", str(trial)
    assert trial.after is not None
    assert trial.after.traces == 1 < trial.before.traces
    assert trial.after.calls == trial.before.calls == 16
    # dropout draws new numbers on every run: the outputs cannot tell anything about the fix
    assert trial.outputs == "noisy"
    assert "cannot be compared" in str(trial)
    # the namespace holds the watched run's function again
    assert shell.ev("train_step.input_signature") is None
    assert shell.ev("train_step.experimental_get_tracing_count()") == trial.before.traces
    assert by_hand(shell, TRAP, "train_step", trial) == trial.after.traces


def test_a_seeded_trap_is_not_blamed_on_the_fix(shell: Any, trials: list[FixTrial]) -> None:
    """Under tf.random.set_seed a run as written repeats its dropout masks exactly (each new
    graph starts its random ops afresh), while the one fixed graph draws other numbers: the
    outputs differ without any change of meaning, so they are 'noisy', never 'changes-outputs'
    (TF 2.21; this test failed with 'changes-outputs' before random ops were looked for)."""
    try:
        trial = try_cell(shell, trials, "tf.random.set_seed(0)\n" + TRAP)
    finally:
        shell.run_cell("tf.random.set_seed(None)")  # later tests draw unseeded again
    assert trial.after is not None and trial.after.traces == 1 < trial.before.traces
    assert trial.outputs == "noisy", str(trial)
    assert trial.verdict == "works", str(trial)


KERAS_LOOP = """\
import numpy as np
import keras
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, kernel_initializer="zeros")])
opt = keras.optimizers.SGD(0.01)
xs = np.arange(30, dtype="float32").reshape(10, 3) / 30
ds = tf.data.Dataset.from_tensor_slices((xs, xs.sum(axis=1, keepdims=True))).batch(4)

@tf.function
def keras_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss

losses = [keras_step(x, y) for _ in range(2) for x, y in ds]
tf.stack(losses)
"""


def test_a_keras_custom_loop(shell: Any, trials: list[FixTrial]) -> None:
    trial = try_cell(shell, trials, KERAS_LOOP)
    assert trial.verdict == "works", str(trial)
    assert trial.after is not None
    assert trial.outputs == "equal", str(trial)
    assert "6 results of keras_step" in trial.outputs_detail
    assert trial.after.traces < trial.before.traces
    assert shell.ev("keras_step.input_signature") is None
    assert shell.ev("float(losses[-1])") > 0
    assert by_hand(shell, KERAS_LOOP, "keras_step", trial) == trial.after.traces


def test_a_function_from_an_earlier_cell_is_rebound_for_the_rerun_only(
    shell: Any, trials: list[FixTrial]
) -> None:
    shell.run_cell(
        "@tf.function\ndef norm(x):\n    return x / tf.reduce_max(x)\nnorm_id = id(norm)\nruns = []\n"
    )
    cell = "runs.append(len(runs))\nlast = runs[-1]\n[norm(tf.ones([n, 2]) * n) for n in (3, 4, 5)]\n"
    trial = try_cell(shell, trials, cell)
    assert trial.verdict == "works" and trial.outputs == "equal", str(trial)
    assert trial.after is not None and (trial.before.traces, trial.after.traces) == (3, 1)
    assert shell.ev("id(norm) == norm_id")
    assert shell.ev("last") == 0, "a name the re-run set was not restored"
    assert shell.ev("runs") == [0], "the list's contents are the first run's"
    shell.run_cell(
        "hand = tf.function(norm.python_function, "
        f"{trial.plan.decorator if trial.plan else ''})\n"
        "[hand(tf.ones([n, 2]) * n) for n in (3, 4, 5)]\n"
    )
    assert shell.ev("hand.experimental_get_tracing_count()") == trial.after.traces


def test_a_method_is_rebound_on_its_class_and_restored(shell: Any, trials: list[FixTrial]) -> None:
    shell.run_cell(
        "class Scaler(tf.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.k = tf.Variable(2.0)\n"
        "    @tf.function\n    def scale(self, x):\n        return x * self.k\n"
        "s = Scaler()\noriginal_scale = Scaler.__dict__['scale']\n"
    )
    trial = try_cell(shell, trials, "[s.scale(tf.ones([n])) for n in (2, 3, 4)]\n")
    assert trial.verdict == "works" and trial.outputs == "equal", str(trial)
    assert trial.after is not None and trial.after.traces < trial.before.traces
    assert shell.ev("Scaler.__dict__['scale'] is original_scale")
    assert shell.ev("s.scale.input_signature") is None
    assert trial.plan is not None
    shell.run_cell(
        "class ScalerByHand(Scaler):\n"
        f"    scale = tf.function(Scaler.__dict__['scale'].python_function, {trial.plan.decorator})\n"
        "by_hand = ScalerByHand()\n[by_hand.scale(tf.ones([n])) for n in (2, 3, 4)]\n"
    )
    assert shell.ev("by_hand.scale.experimental_get_tracing_count()") == trial.after.traces


def test_a_tf_function_created_in_a_loop_is_created_once(shell: Any, trials: list[FixTrial]) -> None:
    shell.run_cell("def double(x):\n    return x * 2\n")
    trial = try_cell(shell, trials, "[tf.function(double)(tf.ones([2])) for _ in range(4)]\n")
    assert trial.plan is not None and trial.plan.hoist
    assert trial.verdict == "works", str(trial)
    assert trial.after is not None and (trial.before.traces, trial.after.traces) == (4, 1)
    shell.run_cell("once = tf.function(double)\n[once(tf.ones([2])) for _ in range(4)]\n")
    assert shell.ev("once.experimental_get_tracing_count()") == trial.after.traces


def test_a_fix_that_raises_is_reported_with_tensorflows_error(shell: Any, trials: list[FixTrial]) -> None:
    cell = (
        "@tf.function\ndef total(x):\n    s = 0.0\n    for i in range(x.shape[0]):\n        s += x[i]\n"
        "    return s\n[total(tf.ones([n])) for n in (2, 3, 4)]\nmarker = 'first run'\n"
    )
    trial = try_cell(shell, trials, cell)
    assert trial.verdict == "fails", str(trial)
    assert trial.error is not None and trial.error.startswith("TypeError"), FINDINGS["python-shape-loop"]
    assert "FAILS" in str(trial) and trial.error in str(trial)
    assert shell.ev("marker") == "first run" and shell.ev("total.input_signature") is None
    with pytest.raises(Exception, match="NoneType"):
        shell.run_cell(
            cell.replace("@tf.function\n", f"@tf.function({trial.plan.decorator})\n")
        ).raise_error()  # type: ignore[union-attr]


def test_a_fix_that_changes_the_outputs_says_so(shell: Any, trials: list[FixTrial]) -> None:
    cell = (
        "@tf.function\ndef weighted(x):\n    scale = 1.0 if x.shape[0] == 4 else 0.5\n"
        "    return tf.reduce_sum(x) * scale\n[weighted(tf.ones([n])) for n in (4, 3, 4)]\n"
    )
    trial = try_cell(shell, trials, cell)
    assert trial.verdict == "changes-outputs", (FINDINGS["python-shape-test"], str(trial))
    assert "CHANGES THE OUTPUTS" in str(trial) and "result #1 differs" in str(trial)


def test_a_fix_that_saves_no_trace_says_so(shell: Any, trials: list[FixTrial]) -> None:
    cell = "for n in range(3):\n    def add(x):\n        return x + n\n    tf.function(add)(tf.ones([2]))\n"
    trial = try_cell(shell, trials, cell)
    assert trial.verdict == "no-fewer-traces", (FINDINGS["def-in-loop"], str(trial))
    assert trial.after is not None and trial.after.traces == trial.before.traces == 3
    assert "does NOT reduce traces" in str(trial) and "move the def out of the loop" in trial.note


def test_a_call_site_fix_is_tried_through_a_wrapper(shell: Any, trials: list[FixTrial]) -> None:
    """A call-site change (pass `k` as `tf.constant(k)`) is tried without editing the code: the
    name is bound to a thin wrapper that converts `k` before every call (issue 32.4)."""
    shell.run_cell("@tf.function\ndef times(x, k):\n    return x * k\ncell_runs = []\n")
    trial = try_cell(
        shell, trials, "cell_runs.append(1)\n[times(tf.ones([2]), k) for k in (1.0, 2.0, 3.0)]\n"
    )
    assert trial.plan is not None and trial.plan.call == (("k", "tf.constant(k)"),)
    assert trial.verdict == "works" and trial.outputs == "equal", str(trial)
    assert trial.after is not None and (trial.before.traces, trial.after.traces) == (3, 1)
    assert shell.ev("len(cell_runs)") == 1, "the list holds the watched run's item only"
    text = str(trial)
    assert "times(..., k=tf.constant(k))" in text and "thin wrapper that converts `k`" in text
    shell.run_cell("[times(tf.ones([2]), tf.constant(k)) for k in (1.0, 2.0, 3.0)]\n")
    assert shell.ev("times.experimental_get_tracing_count()") == 3 + trial.after.traces  # by hand


def test_a_rewrite_inside_an_argument_is_shown_not_applied() -> None:
    from tfgraph_lab.model.records import FixPlan, FunctionSummary
    from tfgraph_lab.report.fix_trial import FixChoice, RunFigures

    plan = FixPlan(call=(("batch[0]", "tf.constant(batch[0])"),), graphs=1)
    assert not FixChoice(FunctionSummary("f", "x.py", 1, 3, 3, 0, 0.0, 0.0, False), plan, "python-value-changed").applicable
    trial = FixTrial("f", plan, applied=False, before=RunFigures(3, 2, 0, 0.1, 3, 0.1))
    assert "1 (promised, not run)" in str(trial) and "only you can do" in str(trial)


def test_jit_compile_false_for_xla_recompiles(shell: Any, trials: list[FixTrial]) -> None:
    cell = (
        "@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None], tf.float32)])\n"
        "def square(x):\n    return x * x\n[square(tf.ones([n])) for n in (2, 3, 4)]\n"
    )
    trial = try_cell(shell, trials, cell)
    assert trial.plan is not None and trial.plan.decorator == "jit_compile=False"
    assert trial.verdict == "works", str(trial)
    assert trial.after is not None
    assert (trial.before.xla_compiles, trial.after.xla_compiles) == (3, 0)
    assert trial.after.traces == trial.before.traces == 1  # the input_signature was kept
    assert re.search(r"XLA compilations (≥ )?3 → 0", str(trial)), str(trial)
    hand = tf.function(
        shell.user_ns["square"].python_function,
        input_signature=[tf.TensorSpec([None], tf.float32)],
        jit_compile=False,
    )
    with tfgraph_lab.watch() as w:
        for n in (2, 3, 4):
            hand(tf.ones([n]))
    assert hand.experimental_get_tracing_count() == trial.after.traces
    assert w.report.function("square").xla_compiles == trial.after.xla_compiles == 0


def test_a_rebound_function_is_restored_when_the_fix_raises(shell: Any, trials: list[FixTrial]) -> None:
    shell.run_cell(
        "@tf.function\ndef total2(x):\n    s = 0.0\n    for i in range(x.shape[0]):\n        s += x[i]\n"
        "    return s\ntotal2_id = id(total2)\n"
    )
    trial = try_cell(shell, trials, "[total2(tf.ones([n])) for n in (2, 3, 4)]\n")
    assert trial.verdict == "fails", str(trial)
    assert shell.ev("id(total2) == total2_id")


def test_nothing_retraced_says_so(shell: Any, trials: list[FixTrial], capsys: Any) -> None:
    shell.run_cell("@tf.function\ndef calm(x):\n    return x\n")
    capsys.readouterr()
    result = shell.run_cell("%%tracewatch -q --try-fix\ncalm(tf.ones([2]))\ncalm(tf.ones([2]))\n")
    assert result.success
    assert "no function retraced" in capsys.readouterr().out


# ------------------------------------------------------------------ from Python


def test_report_try_fix_from_python() -> None:
    namespace: dict[str, Any] = {"tf": tf}
    exec(
        "@tf.function\ndef step(x):\n    return tf.reduce_sum(x * 2.0)\n"
        "def train():\n    return [step(tf.ones([n, 3])) for n in (4, 3, 2, 5)]\n",
        namespace,
    )
    step = namespace["step"]
    with tfgraph_lab.watch() as w:
        namespace["train"]()
    trial = w.report.try_fix("step", rerun=namespace["train"], namespace=namespace)
    assert namespace["step"] is step
    assert trial.verdict == "works" and trial.outputs == "equal"
    assert trial.after is not None and (trial.before.traces, trial.after.traces) == (4, 1)
    assert len(trial.reruns) == 2  # as written (outputs to compare), then with the fix
    assert "traces" in str(trial) and "<table" in trial._repr_html_()
    assert repr(trial) == "<FixTrial step: works, traces 4 → 1>"
    assert trial.to_dict()["verdict"] == "works"
    assert "before is the watched block's" in trial.note  # the timed code may differ: said
    with pytest.raises(ValueError, match="'nothing' did not retrace"):
        w.report.try_fix("nothing", rerun=namespace["train"], namespace=namespace)


def test_the_fix_tried_covers_every_call_of_the_run(shell: Any, trials: list[FixTrial]) -> None:
    """The first retrace's input_signature ([None, 3]) would reject the later (5, 2) call: the
    fix tried is the same plan as of its last occurrence, built from every graph seen."""
    shell.run_cell("@tf.function\ndef widen(x):\n    return tf.reduce_sum(x)\n")
    trial = try_cell(shell, trials, "[widen(tf.ones(s)) for s in ((4, 3), (2, 3), (5, 2))]\n")
    assert trial.plan is not None and "tf.TensorSpec([None, None], tf.float32)" in trial.plan.decorator
    assert trial.verdict == "works" and trial.after is not None and trial.after.traces == 1


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0 + 1e-9]), "equal"),
        ({"loss": tf.constant(1.0)}, {"loss": tf.constant(1.5)}, "differ"),
        ([tf.ones([2])], [tf.ones([3])], "differ"),
        ("a report", "a report", "not compared"),  # not made of tensors and numbers
        ({1: 1.0, "a": 2.0}, {1: 1.0, "a": 2.0}, "not compared"),  # tf.nest cannot sort the keys
        (None, None, "not compared"),
    ],
)
def test_outputs_compared(before: Any, after: Any, expected: str) -> None:
    where = ("f", "x.py", 1)
    outcome, _ = tryfix._compare(tryfix.Outputs(before), tryfix.Outputs(after), where, "f")
    assert outcome == expected


LESSON_04 = """\
@tf.function
def encode_by_try_fix(batch):
    return tf.nn.relu(tf.matmul(batch, weights))

for epoch in range(3):
    for batch in dataset:
        encode_by_try_fix(batch)
"""


def test_the_lesson_04_cell(shell: Any, trials: list[FixTrial]) -> None:
    """04 ('Check a fix on your own cell'): --try-fix applies the input_signature the learner
    wrote by hand above it: 2 traces → 1, the same results, encode_by_try_fix as it was."""
    shell.run_cell(
        "features = tf.reshape(tf.range(100 * 128, dtype=tf.float32) % 13.0, [100, 128])\n"
        "weights = tf.ones([128, 16]) / 128.0\n"
        "dataset = tf.data.Dataset.from_tensor_slices(features).batch(32)\n"
    )
    trial = try_cell(shell, trials, LESSON_04)
    assert trial.plan is not None
    assert trial.plan.decorator == "input_signature=[tf.TensorSpec([None, 128], tf.float32)]"
    assert trial.verdict == "works" and trial.outputs == "equal", str(trial)
    assert trial.after is not None and (trial.before.traces, trial.after.traces) == (2, 1)
    assert shell.ev("encode_by_try_fix.input_signature") is None
