"""Which fix ``--try-fix`` tries, and what its re-runs leave behind (issues 32.4 and 32.5).

32.4: on a custom training loop with a Python-float learning rate (one trace per value) the
trial tried ``reduce_retracing`` (16 → 16 graphs) and never said ``tf.constant(lr)``. It now
tries the plan that saves most graphs for the calls seen, a call-site change included: for the
re-run the function's name is bound to a thin wrapper that converts the argument before every
call, and the output says so.

32.5: the cell's re-runs left their state behind (a list appended to three times, a
tf.Variable at 3×, a Keras optimizer stepped 3×, numpy's RNG advanced), the third run's names
stayed, "they differ between two runs without the fix too" was said when no such run
happened, an exhausted iterator read "the fix FAILS", and the monitor counted the tool's own
re-wrapped function. The trial now restores what it can to the first (watched) run's state,
says beforehand what it cannot restore and how many times the cell may run, and judges only
its own runs.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tensorflow")
from _trial import try_cell

from tfgraph_lab.report.fix_trial import FixTrial

SHELL_SETUP = "import tensorflow as tf\nimport numpy as np\nimport random\n"


# ------------------------------------------------------------------ 32.4: the best fix

LR_LOOP = """\
w = tf.Variable(tf.zeros([4, 1]))

@tf.function
def lr_step(x, y, lr, *, clip=1.0):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
    w.assign_sub(lr * tf.clip_by_value(tape.gradient(loss, w), -clip, clip))
    return loss

lr = 0.1
losses = []
for step in range(16):
    n = 8 if step % 2 == 0 else 4
    losses.append(lr_step(tf.ones([n, 4]), tf.ones([n, 1]) * 3.0, lr))
    if step % 2:
        lr *= 0.9
"""


def test_the_fix_that_saves_most_graphs_is_tried_a_call_site_change_included(
    shell: Any, trials: list[FixTrial], capsys: Any
) -> None:
    """A keyword-only parameter rules out an input_signature; the shape reason's
    reduce_retracing saves nothing while lr makes one graph per value (16 → 16, measured
    before this fix); pass lr as tf.constant(lr) leaves 2 graphs (one per batch shape)."""
    capsys.readouterr()
    trial = try_cell(shell, trials, LR_LOOP)
    out = capsys.readouterr().out
    assert trial.plan is not None and trial.plan.call == (("lr", "tf.constant(lr)"),), str(trial)
    assert trial.applied and trial.verdict == "works", str(trial)
    assert trial.after is not None and (trial.before.traces, trial.after.traces) == (16, 2)
    assert trial.after.calls == trial.before.calls == 16
    assert trial.outputs == "equal", str(trial)
    text = str(trial)
    assert "tf.constant(lr)" in text and "tf.constant(lr)" in out
    assert "wrapper" in text and "converts `lr`" in text  # what was tried, said plainly
    assert shell.ev("lr_step.experimental_get_tracing_count()") == 16  # the user's function as it was
    # by hand: every call site edited as the plan says
    shell.run_cell(LR_LOOP.replace("* 3.0, lr))", "* 3.0, tf.constant(lr)))"))
    assert shell.ev("lr_step.experimental_get_tracing_count()") == trial.after.traces


def test_a_plan_that_saves_nothing_is_never_tried(shell: Any, trials: list[FixTrial]) -> None:
    from tfgraph_lab.report.fix_trial import choose_fix

    shell.run_cell(f"%%tracewatch -q -v lr_report\n{LR_LOOP}")
    report = shell.user_ns["lr_report"]
    plans = [p for e in report.retrace_events for r in e.reasons for p in r.plans]
    # it saves none here: never offered (issue 32.3; the report offered it, promising no fewer)
    assert plans and not any(p.decorator == "reduce_retracing=True" for p in plans)
    assert "reduce_retracing" not in str(report.with_options(show_framework=False)).split("traces:")[0]
    choice = choose_fix(report, "lr_step")
    assert choice is not None and choice.plan is not None
    assert choice.plan.graphs < report.function("lr_step").traces
    assert choice.plan.decorator != "reduce_retracing=True"


# ------------------------------------------------------------------ 32.5: the user's state

STATE_SETUP = """\
import keras
np.random.seed(7)
random.seed(7)
items = []
counter = tf.Variable(0.0)
runs_seen = 0
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="ones")])
opt = keras.optimizers.SGD(0.01)

@tf.function
def weighted(x):
    scale = 1.0 if x.shape[0] == 4 else 0.5
    return tf.reduce_sum(x) * scale

