"""Callbacks: a Keras Callback subclass sees Keras's order of calls; stop_training; Kiln's C
callbacks EarlyStopping, ModelCheckpoint, CSVLogger, TensorBoard; LambdaCallback; exceptions."""
import csv
import os

import numpy as np
import pytest

import kiln as tf
from kiln import keras

tf.config.threading.set_intra_op_parallelism_threads(1)


def data(n=64):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int32)


def small_model(metrics=("accuracy",)):
    m = keras.Sequential([keras.Input(shape=(5,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=list(metrics))
    return m


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.events = []

    def on_train_begin(self, logs=None): self.events.append("train_begin")
    def on_train_end(self, logs=None): self.events.append("train_end")
    def on_epoch_begin(self, epoch, logs=None): self.events.append(f"epoch_begin {epoch}")

    def on_epoch_end(self, epoch, logs=None):
        self.events.append(f"epoch_end {epoch}")
        self.last_logs = dict(logs)

    def on_train_batch_begin(self, batch, logs=None): self.events.append(f"batch_begin {batch}")

    def on_train_batch_end(self, batch, logs=None):
        self.events.append(f"batch_end {batch}")
        assert "loss" in logs and "accuracy" in logs


def test_custom_callback_order_and_logs():
    x, y = data(64)
    m, rec = small_model(), Recorder()
    m.fit(x, y, batch_size=16, epochs=2, callbacks=[rec], verbose=0)
    want = ["train_begin"]
    for e in range(2):
        want.append(f"epoch_begin {e}")
        for b in range(4):
            want += [f"batch_begin {b}", f"batch_end {b}"]
        want.append(f"epoch_end {e}")
    want.append("train_end")
    assert rec.events == want
    assert set(rec.last_logs) == {"loss", "accuracy"}
    assert rec.model is m and rec.params["epochs"] == 2 and rec.params["steps"] == 4


def test_epoch_only_callback_and_validation_logs():
    x, y = data(80)
    seen = []
    cb = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append((epoch, sorted(logs))))
    m = small_model()
    h = m.fit(x, y, batch_size=16, epochs=3, validation_data=(x[:20], y[:20]), callbacks=[cb], verbose=0)
    assert seen == [(e, ["accuracy", "loss", "val_accuracy", "val_loss"]) for e in range(3)]
    assert h.history["val_loss"] == pytest.approx([v for v in h.history["val_loss"]])


class StopAt(keras.callbacks.Callback):
    def __init__(self, epoch=None, batch=None):
        super().__init__()
        self.epoch, self.batch = epoch, batch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            self.model.stop_training = True

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.batch:
            self.model.stop_training = True


def test_stop_training():
    x, y = data(64)
    m = small_model()
    h = m.fit(x, y, batch_size=16, epochs=10, callbacks=[StopAt(epoch=1)], verbose=0)
    assert len(h.history["loss"]) == 2
    h = m.fit(x, y, batch_size=16, epochs=10, callbacks=[StopAt(batch=1)], verbose=0)
    assert len(h.history["loss"]) <= 1


def test_exception_in_callback_propagates_and_model_stays_usable():
    class Boom(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError("boom from callback")
    x, y = data(64)
    m = small_model()
    with pytest.raises(RuntimeError, match="boom from callback"):
        m.fit(x, y, epochs=3, callbacks=[Boom()], verbose=0)
    assert m.predict(x[:3]).shape == (3, 2)
    m.fit(x, y, epochs=1, verbose=0)


def test_early_stopping():
    x, y = data(64)
    m = small_model()
    es = keras.callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=10.0)
    h = m.fit(x, y, epochs=20, callbacks=[es], verbose=0)
    assert len(h.history["loss"]) == 2
    # restore_best_weights runs in Python (Keras's rules): back to epoch 0's weights when it stops
    snaps = []
    rec = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: snaps.append(m.get_weights()))
    es = keras.callbacks.EarlyStopping(monitor="loss", patience=1, min_delta=10.0, restore_best_weights=True)
    h = m.fit(x, y, epochs=20, callbacks=[rec, es], verbose=0)
    assert len(h.history["loss"]) == 2 and es.stopped_epoch == 1 and es.best_epoch == 0
    for a, b in zip(m.get_weights(), snaps[0]):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="monitor 'val_auc'"):
        m.fit(x, y, epochs=1, callbacks=[keras.callbacks.EarlyStopping(monitor="val_auc")], verbose=0)


def test_model_checkpoint_csv_logger_tensorboard(tmp_path):
    x, y = data(64)
    m = small_model()
    pattern = str(tmp_path / "ckpt-{epoch:02d}.safetensors")
    csv_path = tmp_path / "history.csv"
    cbs = [keras.callbacks.ModelCheckpoint(pattern, monitor="loss"), keras.callbacks.CSVLogger(str(csv_path)),
           keras.callbacks.TensorBoard(log_dir=str(tmp_path / "logs"))]
    m.fit(x, y, epochs=2, callbacks=cbs, verbose=0)
    assert sorted(os.listdir(tmp_path)) == ["ckpt-01.safetensors", "ckpt-02.safetensors", "history.csv", "logs"]
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and "loss" in rows[0] and "epoch" in rows[0]
    assert any(f.startswith("events") for f in os.listdir(tmp_path / "logs" / "train"))
    restored = keras.models.load_model(str(tmp_path / "ckpt-02.safetensors"))
    np.testing.assert_allclose(restored.predict(x), m.predict(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="safetensors"):
        keras.callbacks.ModelCheckpoint(str(tmp_path / "best.keras"))


def test_learning_rate_scheduler():
    x, y = data(64)
    m = small_model(metrics=())
    seen, calls = [], []

    def schedule(epoch, lr):
        calls.append((epoch, lr))
        return lr * 0.5
    rec = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(logs["learning_rate"]))
    h = m.fit(x, y, epochs=3, callbacks=[keras.callbacks.LearningRateScheduler(schedule), rec], verbose=0)
    assert [e for e, _ in calls] == [0, 1, 2] and [lr for _, lr in calls] == pytest.approx([1e-3, 5e-4, 2.5e-4])
    assert seen == pytest.approx([5e-4, 2.5e-4, 1.25e-4]) and h.history["learning_rate"] == pytest.approx(seen)
    assert list(h.history) == ["loss", "learning_rate"]
    assert float(m.optimizer.learning_rate) == pytest.approx(1.25e-4)
    one_arg = keras.callbacks.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1))
    h = m.fit(x, y, epochs=2, callbacks=[one_arg], verbose=0)
    assert h.history["learning_rate"] == pytest.approx([0.1, 0.05])


def test_reduce_lr_on_plateau():
    x, y = data(64)
    m = small_model(metrics=())
    cb = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=0, min_delta=10.0)
    h = m.fit(x, y, epochs=3, callbacks=[cb], verbose=0)
    assert h.history["learning_rate"] == pytest.approx([1e-3, 1e-3, 5e-4])     # the rate each epoch trained with
    assert float(m.optimizer.learning_rate) == pytest.approx(2.5e-4)
    m.optimizer.learning_rate = 0.01                                           # a trained model takes it too
    assert [d["lr"] for d in m.fit(x, y, epochs=1, verbose=0).kiln_logs] == pytest.approx([0.01])
