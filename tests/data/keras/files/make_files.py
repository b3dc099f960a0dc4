#!/usr/bin/env python3
"""Writes the small Keras-made model files test_keras_hostile reads without PyPI: tiny.keras (Keras
3), tiny.h5 (Keras 3's legacy HDF5 writer), tiny.weights.h5, tiny.json, tf2.h5 (tf.keras 2, whose
weight names end in ":0") and tiny.expected: Keras's predictions for the inputs the test makes
(x[i] = sin(i * 0.37), i over the flattened [2, 5, 5, 1] batch). BatchNormalization is trained so
its moving statistics are not the initial ones.
Run once: python make_files.py (tf_keras 2.21 on PYTHONPATH for tf2.h5:
pip install --no-deps --target DIR tf_keras==2.21.*)."""
import numpy as np, warnings
warnings.filterwarnings("ignore")


def build(k):
    L = k.layers
    inp = k.Input((5, 5, 1))
    a = L.Conv2D(2, 3, activation="relu", name="conv")(inp)
    b = L.BatchNormalization(momentum=0.3, name="bn")(a)
    c = L.Add(name="add")([a, b])
    x = L.Flatten(name="flat")(L.DepthwiseConv2D(2, depth_multiplier=2, name="dw")(c))
    return k.Model(inp, L.Dense(3, activation="softmax", name="out")(x), name="tiny")


x = np.sin(np.arange(50) * 0.37).astype(np.float32).reshape(2, 5, 5, 1)
rng = np.random.RandomState(0)
lines = []
import keras
try:
    import tf_keras
except ImportError:
    tf_keras = None
for k, name in ((keras, "tiny"), (tf_keras, "tf2")):
    if k is None:
        continue
    k.utils.set_random_seed(7)
    m = build(k)
    m.compile(optimizer="adam", loss="mse")
    m.fit(rng.randn(32, 5, 5, 1).astype(np.float32), rng.rand(32, 3).astype(np.float32), epochs=3, verbose=0)
    if name == "tiny":
        m.save("tiny.keras")
        m.save("tiny.h5")
        m.save_weights("tiny.weights.h5")
        open("tiny.json", "w").write(m.to_json())
    else:
        m.save("tf2.h5")
    y = m.predict(x, verbose=0)
    lines.append("%s %s" % (name, " ".join("%.9g" % v for v in y.ravel())))
open("tiny.expected", "w").write("\n".join(lines) + "\n")
