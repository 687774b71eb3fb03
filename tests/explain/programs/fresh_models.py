# ruff: noqa: B023  (the trap this program shows: serve reads the loop's model)
import keras
import numpy as np
import tensorflow as tf

x = np.random.default_rng(0).random((48, 4), dtype=np.float32)
y = x.sum(1, keepdims=True)
scores, served = [], []
for seed in range(3):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    scores.append(model.evaluate(x, y, batch_size=16, verbose=0))

    @tf.function
    def serve(batch):
        return model(batch, training=False)

    served.append(serve(x[:8]).numpy())
print(scores)
