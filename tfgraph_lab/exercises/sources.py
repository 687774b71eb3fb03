"""The code of every exercise: the starter a lesson notebook begins with (working, but with the
trap the exercise is about) and the worked solution. Plain strings, executed by the learner's
kernel and by the tests; the table that pairs them with tasks, hints and checks is
:mod:`.catalog`. Imports nothing."""

from __future__ import annotations

__all__: list[str] = []

SQUARE_STARTER = """\
def square(x):
    # TODO: make this a tf.function (one line, just above `def`)
    return x * x
"""
SQUARE_SOLUTION = """\
@tf.function
def square(x):
    return x * x
"""

SPEED_STARTER = """\
def small_ops(x):
    # 120 tiny operations on a small matrix
    for _ in range(40):
        x = tf.tanh(x) * 0.9 + 0.1
    return x

def big_matmul(x):
    # one big matrix product
    return tf.matmul(x, x) / 600.0

small = tf.ones([8, 8])
big = tf.random.stateless_normal([600, 600], seed=[1, 2])

# TODO 1: measure what tf.function buys each of them, e.g. ex.compare_eager(small_ops, small)
evidence = []
# TODO 2: compile the one your measurement says gains most, e.g. tf.function(...)
compiled = None
"""
SPEED_SOLUTION = """\
def small_ops(x):
    for _ in range(40):        # a Python loop is unrolled while tracing: 120 ops in one graph
        x = tf.tanh(x) * 0.9 + 0.1
    return x

def big_matmul(x):
    return tf.matmul(x, x) / 600.0

small = tf.ones([8, 8])
big = tf.random.stateless_normal([600, 600], seed=[1, 2])

evidence = [ex.compare_eager(small_ops, small), ex.compare_eager(big_matmul, big)]
for measured in evidence:
    print(measured)
# small_ops gains several times: each eager op pays Python and dispatch overhead that the graph
# pays once per call. big_matmul spends its time inside one kernel, the same either way: its
# ratio stays near 1× (noisy on a busy machine), far below small_ops'.
compiled = tf.function(small_ops)
"""

COUNT_STARTER = """\
calls = 0

@tf.function
def scaled(x, counter):
    global calls
    calls += 1          # a Python side effect: it runs only while tracing
    # TODO: make `counter` (a tf.Variable) count every call
    return x * 2.0
"""
COUNT_SOLUTION = """\
@tf.function
def scaled(x, counter):
    counter.assign_add(1)   # a TF op: it is part of the graph, so it runs on every call
    return x * 2.0
"""

SCALAR_STARTER = """\
x3 = tf.reshape(tf.range(64 * 16, dtype=tf.float32) / 1000.0, [64, 16])

@tf.function
def scaled_loss(x, factor, training):
    if training:
        x = x * 0.9            # stands in for dropout (deterministic, so results compare)
    return tf.reduce_mean(x) * factor

def run_schedule():
    total = 0.0
    for epoch in range(6):
        factor = 1.0 / (epoch + 1)              # a new Python float every epoch
        total += scaled_loss(x3, factor, True)  # ...and a Python bool
    total += scaled_loss(x3, 1.0, False)        # evaluation
    return total
"""
SCALAR_SOLUTION = """\
x3 = tf.reshape(tf.range(64 * 16, dtype=tf.float32) / 1000.0, [64, 16])

@tf.function
def scaled_loss(x, factor, training):
    x = tf.cond(training, lambda: x * 0.9, lambda: x)   # a graph branch on a bool tensor
    return tf.reduce_mean(x) * factor

def run_schedule():
    total = 0.0
    for epoch in range(6):
        factor = tf.constant(1.0 / (epoch + 1))         # a tensor: same spec every epoch
        total += scaled_loss(x3, factor, tf.constant(True))
    total += scaled_loss(x3, tf.constant(1.0), tf.constant(False))
    return total
"""

