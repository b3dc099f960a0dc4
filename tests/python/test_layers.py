"""Every layer class generated from Kiln's layer table, constructed with Keras's arguments and run
in a tiny model; functional models (multi-branch, Concatenate, Add); the layer-table contract."""
import json
import inspect

import numpy as np
import pytest

import kiln as tf
from kiln import keras
from kiln.keras import layers
from kiln import _kiln

tf.config.threading.set_intra_op_parallelism_threads(1)
TABLE = json.loads(_kiln.layer_classes())
SAMPLE = {"int": 4, "int2": 2, "int1": 2, "float": 0.25, "bool": True, "seed": 3, "shape": [-1], "activation": "relu",
          "padding": "same", "initializer": "he_normal"}


def required_args(c):
    return [SAMPLE[o["type"]] for o in c["options"] if o["required"]]


def run_tiny(model, in_shape):
    x = np.random.default_rng(0).normal(size=(16,) + in_shape).astype(np.float32)
    y = np.arange(16) % 2
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(h.history["loss"][0])
    p = model.predict(x)
    assert p.shape == (16, 2) and p.dtype == np.float32


def _ids_model(first, in_shape=(6,)):
    """Token ids (floats, as Kiln's inputs are) through `first`, then Flatten and Dense(2)."""
    inp = keras.Input(shape=in_shape)
    return keras.Model(inp, layers.Dense(2)(layers.Flatten()(first(inp))))


def _run_ids(model, in_shape, vocab):
    x = np.random.default_rng(0).integers(0, vocab, size=(16,) + in_shape).astype(np.float32)
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert np.isfinite(model.fit(x, np.arange(16) % 2, batch_size=8, epochs=1, verbose=0).history["loss"][0])
    assert model.predict(x).shape == (16, 2)


# layers on token ids or sequences (None, T, features): their own tiny models
SEQUENCE_LAYERS = {
    "Embedding": lambda cls, c: _run_ids(_ids_model(lambda t: cls(*required_args(c))(t)), (6,), 4),
    "MultiHeadAttention": lambda cls, c: _run_ids(_ids_model(
        lambda t: (lambda e: cls(*required_args(c))(e, e, use_causal_mask=True))(layers.Embedding(4, 8)(t))), (6,), 4),
    "PositionEmbedding": lambda cls, c: _run_ids(_ids_model(lambda t: cls(6)(layers.Embedding(4, 8)(t))), (6,), 4),
    "SimpleRNN": lambda cls, c: _run_ids(_ids_model(lambda t: cls(4, return_sequences=True)(layers.Embedding(4, 8)(t))), (6,), 4),
    "LSTM": lambda cls, c: _run_ids(_ids_model(lambda t: cls(4)(layers.Embedding(4, 8)(t))), (6,), 4),
    "GRU": lambda cls, c: _run_ids(_ids_model(lambda t: cls(4, go_backwards=True)(layers.Embedding(4, 8)(t))), (6,), 4),
    "Bidirectional": lambda cls, c: _run_ids(_ids_model(
        lambda t: cls(layers.LSTM(3, return_sequences=True), merge_mode="sum")(layers.Embedding(4, 8)(t))), (6,), 4),
    "GPTBlock": lambda cls, c: _run_ids(_ids_model(lambda t: cls(2)(layers.Embedding(4, 8)(t))), (6,), 4),
    # the logits of the hidden sequence against the Embedding's own matrix (weight tying)
    "TiedOutput": lambda cls, c: _run_ids(_ids_model(lambda t: (lambda e: cls()([e, e]))(layers.Embedding(4, 8)(t))), (6,), 4),
    # projection_dim must be the input's channels
    "LayerScale": lambda cls, c: run_tiny(keras.Sequential([keras.Input(shape=(6, 6, 3)), cls(0.5, 3), layers.Flatten(), layers.Dense(2)]), (6, 6, 3)),
}


