"""Keras-made recurrent models for tests/keras/test_keras_rnn.sh: SimpleRNN, LSTM, GRU (reset_after
True and False), go_backwards, stacked return_sequences and Bidirectional (each merge mode), their
weights moved off their initial values (so LSTM's forget-gate bias and GRU's two biases matter),
each saved as NAME.keras, NAME.h5 (legacy HDF5), NAME.weights.h5 and NAME.json, with inputs
x_NAME.f32 and Keras's predictions y_NAME.npy. Prints the names. Usage: make_rnn_models.py OUTDIR"""
import os, sys, warnings
import numpy as np
import keras
from keras import layers as L

warnings.filterwarnings("ignore")
out = sys.argv[1]
keras.utils.set_random_seed(29)
T, F = 7, 3


def seq(name, *ls):
    return keras.Sequential([keras.Input((T, F))] + list(ls), name=name)


def models():
    yield seq("rnn_simple", L.SimpleRNN(5), L.Dense(2))
    yield seq("rnn_lstm", L.LSTM(4, return_sequences=True), L.LSTM(3, go_backwards=True), L.Dense(2))
    yield seq("rnn_gru", L.GRU(4, return_sequences=True, go_backwards=True), L.GRU(3, reset_after=False),
              L.Dense(2))
    yield seq("rnn_stack", L.SimpleRNN(4, return_sequences=True, activation="sigmoid"), L.LSTM(3, return_sequences=True,
              recurrent_activation="hard_sigmoid", unit_forget_bias=False), L.GRU(2, return_sequences=True, use_bias=False), L.Flatten())
    yield seq("rnn_bidir", L.Bidirectional(L.LSTM(3, return_sequences=True)), L.Bidirectional(L.GRU(2), merge_mode="sum"), L.Dense(2))
    inp = keras.Input((T, F))
    a = L.Bidirectional(L.SimpleRNN(3, return_sequences=True), merge_mode="mul")(inp)
    b = L.Bidirectional(L.LSTM(3, return_sequences=True), merge_mode="ave")(inp)
    yield keras.Model(inp, L.Dense(2)(L.Bidirectional(L.GRU(2))(L.Concatenate()([a, b]))), name="rnn_func")


rng = np.random.RandomState(1)
names = []
for m in models():
    x = rng.randn(6, T, F).astype(np.float32)
    # random weights (not only the initial ones: the biases start at zeros and ones)
    for w in m.weights:
        w.assign(rng.uniform(-0.6, 0.6, w.shape).astype(np.float32))
    y = m.predict(x, verbose=0)
    n = m.name
    m.save(os.path.join(out, n + ".keras"))
    m.save(os.path.join(out, n + ".h5"))
    m.save_weights(os.path.join(out, n + ".weights.h5"))
    with open(os.path.join(out, n + ".json"), "w") as f:
        f.write(m.to_json())
    x.tofile(os.path.join(out, "x_%s.f32" % n))
    np.save(os.path.join(out, "y_%s.npy" % n), y)
    names.append(n)
print(" ".join(names))
