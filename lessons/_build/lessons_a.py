"""Lessons 00–04: start here, eager vs graph, tracing, the Python-scalar trap, shapes and dtypes."""

from __future__ import annotations

from typing import Any

from nbtools import SETUP, code, md

from tfgraph_lab.exercises import EXERCISES

LAB = '''\
try:                                   # the labs need ipywidgets; the lesson works without them
    from tfgraph_lab.widgets import LabSettings, RetraceLab
    lab = RetraceLab(settings=LabSettings({settings}),
                     goal={goal!r})
except Exception as exc:
    lab = None
    print("The interactive lab is not available here:", exc)
lab'''


def setup(extra: str = "") -> Any:
    return code(SETUP.format(extra=extra))


def lab(goal: str, **settings: Any) -> Any:
    """A RetraceLab cell that opens with a preset (``LabSettings`` fields) and a goal."""
    preset = ", ".join(f"{key}={value!r}" for key, value in settings.items())
    return code(LAB.format(settings=preset, goal=goal))


def guess(name: str, question: str, answer: Any) -> Any:
    """The learner's prediction cell; ``answer`` is kept in the cell's metadata for the answer key."""
    cell = code(f"{name} = None   # ✏️ your guess: {question}")
    cell.metadata["tfgraph_lab"] = {"guess": name, "answer": repr(answer)}
    return cell


def grade(name: str, measured: str, function: str = "", what: str = "") -> Any:
    """The cell that grades the guess ``name`` against what the cell above measured."""
    extra = f", {function!r}" if function else ""
    extra += f", what={what!r}" if what else ""
    return code(f"ex.check_prediction({name}, {measured}{extra})")


def starter(ex_id: str) -> Any:
    """The exercise cell (the answer key swaps in the solution)."""
    cell = code(EXERCISES[ex_id].starter)
    cell.metadata["tfgraph_lab"] = {"exercise": ex_id}
    return cell


def exercise(ex_id: str, intro: str = "") -> list[Any]:
    e = EXERCISES[ex_id]
    return [
        md(f"""### ✏️ Exercise `{ex_id}`: {e.title}

{intro + chr(10) + chr(10) if intro else ""}{e.task}

Edit the cell below, run it, then run the check under it. The check *runs* your code under
`tfgraph_lab.watch()` and measures it: it shows ✓ or ✗, what it measured, and a hint."""),
        starter(ex_id),
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
| 01 | eager vs graph execution, AutoGraph, when the graph wins | 25 min |
| 02 | tracing and the graph cache, side effects, stale closures and attributes, concrete functions | 20 min |
| 03 | the Python-scalar trap: `training=True` then `False`, changing ints | 25 min |
| 04 | shapes and dtypes: the smaller last batch, `input_signature`, `reduce_retracing` | 25 min |
| 05 | variables: created inside a `tf.function`, as arguments, a second optimizer | 25 min |
| 06 | objects, structures and re-created functions | 25 min |
| 07 | training-loop clinic: Keras `fit`, a custom loop, retrace budgets, monitoring (XLA: optional) | 25 min |
| 08 | capstone: fix a slow training script | 35 min |

3 h 40 min in all, for a learner who reads every cell, predicts and does each exercise.

**One session for all lessons.** Open the next lesson from JupyterLab's file browser (the
`lessons/` folder on the left), not from a new launch link.

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
Run the definition, write your guess in the ✏️ cell under it and run that, then run the
measuring cell and the grading cell after it."""),
        code("""\
@tf.function
def double(x):
    return x * 2"""),
        guess("my_guess", "how many traces will the next cell make?", 3),
        code("""\
