"""Lessons 00–04: start here, eager vs graph, tracing, the Python-scalar trap, shapes and dtypes."""

from __future__ import annotations

from typing import Any

from nbtools import SETUP, code, md

from tfgraph_lab.exercises import EXERCISES

LAB = '''\
try:                                   # the labs need ipywidgets; the lesson works without them
    from tfgraph_lab.widgets import RetraceLab
    lab = RetraceLab({args})
except Exception as exc:
    lab = None
    print("The interactive lab is not available here:", exc)
lab'''


def setup(extra: str = "") -> Any:
    return code(SETUP.format(extra=extra))


def exercise(ex_id: str, intro: str = "") -> list[Any]:
    e = EXERCISES[ex_id]
    return [
        md(f"""### ✏️ Exercise `{ex_id}`: {e.title}

{intro + chr(10) + chr(10) if intro else ""}{e.task}

Edit the cell below, run it, then run the check under it. The check *runs* your code under
`tfgraph_lab.watch()` and measures it: it shows ✓ or ✗, what it measured, and a hint."""),
        code(e.starter),
        code(e.check_call),
        md(f"""Stuck? `ex.hint("{ex_id}")` gives a hint (run it again for the next one);
`ex.solution("{ex_id}")` shows a worked solution — try the hints first."""),
    ]


def lesson_00() -> list[Any]:
    return [
        md("""# 00 · Start here: the retracing workshop

TensorFlow 2 runs **eagerly** by default: every operation runs as soon as Python reaches it.
`@tf.function` turns Python into a **cached graph** for speed. The trap: every *new input
signature* makes TensorFlow **trace** a new graph, and tracing is expensive — frequent retracing
can make code slower than plain eager mode, with only a vague warning.

This workshop makes tracing *visible*. You will predict what TensorFlow does, run it, look at
what actually happened, understand why, fix it, and have the fix checked by measurement.

| lesson | topic | time |
| --- | --- | --- |
| 00 | start here: the tools (`%%tracewatch`, labs, checks) | 15 min |
| 01 | eager vs graph execution, AutoGraph, when the graph wins | 20 min |
| 02 | tracing and the graph cache, side effects, concrete functions | 20 min |
| 03 | the Python-scalar trap: `training=True` then `False`, changing ints | 20 min |
| 04 | shapes and dtypes: the smaller last batch, `input_signature`, `reduce_retracing` | 25 min |
| 05 | variables inside a `tf.function` | 15 min |
| 06 | objects, structures and re-created functions, stale closures | 25 min |
| 07 | training-loop clinic: Keras `fit`, a custom loop, retrace budgets, monitoring | 25 min |
| 08 | capstone: fix a slow training script | 25 min |

**Memory (Binder and small laptops).** A kernel that has imported TensorFlow uses about
500–600 MB. Binder gives you 1–2 GB: keep **one lesson notebook running at a time** — before
opening the next lesson, use *Kernel › Shut Down Kernel* (or *File › Close and Shut Down
Notebook*) on the previous one.

**How each lesson works:** predict → run → observe → explain → fix → check. Cells marked
✏️ are yours to edit. Run cells top to bottom with Shift+Enter."""),
        md("""## Set-up

Every lesson starts with this cell. The two environment variables silence TensorFlow's C++
start-up messages; they must be set before TensorFlow is imported. `%load_ext tfgraph_lab`
adds the `%%tracewatch` cell magic."""),
        setup(),
        md("""## A first look with `%%tracewatch`

`%%tracewatch` on the first line of a cell runs the cell and shows every `tf.function` the
cell called: how often, how many graphs were **traced**, what each graph in the cache serves,
and — for each retrace — *why* it happened and how to fix it.

**Predict first:** `double` is called four times below. How many graphs will TensorFlow trace?
Write your guess in the next cell, then run both."""),
        code("""\
@tf.function
def double(x):
    return x * 2

my_guess = None   # ✏️ your guess: how many traces will the next cell make?"""),
        code("""\
%%tracewatch -v first_report
double(tf.constant([1.0, 2.0]))
double(tf.constant([3.0, 4.0]))        # same shape and dtype as the first call
double(tf.constant([1.0, 2.0, 3.0]))   # a longer vector
double(tf.constant([1, 2]))            # integers"""),
        code("ex.check_prediction(my_guess, first_report, \"double\")"),
        md("""**Observe.** The report lists one line per graph in `double`'s cache. The first call
traced (`first-trace`); the second call had the same *signature* — a float32 vector of length
2 — so it reused that graph; the third (a new **shape**) and the fourth (a new **dtype**) each
traced a new graph, and the report says so with the argument, before → after, and a fix.

`-v first_report` stored the report in a variable, so you can use it from Python: """),
        code("""\
print(first_report.traces_by_function())
for event in first_report.retrace_events:
    for reason in event.reasons:
        print(f"{reason.code:15} {reason.argument}: {reason.before} → {reason.after}")"""),
        md("""(Calls are numbered from 0 in the report: `call 2` is the third call.)

Other flags you will meet (`%%tracewatch?` shows them all):

* `-q` quiet, `-o` return the report, `-v NAME` store it;
* `--max-traces N` or `--max-traces FN=N`: a **retrace budget** — the cell fails when a function traces more (lesson 07);
* `--compare-eager`: runs the cell a second time with `tf.config.run_functions_eagerly(True)` and compares the times (lesson 01);
* `--all`: also show TensorFlow/Keras internal functions (lesson 07);
* `%tracewatch on` / `off`: a short notice under *every* cell that retraces (lesson 07).

In scripts and tests, the same is available as a context manager:"""),
        code("""\
import tfgraph_lab

with tfgraph_lab.watch() as w:
    for n in range(3):
        double(tf.ones([4]))
print(w.report.headline())"""),
        md("""## The retrace lab

The lab below calls a small model step `model_step(x, training)`. Change the controls —
batch size, dtype, how the `training` flag is passed, the decorator options — and press
*Call once* or *Run loop*. Turn on **Predict mode** to guess, before each call, whether it will
trace. (The lab needs a live kernel; in a static preview you see a placeholder.)"""),
        code(LAB.format(args="")),
        *exercise("00-square", "A warm-up to see how the checks work."),
        md("""## What's next

Lesson **01** shows what a graph is and when it is faster than eager execution. Remember to
shut this kernel down before opening the next lesson on Binder."""),
    ]