@tf.function
def keras_update(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss
"""

STATE_CELL = """\
items.append(len(items))
counter.assign_add(1.0)
runs_seen += 1
drawn = (float(np.random.rand()), random.random())
keras_update(tf.ones([3, 2]))
[weighted(tf.ones([n])) for n in (4, 3, 4)]
"""


def test_the_user_keeps_the_first_runs_state(shell: Any, trials: list[FixTrial], capsys: Any) -> None:
    """weighted's input_signature changes its outputs (x.shape[0] == 4 is False in the one
    graph), so the trial runs the cell three times: with the fix, then as written again."""
    np.random.seed(7)
    random.seed(7)
    first_draw = (float(np.random.rand()), random.random())
    second_draw = (float(np.random.rand()), random.random())
    assert shell.run_cell(STATE_SETUP).success  # seeds both RNGs with 7 again
    capsys.readouterr()
    trial = try_cell(shell, trials, STATE_CELL)
    out = capsys.readouterr().out
    assert trial.verdict == "changes-outputs", str(trial)
    assert len(trial.reruns) == 2 and "as written again" in trial.reruns[1], trial.reruns
    # what one plain run of the cell leaves
    assert shell.ev("items") == [0]
    assert shell.ev("float(counter.numpy())") == 1.0
    assert shell.ev("runs_seen") == 1, "the third run's names stayed"
    assert shell.ev("int(opt.iterations.numpy())") == 1
    assert shell.ev("drawn") == first_draw
    # the RNGs stand where one run leaves them
    assert shell.ev("(float(np.random.rand()), random.random())") == second_draw
    # said before the cell ran again: how many times, what is restored, what is not
    announce = out[: out.index("try-fix weighted")] if "try-fix weighted" in out else out
    assert "up to 2 more times" in announce, out
    assert "not restored" in announce and "files" in announce, out
    assert "tf.Variable" in announce and "numpy" in announce, out


def test_noise_is_claimed_only_from_a_run_that_happened(shell: Any, trials: list[FixTrial]) -> None:
    """Dropout in the fixed graph: no run as written again is made, so no sentence may say
    that two runs without the fix differ."""
    cell = (
        "@tf.function\ndef drop(x):\n    return tf.nn.dropout(x, 0.5)\n"
        "[drop(tf.ones([n])) for n in (3, 4, 5)]\n"
    )
    trial = try_cell(shell, trials, cell)
    assert trial.outputs == "noisy", str(trial)
    text = str(trial)
    assert not any("again" in r for r in trial.reruns)
    assert "two runs without the fix" not in text, text
    assert "random numbers" in text


def test_an_exhausted_iterator_is_not_the_fixs_failure(shell: Any, trials: list[FixTrial]) -> None:
    shell.run_cell(
        "@tf.function\ndef eat(x):\n    return x * 2\nbatches = iter([tf.ones([n]) for n in (2, 3, 4)])\n"
    )
    trial = try_cell(shell, trials, "[eat(next(batches)) for _ in range(3)]\n")
    text = str(trial)
    assert trial.verdict != "fails", text
    assert "FAILS" not in text
    assert "could not be tried" in text and "StopIteration" in text, text


def test_an_iterator_the_first_run_used_up_is_not_a_fix_only_you_can_apply(
    shell: Any, trials: list[FixTrial]
) -> None:
    """`for i in it:` over an iterator of an earlier cell: the fixed run calls the function 0
    times. The trial said 'not applied: this fix changes the call sites, which only you can do'
    though the wrapper was in place and announced."""
    shell.run_cell("@tf.function\ndef plus(x):\n    return x + 1\nnumbers = iter(range(3))\n")
    trial = try_cell(shell, trials, "for i in numbers:\n    plus(i)\n")
    text = str(trial)
    assert trial.plan is not None and trial.plan.call, text
    assert trial.verdict == "not-tried", text
    assert "only you can do" not in text and "FAILS" not in text, text
    assert "never called plus" in text and "iterator" in text, text


def test_the_monitor_counts_the_watched_run_only(
    shell: Any, trials: list[FixTrial], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfgraph_lab.faces import monitor as monitor_module

    noticed: list[Any] = []

    class Recording(monitor_module.RetraceNotice):
        def __init__(self, report: Any) -> None:
            super().__init__(report)
            noticed.append(report)

    monkeypatch.setattr(monitor_module, "RetraceNotice", Recording)
    shell.run_cell("@tf.function\ndef grow(x):\n    return x + 1\n")
    shell.run_line_magic("tracewatch", "on")
    try:
        trial = try_cell(shell, trials, "[grow(tf.ones([n])) for n in (2, 3, 4)]\n")
    finally:
        shell.run_line_magic("tracewatch", "off")
    assert trial.verdict == "works", str(trial)
    assert len(noticed) == 1
    grown = [f for f in noticed[0].functions if f.qualname == "grow"]
    assert sum(f.calls for f in grown) == trial.before.calls == 3
    assert sum(f.traces for f in grown) == trial.before.traces
