"""Issue 29's losses, metrics and sample_weight through the Python front end: Keras's names and
classes resolve to Kiln's (in C), the History and evaluate keys are Keras's names, sample_weight
weighs the training loss (weights 1: the unweighted loss; zeros on half the examples: the loss of
the other half, halved, as Keras's sum_over_batch_size)."""
import numpy as np
import pytest

from kiln import keras


def _data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3)).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 1).astype(np.int32), (x @ np.array([1.0, -2.0, 0.5]) + 0.3).astype(np.float32)


def _model(units, act=None):
    keras.utils.set_random_seed(1)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(units, activation=act)])


def test_metric_names_in_history_and_evaluate():
    x, y, _ = _data()
    m = _model(1, "sigmoid")
    m.compile("adam", "binary_crossentropy", metrics=["accuracy", keras.metrics.AUC(), keras.metrics.Precision(), "recall"])
    h = m.fit(x, y, epochs=2, batch_size=16, validation_data=(x, y), verbose=0)
    assert sorted(h.history) == ["accuracy", "auc", "loss", "precision", "recall",
                                 "val_accuracy", "val_auc", "val_loss", "val_precision", "val_recall"]
    r = m.evaluate(x, y, verbose=0, return_dict=True)
    assert r["auc"] == pytest.approx(h.history["val_auc"][-1], abs=1e-6)
    assert 0 <= r["precision"] <= 1 and 0 <= r["auc"] <= 1


def test_regression_losses_and_metrics():
    x, _, yr = _data()
    for loss in ["mae", keras.losses.Huber(delta=0.5), "log_cosh", keras.losses.MeanAbsoluteError()]:
        m = _model(1)
        m.compile(keras.optimizers.Adam(0.02), loss, metrics=["mae", keras.metrics.RootMeanSquaredError()])
        h = m.fit(x, yr, epochs=8, batch_size=16, verbose=0)
        assert h.history["loss"][-1] < h.history["loss"][0]
        assert h.history["root_mean_squared_error"][-1] >= h.history["mae"][-1] - 1e-9


def test_sample_weight():
    x, _, yr = _data(32)
    losses = []
    for w in (None, np.ones(32), np.r_[np.zeros(16), np.ones(16)]):
        m = _model(1)
        m.compile(keras.optimizers.SGD(1e-12), "mse")
        losses.append(m.fit(x, yr, batch_size=32, epochs=1, shuffle=False, sample_weight=w, verbose=0).history["loss"][0])
    m = _model(1)
    m.compile(keras.optimizers.SGD(1e-12), "mse")
    half = m.evaluate(x[16:], yr[16:], verbose=0)
    assert losses[1] == pytest.approx(losses[0], rel=1e-6)
    assert losses[2] == pytest.approx(half / 2, rel=1e-5)
    with pytest.raises(ValueError, match="one weight per example"):
        m.fit(x, yr, sample_weight=np.ones(5), verbose=0)