%%tracewatch -v first_report
double(tf.constant([1.0, 2.0]))
double(tf.constant([3.0, 4.0]))        # same shape and dtype as the first call
double(tf.constant([1.0, 2.0, 3.0]))   # a longer vector
double(tf.constant([1, 2]))            # integers"""),
        grade("my_guess", "first_report", "double"),
        md("""**Observe.** The report lists one line per graph in `double`'s cache. The first call
traced graph `#0`; the second call had the same *signature* — a float32 vector of length
2 — so it reused that graph; the third (a new **shape**) and the fourth (a new **dtype**) each
traced a new graph, and the report says so with the argument, before → after, and a fix.

`-v first_report` stored the report in a variable, so you can use it from Python: """),
        code("""\
print(first_report.traces_by_function())
for event in first_report.retrace_events:
    for reason in event.reasons:
        print(f"{reason.code:15} {reason.argument}: {reason.before} → {reason.after}")"""),
        md("""The report numbers calls from 1, in the order the cell made them: `call #3` is the third
call. Each reason comes with a suggested fix, often more than one: which fix fits depends on
the cause and on your code — lessons 03–07 take the causes one at a time, so for now read the
*why* lines and leave the fixes for later.

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
trace. (The lab needs a live kernel; in a static preview you see a placeholder.)

It opens with predict mode's favourite question: the same call twice, then a new dtype."""),
        lab(
            "with Predict mode on, guess before each call: Call once, Call once again, then switch "
            "the dtype to float64 and call. Which calls trace? Score 3 out of 3.",
        ),
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
cached graph directly.

Below, `get_concrete_function(tf.TensorSpec(...))` means "trace a graph for inputs of this
shape and dtype, without running it" (`None`: any size); lesson 02 comes back to both. Read
only the list of ops it prints."""),
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
`tf.autograph.to_code` shows the code it generates — long and machine-written: skim it for the
two calls named below."""),
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
a tensor, and fall back to plain Python when it is a Python value."""),
        code("""\
clip_and_sum_graph = tf.function(clip_and_sum)
print(clip_and_sum_graph(tf.constant([0.5, 2.0, 0.25])).numpy())"""),
        md("""## `range(n)` is unrolled, `tf.range(n)` is a loop

A Python `for i in range(n)` runs *while tracing*: its body is copied into the graph `n`
times. `for i in tf.range(n)` becomes one `tf.while_loop`: the graph stays the same size, and
`n` can be a tensor.

**Predict:** both functions are called with `n = 10` and then `n = 100`. How many graphs does
`halve_unrolled` (Python `range`, `n` a Python int) trace in total?"""),
        code("""\
@tf.function
def halve_unrolled(x, n):
    for _ in range(n):              # Python loop: unrolled while tracing
        x = x * 0.5 + 1.0
    return x

@tf.function
def halve_loop(x, n):
    for _ in tf.range(n):           # a tensor loop: AutoGraph makes it a tf.while_loop
        x = x * 0.5 + 1.0
    return x

v = tf.ones([3])"""),
        guess("unrolled_guess", "how many graphs for halve_unrolled with n = 10, then n = 100?", 2),
        code("""\
for n in (10, 100):
    small_graph = halve_unrolled.get_concrete_function(v, n).graph
    loop_graph = halve_loop.get_concrete_function(v, tf.constant(n)).graph
    print(f"n = {n:3}: range → {len(small_graph.as_graph_def().node):3} nodes   "
          f"tf.range → {len(loop_graph.as_graph_def().node)} nodes")
print("graphs traced: halve_unrolled", halve_unrolled.experimental_get_tracing_count(),
      "| halve_loop", halve_loop.experimental_get_tracing_count())"""),
        grade("unrolled_guess", "halve_unrolled.experimental_get_tracing_count()", what="graphs traced"),
        md("""**Explain.** The unrolled graph grows with `n` (4 nodes per step: TF 2.21 measures 42 nodes
for 10 steps, 402 for 100) and every new `n` is a new trace: a Python int argument's *value* is
part of the cache key. That is the cache's doing at trace time, not AutoGraph's —
`tf.function(..., autograph=False)` also traces twice for `True` then `False` (lesson 03). The
`tf.range` graph has the same 18 nodes for any `n`, traced once. Unroll short loops whose length is fixed (a few layers);
use `tf.range` when the count is large or changes."""),
        md("""## When does the graph win? Measure it