def lesson_01() -> list[Any]:
    return [
        md("""# 01 · Eager vs graph execution

**Goals:** see eager execution run op by op; see that a `tf.function` graph is a data
structure TensorFlow can optimise, run in parallel and deploy without Python; read the code
AutoGraph generates; measure when the graph wins — and when it does not."""),
        setup(),
        md("""## Eager: op by op

TensorFlow 2 runs **eagerly** by default. Each operation runs immediately and returns a
concrete value, just like NumPy. Easy to debug — but every op is a separate trip from Python
into TensorFlow's runtime."""),
        code("""\
print("executing eagerly:", tf.executing_eagerly())
a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
b = tf.matmul(a, a) + 1.0      # runs now; b holds the values
print(b.numpy())"""),
        md("""## Graph: a data structure

`@tf.function` **traces** the Python function once: it runs the Python code with symbolic
tensors and records every TensorFlow op into a **graph** (`tf.Graph`). The graph is data:
TensorFlow can prune and fuse its ops (the Grappler optimiser), run independent ops in
parallel, and save it in a SavedModel that serves without any Python. Later calls run the
cached graph directly."""),
        code("""\
@tf.function
def affine(x, w, b):
    return tf.nn.relu(tf.matmul(x, w) + b)

concrete = affine.get_concrete_function(
    tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([3, 2], tf.float32), tf.TensorSpec([2], tf.float32))
ops = concrete.graph.get_operations()
print(len(ops), "ops in the graph:")
for op in ops:
    print(f"  {op.type:12} {op.name}")"""),
        md("""## AutoGraph

Inside a `tf.function`, **AutoGraph** rewrites Python control flow that depends on *tensors*
into graph ops: `if` becomes `tf.cond`, `while`/`for` over a tensor become `tf.while_loop`.
`tf.autograph.to_code` shows the code it generates:"""),
        code("""\
def clip_and_sum(x):
    total = tf.constant(0.0)
    for value in x:            # x is a tensor: becomes a tf.while_loop
        if value > 1.0:        # a tensor condition: becomes tf.cond
            value = 1.0
        total += value
    return total

print(tf.autograph.to_code(clip_and_sum))"""),
        md("""Read `ag__.for_stmt` and `ag__.if_stmt`: these dispatch to graph ops when the condition is
a tensor, and fall back to plain Python when it is a Python value — which is why a Python
`bool` or `int` argument is baked into the graph (lesson 03)."""),
        code("""\
clip_and_sum_graph = tf.function(clip_and_sum)
print(clip_and_sum_graph(tf.constant([0.5, 2.0, 0.25])).numpy())"""),
        md("""## When does the graph win? Measure it

**Predict:** `many_small_ops` below applies 120 tiny ops to an 8×8 matrix. Will the graph be
faster than eager? And for **one big matrix product**?

`%%tracewatch --compare-eager` runs the cell twice — once normally, once with
`tf.config.run_functions_eagerly(True)` (every `tf.function` runs as plain Python) — and shows
both times. Your numbers depend on your machine."""),
        code("""\
@tf.function
def small_ops_graph(x):
    for _ in range(40):
        x = tf.tanh(x) * 0.9 + 0.1
    return x

small = tf.ones([8, 8])
small_ops_graph(small);   # trace once, before timing"""),
        code("""\
%%tracewatch --compare-eager
for _ in range(50):
    small_ops_graph(small)"""),
        code("""\
@tf.function
def big_matmul(x):
    return tf.matmul(x, x)

big = tf.random.stateless_normal([600, 600], seed=[1, 2])
big_matmul(big);"""),
        code("""\
%%tracewatch --compare-eager
for _ in range(10):
    big_matmul(big)"""),
        md("""**Explain.** With many small ops, the per-op Python overhead dominates: the graph runs
them all in one call into the runtime, so it wins clearly. With one big op, almost all the
time is spent *inside* the op, the same kernel either way: the graph barely helps. The graph
also wins by what it *enables* — optimisation, parallelism, export without Python — but only if
it is traced rarely: a trace costs many cached calls (the report shows how many)."""),
        *exercise("01-graph-speedup"),
        md("""## Recap

* Eager is the default: op by op, easy to debug.
* `@tf.function` traces Python once into a graph and caches it; AutoGraph turns tensor
  control flow into graph ops.
* The graph wins when there are many small ops; it barely matters for one big op.
* Next, lesson **02**: what exactly is cached, and what happens to Python code in the function."""),
    ]


