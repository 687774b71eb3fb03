"""Lessons 06–08: objects and re-created functions, the training-loop clinic, capstone."""

from __future__ import annotations

from typing import Any

from cells import exercise, grade, guess, setup, starter
from nbtools import code, md

from tfgraph_lab.exercises import EXERCISES


def lesson_06() -> list[Any]:
    return [
        md("""# 06 · Objects, structures and re-created functions

**Goals:** know how lists, dicts and dataclasses enter the cache key; spot a `tf.function`
re-created in a loop or a re-run cell; understand methods per instance. (Closures and object
attributes that go stale *without* retracing are in lesson 02.)"""),
        setup("import dataclasses"),
        md("""## Lists and dicts

A list or a dict of tensors can be an argument too. **Predict:** how many graphs do `total`
and `weighted` trace, together, for the six calls below?"""),
        code("""\
@tf.function
def total(values):
    return tf.add_n(values)

@tf.function
def weighted(batch):
    return batch["x"] * batch["w"]

x = tf.ones([3])"""),
        guess("structure_guess", "how many graphs in total for `total` and `weighted` together?", 4),
        code("""\
%%tracewatch -v structure_report
total([x, x])
total([x, x])
total([x, x, x])
weighted({"x": x, "w": tf.constant(2.0)})
weighted({"w": tf.constant(5.0), "x": x})
weighted({"x": x, "w": 2.0})"""),
        grade("structure_guess", "structure_report"),
        md("""**Explain.** Containers are flattened: their **structure** (length, keys, nesting) is part
of the key, and so is every item. The same list again is cached; a longer list is
`structure-changed`; a dict with the same keys in another order and other tensor *values* is
cached (keys are sorted, tensor values are not in the key); a Python float inside the dict is
keyed by its value, like a Python scalar argument: a new trace.

## Dataclasses and other objects

A plain `@dataclass` defines `==` (`eq=True`), and Python then sets its `__hash__` to `None`:
it is unhashable, and TensorFlow refuses it as an argument with a `TypeError`."""),
        code("""\
@dataclasses.dataclass
class Config:
    scale: float

@tf.function
def apply_config(x, cfg):
    return x * cfg.scale

apply_config(x, Config(2.0))""", "raises-exception"),
        md("""That error is the *safe* case. Make the class hashable by identity — `@dataclass(eq=False)`,
like any plain class — or by force with `unsafe_hash=True`, and TensorFlow accepts it. Then
mutate a field: the object still matches the graph traced for its old value, and the next call
silently returns the stale result, with no retrace (TF 2.21, both variants):"""),
        code("""\
@dataclasses.dataclass(eq=False)             # hashable by identity, like a plain class
class MutableConfig:
    scale: float

@tf.function
def apply_mutable(x, cfg):
    return x * cfg.scale

mutable_cfg = MutableConfig(2.0)
print(apply_mutable(x, mutable_cfg).numpy())
mutable_cfg.scale = 5.0                      # mutated in place
print(apply_mutable(x, mutable_cfg).numpy(), "traces:", apply_mutable.experimental_get_tracing_count(),
      "| eagerly:", (x * mutable_cfg.scale).numpy())"""),
        md("""A **frozen** dataclass cannot be mutated, and it is hashable by its values.

**Predict:** how many graphs does `apply_config` trace for the four calls below?"""),
        code("""\
@dataclasses.dataclass(frozen=True)
class FrozenConfig:
    scale: float

cfg = FrozenConfig(2.0)"""),
        guess("frozen_guess", "graphs for cfg, cfg, FrozenConfig(2.0), FrozenConfig(3.0)?", 2),
        code("""\
%%tracewatch -v frozen_report
apply_config(x, cfg)
apply_config(x, cfg)
apply_config(x, FrozenConfig(2.0))
apply_config(x, FrozenConfig(3.0))"""),
        grade("frozen_guess", "frozen_report", "apply_config"),
        md("""**Explain.** TensorFlow keys a hashable object by its hash and `==`, holding it through a
weak reference: the same object is cached, a *new but equal* object reuses the graph while the
first object is alive, and a changed value is a new key — the values inside are baked into the
graph like Python scalars.

Cache entries are never removed, though: once `cfg` is garbage collected, an equal new object
traces another graph, and the cache holds both (TF 2.21 measures 2 cached graphs). Short-lived
objects passed as arguments grow the cache."""),
        md("""Cure: pass the *values* as tensors (`apply_config(x, tf.constant(cfg.scale))`), or keep them
in `tf.Variable`s on a `tf.Module`.

## A `tf.function` re-created in a loop

**Predict:** how many traces does the loop below make?"""),
        guess("recreated_guess", "how many traces for six calls of tf.function(normalise)(x)?", 6),
        code("""\
%%tracewatch -v recreated_report
def normalise(v):
    return v / tf.reduce_sum(v)

for _ in range(6):
    tf.function(normalise)(x)"""),
        grade("recreated_guess", "recreated_report", "normalise"),
        md("""**Explain.** Each `tf.function(...)` call — and each run of a cell containing
`@tf.function` — creates a **new function object** with an empty cache. The report says
`new-function-object`, and TensorFlow's warning lists this as cause (1):
*"creating @tf.function repeatedly in a loop"*. The same happens when you re-run a notebook
cell that defines a `tf.function`: a new object, a new trace. Cure: create the `tf.function`
once, outside the loop.

## Methods: one cache per instance

A `tf.function` method gets a separate cache for every instance (`self` is part of it):"""),
        code("""\
class Doubler(tf.Module):
    @tf.function
    def __call__(self, v):
        return v * 2

a, b = Doubler(), Doubler()
a(x); a(x); b(x)
print("a:", a.__call__.experimental_get_tracing_count(), " b:", b.__call__.experimental_get_tracing_count())"""),
        md("""That is expected: create the model once, not one instance per batch."""),
        *exercise("06-objects"),
        md("""## Recap

* Containers: structure and items are part of the key; a dict of tensors with the same keys
  shares one graph.
* A default `@dataclass` is rejected (unhashable). With `eq=False` or `unsafe_hash=True` it is
  accepted — and a mutated field goes stale silently, with no retrace. A frozen one is keyed by
  value (equal objects share a graph while the first is alive; a changed value retraces; entries
  are never removed, so short-lived objects grow the cache).
* A `tf.function` created in a loop or a re-run cell traces again: create it once.
* Methods have one cache per instance.
* Captured values and attributes of identity-keyed objects go stale without retracing (lesson 02).
* Next, lesson **07**: a whole training loop."""),
    ]


