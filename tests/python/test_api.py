"""Errors as Keras raises them, the TensorFlow namespace and devices, weights and files."""
import numpy as np
import pytest

import kiln as tf
from kiln import keras
from kiln.keras import layers

tf.config.threading.set_intra_op_parallelism_threads(1)


def mlp(n_in=4, name=None):
    m = keras.Sequential([keras.Input(shape=(n_in,)), layers.Dense(6, activation="relu"), layers.Dense(3)], name=name)
    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return m


def test_unknown_tf_names_raise_attribute_error():
    for expr, name in [(lambda: tf.Variable, "tf.Variable"), (lambda: tf.keras.layers.LSTM, "keras.layers.LSTM"),
                       (lambda: tf.config.experimental.enable_op_determinism, "tf.config.experimental.enable_op_determinism"),
                       (lambda: tf.keras.optimizers.Nadam, "keras.optimizers.Nadam"),
                       (lambda: tf.distribute.TPUStrategy, "tf.distribute.TPUStrategy")]:
        with pytest.raises(AttributeError, match=name.replace(".", r"\.") + ".*Kiln does not have"):
            expr()
    assert tf.__version__ and tf.keras is keras


def test_bad_shapes_are_value_errors_naming_the_layer():
    with pytest.raises(ValueError, match="conv"):
        keras.Sequential([keras.Input(shape=(8,)), layers.Conv2D(4, 3, name="conv")])
    inp = keras.Input(shape=(4, 4, 2))
    with pytest.raises(ValueError, match="merge"):
        layers.Concatenate(axis=1, name="merge")([layers.Conv2D(3, 1)(inp), layers.Conv2D(3, 3)(inp)])
    m = mlp()
    with pytest.raises(ValueError, match=r"\(None, 4\)"):
        m.predict(np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match="cardinality"):
        m.fit(np.zeros((8, 4)), np.zeros(7), verbose=0)
    with pytest.raises(ValueError, match="class ids"):
        m.fit(np.zeros((8, 4)), np.full(8, 3), verbose=0)


def test_type_errors_and_unsupported_arguments():
    with pytest.raises(TypeError, match="unitz"):
        layers.Dense(unitz=3)
    with pytest.raises(TypeError, match="units"):
        layers.Dense()
    with pytest.raises(TypeError, match="by keyword"):
        layers.BatchNormalization(-1)                 # Keras's first argument is axis, not in Kiln's table
    assert layers.Conv2D(8, 3, 2, "same").padding == "same" and layers.MaxPooling2D((3, 3), 1).strides == 1
    with pytest.raises(TypeError, match="KerasTensor|keras.Input"):
        layers.Dense(3)(np.zeros((2, 2)))
    m = mlp()
    x, y = np.zeros((8, 4), np.float32), np.zeros(8, np.int32)
    with pytest.raises(NotImplementedError, match="sample_weight with validation_split"):
        m.fit(x, y, sample_weight=np.ones(8), validation_split=0.25, verbose=0)
    with pytest.raises(NotImplementedError, match="class_weight"):
        m.fit(x, y, class_weight={0: 1.0, 1: 2.0}, verbose=0)
    with pytest.raises(NotImplementedError, match="clipnorm"):
        keras.optimizers.Adam(clipnorm=1.0)
    with pytest.raises(NotImplementedError, match="metric 'f1_score'"):
        m.compile(optimizer="adam", loss="mse", metrics=["f1_score"])
    with pytest.raises(ValueError, match="loss 'binary_focal_crossentropy'"):
        m.compile(optimizer="adam", loss="binary_focal_crossentropy")
    with pytest.raises(NotImplementedError, match="kernel_constraint"):
        keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2, kernel_constraint={"class_name": "MaxNorm", "config": {}})])
    with pytest.raises(NotImplementedError, match="trainable"):
        m.layers[0].trainable = False
    with pytest.raises(NotImplementedError, match="subclassed"):
        class My(keras.Model):
            def __init__(self):
                super().__init__()
        My()
    with pytest.raises(RuntimeError, match="compile"):
        keras.Sequential([keras.Input(shape=(4,)), layers.Dense(2)]).fit(x, y, verbose=0)