def lesson_02() -> list[Any]:
    return [
        md("""# 02 · Tracing and the graph cache

**Goals:** the first call traces; later calls with the same *input signature* reuse the cached
graph; Python side effects run only while tracing; concrete functions are the cached graphs."""),
        setup(),
        md("""## Python runs only while tracing

The `print` below is **Python**: it runs while TensorFlow traces the function, not when the
graph runs. **Predict** what the next cell prints, then run it."""),
        code("""\
@tf.function
def add_one(x):
    print("tracing add_one with", x)    # Python: runs at trace time only
    return x + 1

print(add_one(tf.constant(1)).numpy())
print(add_one(tf.constant(2)).numpy())   # same signature (int32 scalar): cached graph, no print
print(add_one(tf.constant([1, 2])).numpy())  # new shape: traced again, printed again
print("tracing count:", add_one.experimental_get_tracing_count())"""),
        md("""**Observe.** `print` showed a *symbolic* tensor (`Tensor("x:0", shape=(), dtype=int32)`),
and only twice. The graph contains the `+ 1` op but no `print`. To print on every call, use
`tf.print` (a TF op that is part of the graph); to count calls, use a `tf.Variable`
(exercise below).

## The cache key: the input signature

TensorFlow keys its cache on the **signature** of the call: for tensors, their dtype and shape;
for Python values (ints, floats, bools, strings), their *value*; for other objects, their
identity or hash. Same signature → cached graph. New signature → new trace."""),
        code("""\
%%tracewatch
add_one(tf.constant(5))       # int32 scalar: cached
add_one(tf.constant(5.0))     # float32 scalar: new dtype
add_one(3)                    # a Python int: its value is part of the key
add_one(3)                    # same value: cached
add_one(4)                    # new value: new trace"""),
        md("""## Concrete functions

Each graph in the cache is a **concrete function**. You can ask for one ahead of time with
`get_concrete_function`, giving a `tf.TensorSpec` — `None` means "any size": """),
        code("""\
@tf.function
def square_sum(x):
    return tf.reduce_sum(x * x)

concrete = square_sum.get_concrete_function(tf.TensorSpec([None], tf.float32))
print(concrete.structured_input_signature)
print(concrete(tf.constant([1.0, 2.0, 3.0])).numpy())
for n in range(1, 6):
    square_sum(tf.ones([n]))        # every length matches the [None] graph
print("tracing count:", square_sum.experimental_get_tracing_count())"""),
        md("""## Predict, then check

How many traces will this cell make? (`my_guess` first, then run both cells.)"""),
        code("""\
@tf.function
def mean_of(x, scale):
    return tf.reduce_mean(x) * scale

my_guess = None   # ✏️ your guess"""),
        code("""\
%%tracewatch -q -v report02
mean_of(tf.ones([4]), 2.0)
mean_of(tf.zeros([4]), 2.0)
mean_of(tf.ones([4]), tf.constant(2.0))
mean_of(tf.ones([4]), tf.constant(3.0))
mean_of(tf.ones([4]), 3.0)"""),
        code("ex.check_prediction(my_guess, report02, \"mean_of\")"),
        md("""Then show the report (`report02`) to see why each call traced or not:"""),
        code("report02"),
        *exercise("02-count-calls"),
        md("""## Recap

* First call: trace. Same signature: cached graph. New signature: a new trace.
* Python side effects (print, appending to a list, incrementing a Python counter) run only
  while tracing; TF ops (`tf.print`, `Variable.assign_add`) run on every call.
* `get_concrete_function(tf.TensorSpec([None], ...))` pre-builds one graph for all sizes.
* Next, lesson **03**: the most common source of retracing — Python scalars."""),
    ]


