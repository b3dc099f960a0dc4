"""The seed programs with only the import changed, and a Keras-style convnet on Fashion-MNIST."""
import numpy as np
import pytest

import kiln as tf
from kiln import keras

tf.config.threading.set_intra_op_parallelism_threads(1)


def circle_data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 4)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0.1).astype(np.int64)
    return x, y


def test_seed_mirrored_strategy_program(capsys):
    x_train, y_train = circle_data(1000)
    # --- the seed program, as printed, with `import tensorflow as tf` -> `import kiln as tf`
    print(tf.test.is_gpu_available())
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        model = tf.keras.models.Sequential([tf.keras.layers.Dense(10, activation='relu'), tf.keras.layers.Dense(1, activation='sigmoid')])
    model.compile(optimizer='adam', loss='binary_crossentropy', metrics=['accuracy'])
    model.fit(x_train, y_train, epochs=10)
    # ---
    out = capsys.readouterr().out
    assert out.splitlines()[0] in ("True", "False")
    assert strategy.num_replicas_in_sync >= 1
    h = model.history.history
    assert sorted(h) == ["accuracy", "loss"]
    assert len(h["loss"]) == 10 and h["loss"][-1] < h["loss"][0]
    assert h["accuracy"][-1] > 0.75
    p = model.predict(x_train[:5], verbose=0)
    assert p.shape == (5, 1) and p.dtype == np.float32 and ((p >= 0) & (p <= 1)).all()


def test_keras3_style_program():
    x, y = circle_data(600, seed=1)
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    hist = model.fit(x, y, batch_size=32, epochs=8, validation_split=0.2, verbose=0)
    assert set(hist.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert hist.epoch == list(range(8)) and hist.params["epochs"] == 8
    loss, acc = model.evaluate(x, y, verbose=0)
    assert model.metrics_names == ["loss", "accuracy"]
    assert acc > 0.8 and loss < 0.6
    assert set(model.evaluate(x, y, verbose=0, return_dict=True)) == {"loss", "accuracy"}


def _fashion():
    try:
        return keras.datasets.fashion_mnist.load_data()
    except FileNotFoundError as e:
        pytest.skip(str(e))


def test_datasets_shapes_and_missing(tmp_path):
    (xtr, ytr), (xte, yte) = _fashion()
    assert xtr.shape == (60000, 28, 28) and xtr.dtype == np.uint8
    assert ytr.shape == (60000,) and ytr.dtype == np.uint8 and yte.shape == (10000,) and xte.shape == (10000, 28, 28)
    with pytest.raises(FileNotFoundError, match="KILN_DATASETS"):
        keras.datasets.mnist.load_data(path=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="cifar10"):
        keras.datasets.cifar10.load_data(path=str(tmp_path))


def test_datasets_from_kiln_datasets_folder(tmp_path, monkeypatch):
    import gzip
    import struct
    d = tmp_path / "mnist"
    d.mkdir()
    rng = np.random.default_rng(0)
    imgs = {"train": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8), "t10k": rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)}
    for split, im in imgs.items():
        with gzip.open(d / f"{split}-images-idx3-ubyte.gz", "wb") as f:
            f.write(struct.pack(">IIII", 0x803, len(im), 28, 28) + im.tobytes())
        (d / f"{split}-labels-idx1-ubyte").write_bytes(struct.pack(">II", 0x801, len(im)) + bytes(range(len(im))))
    c = tmp_path / "cifar10"
    c.mkdir()
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        (c / name).write_bytes(b"".join(bytes([k]) + bytes([k * 10 % 256]) * 3072 for k in range(2)))
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path))
    (xtr, ytr), (xte, yte) = keras.datasets.mnist.load_data()
    assert xtr.shape == (5, 28, 28) and xtr.dtype == np.uint8 and (xtr == imgs["train"]).all()
    assert ytr.tolist() == [0, 1, 2, 3, 4] and xte.shape == (3, 28, 28) and yte.shape == (3,)
    (xtr, ytr), (xte, yte) = keras.datasets.cifar10.load_data()
    assert xtr.shape == (10, 32, 32, 3) and ytr.shape == (10, 1) and xte.shape == (2, 32, 32, 3) and yte.shape == (2, 1)
    assert xtr.dtype == np.uint8 and ytr[:2, 0].tolist() == [0, 1] and xtr[1].max() == 10


