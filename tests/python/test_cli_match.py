"""Python's model.fit and `kiln train` on the same model (Keras JSON), data (npz), seed and
settings give the same weights, bit for bit: Python adds nothing to training."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import kiln as tf
from kiln import keras


@pytest.fixture
def kiln_cli():
    """The kiln executable: $KILN_CLI, the checkout's build/kiln, or `kiln` on PATH; else skip."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for exe in (os.environ.get("KILN_CLI"), os.path.join(repo, "build", "kiln"), shutil.which("kiln")):
        if exe and os.path.isfile(exe) and os.access(exe, os.X_OK):
            return exe
    pytest.skip("no kiln executable (bash scripts/build.sh, or set KILN_CLI)")


def test_fit_matches_kiln_train(tmp_path, kiln_cli):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 8)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    np.savez(tmp_path / "d.npz", x_train=x, y_train=y, x_test=x[:32], y_test=y[:32])
    tf.random.set_seed(3)
    try:
        m = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
        (tmp_path / "m.json").write_text(m.to_json())
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.fit(x, y, batch_size=16, epochs=2, verbose=0)
    finally:
        tf.random.set_seed(None)
    ckpt = tmp_path / "c.safetensors"
    r = subprocess.run([kiln_cli, "train", "--model-file", str(tmp_path / "m.json"), "--data", f"npz:{tmp_path / 'd.npz'}",
                        "--epochs", "2", "--batch-size", "16", "--seed", "3", "--optimizer", "sgd", "--lr", "0.1",
                        "--threads", "1", "--save", str(ckpt)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    c = keras.models.load_model(str(ckpt))
    for a, b in zip(m.get_weights(), c.get_weights()):
        np.testing.assert_array_equal(a, b)
