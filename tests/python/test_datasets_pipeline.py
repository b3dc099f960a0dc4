"""Files Kiln reads itself, handed to fit as Kiln pipelines (C threads): image folders through
keras.utils.image_dataset_from_directory, and tf.data's names that apply."""
import struct
import zlib

import numpy as np
import pytest

import kiln as tf
from kiln import keras


def _png(path, a):
    h, w, c = a.shape
    raw = b"".join(b"\x00" + a[i].tobytes() for i in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


@pytest.fixture
def folder(tmp_path):
    """Two classes of 16x16 RGB images, one red-ish, one green-ish: separable."""
    rng = np.random.default_rng(0)
    for c, name in enumerate(["cat", "dog"]):
        (tmp_path / name).mkdir()
        for i in range(40):
            a = rng.integers(0, 80, (16, 16, 3), dtype=np.uint8)
            a[..., c] += 150
            _png(tmp_path / name / f"{i:03d}.png", a)
    return tmp_path


def test_image_dataset_trains_in_c(folder, capsys):
    train, val = keras.utils.image_dataset_from_directory(folder, image_size=(16, 16), batch_size=8, seed=1,
                                                          validation_split=0.25, subset="both")
    out = capsys.readouterr().out
    assert "Found 80 files belonging to 2 classes." in out and "Using 60 files for training." in out
    assert train.class_names == ["cat", "dog"] and len(train) == 8 and len(val) == 3
    x, y = next(iter(val))
    assert x.dtype == np.float32 and x.shape == (8, 16, 16, 3) and x.max() > 1.5      # 0..255, as Keras
    assert y.dtype == np.int32 and set(y.tolist()) <= {0, 1}
    # pixels 0..255: normalised inside the model (Keras would use Rescaling(1/255) just as well)
    model = keras.Sequential([keras.layers.Flatten(), keras.layers.BatchNormalization(momentum=0.5), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    h = model.fit(train.prefetch(tf.data.AUTOTUNE), validation_data=val, epochs=8, verbose=0)
    assert sorted(h.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert h.history["val_accuracy"][-1] >= 0.9, h.history
    loss, acc = model.evaluate(val, verbose=0)
    assert acc == pytest.approx(h.history["val_accuracy"][-1])
    assert model.predict(val).shape == (20, 2)


def test_dataset_rules(folder):
    ds = keras.utils.image_dataset_from_directory(folder, image_size=(16, 16), batch_size=None, verbose=False)
    with pytest.raises(NotImplementedError, match="does not resize"):
        keras.utils.image_dataset_from_directory(folder, verbose=False)          # Keras's default 256x256
    with pytest.raises(NotImplementedError, match="channel"):
        keras.utils.image_dataset_from_directory(folder, image_size=(16, 16), color_mode="grayscale", verbose=False)
    b = ds.batch(4)                      # a transform consumes the dataset it is called on
    with pytest.raises(ValueError, match="consumed"):
        len(ds)
    assert len(b) == 20
    with pytest.raises(NotImplementedError, match="already batched"):
        b.batch(2)
    assert len(b) == 20                  # a refused transform loses nothing
    m = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(2)])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="y must not be given"):
        m.fit(b, np.zeros(80), verbose=0)
    with pytest.raises(NotImplementedError, match="map"):
        b.map(lambda x, y: (x, y))
    with pytest.raises(AttributeError, match="tf.data.from_generator"):
        tf.data.from_generator


def test_csv_and_npz_datasets(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.random((200, 3)).astype(np.float32)
    y = (x[:, 0] > 0.5).astype(np.int64)
    np.savetxt(tmp_path / "d.csv", np.column_stack([x, y]), delimiter=",", header="a,b,c,label", comments="")
    np.savez(tmp_path / "d.npz", x_train=x, y_train=y, x_test=x[:50], y_test=y[:50])
    for train, test in ((tf.data.csv_dataset(tmp_path / "d.csv", batch_size=20, seed=1), None),
                        (tf.data.npz_dataset(tmp_path / "d.npz", batch_size=20, seed=1),
                         tf.data.npz_dataset(tmp_path / "d.npz", split="test", batch_size=25))):
        assert len(train) == 10
        m = keras.Sequential([keras.layers.Dense(2, activation="softmax")])
        m.compile(optimizer=keras.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        h = m.fit(train, epochs=15, verbose=0, validation_data=test)
        assert h.history["accuracy"][-1] > 0.85, h.history
        if test is not None:
            assert "val_accuracy" in h.history
