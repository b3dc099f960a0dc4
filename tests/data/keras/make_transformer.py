#!/usr/bin/env python3
"""Writes keras3/transformer.json, .expected (see make_models.py) and .values for tests/unit/test_transformer.c: a
Keras 3 functional model with Embedding, LayerNormalization and a causal MultiHeadAttention
(called as mha(h, h, use_causal_mask=True)), its weights and its predictions on a batch of token
ids, so that Kiln loading the JSON and the weights must give Keras's outputs.

transformer.values, one line each: "w NAME N v1 ... vN" per weight (Keras's path, row-major),
"x N ..." the input ids (as floats), "y N ..." Keras's predictions.

Run: /work/venv-tf/bin/python make_transformer.py [OUT_DIR] (default: this directory).
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


def main():
    import numpy as np
    import keras
    from keras import layers as L
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    keras.utils.set_random_seed(5)
    inp = keras.Input(shape=(10,), name="ids")
    x = L.Embedding(20, 8, embeddings_initializer=keras.initializers.RandomNormal(stddev=0.5), name="tok")(inp)
    h = L.LayerNormalization(epsilon=1e-5, name="ln1")(x)
    a = L.MultiHeadAttention(num_heads=2, key_dim=4, bias_initializer="random_normal", name="mha")(h, h, use_causal_mask=True)
    s = L.Add(name="res")([x, a])
    n = L.LayerNormalization(center=False, name="ln2")(s)
    y = L.Dense(5, name="head")(L.Flatten(name="flat")(n))
    m = keras.Model(inp, y, name="transformer")
    # gamma / beta away from their initial ones / zeros, so that the test reads them
    for w in m.weights:
        if w.path.endswith("gamma") or w.path.endswith("beta"):
            w.assign(np.random.default_rng(len(w.path)).uniform(0.5, 1.5, w.shape).astype("float32"))
    ids = np.random.default_rng(1).integers(0, 20, size=(3, 10)).astype("float32")
    pred = m.predict(ids, verbose=0)
    d = os.path.join(out, "keras3")
    with open(os.path.join(d, "transformer.json"), "w") as f:
        f.write(m.to_json(indent=1) + "\n")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_models import expected       # transformer.expected: Keras's counts and shapes, as the other models'
    with open(os.path.join(d, "transformer.expected"), "w") as f:
        f.write(expected(m, keras.__version__))
    with open(os.path.join(d, "transformer.values"), "w") as f:
        for w in m.weights:
            v = np.asarray(w.numpy(), dtype="float64").ravel()
            f.write("w %s %d %s\n" % (w.path, v.size, " ".join(repr(float(t)) for t in v)))
        for tag, arr in (("x", ids), ("y", pred)):
            v = np.asarray(arr, dtype="float64").ravel()
            f.write("%s %d %s\n" % (tag, v.size, " ".join(repr(float(t)) for t in v)))
    print("%s/transformer: %d parameters, keras %s" % (d, m.count_params(), keras.__version__))


if __name__ == "__main__":
    main()
