# ruff: noqa: B007  (a notebook as its user writes it: the epoch loop names its epoch)
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
features = np.random.default_rng(0).random((40, 4), dtype=np.float32)
targets = features.sum(1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((features, targets)).batch(16)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
optimizer = keras.optimizers.Adam(0.01)
loss_fn = keras.losses.MeanSquaredError()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


losses = []
for epoch in range(3):
    for x, y in dataset:
        loss = train_step(x, y)
    losses.append(float(loss))
print(losses)