def test_fashion_mnist_convnet():
    (x_train, y_train), (x_test, y_test) = _fashion()
    x_train, y_train = x_train[:12000], y_train[:12000]
    x_train = x_train.reshape(-1, 28, 28, 1) / 255.0
    x_test = x_test[:2000].reshape(-1, 28, 28, 1) / 255.0
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1)),
        tf.keras.layers.MaxPooling2D((2, 2)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, epochs=2, batch_size=64, verbose=0)
    test_loss, test_acc = model.evaluate(x_test, y_test[:2000], verbose=0)
    assert test_acc > 0.80, test_acc
    probs = model.predict(x_test[:8])
    assert probs.shape == (8, 10) and np.allclose(probs.sum(axis=1), 1, atol=1e-4)


def test_categorical_one_hot_and_mse():
    x, y = circle_data(400, seed=2)
    m = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)), keras.layers.Dense(2, activation="softmax")])
    m.compile("adam", "categorical_crossentropy", metrics=["acc"])
    h = m.fit(x, keras.utils.to_categorical(y, 2), epochs=2, verbose=0)
    assert "acc" in h.history
    r = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    r.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss="mse")
    target = (x[:, 0] * 2.0 + 0.5).astype(np.float64)
    h = r.fit(x, target, epochs=5, verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert isinstance(r.evaluate(x, target, verbose=0), float)


def test_keras3_mnist_convnet_example():
    """keras.io's "Simple MNIST convnet" as written (import line and data subset changed), on Fashion-MNIST."""
    import kiln.keras as keras
    from kiln.keras import layers
    (x_train, y_train), (x_test, y_test) = _fashion()
    x_train, y_train, x_test, y_test = x_train[:6000], y_train[:6000], x_test[:1000], y_test[:1000]
    num_classes = 10
    input_shape = (28, 28, 1)
    x_train = x_train.astype("float32") / 255
    x_test = x_test.astype("float32") / 255
    x_train = np.expand_dims(x_train, -1)
    x_test = np.expand_dims(x_test, -1)
    y_train = keras.utils.to_categorical(y_train, num_classes)
    y_test = keras.utils.to_categorical(y_test, num_classes)
    model = keras.Sequential([
        keras.Input(shape=input_shape),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ])
    model.summary()
    batch_size = 128
    epochs = 2
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_split=0.1, verbose=0)
    score = model.evaluate(x_test, y_test, verbose=0)
    print("Test loss:", score[0])
    print("Test accuracy:", score[1])
    assert score[1] > 0.7


def test_tf_keras_2_style_program(capfd):
    """tf.keras 2 idioms: input_dim, InputLayer(input_shape=), optimizer lr=, verbose=2, fit_generator gone."""
    x, y = circle_data(300, seed=4)
    model = tf.keras.models.Sequential()
    model.add(tf.keras.layers.Dense(12, input_dim=4, activation="relu"))
    model.add(tf.keras.layers.Dense(1, activation="sigmoid"))
    model.compile(loss="binary_crossentropy", optimizer=tf.keras.optimizers.Adam(lr=0.01), metrics=["accuracy"])
    model.fit(x, y, epochs=3, batch_size=10, verbose=2)
    _, accuracy = model.evaluate(x, y, verbose=0)
    assert accuracy > 0.8
    assert "Epoch 3/3" in capfd.readouterr().out            # Kiln prints from C, on file descriptor 1
    m2 = tf.keras.Sequential([tf.keras.layers.InputLayer(input_shape=(4,)), tf.keras.layers.Dense(2)])
    m3 = tf.keras.Sequential([tf.keras.layers.Dense(2, batch_input_shape=(None, 4))])
    assert m2.input_shape == m3.input_shape == (None, 4)
    with pytest.raises(AttributeError, match="fit_generator"):
        model.fit_generator
    predictions = (model.predict(x[:10]) > 0.5).astype("int32")
    assert predictions.shape == (10, 1)
