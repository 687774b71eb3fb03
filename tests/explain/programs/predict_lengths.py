import keras
import numpy as np

keras.utils.set_random_seed(0)
data = np.random.default_rng(0).random((64, 4), dtype=np.float32)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
preds = []
for n in (10, 37, 64):
    x = data[:n]
    y = model.predict(x, verbose=0)
    preds.append(y)
print([p.shape for p in preds])