def lesson_03() -> list[Any]:
    return [
        md("""# 03 · The Python-scalar trap

**Goals:** see why `training=True` then `False` makes two graphs, why a changing Python number
makes one graph *per value*, read TensorFlow's own retracing warning, measure a retracing loop
against eager mode, and cure it by passing tensors and branching with `tf.cond`."""),
        setup(),
        md("""## `training=True`, then `False`

**Predict:** how many graphs does `layer` trace for the two calls?"""),
        code("""\
@tf.function
def layer(x, training):
    if training:                 # a Python bool: decided at trace time
        x = tf.nn.dropout(x, rate=0.5, seed=1)
    return x * 2.0

x = tf.ones([4, 8])"""),
        code("""\
%%tracewatch
layer(x, True)
layer(x, True)
out = layer(x, False)"""),
        md("""**Explain.** A Python value is part of the cache key, so each value gets its own graph:
`python-value-changed training: True → False`. For a mode flag with two values that is usually
acceptable (Keras does the same). It becomes a trap when the value keeps changing.

## A Python number that changes: one graph per value

`tfgraph_lab.watch()` (the context manager behind `%%tracewatch`) also captures TensorFlow's
own log warnings, so we can read them from Python:"""),
        code("""\
import tfgraph_lab

@tf.function
def scaled(x, factor):
    return tf.reduce_sum(x) * factor

with tfgraph_lab.watch() as w:
    for step in range(8):
        scaled(x, step * 0.5)            # a new Python float every time
print("tracing count:", scaled.experimental_get_tracing_count())
print("TensorFlow warned", len(w.report.warnings), "times; the first warning reads:")
print(w.report.warnings[0][:200], "…")"""),
        md("""Now call it with 8 more new values. **Predict:** does TensorFlow warn again?"""),
        code("""\
with tfgraph_lab.watch() as w:
    for step in range(8, 16):
        scaled(x, step * 0.5)
print("tracing count:", scaled.experimental_get_tracing_count(), "| new warnings:", len(w.report.warnings))"""),
        md("""That is TensorFlow's only signal: *"…triggered tf.function retracing. Tracing is expensive
and the excessive number of tracings could be due to…"* — no argument, no value. It fires only when 5 of the last ~10 calls traced, at most twice per
function — the second loop traced 8 more graphs in silence. `%%tracewatch` names the argument
and the values on every retrace instead.

## Retracing can be slower than no graph at all

**Predict:** is this loop faster as a `tf.function` or eagerly?"""),
        code("""\
%%tracewatch --compare-eager
for step in range(30):
    scaled(x, 100 + step * 0.5)      # 30 new Python floats: 30 traces"""),
        md("""**Explain.** Each trace runs the Python code symbolically, builds and optimises a graph:
milliseconds, where an eager call of these few ops takes microseconds. A loop that traces on
every call is *slower than plain eager mode*.

## The cure: pass tensors, branch with `tf.cond`

A tensor's **value** is not part of the cache key — only its dtype and shape. Pass the
changing number as a `tf.Tensor` and it is read when the graph *runs*. For the flag, pass a
bool tensor and branch with `tf.cond` (AutoGraph also turns `if training:` on a tensor into
`tf.cond`)."""),
        code("""\
@tf.function
def scaled_fixed(x, factor):
    return tf.reduce_sum(x) * factor

@tf.function
def layer_fixed(x, training):
    x = tf.cond(training, lambda: tf.nn.dropout(x, rate=0.5, seed=1), lambda: x)
    return x * 2.0"""),
        code("""\
%%tracewatch
for step in range(30):
    scaled_fixed(x, tf.constant(100 + step * 0.5))
layer_fixed(x, tf.constant(True))
out = layer_fixed(x, tf.constant(False))"""),
        code("""\
print("scaled_fixed:", scaled_fixed.experimental_get_tracing_count(),
      " layer_fixed:", layer_fixed.experimental_get_tracing_count())"""),
        md("""## Try it in the lab

Set *flag passed as* to a Python bool, press *Call once*, untick *training*, call again; then
switch the flag to a tensor and repeat. Use **Predict mode** to test yourself."""),
        code(LAB.format(args="")),
        *exercise("03-scalar-trap"),
        md("""## Recap

* Python scalars are part of the cache key: a new value is a new graph.
* A flag with two values → two graphs (often fine); a number that changes → a graph per value.
* TensorFlow's warning is vague and rate-limited; `%%tracewatch` names the argument.
* Cure: pass `tf.constant(...)` (or a `tf.Variable`), branch with `tf.cond`.
* Next, lesson **04**: shapes and dtypes."""),
    ]