def test_weights_round_trip_and_files(tmp_path):
    x = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    y = np.arange(32) % 3
    a, b = mlp(), mlp()
    a.fit(x, y, epochs=2, verbose=0)
    w = a.get_weights()
    assert [v.shape for v in w] == [(4, 6), (6,), (6, 3), (3,)] and all(v.dtype == np.float32 for v in w)
    assert len(a.weights) == 4 and a.weights[0].path == "dense/kernel" and a.weights[0].name == "kernel"
    np.testing.assert_array_equal(a.layers[0].kernel.numpy(), w[0])
    np.testing.assert_array_equal(np.asarray(a.layers[1].bias), w[3])
    with pytest.raises(NotImplementedError, match="trainable"):
        a.trainable = False
    b.set_weights(w)
    np.testing.assert_array_equal(b.predict(x), a.predict(x))
    np.testing.assert_array_equal(b(x[:2]).numpy(), a.predict(x[:2]))      # model(x).numpy(), as TensorFlow
    for lb, la in zip(b.layers, a.layers):
        lb.set_weights(la.get_weights())
    with pytest.raises(ValueError, match="shape"):
        b.layers[0].set_weights([np.zeros((5, 6)), np.zeros(6)])
    path = str(tmp_path / "model.safetensors")
    a.save(path)
    tf.random.set_seed(5)       # a global seed does not change loaded weights
    try:
        c = keras.models.load_model(path)
    finally:
        tf.random.set_seed(None)
    np.testing.assert_allclose(c.predict(x), a.predict(x), rtol=1e-6)
    assert [l.name for l in c.layers] == [l.name for l in a.layers]
    wpath = str(tmp_path / "w.safetensors")
    a.save_weights(wpath)
    d = mlp()
    d.load_weights(wpath)
    np.testing.assert_allclose(d.predict(x), a.predict(x), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="safetensors"):
        a.save(str(tmp_path / "model.keras"))
    with pytest.raises(NotImplementedError, match="safetensors"):
        a.save_weights(str(tmp_path / "model.weights.h5"))
    e = keras.models.model_from_json(a.to_json())
    assert e.count_params() == a.count_params() and isinstance(e, keras.Sequential)


def test_devices_threads_precision():
    cpus = tf.config.list_physical_devices("CPU")
    assert cpus[0].device_type == "CPU" and cpus[0].name == "/physical_device:CPU:0"
    gpus = tf.config.list_physical_devices("GPU")
    assert len(gpus) == (tf.keras and _n_gpus())
    assert tf.test.is_gpu_available() == bool(gpus)
    assert isinstance(tf.test.is_built_with_cuda(), bool)
    for g in gpus:
        tf.config.experimental.set_memory_growth(g, True)
    tf.debugging.set_log_device_placement(True)
    try:
        mlp().fit(np.zeros((8, 4), np.float32), np.zeros(8, np.int32), verbose=0)
    finally:
        tf.debugging.set_log_device_placement(False)
    strategy = tf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == max(1, len(gpus))
    with tf.device("/gpu:0"):
        m = mlp()
    with tf.device("/cpu:0"):
        m2 = mlp()
    x, y = np.zeros((8, 4), np.float32), np.zeros(8, np.int32)
    m.fit(x, y, verbose=0)
    m2.fit(x, y, verbose=0)
    m3 = mlp()
    with tf.device("/cpu:0"):          # TensorFlow's `with tf.device(...): model.fit(...)`
        m3.fit(x, y, verbose=0)
    assert m3._compile_kw["device"] == "cpu"
    with pytest.raises(ValueError):
        with tf.device("/tpu:0"):
            pass
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
        mlp().fit(x, y, verbose=0)
        keras.mixed_precision.set_global_policy(keras.mixed_precision.Policy("mixed_float16"))
        mlp().fit(x, y, verbose=0)
        with pytest.raises(ValueError, match="Policy 'float16'"):
            keras.mixed_precision.set_global_policy("float16")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    tf.random.set_seed(7)
    keras.utils.set_random_seed(7)
    p1 = mlp().predict(x)
    keras.utils.set_random_seed(7)
    np.testing.assert_array_equal(mlp().predict(x), p1)
    tf.random.set_seed(None)


def _n_gpus():
    from kiln import _kiln
    return _kiln.gpu_count() if _kiln.gpu_available() else 0


def test_to_categorical_and_labels():
    assert keras.utils.to_categorical([0, 2, 1]).tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert keras.utils.to_categorical(np.array([[1], [0]]), num_classes=3).shape == (2, 3)
    m = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(3, activation="softmax")])
    m.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["accuracy"])
    with pytest.raises(ValueError, match="one-hot"):
        m.fit(np.zeros((4, 2)), np.full((4, 3), 1 / 3), verbose=0)