@pytest.mark.parametrize("c", TABLE, ids=[c["class_name"] for c in TABLE])
def test_every_generated_layer_runs(c):
    cls = getattr(layers, c["class_name"])
    assert cls.__name__ == c["class_name"] and issubclass(cls, layers.Layer)
    sig = inspect.signature(cls)
    # Keras's order; a required option after optional ones is keyword-only (Python's rule)
    names = [p.name for p in sig.parameters.values() if p.kind != p.VAR_KEYWORD]
    assert sorted(names) == sorted(o["name"] for o in c["options"])
    positional = [p.name for p in sig.parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD]
    assert positional == [o["name"] for o in c["options"] if o["name"] in positional]
    if c["class_name"].endswith("1D"):      # [batch, steps, channels]
        run_tiny(keras.Sequential([keras.Input(shape=(8, 3)), cls(*required_args(c)), layers.Flatten(), layers.Dense(2)]), (8, 3))
        return
    if c["class_name"] in SEQUENCE_LAYERS:
        SEQUENCE_LAYERS[c["class_name"]](cls, c)
        return
    if c["max_inputs"] != 1:
        # merge layer: two branches of one input
        inp = keras.Input(shape=(6, 6, 3))
        a = layers.Conv2D(4, 3, padding="same")(inp)
        b = layers.Conv2D(4, 1)(inp)
        merged = cls(*required_args(c))([a, b])
        out = layers.Dense(2)(layers.Flatten()(merged))
        run_tiny(keras.Model(inp, out), (6, 6, 3))
        return
    last = None
    for in_shape in ((6, 6, 3), (6,)):     # images first; Dense-like layers on vectors
        try:
            model = keras.Sequential([keras.Input(shape=in_shape), cls(*required_args(c)), layers.Flatten(), layers.Dense(2)])
        except ValueError as e:
            last = e
            continue
        run_tiny(model, in_shape)
        return
    raise last


def test_keras_arguments_and_defaults():
    d = layers.Dense(8, activation="relu", use_bias=False, kernel_initializer=keras.initializers.HeNormal(seed=1),
                     kernel_regularizer=keras.regularizers.l2(1e-4), name="hidden")
    assert d.units == 8 and d.activation == "relu" and d.name == "hidden"
    cfg = d.get_config()
    assert cfg["units"] == 8 and cfg["use_bias"] is False and cfg["kernel_initializer"]["class_name"] == "HeNormal"
    assert layers.Dense(3).activation == "linear"
    c = layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same", input_shape=(8, 8, 1))
    assert c.kernel_size == [3, 3] and c.strides == [2, 2]
    m = keras.Sequential([c, layers.MaxPooling2D(), layers.Flatten(), d, layers.Dense(2)])
    assert m.built and m.input_shape == (None, 8, 8, 1)
    assert [l.name for l in m.layers] == ["conv2d", "max_pooling2d", "flatten", "hidden", "dense"]
    assert m.layers[0].output_shape == (None, 4, 4, 16)
    assert m.count_params() == sum(l.count_params() for l in m.layers)
    assert [w.path for w in m.layers[3].weights] == ["hidden/kernel"]
    assert layers.Convolution2D is layers.Conv2D and layers.MaxPool2D is layers.MaxPooling2D


