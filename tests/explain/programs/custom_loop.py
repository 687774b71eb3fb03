# ruff: noqa: B007  (a notebook as its user writes it: the epoch loop names its epoch)
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
model = keras.Sequential(
    [
        keras.Input((4,)),
        keras.layers.Dense(8),
        keras.layers.BatchNormalization(),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(1),
    ]
)
x_all = np.random.default_rng(0).random((40, 4), dtype=np.float32)
y_all = x_all.sum(1, keepdims=True)


@tf.function
def train_step(x, y, lr, training):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x, training=training) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    for v, g in zip(model.trainable_variables, grads):
        v.assign_sub(lr * g)
    return loss


lr = 0.1
for epoch in range(3):
    for i in range(0, 40, 16):
        loss = train_step(x_all[i : i + 16], y_all[i : i + 16], lr, True)
    lr *= 0.5
val = train_step(x_all[:16], y_all[:16], lr, False)
print("final", float(loss), float(val))