SHAPES_STARTER = """\
features = tf.reshape(tf.range(100 * 8, dtype=tf.float32) % 7.0, [100, 8])
w4 = tf.reshape(tf.range(8, dtype=tf.float32) / 8.0, [8, 1])

@tf.function
def predict(batch):
    return tf.matmul(tf.cast(batch, tf.float32), w4)

def predict_all():
    outputs = []
    for batch_size in (32, 16):                        # two batch sizes, each with a
        ds = tf.data.Dataset.from_tensor_slices(features).batch(batch_size)
        for batch in ds:                               # smaller last batch (100 = 3·32 + 4)
            outputs.append(predict(batch))
    extra = np.linspace(0.0, 1.0, 5 * 8).reshape(5, 8) # NumPy's default dtype: float64
    outputs.append(predict(extra))
    return tf.concat(outputs, axis=0)
"""
SHAPES_SOLUTION = """\
features = tf.reshape(tf.range(100 * 8, dtype=tf.float32) % 7.0, [100, 8])
w4 = tf.reshape(tf.range(8, dtype=tf.float32) / 8.0, [8, 1])

@tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32)])   # any batch size
def predict(batch):
    return tf.matmul(batch, w4)

def predict_all():
    outputs = []
    for batch_size in (32, 16):
        ds = tf.data.Dataset.from_tensor_slices(features).batch(batch_size)
        for batch in ds:
            outputs.append(predict(batch))
    extra = np.linspace(0.0, 1.0, 5 * 8).reshape(5, 8).astype(np.float32)  # one dtype
    outputs.append(predict(extra))
    return tf.concat(outputs, axis=0)
"""

VARS_STARTER = '''\
class RunningSum(tf.Module):
    """Adds each x to a running total kept in a tf.Variable and returns the total."""

    def __init__(self, size):
        super().__init__()
        self.size = size

    @tf.function
    def __call__(self, x):
        total = tf.Variable(tf.zeros([self.size]))   # a new Variable on every call!
        total.assign_add(x)
        return total.read_value()
'''
VARS_SOLUTION = '''\
class RunningSum(tf.Module):
    """Adds each x to a running total kept in a tf.Variable and returns the total."""

    def __init__(self, size):
        super().__init__()
        self.total = tf.Variable(tf.zeros([size]))   # created once, outside any graph

    @tf.function
    def __call__(self, x):
        self.total.assign_add(x)
        return self.total.read_value()
'''

OBJECTS_STARTER = """\
x6 = tf.reshape(tf.range(12, dtype=tf.float32), [3, 4])
configs = [{"scale": 0.5 * i, "shift": float(i)} for i in range(1, 6)]

def run_configs():
    results = []
    for cfg in configs:
        @tf.function                    # a new tf.function object on every pass of the loop
        def apply(x, cfg):
            return x * cfg["scale"] + cfg["shift"]
        results.append(apply(x6, cfg))  # ...and a dict of Python floats
    return tf.stack(results)
"""
OBJECTS_SOLUTION = """\
x6 = tf.reshape(tf.range(12, dtype=tf.float32), [3, 4])
configs = [{"scale": 0.5 * i, "shift": float(i)} for i in range(1, 6)]

@tf.function                            # created once, outside the loop
def apply(x, cfg):
    return x * cfg["scale"] + cfg["shift"]

def run_configs():
    results = []
    for cfg in configs:
        as_tensors = {key: tf.constant(value) for key, value in cfg.items()}  # same structure,
        results.append(apply(x6, as_tensors))                                # same specs
    return tf.stack(results)
"""

LOOP_STARTER = """\
X7 = tf.reshape(tf.range(200 * 8, dtype=tf.float32) % 11.0 / 11.0, [200, 8])
Y7 = tf.reduce_sum(X7 * tf.range(8, dtype=tf.float32), axis=1, keepdims=True) / 8.0
dataset7 = tf.data.Dataset.from_tensor_slices((X7, Y7)).batch(32)   # 200 = 6·32 + 8

def train_model(epochs=4):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1)])

    @tf.function
    def train_step(x, y, lr):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(lr * g)
        return loss

    lr = 0.05
    for epoch in range(epochs):
        for x, y in dataset7:
            loss = train_step(x, y, lr)
        lr *= 0.7                      # learning-rate decay, as a Python float
    return float(loss)
"""
LOOP_SOLUTION = """\
X7 = tf.reshape(tf.range(200 * 8, dtype=tf.float32) % 11.0 / 11.0, [200, 8])
Y7 = tf.reduce_sum(X7 * tf.range(8, dtype=tf.float32), axis=1, keepdims=True) / 8.0
dataset7 = tf.data.Dataset.from_tensor_slices((X7, Y7)).batch(32)

def train_model(epochs=4):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1)])

    @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32),   # any batch size
                                  tf.TensorSpec([None, 1], tf.float32),
                                  tf.TensorSpec([], tf.float32)])          # lr: a scalar tensor
    def train_step(x, y, lr):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(lr * g)
        return loss

    lr = tf.Variable(0.05)            # created outside the step, updated in place
    for epoch in range(epochs):
        for x, y in dataset7:
            loss = train_step(x, y, lr)
        lr.assign(lr * 0.7)
    return float(loss)
"""