**Predict:** `small_ops_graph` below applies 120 tiny ops to an 8×8 matrix. Will 50 calls be
faster as a graph than eagerly?

`%%tracewatch --compare-eager` runs the cell in both modes — normally, and with
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
        guess("small_guess", "True or False: 50 calls of small_ops_graph are faster as a graph than eagerly?", True),
        code("""\
%%tracewatch --compare-eager -v small_report
for _ in range(50):
    small_ops_graph(small)"""),
        grade(
            "small_guess",
            "small_report.compare_eager['graph_seconds'] < small_report.compare_eager['eager_seconds']",
            what="the graph was faster",
        ),
        md("""Now **one big matrix product**:"""),
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
time is spent *inside* the op, the same kernel either way: the graph helps little, the two
times are close, and which one is ahead changes from run to run on a busy machine. That
difference is noise — these cells traced nothing (the report says 0 traces), so tracing cannot
be what made one of them slower. The graph
also wins by what it *enables* — optimisation, parallelism, export without Python — but only if
it is traced rarely: a trace costs many cached calls (the report shows how many)."""),
        *exercise(
            "01-graph-speedup",
            "In a real model you decide *where* a `tf.function` pays off — by measuring, not by habit.",
        ),
        md("""## Recap

* Eager is the default: op by op, easy to debug.
* `@tf.function` traces Python once into a graph and caches it; AutoGraph turns tensor
  control flow into graph ops.
* A Python `range` loop is unrolled into the graph (and its count is part of the key);
  `tf.range` builds one loop of constant size.
* The graph wins when there are many small ops; it barely matters for one big op: measure
  before you decide.
* Next, lesson **02**: what exactly is cached, and what happens to Python code in the function."""),
    ]


def lesson_02() -> list[Any]:
    return [
        md("""# 02 · Tracing and the graph cache

**Goals:** the first call traces; later calls with the same *input signature* reuse the cached
graph; Python side effects run only while tracing, and Python values read while tracing go
stale; concrete functions are the cached graphs."""),
        setup(),
        md("""## Python runs only while tracing

The `print` below is **Python**; `tf.constant(1)` and `tf.constant(2)` are both int32 scalars.
**Predict:** how many times does the Python `print` inside `add_one` run in the next cell?"""),
        guess("print_guess", "how many times does `print` inside add_one run for the three calls?", 2),
        code("""\
@tf.function
def add_one(x):
    print("tracing add_one with", x)
    return x + 1

print(add_one(tf.constant(1)).numpy())
print(add_one(tf.constant(2)).numpy())
print(add_one(tf.constant([1, 2])).numpy())
print("tracing count:", add_one.experimental_get_tracing_count())"""),
        grade("print_guess", "add_one.experimental_get_tracing_count()", what="times print ran (one per trace)"),
        md("""**Observe.** `print` showed a *symbolic* tensor (`Tensor("x:0", shape=(), dtype=int32)`),
and only twice. The graph contains the `+ 1` op but no `print`. To print on every call, use
`tf.print` (a TF op that is part of the graph); to count calls, use a `tf.Variable`
(exercise below).

## The cache key: the input signature

TensorFlow keys its cache on the **signature** of the call: for tensors, their dtype and shape;
for Python values (ints, floats, bools, strings), their *value*, compared with `==`; for other
objects, their identity, or their hash and `==` if they define them (lesson 06). Same signature →
cached graph. New signature → new trace."""),
        code("""\
