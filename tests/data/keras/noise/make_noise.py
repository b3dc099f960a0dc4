#!/usr/bin/env python3
"""Writes the Keras 3 files tests/unit/test_noise.c reads: layers with randomness in training
(GaussianNoise, GaussianDropout, SimpleRNN/LSTM/GRU with dropout and recurrent_dropout,
MultiHeadAttention with dropout) as NAME.keras (weights included; noise_mha also as NAME.json and
NAME.values, "path n values..." a weight, read without HDF5) and NAME.expected: Keras's
inference predictions (one value a line) for x[i] = sin(i * 0.37) over the flattened batch.
Run once with tensorflow-cpu 2.21: python make_noise.py"""
import numpy as np, os, warnings
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore")
import keras
L = keras.layers


def rnn_model():
    inp = keras.Input((6, 3))
    x = L.GaussianNoise(0.3, name="noise")(inp)
    x = L.SimpleRNN(4, dropout=0.1, recurrent_dropout=0.2, return_sequences=True, name="simple")(x)
    x = L.LSTM(4, dropout=0.2, recurrent_dropout=0.1, return_sequences=True, name="lstm")(x)
    x = L.GRU(3, dropout=0.3, name="gru")(x)
    x = L.GaussianDropout(0.25, seed=3, name="gdrop")(x)
    return keras.Model(inp, L.Dense(2, name="out")(x), name="noise_rnn")


def mha_model():
    inp = keras.Input((5, 4))
    a = L.MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.2, name="mha")(inp, inp, use_causal_mask=True)
    return keras.Model(inp, L.Dense(2, name="out")(a), name="noise_mha")


keras.utils.set_random_seed(7)
for name, build, shape in (("noise_rnn", rnn_model, (2, 6, 3)), ("noise_mha", mha_model, (2, 5, 4))):
    m = build()
    x = np.sin(np.arange(int(np.prod(shape))) * 0.37).astype(np.float32).reshape(shape)
    if name == "noise_mha":   # also JSON + values: a Kiln built without HDF5 checks these
        with open(name + ".json", "w") as f:
            f.write(m.to_json(indent=1) + "\n")
        with open(name + ".values", "w") as f:
            for w in m.weights:
                v = np.asarray(w.numpy(), dtype="float64").ravel()
                f.write("%s %d %s\n" % (w.path, v.size, " ".join(repr(float(t)) for t in v)))
    m.save(name + ".keras")
    y = m.predict(x, verbose=0)
    with open(name + ".expected", "w") as f:
        f.write("\n".join("%.9g" % v for v in y.ravel()) + "\n")
    print(name, m.count_params(), "parameters")
