"""Lessons 02–03: tracing and the cache, the Python-scalar trap."""

from __future__ import annotations

from typing import Any

from cells import exercise, grade, guess, lab, setup
from nbtools import code, md


def lesson_02() -> list[Any]:
    return [
        md("""# 02 · Tracing and the graph cache

**Goals:** the first call traces; later calls with the same *input signature* reuse the cached
graph; what the Python code in a `tf.function` does on each call, and what becomes of the
Python values it reads; concrete functions are the cached graphs."""),
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
print_runs = add_one.experimental_get_tracing_count()   # what this cell measured
print("tracing count:", print_runs)"""),
        grade("print_guess", "print_runs", what="times print ran (one per trace)"),
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

## Attributes of an object passed in

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

**Goals:** see what `training=True` then `False` does to the graph cache, and what a changing
Python number does; read TensorFlow's own retracing warning and find where it stays silent;
measure a retracing loop against eager mode; cure it by passing tensors and branching with
`tf.cond`."""),
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
warned_again = len(w.report.warnings) > 0
print("tracing count:", scaled.experimental_get_tracing_count(), "| new warnings:", len(w.report.warnings))"""),
        grade("warn_guess", "warned_again", what="TensorFlow warned again"),
        md("""That is TensorFlow's only signal. Its text (TF 2.21, `polymorphic_function.py`) is
*"N out of the last M calls to &lt;function scaled at 0x…&gt; triggered tf.function retracing.
Tracing is expensive and the excessive number of tracings could be due to (1) creating
@tf.function repeatedly in a loop, (2) passing tensors with different shapes, (3) passing Python
objects instead of tensors. …"* — no argument, no value. How it counts (`_FrequentTracingDetector`):
it keeps each call that traced in a group with the cached calls after it; when a call traces, it
forgets the oldest group while more than 10 calls (`FREQUENT_TRACING_WARNING_MAX_CALL_HISTORY =
10`) came after that group; and it warns when it remembers 5 or more traces
(`FREQUENT_TRACING_WARNING_THRESHOLD = 5`). So *N* and *M* both vary: the loop above printed
"5 out of the last 5" first and "6 out of the last 6" at its next trace; traces between cached
calls read "5 out of the last 8"; one trace, 100 cached calls, then 4 traces read "5 out of the
last 105" (the first group is forgotten only once 10 calls came after *its* cached calls). It
warns at most twice (`FREQUENT_TRACING_WARNING_MAX_WARNING_PER_DETECTOR = 2`) per Python
function — per code object, so a re-created `tf.function` of the same code shares the two
warnings. The second loop traced 8 more graphs in silence. `%%tracewatch` names the argument and
the values on every retrace instead.

**Its blind spot.** Traces 4 or more calls apart never warn: when the fifth trace comes, more
than 10 calls followed the oldest one's group, so only 4 are remembered. A Python learning rate
changed once per epoch of 4 steps or more retraces every epoch, and TensorFlow says nothing
(TF 2.21: 50 epochs, 50 traces, 0 warnings; 3 steps per epoch do warn):"""),
        code("""\
@tf.function
def lr_step(x, lr):
    return tf.reduce_sum(x) * lr

with tfgraph_lab.watch() as quiet:
    lr = 0.1
    for epoch in range(50):
        for batch in range(4):
            lr_step(x, lr)
        lr *= 0.9                            # a new Python float once per epoch
print("tracing count:", lr_step.experimental_get_tracing_count(),
      "| TensorFlow's warnings:", len(quiet.report.warnings))"""),
        md("""That is the strongest case for watching the traces themselves: the report counts every one.

## Graph or eager, for a loop that retraces?

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
Python bool". Leave the flag out of the signature with a Python default, and TensorFlow binds
`training` to that literal default: a call may leave it out or pass the default again, and a
call that passes another value fails."""),
        code("""\
@tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32)])
def forward(x, training=False):
    return x * 0.5 if training else x

forward(x)                      # fine: training is the default False
forward(x, training=False)      # fine too: the default, passed explicitly
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


LESSONS = {
    "02_tracing_and_the_cache": lesson_02,
    "03_python_scalar_trap": lesson_03,
}