CAPSTONE_STARTER = '''\
def train_slow(epochs=3):
    """A training script with several hidden retracing causes. Returns the final loss."""
    keras.utils.set_random_seed(1)
    X = np.random.default_rng(0).normal(size=(100, 8)).astype("float32")
    Y = (X @ np.linspace(-1.0, 1.0, 8).astype("float32")).reshape(-1, 1)
    train = tf.data.Dataset.from_tensor_slices((X, Y)).batch(24)     # 100 = 4·24 + 4
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(1)])
    step = 0
    for epoch in range(epochs):
        lr = 0.1 / (epoch + 1)

        @tf.function
        def train_step(x, y, lr, step):
            warmup = min(1.0, (step + 1) / 10)                        # Python maths on a Python int
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            for v, g in zip(model.trainable_variables, grads):
                v.assign_sub(lr * warmup * g)
            return loss

        for x, y in train:
            train_step(x, y, lr, step)
            step += 1

    @tf.function
    def evaluate(x, y, training):
        return tf.reduce_mean((model(x, training=training) - y) ** 2)

    return float(evaluate(X, Y, False))
'''
CAPSTONE_SOLUTION = '''\
def train_fast(epochs=3):
    """The same training, without retracing. Returns the final loss."""
    keras.utils.set_random_seed(1)
    X = np.random.default_rng(0).normal(size=(100, 8)).astype("float32")
    Y = (X @ np.linspace(-1.0, 1.0, 8).astype("float32")).reshape(-1, 1)
    train = tf.data.Dataset.from_tensor_slices((X, Y)).batch(24)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(1)])
    spec = [tf.TensorSpec([None, 8], tf.float32), tf.TensorSpec([None, 1], tf.float32),
            tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.int64)]

    @tf.function(input_signature=spec)               # created once; any batch size
    def train_step(x, y, lr, step):
        warmup = tf.minimum(1.0, tf.cast(step + 1, tf.float32) / 10.0)   # tensor maths
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(lr * warmup * g)
        return loss

    step = tf.Variable(0, dtype=tf.int64)            # counters and schedules live in variables
    lr = tf.Variable(0.1)
    for epoch in range(epochs):
        lr.assign(0.1 / (epoch + 1))
        for x, y in train:
            train_step(x, y, lr, step)
            step.assign_add(1)

    @tf.function
    def evaluate(x, y):
        return tf.reduce_mean((model(x, training=False) - y) ** 2)

    return float(evaluate(X, Y))
'''

TENSORARRAY_STARTER = """\
@tf.function
def running_max(values):
    best = values[0]
    out = []                                    # a Python list
    for i in tf.range(tf.shape(values)[0]):     # a tf.range loop: a tf.while_loop in the graph
        best = tf.maximum(best, values[i])
        out.append(best)
    return tf.stack(out)

def run_maxima():
    vectors = [[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0], [2.0, 7.0, 1.0, 8.0, 2.0, 8.0]]
    return tf.concat([running_max(tf.constant(v)) for v in vectors], axis=0)
"""
TENSORARRAY_SOLUTION = """\
@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])   # one graph for every length
def running_max(values):
    n = tf.shape(values)[0]
    best = values[0]
    out = tf.TensorArray(tf.float32, size=n)    # collects one value per step of the loop
    for i in tf.range(n):
        best = tf.maximum(best, values[i])
        out = out.write(i, best)                # write returns the array: keep it
    return out.stack()

def run_maxima():
    vectors = [[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0], [2.0, 7.0, 1.0, 8.0, 2.0, 8.0]]
    return tf.concat([running_max(tf.constant(v)) for v in vectors], axis=0)
"""
