"""Reference counts: every call into kiln._kiln gives back the references it took. Checked per
object with sys.getrefcount (exact in any CPython build) on what crosses the C boundary — input
arrays, the model, callbacks, None/True/False — and for objects nobody can reach any more with
sys.getallocatedblocks (a leaked reference keeps an object, and its block, alive).

Why not sys.gettotalrefcount under python3.11-dbg: with NumPy's release wheel in a debug
interpreter the total drifts without any leak (np.frombuffer(...).reshape alone adds 3 per call,
measured), because NumPy's own Py_INCREF/DECREF do not count; per-object counts do not drift."""
import gc
import sys

import numpy as np
import pytest

import kiln as tf
from kiln import keras

tf.config.threading.set_intra_op_parallelism_threads(1)


class _Counter(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1


def _check_flat(fn, watch, rounds=200, warm=20):
    """Run fn warm times (caches fill), then rounds times; the watched objects' reference counts
    must not move, and the allocated blocks grow by less than one per round."""
    for _ in range(warm):
        fn()
    gc.collect()
    counts = {k: sys.getrefcount(watch[k]) for k in watch}
    blocks = sys.getallocatedblocks()
    for _ in range(rounds):
        fn()
    gc.collect()
    moved = {k: sys.getrefcount(watch[k]) - c for k, c in counts.items() if sys.getrefcount(watch[k]) != c}
    # None/True/False are shared by everything the interpreter does: a leak would move them by
    # `rounds` or more; a few references held by new cache entries are not one
    leaked = {k: d for k, d in moved.items() if k not in ("None", "True", "False") or abs(d) > 10}
    assert not leaked, f"reference counts moved over {rounds} rounds: {leaked}"
    grown = sys.getallocatedblocks() - blocks
    assert grown < rounds, f"{grown} allocated blocks kept over {rounds} rounds"


def test_fit_predict_evaluate_give_back_their_references():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype(np.float32)
    x64 = x.astype(np.float64)                      # converted on the way in
    y = (x[:, 0] > 0).astype(np.int32)
    model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    cb = _Counter()

    def round_():
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb], validation_data=(x64, y))
        model.predict(x64, verbose=0)
        model.evaluate(x, y, verbose=0)
        model.set_weights(model.get_weights())
    watch = {"x": x, "x64": x64, "y": y, "model": model, "model._c": model._c, "callback": cb,
             "None": None, "True": True, "False": False}
    _check_flat(round_, watch)
    assert cb.batches > 0


def test_models_built_and_freed_give_back_their_references():
    x = np.random.default_rng(1).random((16, 4), dtype=np.float32)
    y = np.arange(16) % 2

    def one():
        inp = keras.Input(shape=(4,))
        h = keras.layers.Dense(8, activation="relu")(inp)
        m = keras.Model(inp, keras.layers.Dense(2)(h))
        m.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.fit(x, y, verbose=0)
        m.to_json()
    _check_flat(one, {"x": x, "y": y, "None": None, "True": True, "False": False}, rounds=100, warm=10)


def test_refused_calls_give_back_their_references():
    model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    bad = np.zeros((4, 7), np.float32)

    def fail():
        with pytest.raises(ValueError):
            model.predict(bad, verbose=0)
    _check_flat(fail, {"bad": bad, "model": model, "None": None})