def lesson_04() -> list[Any]:
    return [
        md("""# 04 · Shapes and dtypes

**Goals:** see how batch sizes, the smaller last batch and dtypes make new graphs; cure them
with `input_signature` and `tf.TensorSpec([None, 128])`, `reduce_retracing=True` or
`drop_remainder=True`; understand what `None` costs."""),
        setup(),
        md("""## The smaller last batch

100 examples of 128 features, in batches of 32: three batches of 32 and **a last batch of 4**.
**Predict:** how many graphs does `encode` trace over one epoch?"""),
        code("""\
features = tf.reshape(tf.range(100 * 128, dtype=tf.float32) % 13.0, [100, 128])
weights = tf.ones([128, 16]) / 128.0
dataset = tf.data.Dataset.from_tensor_slices(features).batch(32)
print([batch.shape[0] for batch in dataset])

@tf.function
def encode(batch):
    return tf.nn.relu(tf.matmul(tf.cast(batch, tf.float32), weights))"""),
        code("""\
%%tracewatch
for batch in dataset:
    encode(batch)
out = encode(features.numpy().astype("float64")[:32])    # NumPy float64, as NumPy likes it"""),
        md("""**Explain.** A tensor's shape and dtype are part of the cache key: `(32, 128)` and
`(4, 128)` are different signatures (`shape-changed`), and so is float64 (`dtype-changed`).
In a real epoch loop that is one extra graph per epoch for the last batch — and many more
if batch sizes vary (variable-length inputs, evaluation with another batch size).

## Cure 1: an `input_signature` with `None`

`input_signature` fixes the signature up front. `None` means "any size" in that dimension:
`tf.TensorSpec([None, 128], tf.float32)` accepts every batch size, and exactly one graph is
traced. NumPy inputs are converted to the declared dtype."""),
        code("""\
@tf.function(input_signature=[tf.TensorSpec([None, 128], tf.float32)])
def encode_any_batch(batch):
    return tf.nn.relu(tf.matmul(batch, weights))

for batch in dataset:
    encode_any_batch(batch)
encode_any_batch(features.numpy().astype("float64")[:32])
print("tracing count:", encode_any_batch.experimental_get_tracing_count())"""),
        md("""The signature is also a contract: a call that does not fit is an error, not a new graph."""),
        code("encode_any_batch(tf.ones([4, 64]))   # 64 features: does not match [None, 128]", "raises-exception"),
        md("""## Cure 2: `reduce_retracing=True`

Without writing a signature, `reduce_retracing=True` lets TensorFlow generalise: after a
second shape, it traces one graph with `None` where the shapes differed, and later shapes
reuse it."""),
        code("""\
@tf.function(reduce_retracing=True)
def encode_relaxed(batch):
    return tf.nn.relu(tf.matmul(batch, weights))

for size in (32, 4, 17, 8, 25):
    encode_relaxed(features[:size])
print("tracing count:", encode_relaxed.experimental_get_tracing_count())"""),
        code("print(encode_relaxed.pretty_printed_concrete_signatures())   # the second graph takes (None, 128)"),
        md("""## Cure 3: `drop_remainder=True`

If dropping a few examples per epoch is acceptable (training on shuffled data usually is),
`batch(..., drop_remainder=True)` makes every batch the same shape — and tells `tf.data` the
static batch size."""),
        code("""\
print(dataset.element_spec)
print(features_ds := tf.data.Dataset.from_tensor_slices(features).batch(32, drop_remainder=True))"""),
        md("""## What does `None` cost?

A graph traced for `(None, 128)` knows less: inside it, `batch.shape[0]` is `None`. Code
that needs the batch size must ask at run time with `tf.shape(batch)[0]`. Grappler and XLA
(`jit_compile=True`, which even compiles once per concrete shape) can optimise less with
unknown dimensions. For the usual model step this costs little; keep known dimensions (the
128) known."""),
        code("""\
@tf.function(input_signature=[tf.TensorSpec([None, 128], tf.float32)])
def batch_mean(batch):
    print("static shape at trace time:", batch.shape)
    n = tf.shape(batch)[0]                       # the dynamic size, known when the graph runs
    return tf.reduce_sum(batch, axis=0) / tf.cast(n, tf.float32)

print(batch_mean(features[:10]).shape)"""),
        md("""## Try it in the lab

Move the *batch size* slider and press *Call once* after each move; then tick *input_signature
with None dims* or *reduce_retracing=True*, and run the loop with a partial last batch."""),
        code(LAB.format(args="")),
        *exercise("04-shapes"),
        md("""## Recap

* Shape and dtype are part of the key: the smaller last batch and float64 NumPy arrays retrace.
* `input_signature=[tf.TensorSpec([None, 128], tf.float32)]`: one graph, a contract.
* `reduce_retracing=True`: TensorFlow generalises after the second shape.
* `drop_remainder=True`: every batch the same shape.
* Next, lesson **05**: variables."""),
    ]


LESSONS_A = {
    "00_start_here": lesson_00,
    "01_eager_vs_graph": lesson_01,
    "02_tracing_and_the_cache": lesson_02,
    "03_python_scalar_trap": lesson_03,
    "04_shapes_and_dtypes": lesson_04,
}
