# ruff: noqa: B007  (a notebook as its user writes it: the epoch loop names its epoch)
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).random((8, 4), dtype=np.float32)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])


def evaluate(batch):
    return tf.reduce_mean(model(batch, training=False))


means = []
for epoch in range(3):
    model.layers[0].kernel.assign(model.layers[0].kernel * 0.5)
    fast = tf.function(evaluate)
    means.append(float(fast(x)))
print(means)