%%tracewatch
add_one(tf.constant(5))       # an int32 scalar tensor
add_one(tf.constant(5.0))     # a float32 scalar tensor
add_one(3)                    # a Python int
add_one(3)                    # the same Python int
add_one(4)                    # another Python int"""),
        md("""**Values that compare equal share a graph.** `1 == 1.0 == True` in Python, so the cache
treats them as one key: a call with `1.0` after a call with `1` runs the graph traced for `1`,
and gets what that graph computes — here an `int32` tensor where eager mode makes `float32`
(and `bool` for `True`):"""),
        code("""\
@tf.function
def fill(value):
    return tf.fill([2], value)

print(fill(1).dtype, fill(1.0).dtype, fill(True).dtype, "| traces:", fill.experimental_get_tracing_count())
print("eagerly:", tf.fill([2], 1).dtype, tf.fill([2], 1.0).dtype, tf.fill([2], True).dtype)"""),
        md("""Pass one Python type consistently (or a tensor, whose dtype *is* in the key).

## Concrete functions

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

How many traces will the cell after next make? (Run the definition, write `mean_guess`, then run the measuring cell and the grade.)"""),
        code("""\
@tf.function
def mean_of(x, scale):
    return tf.reduce_mean(x) * scale"""),
        guess("mean_guess", "how many traces will the next cell make?", 3),
        code("""\
%%tracewatch -q -v report02
mean_of(tf.ones([4]), 2.0)
mean_of(tf.zeros([4]), 2.0)
mean_of(tf.ones([4]), tf.constant(2.0))
mean_of(tf.ones([4]), tf.constant(3.0))
mean_of(tf.ones([4]), 3.0)"""),
        grade("mean_guess", "report02", "mean_of"),
        md("""Then show the report (`report02`) to see why each call traced or not:"""),
        code("report02"),
        md("""## Closures that go stale — without retracing

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
(tensors), or keep them in a `tf.Variable`, which the graph reads on every call.

## Attributes of an object passed in go stale too

An ordinary Python object can be an argument too. **Predict:** after `settings.scale = 5.0`,
does the second call return 2s or 5s?"""),
        code("""\
class Settings:
    def __init__(self):
        self.scale = 2.0

@tf.function
def apply_settings(settings, v):
    return v * settings.scale

settings = Settings()
print(apply_settings(settings, tf.ones([3])).numpy())
settings.scale = 5.0"""),
        guess("attribute_guess", "the first element of apply_settings(settings, tf.ones([3])) now: 2.0 or 5.0?", 2.0),
        code("""\
second = apply_settings(settings, tf.ones([3]))
print(second.numpy(), "traces:", apply_settings.experimental_get_tracing_count())"""),
        grade("attribute_guess", "float(second[0])", what="first element"),
        md("""**Explain.** An ordinary Python object passed as an argument is keyed by its **identity**
(TF 2.21 holds a weak reference to it), not by its attributes. The same object again is a cache
hit, and the graph still uses the value it read while tracing. Stale, and no retrace to see.
Cure: keep changing state in `tf.Variable`s (a `tf.Module` or Keras layer tracks them) — the graph reads a Variable on every call — or pass the value as a
tensor argument."""),
        *exercise("02-count-calls"),
        md("""## Recap

* First call: trace. Same signature: cached graph. New signature: a new trace.
* Python values are keyed by `==`: `1`, `1.0` and `True` share one graph (the first one's).
* Python side effects (print, appending to a list, incrementing a Python counter) run only
  while tracing; TF ops (`tf.print`, `Variable.assign_add`) run on every call.
* `get_concrete_function(tf.TensorSpec([None], ...))` pre-builds one graph for all sizes.
* Globals, closures and attributes of objects passed in are read while tracing and are not in
  the key: change them and the graph silently keeps the old value — no retrace, no warning.
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

**Predict:** how many graphs does `layer` trace for the three calls below?"""),
        code("""\
@tf.function
def layer(x, training):
    if training:
        x = tf.nn.dropout(x, rate=0.5, seed=1)
    return x * 2.0

x = tf.ones([4, 8])"""),
        guess("flag_guess", "how many graphs for layer(x, True), layer(x, True), layer(x, False)?", 2),
        code("""\
%%tracewatch -v flag_report
layer(x, True)
layer(x, True)
out = layer(x, False)"""),
        grade("flag_guess", "flag_report", "layer"),
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
print(w.report.warnings[0])"""),
        md("""Now call it with 8 more new values. **Predict:** does TensorFlow warn again?"""),
        guess("warn_guess", "True or False: does TensorFlow warn again for 8 more new values?", False),
        code("""\