def lesson_07() -> list[Any]:
    e = EXERCISES["07-training-loop"]
    return [
        md("""# 07 · Training-loop clinic

**Goals:** inspect Keras `fit` with `%%tracewatch`; diagnose and fix a custom training loop
over `tf.data`; put a **retrace budget** (`--max-traces`) on the loop as a guard; and keep
watching for retracing with `%tracewatch on` and `tfgraph_lab.monitor()`."""),
        setup("import keras"),
        md("""## Keras `fit`

Keras compiles its own training step into `tf.function`s. `%%tracewatch` shows them named for
what they serve — `sequential · fit · train step` — and hides Keras's other internals (the
`tf.data` helpers it builds) unless you pass `--all`. 200 examples in batches of 32 leave a last
batch of 8. **Predict:** does `fit` trace its training step again for that last batch?"""),
        code("""\
X = tf.reshape(tf.range(200 * 8, dtype=tf.float32) % 11.0 / 11.0, [200, 8])
Y = tf.reduce_sum(X * tf.range(8, dtype=tf.float32), axis=1, keepdims=True) / 8.0

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")"""),
        guess("fit_guess", "True or False: does fit trace its step again for the last batch of 8?", False),
        code("""\
%%tracewatch -v fit_report
history = model.fit(X, Y, batch_size=32, epochs=3, verbose=0)"""),
        grade("fit_guess", "fit_report.function('fit · train step').traces > 1", what="fit traced its step again"),
        md("""**Explain.** `fit` did not retrace for the last batch, and not by magic: Keras turns the
arrays into a `tf.data` dataset whose batch dimension is unknown (`None` — the last batch may
be smaller, as lesson 04 showed), and its step functions take the batches from that dataset
*inside* a graph, so the step is traced once, for shape `(None, 8)` (Keras 3; on the oldest
TF this project supports, Keras 2 (TF 2.15) traces it twice — its optimizer creates variables on
the first call, lesson 05 — and none for the last batch either). Keras also wraps them with
`reduce_retracing=True` (Keras 3.15 `TensorFlowTrainer._make_function`). Your own
`tf.function` fed batch by batch from Python gets each batch's real shape — custom training
loops are where retracing hides.

**On a GPU, one more compile.** `compile(jit_compile="auto")` — Keras 3's default — turns XLA
on when the TensorFlow backend sees a GPU (or another non-CPU device) and every layer supports
it; it stays off on a CPU-only machine like this one, under a distribution strategy, and with
op determinism enabled (Keras 3.15 `Trainer._resolve_auto_jit_compile`, `model_supports_jit`). XLA compiles once per concrete input shape even where TensorFlow does not retrace: on a
GPU, the last batch's shape costs an XLA compilation — once, as it is cached too."""),
        md("""## Optional (about 3 minutes): see XLA compile, on this CPU too

Skip to *A custom loop* if time is short: nothing later uses this part. `jit_compile=True`
forces XLA here as well. Run the two cells, then find *compiled by XLA* in the report: how many
compilations over 3 epochs of the same data, and why that many?"""),
        code("""\
keras.utils.set_random_seed(0)
xla_model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
xla_model.compile(optimizer="sgd", loss="mse", jit_compile=True)"""),
        code("""\
%%tracewatch
history = xla_model.fit(X, Y, batch_size=32, epochs=3, verbose=0)"""),
        md("""**Explain.** One trace of the step, and XLA compiled twice: once for the batches of 32 and once for
the last batch of 8 (then both are cached, in later epochs too). XLA compiles once per graph
*and concrete shape*: a `None` dimension stops the retrace, never the compilation. Fixes that
work for XLA: `drop_remainder=True` or pad/bucket the data to a few sizes, or
`jit_compile=False` where shapes must vary. `--max-xla-compiles 1` guards it as `--max-traces`
guards retraces."""),
        md("""## A custom loop: diagnose

Below is a typical first custom loop — the ✏️ exercise cell you will fix later. Run it, then
watch it train for one epoch:"""),
        starter(e.id),
        code("""\
%%tracewatch
train_model(epochs=1)"""),
        md("""**Observe.** `train_step` traced for the first batch and again for the smaller last batch
(`shape-changed x`). The loop also decays the learning rate, a Python float, after each epoch.

**Predict:** `train_model(epochs=4)`, under the live view: how many graphs does `train_step`
trace this time? (Each run builds a new model and a new `tf.function`.)"""),
        guess("loop_guess", "how many traces of train_step for a fresh train_model(epochs=4)?", 8),
        md("""`--live` draws the calls as they happen: each trace is a spike in the time per call,
around a hundred milliseconds against a millisecond or two for a cached call (the report's
*cached call* column)."""),
        code("""\
%%tracewatch --live -v loop_report
train_model(epochs=4)"""),
        grade("loop_guess", "loop_report", "train_step"),
        md("""**Explain.** 2 graphs per epoch: the Python learning rate changes every epoch, and each
new `lr` needs a graph for the full batches and one for the last batch."""),
        md("""## Guard the loop with a retrace budget

A budget turns retracing into a failure you cannot miss — in a notebook, or in CI with
`tfgraph_lab.watch(max_traces=...)`. `--max-traces train_step=1` allows `train_step` one trace.
On the unfixed loop the cell fails *after* showing the report. **This cell is expected to
fail, and Run All stops here on purpose**: run the cells after it one by one (or *Run › Run
Selected Cell and All Below* from the next one)."""),
        code("""\
%%tracewatch --max-traces train_step=1
train_model()""", "raises-exception"),
        md("""Fix the loop in the ✏️ exercise cell under *A custom loop: diagnose* (scroll up), run it,
then run the budget cell again: with the fix, the report shows one trace and the cell passes.
Then run the check:"""),
        code(e.check_call),
        md(f"""Stuck? `ex.hint("{e.id}")` gives a hint; `ex.solution("{e.id}")` shows a worked solution.

## Keep watching: monitoring

TensorFlow's own warning (*"N out of the last M calls to … triggered tf.function retracing.
Tracing is expensive…"*) fires only when it remembers 5 recent calls that traced — never for
traces 4 or more calls apart, such as a learning rate changed once per epoch when nothing
else retraces (this loop's last batch puts two traces side by side, so it does warn) — at most twice per Python function (lesson 03 shows how it counts), and disappears entirely when the
TensorFlow logger is set to `ERROR` (a common way to silence TF's noise). Instead:

* `%tracewatch on` watches every following cell and shows a short notice under any cell that
  retraced (`%tracewatch off` stops it);
* `tfgraph_lab.monitor()` does the same in a script, printing notices to stderr;
* `tfgraph-lab run train.py --json report.json` runs a whole script under the watch."""),
        code("%tracewatch on"),
        code("""\
logits = tf.reshape(tf.range(32.0), [4, 8])   # this part's own data: no earlier cell needed

@tf.function
def loss_at(x, temperature):
    return tf.reduce_mean(tf.nn.softmax(x / temperature))

for t in (1.0, 2.0, 3.0):
    loss_at(logits, t)                      # a Python float per call: the notice shows up below"""),
        md("""Now switch to tensors. The *first* tensor call shows a notice too: a tensor where the cached
graphs took Python floats is a new kind of argument (`type-changed`) — expected, once. Further
tensor values then reuse that graph, with no notice:"""),
        code("""\
loss_at(logits, tf.constant(1.0))           # the first tensor after Python floats: one trace, expected"""),
        code("""\
for t in (2.0, 3.0, 4.0):
    loss_at(logits, tf.constant(t))         # more tensor values: no retrace, no notice"""),
        code("%tracewatch off"),
        md("""## Recap

* `%%tracewatch` shows Keras's step functions by name (`--all` adds its other internals); `fit` does not retrace for the last
  batch because its dataset's batch dimension is unknown (`None`) inside the graph (on a GPU,
  `jit_compile="auto"` turns XLA on, which compiles once more for the last batch's shape).
* `--live` shows each trace as a spike in the time per call, while the loop runs.
* In a custom loop, the learning rate and the last batch are the classic retrace causes:
  a `tf.Variable` and an `input_signature` (or `drop_remainder=True`) fix them.
* A budget (`--max-traces train_step=1`, or `watch(max_traces=...)` in tests) keeps them fixed.
* Monitoring (`%tracewatch on`, `tfgraph_lab.monitor()`) catches retracing TF's warning misses.
* Next, lesson **08**: the capstone."""),
    ]


