"""Lesson 09 (extras): the rest of TensorFlow's tf.function guide — nested functions and their
gradients, Python iterators vs tf.data, tf.TensorArray, leaked tensors, tf.py_function and
tf.init_scope, tf.cond's two branches, run_functions_eagerly, a second Keras model."""

from __future__ import annotations

from typing import Any

from cells import exercise, grade, guess, setup
from nbtools import code, md


def lesson_09() -> list[Any]:
    return [
        md("""# 09 · Extras: the rest of the `tf.function` guide

*Optional, after lesson 08 (or after 04 for the sections on loops and iterators).* TensorFlow's
guide [Better performance with `tf.function`](https://www.tensorflow.org/guide/function) covers
a few things lessons 00–08 leave out. Each section here is short: one run, what it shows, and
what to do about it. Every output is TensorFlow's own (TF 2.21).

**Goals:** nested `tf.function`s and gradients through them; Python iterators and generators
vs `tf.data`; collecting values in a graph loop with `tf.TensorArray`; tensors that leak out of
a graph; Python that runs on every call (`tf.py_function`) and code lifted out of the graph
(`tf.init_scope`); Python in `tf.cond`'s branches; debugging with `run_functions_eagerly`; a
second Keras model in one `tf.function`; Keras `predict`'s own function; custom objects as
`tf.experimental.ExtensionType`s; which graph serves a call when several match; diagnosing with
TensorFlow alone."""),
        setup(),
        md("""## Nested `tf.function`s

A `tf.function` may call another. `outer` below calls `inner`; both are decorated.
**Predict:** after three calls of `outer` with float32 scalars, and one call of `inner` on its
own with another float32 scalar, how many times has `inner` been traced?"""),
        code("""\
@tf.function
def inner(x):
    return x * x

@tf.function
def outer(x):
    return inner(x) + 1.0"""),
        guess("nested_guess", "traces of inner after outer(1.0), outer(2.0), outer(3.0), inner(5.0)?", 1),
        code("""\
for value in (1.0, 2.0, 3.0):
    outer(tf.constant(value))
inner(tf.constant(5.0))
inner_traces = inner.experimental_get_tracing_count()   # what this cell measured
print("outer:", outer.experimental_get_tracing_count(), "| inner:", inner_traces)"""),
        grade("nested_guess", "inner_traces", what="traces of inner"),
        md("""**Explain.** `inner` is traced when `outer` is traced — once, for a float32 scalar — and that
graph goes into `inner`'s own cache: the direct call `inner(5.0)` has the same signature and
reuses it. `outer`'s graph does not copy `inner`'s ops: it holds one call op
(`PartitionedCall`) to `inner`'s graph. A retrace of `outer` for a new signature traces
`inner` for it too, when the signature `inner` sees is new.

Gradients flow through both: a `tf.GradientTape` around the call differentiates the graph, and
records no new trace."""),
        code("""\
print([op.type for op in outer.get_concrete_function(tf.constant(1.0)).graph.get_operations()])

x = tf.constant(3.0)
with tf.GradientTape() as tape:
    tape.watch(x)
    y = outer(x)                  # x * x + 1
print("dy/dx at 3:", tape.gradient(y, x).numpy(), "| outer's tracing count:", outer.experimental_get_tracing_count())"""),
        md("""### Keeping retraces cheap

When a function must retrace — here `scale` is a Python float, so every new value is a new
trace of `step` (lesson 03) — the heavy part can live in a nested `tf.function` whose arguments
are tensors. **Predict:** after `step` with `scale = 1.0, 2.0, 3.0`, how many times has
`heavy` been traced?"""),
        code("""\
@tf.function
def heavy(x):
    for _ in range(20):                # unrolled: 20 matmuls in this function's graph
        x = tf.tanh(x @ x)
    return x

@tf.function
def step(x, scale):
    return heavy(x) * scale"""),
        guess("cheap_guess", "traces of heavy after step(x, 1.0), step(x, 2.0), step(x, 3.0)?", 1),
        code("""\
m = tf.eye(8)
for scale in (1.0, 2.0, 3.0):
    step(m, scale)
heavy_traces = heavy.experimental_get_tracing_count()   # what this cell measured
print("step:", step.experimental_get_tracing_count(), "| heavy:", heavy_traces)"""),
        grade("cheap_guess", "heavy_traces", what="traces of heavy"),
        md("""**Explain.** `step` traced three times, once per value of `scale`; `heavy` once. Each trace
of `step` calls `heavy` with the same signature (an 8×8 float32 tensor), so `heavy`'s cache
serves it: the 20 matmuls are traced one time, and each retrace of `step` costs only its own
small graph with one call op. Passing `scale` as a tensor would avoid the retraces altogether;
when you cannot (a Python value that must pick the code), keep what it does not change in a
nested `tf.function`."""),
        md("""## Python iterators and generators vs `tf.data`

A Python loop over a Python iterable — a list, a generator — runs **while tracing**: it is
unrolled into the graph, one copy of the body per item, fixed when the graph is traced (a
generator's items become constants in it). A
`for` over a `tf.data.Dataset` is turned by AutoGraph into one loop in the graph, whatever the
dataset's length."""),
        code("""\
def numbers(n):                        # a Python generator
    for i in range(n):
        yield tf.constant(float(i))

@tf.function
def sum_generator():
    total = tf.constant(0.0)
    for value in numbers(3):
        total += value
    return total

@tf.function
def sum_dataset(dataset):
    total = tf.constant(0.0)
    for value in dataset:
        total += value
    return total

ds3 = tf.data.Dataset.range(3).map(lambda i: tf.cast(i, tf.float32))
ds30 = tf.data.Dataset.range(30).map(lambda i: tf.cast(i, tf.float32))
print("generator:", sum_generator().numpy(), "| dataset of 3:", sum_dataset(ds3).numpy(),
      "| dataset of 30:", sum_dataset(ds30).numpy())
print("sum_dataset traced", sum_dataset.experimental_get_tracing_count(), "time(s) for both datasets")"""),
        md("""A generator passed *as an argument* is an ordinary Python object: keyed by identity, so each
new generator is a new trace, and its items are read once, while tracing. Feed data through
`tf.data` (or tensors), not generators. Keras's `fit` feeds arrays through a `tf.data` dataset
too.

A `tf.data` **iterator** can be an argument too. The dataset below has 200 rows in batches of
32 — six batches of 32 and a last one of 8. **Predict:** `step_on_iterator` takes the iterator
and reads the next batch itself: how many traces does it make for all seven batches?"""),
        code("""\
batches = tf.data.Dataset.from_tensor_slices(tf.ones([200, 8])).batch(32)
print(batches.element_spec)

@tf.function
def step_on_iterator(iterator):
    batch = next(iterator)
    return tf.reduce_sum(batch)"""),
        guess("iterator_guess", "traces of step_on_iterator for the seven batches (32 × 6, then 8)?", 1),
        code("""\
iterator = iter(batches)
for _ in range(7):
    step_on_iterator(iterator)
iterator_traces = step_on_iterator.experimental_get_tracing_count()   # what this cell measured
print("step_on_iterator:", iterator_traces)"""),
        grade("iterator_guess", "iterator_traces", what="traces"),
        md("""**Explain.** An iterator's signature is its dataset's `element_spec`, printed above: `(None, 8)`.
Inside the graph, `next(iterator)` returns a batch of that shape: one graph serves every batch
size. Passing each batch as a tensor instead keys the cache on its actual shape, `(32, 8)` and then `(8, 8)`, as lesson 04 showed. This is the reason
Keras's `fit` traces its step once (lesson 07): its step reads batches whose batch dimension is
unknown, and Keras adds `reduce_retracing=True`. Keras has no shape-relaxing of its own: the
unknown dimension comes from `tf.data`, the relaxing from TensorFlow."""),
        code("""\
@tf.function
def step_on_batch(batch):
    return tf.reduce_sum(batch)

for batch in batches:
    step_on_batch(batch)
print("step_on_batch:", step_on_batch.experimental_get_tracing_count())"""),
        md("""## Collecting values in a graph loop: `tf.TensorArray`

A `tf.range` loop becomes a `tf.while_loop`: its body is a graph of its own. Appending a tensor
from that body to a Python list hands it out of the loop's graph, and using it afterwards
fails:"""),
        code("""\
@tf.function
def squares_in_a_list(n):
    out = []
    for i in tf.range(n):
        out.append(i * i)
    return tf.stack(out)

try:
    squares_in_a_list(tf.constant(4))
except Exception as error:             # shown here so that Run All goes on
    print(next(line for line in str(error).splitlines() if "out of scope" in line).strip())"""),
        md("""A `tf.TensorArray` is the graph's list: `write` returns the updated array (keep it),
`stack` makes one tensor. One graph serves every `n`:"""),
        code("""\
@tf.function
def squares(n):
    out = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
    for i in tf.range(n):
        out = out.write(i, i * i)
    return out.stack()

print(squares(tf.constant(4)).numpy(), squares(tf.constant(6)).numpy(),
      "| tracing count:", squares.experimental_get_tracing_count())"""),
        md("""## Tensors that leak out of a graph

The same goes for any tensor a traced function stores outside itself — in a global list, an
attribute, a closure. What was stored is a *symbolic* tensor of a graph that has finished
tracing; it has no value, and TensorFlow refuses it anywhere else:"""),
        code("""\
leaked = []

@tf.function
def leaky(x):
    y = x + 1.0
    leaked.append(y)                   # stored outside the function
    return y * 2.0

leaky(tf.constant(1.0))
print(leaked[0])
try:
    print(leaked[0] + 1.0)
except TypeError as error:             # shown here so that Run All goes on
    print("TypeError:", str(error).splitlines()[0])"""),
        md("""Cure: everything a `tf.function` produces leaves it as a **return value** (or is assigned
to a `tf.Variable`, which lives outside the graph).

## When Python runs: `tf.py_function` and `tf.init_scope`

Lesson 02 showed that Python side effects run only while tracing. Two tools change *when*
Python runs. `tf.py_function` puts a call back into Python into the graph: it runs on **every
call**, eagerly, with real values — at a price. The graph cannot see inside it (its output's
shape is unknown until you set it), and its body is not saved with the graph (TF's docs: it
*"will not be serialized in a `GraphDef`"*, so a model that uses it cannot be restored and run
in another environment)."""),
        code("""\
seen_values = []

def log_and_double(x):                 # plain Python, with real values
    seen_values.append(float(x.numpy()))
    return x * 2.0

@tf.function
def with_python(x):
    y = tf.py_function(log_and_double, [x], tf.float32)
    print("static shape of y while tracing:", y.shape)
    y.set_shape(x.shape)               # tell the graph what Python returns
    return y + 1.0

for value in (1.0, 2.0, 3.0):
    with_python(tf.constant(value))
print("Python saw", seen_values, "| tracing count:", with_python.experimental_get_tracing_count())"""),
        md("""`tf.init_scope()` does the opposite: inside a `tf.function`, the code under it runs
**eagerly, while tracing** — lifted out of the graph (its documented use: creating and
initialising variables). **Predict:** `counter.assign_add(1)` below is under
`tf.init_scope()`. What is `counter`'s value after three calls of `stamp` with float32 scalars?"""),
        code("""\
counter = tf.Variable(0)

@tf.function
def stamp(x):
    with tf.init_scope():
        print("executing eagerly under init_scope:", tf.executing_eagerly())
        counter.assign_add(1)
    return x + 1.0"""),
        guess("init_guess", "counter after stamp(1.0), stamp(2.0), stamp(3.0)?", 1),
        code("""\
for value in (1.0, 2.0, 3.0):
    stamp(tf.constant(value))
counter_after = int(counter.numpy())   # what this cell measured
print("counter:", counter_after)"""),
        grade("init_guess", "counter_after", what="counter"),
        md("""**Explain.** Under `tf.init_scope()` the `assign_add` ran eagerly while `stamp` was traced —
once, for three calls of one signature — and only then: the graph has no `assign_add` in it.
Written without the `with` line it is a graph op and counts every call (lesson 02's exercise). A value computed under `init_scope` is baked into the
graph as a constant, like any Python value read while tracing.

## Python in `tf.cond`'s branches

**Predict:** each branch of the `tf.cond` below appends its name to `seen` (Python). After one
call with `training = tf.constant(False)`, how many names are in `seen`?"""),
        code("""\
seen = []

@tf.function
def branchy(x, training):
    def train_branch():
        seen.append("train")
        return x * 0.5
    def eval_branch():
        seen.append("eval")
        return x
    return tf.cond(training, train_branch, eval_branch)"""),
        guess("cond_guess", "how many names in `seen` after branchy(x, tf.constant(False))?", 2),
        code("""\
branchy(tf.ones([2]), tf.constant(False))
names_seen = len(seen)   # what this cell measured
print(seen)"""),
        grade("cond_guess", "names_seen", what="names in seen"),
        md("""**Explain.** The graph must hold both branches, because which one runs is decided when the
graph runs, by a tensor. So both are traced, and Python in either runs while tracing — also for
the branch this call does not take. AutoGraph's `if training:` on a tensor is the same
`tf.cond`. Keep side effects that must follow the branch in TF ops (`tf.print`, a
`Variable.assign`).

## Debugging: `tf.config.run_functions_eagerly(True)`

To step through a `tf.function` with `print` or a debugger, switch graphs off: every
`tf.function` then runs as plain Python, on every call, with real values — and traces nothing.
It is global: switch it off again (a `finally` does it even if the code raises)."""),
        code("""\
@tf.function
def debug_me(x):
    print("x is", x)                   # a real value when run eagerly
    return x + 1

tf.config.run_functions_eagerly(True)
try:
    debug_me(tf.constant(1))
    debug_me(tf.constant(2))
finally:
    tf.config.run_functions_eagerly(False)
print("tracing count while eager:", debug_me.experimental_get_tracing_count())
debug_me(tf.constant(3))
print("tracing count after:", debug_me.experimental_get_tracing_count())"""),
        md("""## Keras: a second model in one `tf.function`

Lesson 05 met the error *"tf.function only supports singleton tf.Variables created on the first
call"* with a second optimizer. A second Keras model does the same when its variables are
created lazily, on its first call inside the graph. `model.build(input_shape)` creates them
eagerly, before the call: the second model is then one more trace, not an error. (The count
below is 3, TF 2.21's own count: 2 for the first model — its first call creates variables, so
TF traces it twice, as lesson 05 showed — none for the attempt that raised, since a trace that
fails is not counted, and 1 for the built second model.)"""),
        code("""\
import keras

@tf.function
def predict(model, x):
    return model(x)

x4 = tf.ones([2, 4])
predict(keras.Sequential([keras.layers.Dense(3)]), x4)
try:
    predict(keras.Sequential([keras.layers.Dense(3)]), x4)
except ValueError as error:            # shown here so that Run All goes on
    print(next(line for line in str(error).splitlines() if "singleton" in line).strip())

second = keras.Sequential([keras.layers.Dense(3)])
second.build((None, 4))                # variables created now, eagerly
print(predict(second, x4).shape, "| tracing count:", predict.experimental_get_tracing_count())"""),
        md("""## Keras `predict`: its own `tf.function`

`model.predict` runs a `tf.function` Keras makes for the model (`model.predict_function`).
**Predict:** one model, `predict` on batches of 4, 5, 6, 7, 8 and 9 rows: how many traces of
its `predict_function`?"""),
        code("""\
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])"""),
        guess("predict_guess", "traces of model.predict_function for 6 batch sizes?", 2),
        code("""\
for rows in (4, 5, 6, 7, 8, 9):
    model.predict(np.ones((rows, 3), "float32"), verbose=0)
predict_traces = model.predict_function.experimental_get_tracing_count()   # what this cell measured
print("tracing count:", predict_traces)"""),
        grade("predict_guess", "predict_traces", what="traces"),
        md("""**Explain.** Keras makes its `predict_function` with `reduce_retracing=True` (Keras 3.15 on
TF 2.21): the first batch size traces exactly, the second a graph with `None` rows that
serves every later size. (Keras 2 (TF 2.15) traces it once: it feeds `predict` from a
`tf.data` dataset whose batch dimension is `None`, as `fit` does (the iterator section above).) Each *new model* has its own `predict_function`, so fresh models in a
loop trace once each — and since their functions share Keras's Python code, TF's warning
counts them together, calls of earlier models included, and fires:"""),
        code("""\
for _ in range(6):
    fresh = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    fresh.predict(np.ones((4, 3), "float32"), verbose=0)
print("the last model's tracing count:", fresh.predict_function.experimental_get_tracing_count())"""),
        md("""Make the model once and call `predict` on it; for one small batch, `model(x)` runs the
model directly, without `predict`'s function."""),
        md("""## Your own objects as arguments: `tf.experimental.ExtensionType`

Lessons 02 and 06 passed ordinary Python objects: TF keys one by its identity, so a new object
traces again and a changed attribute goes stale. TensorFlow's own answer for custom objects is
its *tracing protocol*: a class tells TF how to key it by defining `__tf_tracing_type__`.
`tf.experimental.ExtensionType` writes that method for you from the fields its class declares,
with their types. **Predict:** how many traces for `apply_scaling` with `Scaling(1.0)`,
`Scaling(2.0)` and `Scaling(3.0)`, three new objects with three values?"""),
        code("""\
class Scaling(tf.experimental.ExtensionType):
    factor: tf.Tensor                  # a Python float passed in becomes a float32 tensor

@tf.function
def apply_scaling(x, scaling):
    return x * scaling.factor"""),
        guess("extension_guess", "traces of apply_scaling for Scaling(1.0), Scaling(2.0), Scaling(3.0)?", 1),
        code("""\
for value in (1.0, 2.0, 3.0):
    print(apply_scaling(tf.ones([2]), Scaling(value)).numpy())
extension_traces = apply_scaling.experimental_get_tracing_count()   # what this cell measured
print("tracing count:", extension_traces)"""),
        grade("extension_guess", "extension_traces", what="traces"),
        md("""**Explain.** Each `Scaling` is a new object with a new value, yet TF sees the same key
every time: a field declared `tf.Tensor` is keyed by its spec (dtype and shape), so this is a
`Scaling` whose `factor` is a float32 scalar tensor. Declared `factor: float`, the same three
calls trace three times (a Python value is keyed by value, lesson 03).
"""),
        md("""## Which graph serves a call when several match

A graph traced for `TensorSpec([None])` serves a vector of any length, so a call can match more
than one graph in the cache. Below, `which_shape` is first traced for a vector of 3, then for
`None`; each graph returns the shape it was traced for. **Predict:** which shape does
`which_shape(tf.ones([3]))` return now: `"(3,)"` or `"(None,)"`?"""),
        code("""\
@tf.function
def which_shape(x):
    return tf.constant(str(x.shape))   # the shape this graph was made for

which_shape(tf.ones([3]))
which_shape.get_concrete_function(tf.TensorSpec([None], tf.float32))"""),
        guess("served_guess", "which_shape(tf.ones([3])) returns \"(3,)\" or \"(None,)\"?", "(3,)"),
        code("""\
served = which_shape(tf.ones([3])).numpy().decode()   # what this cell measured
print(served, "|", which_shape(tf.ones([5])).numpy().decode())"""),
        grade("served_guess", "served", what="the shape of the graph that served it"),
        md("""**Explain.** Both graphs match a vector of 3; TF picks the **most specific**, the one for
exactly `(3,)`. A vector of 5 matches only the `None` graph. The order matters: made the other
way round (`None` first), `get_concrete_function(tf.TensorSpec([3]))` finds the general graph
already serving it and traces nothing, so every length goes to the `None` graph.

## Diagnosing without tfgraph_lab

Where the tool is not installed, TensorFlow itself tells you three things:

* `fn.experimental_get_tracing_count()`: how many times `fn` traced;
* `fn.pretty_printed_concrete_signatures()`: one block per graph the cache keeps, each argument
  with its spec or its Python value (`Literal[3]`) — the key that made it;
* TF's warning, *"N out of the last M calls to … triggered tf.function retracing"* — and its
  blind spot (lesson 03): traces 4 or more calls apart never warn.

How big may one function's cache grow? **Predict:** after calls with `n = 0, 1, …, 29` (a
Python int), how many graphs does `times_n` keep?"""),
        code("""\
@tf.function
def times_n(x, n):
    return x * n"""),
        guess("kept_guess", "graphs times_n keeps after 30 calls with n = 0, 1, …, 29?", 30),
        code("""\
for n in range(30):
    times_n(tf.constant(2.0), n)       # a Python int: its value is in the key
signatures = times_n.pretty_printed_concrete_signatures()
kept = signatures.count("Input Parameters:")   # what this cell measured: one block each
print(signatures.split("\\n\\n")[-1])          # the last block
print("graphs kept:", kept)"""),
        grade("kept_guess", "kept", what="graphs kept"),
        md("""**Explain.** Thirty values, thirty graphs, all kept: TF's cache has no limit, every graph
stays as long as the function lives, and the signatures list and the memory grow with every new
value (PyTorch's `torch.compile`, by contrast, stops recompiling a function after a set number
of times). `n` as a tensor (`tf.constant(n)`) is one graph."""),
        *exercise("09-tensorarray", "Collect what a graph loop computes, for vectors of any length."),
        md("""## Recap

* A nested `tf.function` is traced with its caller, into its own cache; gradients flow through.
* Python loops over lists and generators are unrolled while tracing; a `tf.data` loop is one
  graph loop, and a dataset iterator's spec (`None` batch) gives one trace for every batch size.
* Collect values in a graph loop with `tf.TensorArray`; return what a graph computes, never
  store its tensors outside.
* `tf.py_function`: Python on every call (unknown shapes, not saved with the graph);
  `tf.init_scope()`: eagerly, once per trace.
* `tf.cond` traces both branches; `run_functions_eagerly(True)` for debugging, then off again;
  `model.build(input_shape)` before a second model's first call in a `tf.function`.
* A nested `tf.function` for the heavy part: a retrace of its caller reuses its graph.
* `model.predict` traces its own function (`reduce_retracing`: 2 for any batch sizes); a fresh
  model traces again, and fresh models in a loop set off TF's warning.
* Custom objects: a `tf.experimental.ExtensionType` with `tf.Tensor` fields is keyed by spec.
* Several graphs match a call: the most specific serves it.
* Without the tool: `experimental_get_tracing_count`, `pretty_printed_concrete_signatures`
  (one block per graph kept; the cache has no limit) and TF's warning, with its blind spot."""),
    ]


LESSONS = {"09_extras_from_the_guide": lesson_09}