with tfgraph_lab.watch() as w:
    for step in range(8, 16):
        scaled(x, step * 0.5)
print("tracing count:", scaled.experimental_get_tracing_count(), "| new warnings:", len(w.report.warnings))"""),
        grade("warn_guess", "len(w.report.warnings) > 0", what="TensorFlow warned again"),
        md("""That is TensorFlow's only signal. Its text (TF 2.21, `polymorphic_function.py`) is
*"5 out of the last 5 calls to &lt;function scaled at 0x…&gt; triggered tf.function retracing.
Tracing is expensive and the excessive number of tracings could be due to (1) creating
@tf.function repeatedly in a loop, (2) passing tensors with different shapes, (3) passing Python
objects instead of tensors. …"* — no argument, no value. How it counts (`_FrequentTracingDetector`):
it remembers each call that traced together with the cached calls after it, forgets the oldest
one once more than 10 calls (`FREQUENT_TRACING_WARNING_MAX_CALL_HISTORY = 10`) have come after
it, and warns when it remembers 5 traces (`FREQUENT_TRACING_WARNING_THRESHOLD = 5`) — so the
text may read "5 out of the last 5", "5 out of the last 8" or "5 out of the last 15". It warns at
most twice (`FREQUENT_TRACING_WARNING_MAX_WARNING_PER_DETECTOR = 2`) per Python function — per
code object, so a re-created `tf.function` of the same code shares the two warnings. The second loop
traced 8 more graphs in silence. `%%tracewatch` names the argument and the values on every
retrace instead.

## Retracing can be slower than no graph at all

**Predict:** is this loop faster as a `tf.function` or eagerly? (`--compare-eager` runs the
cell several times in each mode; `fresh` hands out a number never used before, so every graph
run retraces, as a real loop over new values would.)"""),
        code("""\