def lesson_08() -> list[Any]:
    e = EXERCISES["08-capstone"]
    slow = e.starter.replace("def train_fast(", "def train_slow(", 1)
    return [
        md("""# 08 · Capstone: the slow training script

`train_slow` below trains a small model for three epochs. It works — and it is slow, for
reasons hidden in plain sight. Your job: **diagnose** every cause of retracing, write
`train_fast` — the same training without them — and let the checker measure the traces and
the speed-up.

Everything from lessons 01–07 applies. Work like a clinician: observe, name each cause from
the report, fix one at a time, re-measure."""),
        setup("import keras\nimport tfgraph_lab"),
        md("The patient (the checker times its own copy of this script, as written here):"),
        code(slow),
        md("""**Predict:** read `train_slow` first. How many graphs does one `train_slow()` trace, all
its functions together? Then watch it live: each spike in the time per call is a trace."""),
        guess("capstone_guess", "how many traces does one train_slow() make, all functions together?", 16),
        code("""\
with tfgraph_lab.watch(live=True) as w:
    train_slow()"""),
        grade("capstone_guess", "w.report"),
        md("""## Observe

Run it under `%%tracewatch`. Read the summary line first (how many traces, how much time
tracing took, and how many cached calls that time would have paid for), then each retrace
reason."""),
        code("""\
%%tracewatch
train_slow()"""),
        md("""**Predict:** would this script be faster with no graphs at all? Measure it:"""),
        guess("eager_guess", "True or False: is train_slow() faster run eagerly than with its tf.functions?", True),
        code("""\
%%tracewatch -q -v slow_report --compare-eager
train_slow()"""),
        grade(
            "eager_guess",
            "slow_report.compare_eager['eager_seconds'] < slow_report.compare_eager['graph_seconds']",
            what="eager was faster",
        ),
        code("""\
times = slow_report.compare_eager
print(f"with tf.function: {times['graph_seconds']:.2f} s   eagerly: {times['eager_seconds']:.2f} s")"""),
        md("""A script that retraces on every step can be *slower than plain eager mode*. (That does not
mean "remove `@tf.function`": the checker requires your `train_step` to stay a
`tf.function` — a graph traced once beats both.)

## ✏️ Fix: `train_fast`

The cell below starts as a copy of `train_slow`. Remove every cause of retracing without
changing what is computed: the learning-rate schedule and the warm-up must stay. Re-run
`%%tracewatch` on `train_fast()` after each change."""),
        starter(e.id),
        code("""\
%%tracewatch
train_fast()"""),
        md("## ✔ Check\n\nThe checker runs both versions under `watch()` and compares traces, time and loss."),
        code(e.check_call),
        md(f"""Stuck? `ex.hint("{e.id}")` (twice for the second hint); the worked solution is behind
`ex.solution("{e.id}")`.

## What you have learned

TensorFlow 2 runs eagerly by default; `@tf.function` turns Python into a cached graph for
speed. Each new input signature — a changed Python scalar (`training=True` then `False`), a new
tensor shape (the smaller last batch) or dtype, a different Python object (by identity, or by
`==` for a hashable one such as a frozen dataclass) — triggers a new trace, and so does a
`tf.function` re-created in a loop; a `tf.Variable` created inside the function fails
unless it is created once, on the first call. Tracing is expensive, and frequent retracing can
make code slower than eager mode, with only a vague, rate-limited warning. Values read while
tracing (globals, attributes, fields of a mutable object that TF accepted) go stale without any
retrace; Keras `fit` avoids the last-batch retrace because its dataset's batch dimension is
unknown, not by any magic of its own. The cures: pass tensors instead of
changing Python scalars (branch with `tf.cond`), give an `input_signature` with
`tf.TensorSpec([None, 128])` for varying shapes (or `reduce_retracing=True`, shapes only),
create variables outside the function — and watch for retracing (`%%tracewatch`, `--live`,
`--max-traces`, `%tracewatch on`). The [cheat sheet](CHEATSHEET.md) sums it up on one page."""),
    ]


LESSONS = {
    "06_objects_and_functions": lesson_06,
    "07_training_loop_clinic": lesson_07,
    "08_capstone": lesson_08,
}