def test_functional_multi_branch_concatenate_add():
    inp = keras.Input(shape=(8,), name="features")
    a = layers.Dense(16, activation="relu")(inp)
    b = layers.Dense(16, activation="tanh")(inp)
    s = layers.Add()([a, b])
    c = layers.concatenate([s, layers.Dense(4)(inp)])
    assert c.shape == (None, 20)
    out = layers.Dense(3, activation="softmax")(layers.Dropout(0.1)(c))
    model = keras.Model(inputs=inp, outputs=out, name="branchy")
    assert model.name == "branchy" and model.output_shape == (None, 3)
    assert [type(l).__name__ for l in model.layers][0] == "InputLayer" and model.layers[0].name == "features"
    assert '"features"' in model.to_json()
    x = np.random.default_rng(1).normal(size=(96, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0).astype(np.int32)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    h = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert len(h.history["accuracy"]) == 3
    assert model.predict(x[:4]).shape == (4, 3)
    # a sub-model over the trained layers: Kiln copies their weights into it (no shared layers)
    feat = keras.Model(inp, s)
    (w1, b1), (w2, b2) = model.layers[1].get_weights(), model.layers[2].get_weights()
    want = np.maximum(x @ w1 + b1, 0) + np.tanh(x @ w2 + b2)
    np.testing.assert_allclose(feat.predict(x), want, rtol=1e-4, atol=1e-5)
    assert len(feat.get_weights()) == 4
    model.fit(x, y, epochs=1, verbose=0)          # the original trains on; its layers stay its own
    assert not np.allclose(model.layers[1].get_weights()[0], w1)
    np.testing.assert_allclose(feat.get_weights()[0], w1)
    text = model.to_json()
    again = keras.models.model_from_json(text)
    assert again.count_params() == model.count_params()
    assert json.loads(text)["class_name"] == "Functional"


def test_build_deferred_until_data():
    m = keras.Sequential([layers.Dense(4, activation="relu"), layers.Dense(2)])
    assert not m.built and m.get_weights() == []
    with pytest.raises(ValueError, match="not built"):
        m.summary()
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    m.fit(np.zeros((8, 5), np.float32), np.zeros(8, np.int64), verbose=0)
    assert m.built and m.input_shape == (None, 5)
    assert [w.shape for w in m.weights] == [(5, 4), (4,), (4, 2), (2,)]
    lines = []
    m.summary(print_fn=lines.append)
    assert "dense" in lines[0] or "dense" in "\n".join(lines)
    m2 = keras.Sequential([layers.Dense(3)])
    m2.build((None, 7))
    assert m2.output_shape == (None, 3)


def test_sub_model_of_a_sequential_model():
    x = np.random.default_rng(5).normal(size=(40, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    seq = keras.Sequential([keras.Input(shape=(6,)), layers.Dense(5, activation="relu", name="hidden"), layers.Dense(2)])
    seq.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    seq.fit(x, y, epochs=2, verbose=0)
    feat = keras.Model(inputs=seq.inputs, outputs=seq.get_layer("hidden").output)
    w, b = seq.get_layer("hidden").get_weights()
    np.testing.assert_allclose(feat.predict(x), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-5)
    assert seq.outputs[0].shape == (None, 2) and seq.layers[0].output.shape == (None, 5)
    assert layers.Dense(3, name=None).name == "dense"


def test_functional_model_read_back_from_json_and_checkpoint(tmp_path):
    inp = keras.Input(shape=(6,))
    a = layers.Dense(4, activation="relu")(inp)
    b = layers.Dense(4)(inp)
    out = layers.Dense(2)(layers.Concatenate()([a, b]))
    model = keras.Model(inp, out)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = np.random.default_rng(6).normal(size=(20, 6)).astype(np.float32)
    model.fit(x, np.arange(20) % 2, epochs=1, verbose=0)
    model.save(str(tmp_path / "f.safetensors"))
    for m in (keras.models.model_from_json(model.to_json()), keras.models.load_model(str(tmp_path / "f.safetensors"))):
        assert [l.name for l in m.layers] == [l.name for l in model.layers]
        assert m.input.shape == (None, 6) and m.output.shape == (None, 2)
        sub = keras.Model(m.input, m.layers[-2].output)
        assert sub.output_shape == (None, 8)
    np.testing.assert_allclose(m.predict(x), model.predict(x), rtol=1e-6)
    np.testing.assert_allclose(sub.predict(x)[:, :4], np.maximum(x @ model.layers[1].get_weights()[0] + model.layers[1].get_weights()[1], 0), rtol=1e-4, atol=1e-5)


def test_add_a_layer_after_training_keeps_weights():
    x = np.random.default_rng(7).normal(size=(32, 5)).astype(np.float32)
    m = keras.Sequential([keras.Input(shape=(5,)), layers.Dense(4, activation="relu")])
    m.compile(optimizer="adam", loss="mse")
    m.get_weights()                                   # Kiln builds the model here
    m.add(layers.Dense(1))
    m.fit(x, x[:, 0], epochs=1, verbose=0)
    before = m.layers[0].get_weights()
    m.add(layers.Dense(2))                            # after training: rebuilt, weights copied over
    for a, b in zip(m.layers[0].get_weights(), before):
        np.testing.assert_array_equal(a, b)
    assert m.output_shape == (None, 2) and len(m.layers) == 3
    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.fit(x, np.arange(32) % 2, epochs=1, verbose=0)
    with pytest.raises(ValueError):
        m.add(layers.Conv2D(2, 3))                    # refused; the model stays as it was
    assert m.predict(x).shape == (32, 2)
