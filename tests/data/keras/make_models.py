#!/usr/bin/env python3
"""Writes the Keras model files the Keras-JSON tests read (tests/unit/test_keras_json.c).

Each model is built with real Keras and saved as NAME.json (model.to_json()) next to
NAME.expected, what Keras itself says about the model:

    keras 3.15.1                 the Keras that wrote it
    params 1234                  model.count_params()
    trainable 1200               trainable parameters
    layers 6                     layers in the JSON (InputLayer included)
    layer dense Dense 64         one line per JSON layer: name, class, output shape (batch excluded)

Keras 3 models go to keras3/, tf.keras 2 models (the tf_keras package, when importable) to
tf_keras2/. errors/ holds models Kiln must refuse, each with NAME.expected listing the words the
error message must contain (the layer and the key).

Run once: KILN_VENV=/work/venv; python make_models.py [OUT_DIR] (default: this directory).
tf_keras 2 needs `pip install --no-deps tf_keras==2.21.*` (e.g. into a folder on PYTHONPATH).
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


def models(k):
    """The test models, built with the Keras module k (keras or tf_keras)."""
    L = k.layers
    out = {}
    # the seed's binary classifier, with its input declared
    out["binary"] = k.Sequential([k.Input(shape=(8,)), L.Dense(10, activation="relu"), L.Dense(1, activation="sigmoid")],
                                 name="binary")
    out["mlp"] = k.Sequential([k.Input(shape=(28, 28, 1)), L.Flatten(), L.Dense(64, activation="relu"), L.Dropout(0.2),
                               L.Dense(10)], name="mlp")
    out["cnn"] = k.Sequential([
        k.Input(shape=(28, 28, 1)),
        L.Conv2D(16, 3, padding="same", activation="relu"),
        L.BatchNormalization(),
        L.MaxPooling2D(),
        L.Conv2D(32, (3, 3), use_bias=False, kernel_initializer="he_normal"),
        L.BatchNormalization(momentum=0.9, epsilon=1e-5),
        L.Activation("relu"),
        L.MaxPooling2D(pool_size=3, strides=2, padding="same"),
        L.Dropout(0.25),
        L.Flatten(),
        L.Dense(64, activation="relu", kernel_regularizer=k.regularizers.L2(1e-4)),
        L.Dropout(0.5, seed=7),
        L.Dense(10, activation="softmax"),
    ], name="cnn")
    # branches: Add and Concatenate, DepthwiseConv2D, AveragePooling2D, GlobalAveragePooling2D, Reshape, ReLU, Activation
    inp = k.Input(shape=(16, 16, 3), name="image")
    x = L.Conv2D(8, 3, padding="same", name="stem")(inp)
    x = L.BatchNormalization(name="stem_bn")(x)
    x = L.ReLU(name="stem_relu")(x)
    a = L.Conv2D(8, 1, kernel_initializer="he_uniform", bias_initializer="ones", name="branch_a")(x)
    b = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2, name="branch_b_dw")(x)
    b = L.Conv2D(8, 1, activation="relu", name="branch_b_pw")(b)
    s = L.Add(name="residual")([x, a])
    c = L.Concatenate(name="merge")([s, b])
    c = L.AveragePooling2D(2, name="pool")(c)
    c = L.Conv2D(16, 3, strides=2, activation="relu", name="reduce")(c)
    g = L.GlobalAveragePooling2D(name="gap")(c)
    r = L.Reshape((4, 4), name="to_4x4")(g)
    f = L.Flatten(name="flat")(r)
    d = L.Dense(10, name="logits")(f)
    out["functional"] = k.Model(inp, L.Activation("softmax", name="probs")(d), name="functional")
    # initializers, a leaky ReLU, Concatenate on features
    inp = k.Input(shape=(6,), name="features")
    h1 = L.Dense(8, kernel_initializer=k.initializers.RandomNormal(stddev=0.02), bias_initializer=k.initializers.Constant(0.1),
                 name="normal")(inp)
    h1 = L.ReLU(negative_slope=0.2, name="leaky")(h1)
    h2 = L.Dense(4, activation="tanh", kernel_initializer=k.initializers.TruncatedNormal(mean=0.0, stddev=0.1, seed=3),
                 name="truncated")(inp)
    h3 = L.Dense(4, activation="elu", kernel_initializer="glorot_normal", bias_initializer="zeros", use_bias=False,
                 name="glorot_normal")(inp)
    h4 = L.Dense(5, activation="gelu", kernel_initializer=k.initializers.RandomUniform(-0.1, 0.1), name="uniform")(inp)
    h = L.Concatenate(axis=-1, name="cat")([h1, h2, h3, h4])
    h = L.Dropout(0.1, name="drop")(h)
    o = L.Dense(3, activation="softmax", kernel_initializer="ones", name="out")(h)
    out["initializers"] = k.Model(inp, o, name="initializers")
    if k.__name__ == "keras":
        out["apps_layers"] = apps_layers(k)
    return out


def apps_layers(k):
    """Keras 3: the layers and activations keras.applications use (issue 29), in one model."""
    L = k.layers
    inp = k.Input(shape=(12, 12, 3), name="image")
    x = L.Rescaling(1.0 / 127.5, offset=-1.0, name="rescale")(inp)
    x = L.Normalization(axis=-1, mean=[0.5, 0.25, 0.0], variance=[1.0, 4.0, 0.25], name="norm")(x)
    x = L.ZeroPadding2D(((0, 1), (1, 2)), name="pad")(x)
    x = L.Conv2D(8, 3, use_bias=False, kernel_initializer=k.initializers.VarianceScaling(2.0, "fan_out", "truncated_normal"), name="stem")(x)
    x = L.BatchNormalization(scale=False, name="bn_no_scale")(x)
    x = L.ReLU(6.0, name="relu6")(x)
    s = L.SeparableConv2D(8, 3, padding="same", depth_multiplier=2, activation="silu", name="sep")(x)
    g = L.GlobalAveragePooling2D(keepdims=True, name="gap_keep")(s)
    g = L.Conv2D(8, 1, activation="hard_sigmoid", name="se")(g)
    s = L.Multiply(name="excite")([s, g])
    s = L.BatchNormalization(center=False, scale=False, name="bn_plain")(s)
    s = L.ReLU(4.0, negative_slope=0.1, name="relu_general")(s)
    s = L.Activation("hard_silu", name="hswish")(s)
    c = L.Cropping2D(((1, 0), (1, 0)), name="crop")(s)
    u = L.UpSampling2D((2, 2), name="up")(L.MaxPooling2D(name="down")(c))
    a = L.LeakyReLU(negative_slope=0.1, name="leaky01")(u)
    b = L.ELU(alpha=0.5, name="elu05")(c)
    m = L.Maximum(name="max")([a, b])
    n = L.Minimum(name="min")([a, b])
    d = L.Subtract(name="sub")([m, n])
    e = L.Average(name="avg")([d, m, n])
    e = L.Activation("selu", name="selu")(e)
    e = L.Dropout(0.2, noise_shape=(None, 1, 1, 1), name="stoch_depth")(e)
    f = L.Concatenate(name="pools")([L.GlobalMaxPooling2D(name="gmp")(e), L.GlobalAveragePooling2D(name="gap")(e)])
    f = L.Dense(6, activation="mish", name="mish")(f)
    f = L.Dense(6, activation="softsign", name="softsign")(f)
    o = L.Dense(4, activation="softmax", name="out")(f)
    return k.Model(inp, o, name="apps_layers")


def bad_models(k):
    """Models Kiln must refuse, with the words its error must contain."""
    L = k.layers
    out = {}

    def seq(name, *layers, shape=(8, 8, 3)):
        return k.Sequential([k.Input(shape=shape)] + list(layers), name=name)

    out["channels_first"] = (seq("m", L.Conv2D(4, 3, data_format="channels_first", name="conv_cf")), ["conv_cf", "data_format", "channels_first"])
    out["dilation_uneven"] = (seq("m", L.Conv2D(4, 3, dilation_rate=(1, 2), name="conv_dil")), ["conv_dil", "dilation_rate"])
    out["l1_regularizer"] = (seq("m", L.Flatten(), L.Dense(4, kernel_regularizer=k.regularizers.L1(0.01), name="dense_l1")),
                             ["dense_l1", "kernel_regularizer", "L1"])
    out["bias_regularizer"] = (seq("m", L.Flatten(), L.Dense(4, bias_regularizer="l2", name="dense_b")), ["dense_b", "bias_regularizer"])
    out["relu_threshold"] = (seq("m", L.ReLU(threshold=0.5, name="relu_t")), ["relu_t", "threshold"])
    out["unknown_layer"] = (seq("m", L.GroupNormalization(groups=1, name="gn")), ["gn", "GroupNormalization"])
    out["frozen"] = (seq("m", L.Flatten(), L.Dense(4, trainable=False, name="frozen")), ["frozen", "trainable"])
    out["lecun"] = (seq("m", L.Flatten(), L.Dense(4, kernel_initializer="lecun_normal", name="lecun")), ["lecun", "kernel_initializer", "LecunNormal"])
    out["bicubic"] = (seq("m", L.UpSampling2D(interpolation="bicubic", name="up")), ["up", "interpolation", "bicubic"])   # bilinear is read (nearest and bilinear)
    return out


def shape_of(t):
    return [int(d) for d in tuple(t.shape)[1:]]


def expected(m, version):
    cfg = json.loads(m.to_json())
    names = [l["config"]["name"] for l in cfg["config"]["layers"]]
    by_name = {l.name: l for l in m.layers}
    lines = ["keras %s" % version,
             "params %d" % m.count_params(),
             "trainable %d" % sum(int(w.shape.num_elements() if hasattr(w.shape, "num_elements") else __import__("numpy").prod(w.shape))
                                  for w in m.trainable_weights),
             "layers %d" % len(names)]
    for n, lc in zip(names, cfg["config"]["layers"]):
        if n in by_name:
            shape = shape_of(by_name[n].output)
        else:  # a Sequential model's InputLayer is not in model.layers
            shape = shape_of(m.inputs[0])
        lines.append("layer %s %s %s" % (n, lc["class_name"], " ".join(str(d) for d in shape)))
    return "\n".join(lines) + "\n"


def write(out_dir, k, version, with_errors):
    os.makedirs(out_dir, exist_ok=True)
    for name, m in models(k).items():
        with open(os.path.join(out_dir, name + ".json"), "w") as f:
            f.write(m.to_json(indent=1) + "\n")
        with open(os.path.join(out_dir, name + ".expected"), "w") as f:
            f.write(expected(m, version))
        print("%s/%s: %d parameters" % (out_dir, name, m.count_params()))
    if with_errors:
        err_dir = os.path.join(os.path.dirname(out_dir), "errors")
        os.makedirs(err_dir, exist_ok=True)
        for name, (m, words) in bad_models(k).items():
            with open(os.path.join(err_dir, name + ".json"), "w") as f:
                f.write(m.to_json(indent=1) + "\n")
            with open(os.path.join(err_dir, name + ".expected"), "w") as f:
                f.write("\n".join(words) + "\n")
            print("%s/%s: must be refused (%s)" % (err_dir, name, ", ".join(words)))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    import keras
    write(os.path.join(out, "keras3"), keras, keras.__version__, True)
    try:
        import tf_keras
    except ImportError:
        print("tf_keras is not importable: no tf.keras 2 models written", file=sys.stderr)
        return
    write(os.path.join(out, "tf_keras2"), tf_keras, "tf_keras " + tf_keras.__version__, False)


if __name__ == "__main__":
    main()
