"""Lessons 04–05: shapes and dtypes, variables."""

from __future__ import annotations

from typing import Any

from cells import exercise, grade, guess, lab, setup
from nbtools import code, md


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
dtype_graphs = twice.experimental_get_tracing_count()   # what this cell measured
print("graphs:", dtype_graphs)"""),
        grade("dtype_guess", "dtype_graphs", what="graphs traced"),
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


def lesson_05() -> list[Any]:
    return [
        md("""# 05 · Variables

**Goals:** see what happens when a `tf.Variable` is created inside a `tf.function` (the error,
and the lazy-initialisation exception); cure it by creating variables in `__init__`/`build`, in
a `tf.Module` or a Keras layer; know what of a Variable argument is part of the cache key; and
meet the same error when a second optimizer reaches one `tf.function`."""),
        setup(),
        md("""## A Variable created on every call

A graph may *use* variables: state that outlives a call. The function below creates one in
its body, so on every call. **Predict:** what happens on the first call?"""),
        code("""\
@tf.function
def add_to_total(x):
    total = tf.Variable(tf.zeros_like(x))    # a new Variable on every call
    total.assign_add(x)
    return total.read_value()"""),
        guess("raise_guess", "True or False: does the first call raise an error?", True),
        code("""\
try:
    add_to_total(tf.ones([3]))
    raised = False
except ValueError as error:              # shown here so that Run All goes on
    raised = True
    print("ValueError:", str(error).strip().splitlines()[-1])"""),
        grade("raise_guess", "raised", what="the first call raised"),
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
        md("""## Variables as arguments: the value is not in the key

A variable's **value** is not part of the cache key. That makes a `tf.Variable` the right
container for values that change between calls, such as a learning rate you decay:"""),
        code("""\
lr = tf.Variable(0.1)

@tf.function
def step_size(grad, lr):
    return grad * lr

for epoch in range(4):
    step_size(tf.ones([3]), lr)
    lr.assign(lr * 0.5)                 # a new value, the same graph
print("traces:", step_size.experimental_get_tracing_count(), "lr now:", round(float(lr.numpy()), 4))"""),
        md("""What *is* in the key for a Variable argument? TF 2.21's `ResourceVariable.__tf_tracing_type__`
returns a `VariableSpec(shape, dtype, trainable, alias_id)`: the shape, the dtype, whether it is
trainable, and the **aliasing** pattern — whether two arguments are the same variable.

**Predict:** how many graphs does `add` trace for the four calls below?"""),
        code("""\
@tf.function
def add(a, b):
    return a + b

v1, v2 = tf.Variable(1.0), tf.Variable(2.0)"""),
        guess("variable_guess", "graphs for add(v1, v2), add(v2, v1), add(v1, v1), add(frozen, v2)?", 3),
        code("""\
%%tracewatch -v variable_report
add(v1, v2)
add(v2, v1)
add(v1, v1)
add(tf.Variable(3.0, trainable=False), v2)"""),
        grade("variable_guess", "variable_report", "add"),
        md("""**Explain.** Swapped, the two arguments are still two distinct trainable float32 scalars:
cached. The same variable twice is another aliasing pattern, and a non-trainable variable
another spec: two new graphs. The report names the field that changed each time (`b`'s aliasing
pattern, `a`'s trainable flag), and its graph rows are TF's `VariableSpec`s, `trainable` and
`alias_id` included."""),
        md("""## A second optimizer meets one `tf.function`

The same rule — variables may only be created on the first call — bites in training code. A
Keras optimizer creates its slot variables (Adam's moments) the first time it applies
gradients. Pass a *second* optimizer to a `tf.function` that already traced with the first,
and the new trace creates variables on a later call:"""),
        code("""\
opt1 = keras.optimizers.Adam(learning_rate=1e-2)
opt2 = keras.optimizers.Adam(learning_rate=1e-3)
w = tf.Variable(2.0)

@tf.function
def train_step(w, x, y, optimizer):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(w * x - y))
    optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

train_step(w, tf.constant([-1.0]), tf.constant([2.0]), opt1)   # creates opt1's variables: fine
try:
    train_step(w, tf.constant([-1.0]), tf.constant([2.0]), opt2)
except ValueError as error:                                     # shown here so that Run All goes on
    print("ValueError:", str(error).strip().splitlines()[-1])"""),
        md("""The error is *"tf.function only supports singleton tf.Variables created on the first call"*;
a second Keras model whose layers are built lazily inside the function raises the same. Cures:
build the optimizer's variables before its first call (`opt.build(variables)`) — and a second
model's with `model.build(input_shape)` — or give each model/optimizer pair its own `tf.function` (make the step a method of an object that owns
them, or create the `tf.function` per pair)."""),
        md("""(`opt2` is now half-built by the failed trace: start again from a fresh optimizer.)"""),
        code("""\
opt3 = keras.optimizers.Adam(learning_rate=1e-3)
opt3.build([w])                                                 # its variables, created eagerly
train_step(w, tf.constant([-1.0]), tf.constant([2.0]), opt3)   # a new object: one retrace, no error
print("traces:", train_step.experimental_get_tracing_count(), "(2 for opt1's first call, 1 for opt3)")"""),
        md("""## Try it in the lab

The lab opens with *create a tf.Variable inside (anti-pattern)* ticked: press *Call once* and
it shows the same error."""),
        lab(
            "get from the error to a working call that traces once, and explain in one sentence "
            "what the change did.",
            variable_inside=True,
        ),
        *exercise("05-variables"),
        md("""## Recap

* Creating a `tf.Variable` on every call of a `tf.function` fails on the first call.
* Creating it lazily on the first call works, with one extra one-off trace.
* Cure: create variables outside the function — `__init__`, a Keras `build`, a `tf.Module` —
  and `assign` to them inside. Variables are also how to pass changing values without retracing.
* A Variable argument is keyed by shape, dtype, `trainable` and aliasing — not by its value.
* A second optimizer (or lazily built model) in one `tf.function` hits the same error: build
  its variables first, or use one `tf.function` per model/optimizer pair.
* Next, lesson **06**: Python objects, containers and re-created functions."""),
    ]


LESSONS = {
    "04_shapes_and_dtypes": lesson_04,
    "05_variables": lesson_05,
}