import itertools
fresh = itertools.count(1000)          # 1000, 1001, ...: never the same value twice"""),
        guess("faster_guess", "True or False: is this loop faster as a tf.function than eagerly?", False),
        code("""\
%%tracewatch --compare-eager -v compare03
for step in range(30):
    scaled(x, next(fresh) * 0.5)       # a new Python float on every call"""),
        grade(
            "faster_guess",
            "compare03.compare_eager['graph_seconds'] < compare03.compare_eager['eager_seconds']",
            what="the tf.function was faster",
        ),
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
        md("""## A flag and an `input_signature`

An `input_signature` fixes every argument to a `tf.TensorSpec` — there is no spec for "a
Python bool". Leave the flag out of the signature with a Python default, and a call that
passes it fails: TensorFlow binds `training` to the literal default."""),
        code("""\
@tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32)])
def forward(x, training=False):
    return x * 0.5 if training else x

forward(x)                      # fine: training is the default False
try:
    forward(x, training=True)
except TypeError as error:      # shown here so that Run All goes on
    print("TypeError:", str(error).split(". Received")[0])"""),
        md("""Two ways out: put the flag in the signature as a bool **tensor** (Python `True`/`False` are
converted; AutoGraph turns `if training:` into `tf.cond`, one graph for both modes), or give
each mode its own `tf.function` with its own signature (two graphs, each fixed)."""),
        code("""\
@tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32), tf.TensorSpec([], tf.bool)])
def forward_flag(x, training):
    if training:                 # a bool tensor: AutoGraph makes this a tf.cond
        return x * 0.5
    return x

spec = [tf.TensorSpec([None, 8], tf.float32)]
def forward_plain(x, training):
    return x * 0.5 if training else x
forward_train = tf.function(lambda x: forward_plain(x, True), input_signature=spec)
forward_eval = tf.function(lambda x: forward_plain(x, False), input_signature=spec)

print(forward_flag(x, True)[0, 0].numpy(), forward_flag(x, False)[0, 0].numpy(),
      "| graphs:", forward_flag.experimental_get_tracing_count())
print(forward_train(x)[0, 0].numpy(), forward_eval(x)[0, 0].numpy())"""),
        md("""## Try it in the lab

The lab opens with the flag passed as a Python bool. Press *Call once*, untick *training*,
call again; then switch the flag to a tensor and repeat. Use **Predict mode** to test yourself."""),
        lab(
            "flip training True → False → True with one graph in the cache: find the setting "
            "of 'flag passed as' that gets there (Reset cache between tries).",
            flag="python-bool",
        ),
        *exercise("03-scalar-trap"),
        md("""## Recap

* Python scalars are part of the cache key: a new value is a new graph.
* A flag with two values → two graphs (often fine); a number that changes → a graph per value.
* TensorFlow's warning is vague and rate-limited; `%%tracewatch` names the argument.
* Cure: pass `tf.constant(...)` (or a `tf.Variable`), branch with `tf.cond`.
* An `input_signature` takes tensors only: a Python flag goes in as a bool tensor, or each
  mode gets its own `tf.function`.
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
**Predict:** how many graphs does `encode` trace over **three** epochs?"""),
        code("""\
features = tf.reshape(tf.range(100 * 128, dtype=tf.float32) % 13.0, [100, 128])
weights = tf.ones([128, 16]) / 128.0
dataset = tf.data.Dataset.from_tensor_slices(features).batch(32)
print([batch.shape[0] for batch in dataset])

@tf.function
def encode(batch):
    return tf.nn.relu(tf.matmul(tf.cast(batch, tf.float32), weights))"""),
        guess("epochs_guess", "how many graphs for 3 epochs of batches 32, 32, 32, 4?", 2),
        code("""\
%%tracewatch -v epochs_report
for epoch in range(3):
    for batch in dataset:
        encode(batch)"""),
        grade("epochs_guess", "epochs_report", "encode"),
        md("""**Explain.** A tensor's shape is part of the cache key: `(32, 128)` and `(4, 128)` are
different signatures (`shape-changed`). The last batch's graph stays in the cache, so later
epochs reuse it: one extra graph **in total**, not per epoch (per epoch only when something else
changes every epoch too, like the Python learning rate of lesson 07). It grows with every
*new* batch size: variable-length inputs, evaluation with another batch size.

The dtype is part of the key as well. NumPy's default is float64:"""),
        code("""\
%%tracewatch
out = encode(features.numpy().astype("float64")[:32])    # NumPy float64, as NumPy likes it"""),
        md("""`dtype-changed`: a third graph, for float64.

## Cure 1: an `input_signature` with `None`

`input_signature` fixes the signature up front. `None` means "any size" in that dimension:
`tf.TensorSpec([None, 128], tf.float32)` accepts every batch size, and exactly one graph is
traced. Python and NumPy inputs are converted to the declared dtype — a `tf.Tensor` is not: a
float64 tensor (from a dataset built on float64 NumPy, say) raises a `TypeError`."""),
        code("""\
@tf.function(input_signature=[tf.TensorSpec([None, 128], tf.float32)])
def encode_any_batch(batch):
    return tf.nn.relu(tf.matmul(batch, weights))

for batch in dataset:
    encode_any_batch(batch)
encode_any_batch(features.numpy().astype("float64")[:32])
print("tracing count:", encode_any_batch.experimental_get_tracing_count())"""),
        md("""The signature is also a contract: a call that does not fit is an error, not a new graph."""),
        code("""\
try:
    encode_any_batch(tf.ones([4, 64]))   # 64 features: does not match [None, 128]
except TypeError as error:               # shown here so that Run All goes on
    print("TypeError:", str(error).split(". Received")[0])"""),
        md("""### Check a fix on your own cell: `%%tracewatch --try-fix`

You applied the `input_signature` by hand. `--try-fix` runs that experiment for you on any
cell: it runs the cell as written, then — when a function retraced and the report's first fix
is a change to the decorator — runs the cell **a second time** with that fix applied (your
function and names are restored afterwards), and shows traces, times and outputs before →
after. A fresh copy of `encode` (the first one's cache holds both shapes already):"""),
        code("""\
%%tracewatch -q --try-fix
@tf.function
def encode_by_try_fix(batch):
    return tf.nn.relu(tf.matmul(batch, weights))

for epoch in range(3):
    for batch in dataset:
        encode_by_try_fix(batch)"""),
        md("""The same cure you wrote, measured on this cell: fewer traces, and `allclose` says every
result is unchanged. The cell ran twice: on a cell with side effects (training a model in place,
writing files) they happen twice. A fix that raises, changes the outputs or saves nothing is
reported as exactly that; a fix that changes the calls (`tf.constant(lr)`, lesson 03) is shown,
never applied behind your back."""),
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
        md("""**Predict:** with `reduce_retracing=True`, how many graphs for the same vector in four
dtypes (float32, float64, int32, float16)?"""),
        guess("dtype_guess", "graphs for four dtypes under reduce_retracing=True?", 4),
        code("""\
@tf.function(reduce_retracing=True)
def twice(v):
    return v * 2

for dtype in (tf.float32, tf.float64, tf.int32, tf.float16):
    twice(tf.ones([4], dtype))
print("graphs:", twice.experimental_get_tracing_count())"""),
        grade("dtype_guess", "twice.experimental_get_tracing_count()", what="graphs traced"),
        md("""**Explain.** `reduce_retracing` generalises *shapes* only: a dtype has no "any dtype" to
generalise to, so it does not help with a dtype change. The cure is to feed one dtype (`tf.cast`, `np.float32`), or to declare it in an
`input_signature`, which converts Python and NumPy values (a float64 `tf.Tensor` still raises)."""),
        md("""## Cure 3: `drop_remainder=True`

If dropping a few examples per epoch is acceptable (training on shuffled data usually is),
`batch(..., drop_remainder=True)` makes every batch the same shape — and tells `tf.data` the
static batch size."""),
        code("""\
print(dataset.element_spec)
print(features_ds := tf.data.Dataset.from_tensor_slices(features).batch(32, drop_remainder=True))"""),
        md("""`element_spec` is what `tf.data` can promise about *every* batch: without
`drop_remainder` the last batch may be smaller, so the batch dimension is `None`. Each batch
itself is a tensor with its actual shape, `(32, 128)` or `(4, 128)` — and that is what
`encode`'s cache saw. With `drop_remainder=True` the promise is `(32, 128)`."""),
        md("""## What does `None` cost?

A graph traced for `(None, 128)` knows less: inside it, `batch.shape[0]` is `None`. Code
that needs the batch size must ask at run time with `tf.shape(batch)[0]`. For the usual model
step this costs little; keep known dimensions (the 128) known. XLA (`jit_compile=True`) is the
exception to "one graph for every size": it compiles for concrete shapes, so a `None` dimension
saves the retrace but not the compilation — one XLA compile per batch size (lesson 07)."""),
        code("""\
@tf.function(input_signature=[tf.TensorSpec([None, 128], tf.float32)])
def batch_mean(batch):
    print("static shape at trace time:", batch.shape)
    n = tf.shape(batch)[0]                       # the dynamic size, known when the graph runs
    return tf.reduce_sum(batch, axis=0) / tf.cast(n, tf.float32)

print(batch_mean(features[:10]).shape)"""),
        md("""## Try it in the lab

The lab opens with the flag already a tensor, so only shapes matter. Move the *batch size*
slider and press *Call once* after each move; then tick *input_signature with None dims* or
*reduce_retracing=True*, and run the loop with a partial last batch."""),
        lab(
            "make the trace counter stop at 1 while the batch size changes: call with batch sizes "
            "32, 20 and 7, and run the loop with a partial last batch — one trace in all.",
            flag="tensor",
            batch=32,
        ),
        *exercise("04-shapes"),
        md("""## Recap

* Shape and dtype are part of the key: the smaller last batch and float64 NumPy arrays retrace.
* `input_signature=[tf.TensorSpec([None, 128], tf.float32)]`: one graph, a contract.
* `reduce_retracing=True`: TensorFlow generalises after the second shape (not dtypes).
* The last batch costs one extra graph in total; it is cached for later epochs.
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
