"""A user's training code with the classic trap: the step number passed as a Python int."""

import tensorflow as tf


@tf.function
def train_step(x, step):
    return tf.reduce_sum(x) * tf.cast(step, tf.float32)


def train(steps):
    x = tf.ones([4])
    total = 0.0
    for step in range(steps):
        total += float(train_step(x, step))
    return total
