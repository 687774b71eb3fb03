"""Lessons 00–01: start here, eager vs graph."""

from __future__ import annotations

from typing import Any

from cells import exercise, grade, guess, lab, setup
from nbtools import code, md


def lesson_00() -> list[Any]:
    return [
        md("""# 00 · Start here: the retracing workshop

TensorFlow 2 runs **eagerly** by default: every operation runs as soon as Python reaches it.
`@tf.function` turns Python into a **cached graph** for speed. The trap: every *new input
signature* makes TensorFlow **trace** a new graph, and tracing is expensive — how expensive,
against plain eager mode, you will measure — with only a vague warning.

This workshop makes tracing *visible*. You will predict what TensorFlow does, run it, look at
what actually happened, understand why, fix it, and have the fix checked by measurement.

| lesson | topic | time |
| --- | --- | --- |
| 00 | start here: the tools (`%%tracewatch`, labs, checks) | 25 min |
| 01 | eager vs graph execution, AutoGraph, when the graph wins | 30 min |
| 02 | tracing and the graph cache, side effects, closures and attributes, concrete functions | 30 min |
| 03 | the Python-scalar trap: `training=True` then `False`, changing ints | 40 min |
| 04 | shapes and dtypes: the smaller last batch, `input_signature`, `reduce_retracing` | 35 min |
| 05 | variables: created inside a `tf.function`, as arguments, a second optimizer | 35 min |
| 06 | objects, structures and re-created functions | 30 min |
| 07 | training-loop clinic: Keras `fit`, a custom loop, retrace budgets, monitoring (XLA: optional) | 45 min |
| 08 | capstone: fix a slow training script | 60 min |
| 09 | optional extras from TensorFlow's `tf.function` guide | 60 min |

5 h 30 min in all for 00–08, for a learner who reads every cell and output, predicts, plays
each lab and does each exercise (failing it once); 09 is for after the course.

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
        guess("my_guess", "how many traces will the next cell make?", 2),
        code("""\
%%tracewatch -v first_report
double(tf.constant([1.0, 2.0]))
double(tf.constant([3.0, 4.0]))
double(tf.constant([1.0, 2.0, 3.0]))
double(tf.constant([4.0, 5.0, 6.0]))"""),
        grade("my_guess", "first_report", "double"),
        md("""**Observe.** The report lists one line per graph in `double`'s cache. The first call
traced graph `#0`; the second call had the same *signature* — a float32 vector of length
2 — so it reused that graph; the third, a new **shape**, traced graph `#1`, and the report says
so with the argument, before → after, and a fix; the fourth, the same length as the third,
reused graph `#1`. A new **dtype** makes a new graph too: the lab below lets you try it.

`-v first_report` stored the report in a variable, so you can use it from Python: """),
        code("""\
print(first_report.traces_by_function())
for event in first_report.retrace_events:
    for reason in event.reasons:
        print(f"{reason.code:15} {reason.argument}: {reason.before} → {reason.after}")"""),
        md("""The report numbers each function's calls from 1, in the order they were made: `call #3` is
`double`'s third call. The retrace comes with one fix — declare an `input_signature` with
`None` for the length that varies — and the green *suggested fix* under it is the same change,
for the whole function (*full fix* unfolds the fix's complete text, in one sentence). Which fix
fits depends on the cause and on your code: lessons 03–07 take the causes one at a time, so for
now read the *why* lines and leave the fixes for later.

Other flags you will meet (`%%tracewatch?` shows them all):

* `-q` quiet, `-o` return the report, `-v NAME` store it;
* `--max-traces N` or `--max-traces FN=N`: a **retrace budget** — the cell fails when a function traces more (lesson 07);
* `--compare-eager`: runs the cell again, eagerly (`tf.config.run_functions_eagerly(True)`) and as graphs in turn, up to 5 more times, and compares the times; afterwards the state of the watched run is put back (lesson 01);
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
unrolled_traces = halve_unrolled.experimental_get_tracing_count()   # what this cell measured
print("graphs traced: halve_unrolled", unrolled_traces, "| halve_loop", halve_loop.experimental_get_tracing_count())"""),
        grade("unrolled_guess", "unrolled_traces", what="graphs traced"),
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


LESSONS = {
    "00_start_here": lesson_00,
    "01_eager_vs_graph": lesson_01,
}