def test_learning_rate_schedules_map_exactly():
    x, y = np.random.default_rng(2).random((64, 4), dtype=np.float32), np.arange(64) % 2
    cases = [(keras.optimizers.schedules.ExponentialDecay(1e-2, 4, 0.5), [1e-2 * 0.5 ** (s / 4) for s in (3, 7, 11)]),
             (keras.optimizers.schedules.ExponentialDecay(1e-2, 4, 0.5, staircase=True), [1e-2, 5e-3, 2.5e-3]),
             (keras.optimizers.schedules.CosineDecay(1e-2, 12, alpha=0.1),
              [1e-2 * (0.9 * 0.5 * (1 + np.cos(np.pi * s / 12)) + 0.1) for s in (3, 7, 11)])]
    for sched, want in cases:
        m = keras.Sequential([keras.layers.Dense(2)])
        m.compile(optimizer=keras.optimizers.Adam(sched), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.evaluate(x, y, verbose=0)                          # before the first fit: compiled at the initial rate
        h = m.fit(x, y, batch_size=16, epochs=3, verbose=0)      # 4 steps per epoch; Keras's lr at each epoch's last step
        assert [d["lr"] for d in h.kiln_logs] == pytest.approx(want, rel=1e-5)
    with pytest.raises(NotImplementedError, match="compile again"):
        m.fit(x, y, batch_size=8, epochs=3, verbose=0)
    with pytest.raises(NotImplementedError, match="decay_steps"):
        m2 = keras.Sequential([keras.layers.Dense(2)])
        m2.compile(optimizer=keras.optimizers.SGD(keras.optimizers.schedules.CosineDecay(1e-2, 5)), loss="mse")
        m2.fit(x, y, batch_size=16, epochs=3, verbose=0)


def test_initial_epoch_steps_per_epoch_and_small_data():
    x, y = np.random.default_rng(4).random((100, 4), dtype=np.float32), np.arange(100) % 3
    m = mlp()
    h = m.fit(x, y, epochs=3, initial_epoch=1, verbose=0)
    assert h.epoch == [1, 2] and len(h.history["loss"]) == 2
    assert m.fit(x, y, epochs=0, verbose=0).history == {}
    h = m.fit(x, y, epochs=2, steps_per_epoch=2, batch_size=10, verbose=0)
    assert h.params["steps"] == 2 and [d["steps"] for d in h.kiln_logs] == [2, 2]
    h = m.fit(x[:10], y[:10], epochs=1, batch_size=1, validation_split=0.25, verbose=0)
    assert h.params["steps"] == 8 == h.kiln_logs[0]["steps"]            # Keras keeps ceil(10 * 0.75) = 8
    h = m.fit(x[:5], y[:5], batch_size=32, epochs=1, verbose=0)      # fewer examples than a batch: one step of all
    assert h.params["steps"] == 1 and np.isfinite(h.history["loss"][0])


def test_mirrored_strategy_passes_devices_all(monkeypatch):
    from kiln import _kiln
    m = None
    monkeypatch.setattr(_kiln, "gpu_available", lambda: True)
    monkeypatch.setattr(_kiln, "gpu_count", lambda: 4)
    strategy = tf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 4
    assert len(tf.config.list_physical_devices("GPU")) == 4
    with strategy.scope():
        m = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(2)])
    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))   # outside the scope

    class Spy:
        def __init__(self, c):
            self.c, self.kw = c, None

        def __getattr__(self, name):
            return getattr(self.c, name)

        def fit(self, *args, **kw):
            self.kw = dict(kw)
            return self.c.fit(*args, **{**kw, "devices": None})     # this machine: one replica
    m._c = spy = Spy(m._c)
    m.fit(np.zeros((8, 4), np.float32), np.zeros(8, np.int32), verbose=0)
    assert spy.kw["devices"] == "all"
    assert tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])._fit_devices() == "gpu:0,gpu:1"


def test_learning_rate_assignment_before_training():
    m = mlp()
    m.optimizer.learning_rate = 0.5
    h = m.fit(np.zeros((8, 4), np.float32), np.zeros(8, np.int32), verbose=0)
    assert h.kiln_logs[-1]["lr"] == pytest.approx(0.5)


def test_array_conversions_as_keras():
    m = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(1, activation="sigmoid")])
    m.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    xu8 = np.array([[0, 128, 255], [3, 2, 1]], dtype=np.uint8)
    np.testing.assert_array_equal(m.predict(xu8), m.predict(xu8.astype(np.float32)))   # uint8 is not scaled
    xf = np.asfortranarray(np.random.default_rng(0).random((16, 3)))                    # float64, Fortran order
    yf = (xf[:, :1] > 0.5).astype(np.float64)                                            # (N, 1) float 0/1 labels
    h = m.fit(xf, yf, epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"][0])
    assert m.evaluate(xf.tolist(), yf.ravel().tolist(), verbose=0)[1] >= 0.0            # lists too
    with pytest.raises(ValueError, match="0 or 1"):
        m.fit(xf, np.full(16, 0.3), verbose=0)
    with pytest.raises(TypeError, match="generators"):
        m.fit((v for v in range(3)), None, verbose=0)
