"""What a Python user relies on at run time: memory stays flat over many calls, and Ctrl-C stops
fit with KeyboardInterrupt and leaves the model usable."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import kiln as tf
from kiln import keras

tf.config.threading.set_intra_op_parallelism_threads(1)


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_memory_flat_over_1000_calls():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])

    def round_():
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        model.predict(x, verbose=0)
        model.evaluate(x, y, verbose=0)
    for _ in range(100):
        round_()
    before = rss_mb()
    t0 = time.time()
    for _ in range(900):
        round_()
    grown = rss_mb() - before
    # each round copies nothing it keeps: a leak of even 1 KiB per call would show as ~2.6 MiB here
    assert grown < 2.0, f"RSS grew {grown:.2f} MiB over 900 fit/predict/evaluate rounds ({time.time() - t0:.1f} s)"


def test_ctrl_c_stops_fit_and_model_stays_usable():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4096, 256)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    model = keras.Sequential([keras.Input(shape=(256,)), keras.layers.Dense(512, activation="relu"),
                              keras.layers.Dense(512, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x[:64], y[:64], epochs=1, verbose=0)        # built and warm
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.time()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            model.fit(x, y, epochs=1000, batch_size=64, verbose=0)
    finally:
        timer.cancel()
    assert time.time() - t0 < 30
    p = model.predict(x[:10], verbose=0)
    assert p.shape == (10, 2) and np.isfinite(p).all()
    h = model.fit(x[:256], y[:256], epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"][0])


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_memory_flat_over_many_models():
    import gc
    x = np.random.default_rng(1).random((32, 8), dtype=np.float32)
    y = np.arange(32) % 2

    def one():
        m = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
        m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.fit(x, y, verbose=0)
        m.predict(x, verbose=0)
    for _ in range(300):
        one()
    gc.collect()
    before = rss_mb()
    for _ in range(500):
        one()
    gc.collect()
    grown = rss_mb() - before
    assert grown < 2.0, f"RSS grew {grown:.2f} MiB over 500 models built, trained and freed"
