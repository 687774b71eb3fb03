"""Lessons 05–08: variables, objects and re-created functions, the training-loop clinic, capstone."""

from __future__ import annotations

from typing import Any

from lessons_a import LAB, exercise, setup
from nbtools import code, md

from tfgraph_lab.exercises import EXERCISES


def lesson_05() -> list[Any]:
    return [
        md("""# 05 · Variables

**Goals:** see what happens when a `tf.Variable` is created inside a `tf.function` (the error,
and the lazy-initialisation exception); cure it by creating variables in `__init__`/`build`, in
a `tf.Module` or a Keras layer."""),
        setup(),
        md("""## A Variable created on every call

A graph may *use* variables, but it cannot create a new one each time it runs: variables are
state that outlives a call. **Predict:** what happens on the first call?"""),
        code("""\
@tf.function
def add_to_total(x):
    total = tf.Variable(tf.zeros_like(x))    # a new Variable on every call
    total.assign_add(x)
    return total.read_value()"""),
        code("add_to_total(tf.ones([3]))", "raises-exception"),
        md("""**Explain.** When the first call of a `tf.function` creates variables, TensorFlow traces it
**twice**: once allowing variable creation, then again checking that no *new* variable is
created. This function creates one on every trace, so the second trace fails with
*"tf.function only supports singleton tf.Variables created on the first call"*.

## The exception: lazy initialisation, once

Creating a variable on the **first** call only — and keeping it — is allowed. It costs one
extra, one-off trace (`variable-creation` in the report, not a retrace):"""),
        code("""\
class LazyTotal(tf.Module):
    def __init__(self):
        super().__init__()
        self.total = None

    @tf.function
    def __call__(self, x):
        if self.total is None:                      # only while the first call traces
            self.total = tf.Variable(tf.zeros_like(x))
        self.total.assign_add(x)
        return self.total.read_value()

lazy = LazyTotal()"""),
        code("""\
%%tracewatch
for _ in range(3):
    lazy(tf.ones([3]))"""),
        md("""## The cure: create variables outside the function

Create variables once — in `__init__`, in a Keras layer's `build`, or anywhere outside the
`tf.function` — and only *use* them inside (`assign`, `assign_add`, read). A `tf.Module`
tracks them for you (`.variables`, `.trainable_variables`, checkpoints)."""),
        code("""\
class Total(tf.Module):
    def __init__(self, size):
        super().__init__()
        self.total = tf.Variable(tf.zeros([size]))   # created once, eagerly

    @tf.function
    def __call__(self, x):
        self.total.assign_add(x)
        return self.total.read_value()

total = Total(3)
for _ in range(3):
    result = total(tf.ones([3]))
print(result.numpy(), "traces:", total.__call__.experimental_get_tracing_count(), "variables:", len(total.variables))"""),
        md("""A Keras layer does the same with `build`, which Keras calls once with the input shape before
the first `call`:"""),
        code("""\
import keras

class Scale(keras.layers.Layer):
    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.scale

scale_layer = Scale()
scale_layer.build((None, 4))           # variables exist before any graph is traced

@tf.function
def apply_scale(x):
    return scale_layer(x)

for _ in range(3):
    apply_scale(tf.ones([2, 4]))
print("traces:", apply_scale.experimental_get_tracing_count())"""),
        md("""## Variables as arguments do not retrace

A variable's **value** is not part of the cache key — only its dtype and shape. That makes a
`tf.Variable` the right container for values that change between calls, such as a learning
rate you decay:"""),
        code("""\
lr = tf.Variable(0.1)

@tf.function
def step_size(grad, lr):
    return grad * lr

for epoch in range(4):
    step_size(tf.ones([3]), lr)
    lr.assign(lr * 0.5)                 # a new value, the same graph
print("traces:", step_size.experimental_get_tracing_count(), "lr now:", round(float(lr.numpy()), 4))"""),
        md("""## Try it in the lab

Tick *create a tf.Variable inside (anti-pattern)* and press *Call once*: the lab shows the
same error. Untick it and call again."""),
        code(LAB.format(args="")),
        *exercise("05-variables"),
        md("""## Recap

* Creating a `tf.Variable` on every call of a `tf.function` fails on the first call.
* Creating it lazily on the first call works, with one extra one-off trace.
* Cure: create variables outside the function — `__init__`, a Keras `build`, a `tf.Module` —
  and `assign` to them inside. Variables are also how to pass changing values without retracing.
* Next, lesson **06**: Python objects, containers and re-created functions."""),
    ]


