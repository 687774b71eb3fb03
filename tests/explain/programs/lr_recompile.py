import keras
import numpy as np

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).random((64, 4), dtype=np.float32)
y = x.sum(1, keepdims=True)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
model.compile(keras.optimizers.SGD(0.05, momentum=0.9), "mse", metrics=["mae"])
first = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
model.compile(keras.optimizers.SGD(0.01, momentum=0.9), "mse", metrics=["mae"])
second = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
print("loss", first.history["loss"][0], second.history["loss"][-1])
