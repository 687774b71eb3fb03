import keras
import numpy as np

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).random((64, 4), dtype=np.float32)
y = x.sum(1, keepdims=True)
base = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu")], name="base")
inputs = keras.Input((4,))
model = keras.Model(inputs, keras.layers.Dense(1)(base(inputs, training=False)))
base.trainable = False
model.compile(keras.optimizers.Adam(), "mse", metrics=["mae"])
model.fit(x, y, batch_size=16, epochs=2, verbose=0)
base.trainable = True
model.compile(keras.optimizers.Adam(1e-5), "mse", metrics=["mae"])
before = base.layers[0].kernel.numpy().copy()
model.fit(x, y, batch_size=16, epochs=1, verbose=0)
moved = float(np.abs(base.layers[0].kernel.numpy() - before).max())
print("moved", moved)