def lesson_06() -> list[Any]:
    return [
        md("""# 06 · Objects, structures and re-created functions

**Goals:** know how lists, dicts and dataclasses enter the cache key; spot a `tf.function`
re-created in a loop or a re-run cell; understand methods per instance; and see closures that
go stale *without* retracing."""),
        setup("import dataclasses"),
        md("""## Lists and dicts: the structure is part of the key

Containers are flattened: their **structure** (length, keys, nesting) is part of the key, and
so is every item. **Predict:** how many traces?"""),
        code("""\
@tf.function
def total(values):
    return tf.add_n(values)

@tf.function
def weighted(batch):
    return batch["x"] * batch["w"]

x = tf.ones([3])"""),
        code("""\
%%tracewatch
total([x, x])
total([x, x])            # same structure: cached
total([x, x, x])         # a longer list: structure-changed
weighted({"x": x, "w": tf.constant(2.0)})
weighted({"w": tf.constant(5.0), "x": x})   # other values, other order: cached
weighted({"x": x, "w": 2.0})                 # a Python float inside the dict: retrace"""),
        md("""## Dataclasses and other objects

A mutable dataclass cannot be a cache key at all: TensorFlow raises a `TypeError`."""),
        code("""\
@dataclasses.dataclass
class Config:
    scale: float

@tf.function
def apply_config(x, cfg):
    return x * cfg.scale

apply_config(x, Config(2.0))""", "raises-exception"),
        md("""A frozen (hashable) dataclass works — but the object itself becomes part of the key, so each
*new* object means a new graph, and the values inside are baked in like Python scalars:"""),
        code("""\
@dataclasses.dataclass(frozen=True)
class FrozenConfig:
    scale: float

cfg = FrozenConfig(2.0)
apply_config(x, cfg)
apply_config(x, cfg)                   # the same object: cached
apply_config(x, FrozenConfig(3.0))     # a new object: traced
print("traces:", apply_config.experimental_get_tracing_count())"""),
        md("""Cure: pass the *values* as tensors (`apply_config(x, tf.constant(cfg.scale))`), or keep them
in `tf.Variable`s on a `tf.Module`.

## A `tf.function` re-created in a loop

Each `tf.function(...)` call — and each run of a cell containing `@tf.function` — creates a
**new function object** with an empty cache. **Predict:** how many traces?"""),
        code("""\
%%tracewatch
def normalise(v):
    return v / tf.reduce_sum(v)

for _ in range(6):
    tf.function(normalise)(x)         # a new tf.function object every time"""),
        md("""The report says `new-function-object`, and TensorFlow's warning lists this as cause (1):
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
        md("""That is expected: create the model once, not one instance per batch.

## Closures that go stale — without retracing

Values the function reads from outside (globals, closures) are **not** part of the key. A
Python value captured while tracing is baked into the graph, and changing it later does
*not* retrace — the graph silently keeps the old value:"""),
        code("""\
threshold = 0.5

@tf.function
def clip(v):
    return tf.minimum(v, threshold)      # threshold is read once, while tracing

print(clip(tf.constant([0.2, 0.9])).numpy())
threshold = 0.8                          # changed...
print(clip(tf.constant([0.2, 0.9])).numpy(), "← still clipped at 0.5: the graph is stale")
print("traces:", clip.experimental_get_tracing_count())"""),
        md("""No report can show a retrace here — there was none. Cure: pass changing values as arguments
(tensors), or keep them in a `tf.Variable`, which the graph reads on every call."""),
        *exercise("06-objects"),
        md("""## Recap

* Containers: structure and items are part of the key; a dict of tensors with the same keys
  shares one graph.
* Mutable dataclasses are rejected; frozen ones retrace per object.
* A `tf.function` created in a loop or a re-run cell traces again: create it once.
* Methods have one cache per instance.
* Captured Python values go stale *without* retracing: pass tensors or use variables.
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

Keras compiles its own training step into `tf.function`s. These are *framework* functions:
`%%tracewatch` hides them unless you pass `--all`. 200 examples in batches of 32 leave a last
batch of 8. **Predict:** does `fit` retrace for it?"""),
        code("""\
X = tf.reshape(tf.range(200 * 8, dtype=tf.float32) % 11.0 / 11.0, [200, 8])
Y = tf.reduce_sum(X * tf.range(8, dtype=tf.float32), axis=1, keepdims=True) / 8.0

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")"""),
        code("""\
%%tracewatch --all
history = model.fit(X, Y, batch_size=32, epochs=3, verbose=0)"""),
        md("""**Explain.** Keras (3.x) traces its step once per compiled model, with shapes it relaxes
itself, so `fit` does not retrace for the last batch. Custom training loops are where
retracing hides. (`model.predict` uses `reduce_retracing=True`, so a new batch size costs at
most one extra trace.)

## A custom loop: diagnose

Below is a typical first custom loop — the ✏️ exercise cell you will fix later. Run it, then
watch it train:"""),
        code(e.starter),
        code("""\
%%tracewatch
train_model()"""),
        md("""**Observe.** `train_step` traced for the smaller last batch (`shape-changed x`) and again
for every new learning rate (`python-value-changed lr`) — 2 graphs per epoch.

## Guard the loop with a retrace budget

A budget turns retracing into a failure you cannot miss — in a notebook, or in CI with
`tfgraph_lab.watch(max_traces=...)`. `--max-traces train_step=1` allows `train_step` one trace.
On the unfixed loop the cell fails *after* showing the report (this cell is expected to fail):"""),
        code("""\
%%tracewatch -q --max-traces train_step=1
train_model()""", "raises-exception"),
        md("""Fix the loop in the ✏️ cell above (scroll up), re-run it, then re-run the budget cell: with
the fix it passes quietly. Then run the check:"""),
        code(e.check_call),
        md(f"""Stuck? `ex.hint("{e.id}")` gives a hint; `ex.solution("{e.id}")` shows a worked solution.

## Keep watching: monitoring

TensorFlow's own warning (*"…triggered tf.function retracing. Tracing is expensive…"*) fires
only after 5 traces in the last ~10 calls, at most twice per function, and disappears entirely
when the TensorFlow logger is set to `ERROR` (a common way to silence TF's noise). Instead:

* `%tracewatch on` watches every following cell and shows a short notice under any cell that
  retraced (`%tracewatch off` stops it);
* `tfgraph_lab.monitor()` does the same in a script, printing notices to stderr;
* `tfgraph-lab run train.py --json report.json` runs a whole script under the watch."""),
        code("%tracewatch on"),
        code("""\
@tf.function
def loss_at(x, temperature):
    return tf.reduce_mean(tf.nn.softmax(x / temperature))

for t in (1.0, 2.0, 3.0):
    loss_at(X, t)                      # a Python float per call: the notice shows up below"""),
        code("""\
for t in (1.0, 2.0, 3.0):
    loss_at(X, tf.constant(t))         # tensors: no notice"""),
        code("%tracewatch off"),
        md("""## Recap

* `%%tracewatch --all` shows Keras' internal functions; `fit` copes with the last batch.
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
        setup("import keras"),
        md("The patient (do not edit this cell — the checker uses it as the baseline):"),
        code(slow),
        md("""## Observe

Run it under `%%tracewatch`. Read the summary line first (how many traces, how much time
tracing took, and how many cached calls that time would have paid for), then each retrace
reason."""),
        code("""\
%%tracewatch
train_slow()"""),
        md("""**Predict:** would this script be faster with no graphs at all? Measure it:"""),
        code("""\
%%tracewatch -q -v slow_report --compare-eager
train_slow()"""),
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
        code(e.starter),
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
tensor shape (the smaller last batch) or dtype, a new Python object, a `tf.Variable` created
inside the function, a `tf.function` re-created in a loop — triggers a new trace. Tracing is
expensive, and frequent retracing can make code slower than eager mode, with only a vague
warning. The cures: pass tensors instead of changing Python scalars (branch with `tf.cond`),
give an `input_signature` with `tf.TensorSpec([None, 128])` for varying shapes (or
`reduce_retracing=True`), create variables outside the function — and watch for retracing
(`%%tracewatch`, `--max-traces`, `%tracewatch on`)."""),
    ]


LESSONS_B = {
    "05_variables": lesson_05,
    "06_objects_and_functions": lesson_06,
    "07_training_loop_clinic": lesson_07,
    "08_capstone": lesson_08,
}
