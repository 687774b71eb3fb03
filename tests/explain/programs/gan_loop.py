# ruff: noqa: B007  (a notebook as its user writes it: the epoch loop names its epoch)
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
real = np.random.default_rng(0).normal(size=(64, 2)).astype(np.float32)
generator = keras.Sequential(
    [keras.Input((3,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)]
)
discriminator = keras.Sequential(
    [keras.Input((2,)), keras.layers.Dense(8), keras.layers.Dropout(0.3), keras.layers.Dense(1)]
)
g_opt = keras.optimizers.SGD(0.01)
d_opt = keras.optimizers.SGD(0.01)
bce = keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def d_step(batch, step, training):
    noise = tf.random.normal([tf.shape(batch)[0], 3])
    with tf.GradientTape() as tape:
        fake = generator(noise, training=False)
        scores_real = discriminator(batch, training=training)
        scores_fake = discriminator(fake, training=training)
        loss = bce(tf.ones_like(scores_real), scores_real) + bce(tf.zeros_like(scores_fake), scores_fake)
    grads = tape.gradient(loss, discriminator.trainable_variables)
    d_opt.apply_gradients(zip(grads, discriminator.trainable_variables))
    return loss


@tf.function
def g_step(n, step):
    noise = tf.random.normal([n, 3]) * (1.0 / (1 + step))
    with tf.GradientTape() as tape:
        scores = discriminator(generator(noise, training=True), training=False)
        loss = bce(tf.ones_like(scores), scores)
    grads = tape.gradient(loss, generator.trainable_variables)
    g_opt.apply_gradients(zip(grads, generator.trainable_variables))
    return loss


step = 0
for epoch in range(2):
    for i in range(0, 64, 16):
        d_loss = d_step(real[i : i + 16], step, True)
        g_loss = g_step(16, step)
        step += 1
print(float(d_loss), float(g_loss))
