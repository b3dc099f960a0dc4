"""Keras-made model files for tests/keras/test_keras_files.sh: every layer type Kiln reads, in
Sequential and Functional models (recurrent ones with random weights), trained a little (so BatchNormalization's moving statistics are
not their initial zeros and ones), each saved as NAME.keras (Keras 3), NAME.h5 (the legacy HDF5
format), NAME.weights.h5 and NAME.json (model.to_json()), with inputs x_NAME.f32 (raw float32) and
Keras's predictions y_NAME.npy. Usage: make_models.py OUTDIR"""
import os, sys, warnings
import numpy as np
import keras
from keras import layers as L

warnings.filterwarnings("ignore")
out = sys.argv[1]
keras.utils.set_random_seed(29)


def seq_mlp():
    return keras.Sequential([keras.Input((8,)), L.Dense(16, activation="relu"), L.Dropout(0.25),
                             L.Dense(5, activation="softmax")], name="seq_mlp")


def seq_cnn():
    return keras.Sequential([
        keras.Input((12, 12, 3)), L.Conv2D(6, 3, padding="same", activation="relu"), L.BatchNormalization(momentum=0.5),
        L.MaxPooling2D(2), L.DepthwiseConv2D(3, depth_multiplier=2, padding="same"), L.BatchNormalization(momentum=0.5),
        L.Activation("tanh"), L.AveragePooling2D(2), L.Flatten(), L.Dense(10)], name="seq_cnn")


def func_branches():
    inp = keras.Input((10, 10, 2))
    a = L.Conv2D(4, 3, padding="same", name="conv_a")(inp)
    b = L.Conv2D(4, 1, use_bias=False, name="conv_b")(inp)
    s = L.Activation("relu")(L.BatchNormalization(momentum=0.3)(L.Add()([a, b])))
    c = L.Concatenate()([s, a])
    c = L.DepthwiseConv2D(3, strides=2, padding="valid")(c)
    d = L.Dense(6, activation="relu")(L.GlobalAveragePooling2D()(c))
    d = L.Dropout(0.5)(L.Flatten()(L.Reshape((2, 3))(d)))
    return keras.Model(inp, L.Dense(3, activation="softmax")(d), name="func_branches")


def func_pool():   # the same layer classes twice over, so Keras 3's weight keys get _1, _2
    inp = keras.Input((16, 16, 1))
    x = L.Conv2D(3, 3, activation="relu")(inp)
    x = L.MaxPooling2D(2)(x)
    y = L.Conv2D(3, 3, padding="same")(x)
    y = L.BatchNormalization(momentum=0.4)(y)
    x = L.Add()([x, L.Activation("sigmoid")(y)])
    x = L.Conv2D(4, 2, strides=2)(x)
    x = L.BatchNormalization(momentum=0.4)(x)
    x = L.AveragePooling2D(2, padding="same")(x)
    x = L.Reshape((-1,))(x)
    return keras.Model(inp, L.Dense(4)(x), name="func_pool")


def cli_cnn():     # takes the CLI's synthetic 28x28x1 images, 10 classes
    return keras.Sequential([keras.Input((28, 28, 1)), L.Conv2D(4, 3, activation="relu"), L.BatchNormalization(momentum=0.5),
                             L.MaxPooling2D(2), L.Flatten(), L.Dense(10, activation="softmax")], name="cli_cnn")


def seq_conv1d():  # 1-D layers: causal / dilated / strided / grouped convolutions, pooling, upsampling
    return keras.Sequential([
        keras.Input((16, 3)), L.Conv1D(6, 3, padding="causal", dilation_rate=2, activation="relu"),
        L.MaxPooling1D(3, strides=2, padding="same"), L.Conv1D(4, 2, strides=2, padding="same", groups=2, use_bias=False),
        L.UpSampling1D(3), L.AveragePooling1D(2, padding="same"), L.Conv1D(5, 3, activation="tanh"),
        L.GlobalAveragePooling1D(keepdims=True), L.Flatten(), L.Dense(3)], name="seq_conv1d")


def func_deconv():  # transposed convolutions, spatial dropout, bilinear upsampling, global max pooling 1-D
    inp = keras.Input((5, 6, 3))
    x = L.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu")(inp)
    x = L.SpatialDropout2D(0.3)(x)
    x = L.UpSampling2D((2, 3), interpolation="bilinear")(x)
    x = L.Conv2DTranspose(3, (2, 3), strides=(1, 2))(x)
    y = L.Conv2DTranspose(2, 2, strides=3, use_bias=False)(inp)
    x = L.Reshape((-1, 3))(x)
    y = L.Reshape((-1, 2))(y)
    z = L.Concatenate()([L.GlobalMaxPooling1D()(x), L.GlobalAveragePooling1D()(y)])
    return keras.Model(inp, L.Dense(4)(z), name="func_deconv")


def func_deconv_opad():  # Conv2DTranspose's output_padding, valid and same, even and odd kernels
    inp = keras.Input((4, 5, 2))
    x = L.Conv2DTranspose(3, 3, strides=2, padding="same", output_padding=1)(inp)
    x = L.Conv2DTranspose(2, (2, 3), strides=(3, 2), output_padding=(2, 0), activation="tanh")(x)
    y = L.Conv2DTranspose(2, 4, strides=3, padding="same", output_padding=(1, 2))(inp)
    z = L.Concatenate()([L.GlobalAveragePooling2D()(x), L.GlobalMaxPooling2D()(y)])
    return keras.Model(inp, L.Dense(3)(z), name="func_deconv_opad")


def func_nested():  # a Sequential (with BatchNormalization) nested inside a Functional model
    inner = keras.Sequential([keras.Input((6,)), L.Dense(5, activation="relu"), L.BatchNormalization(momentum=0.5), L.Dense(4)], name="inner")
    inp = keras.Input((6,))
    x = L.Add()([inner(L.Dense(6)(inp)), L.Dense(4)(inp)])
    return keras.Model(inp, L.Dense(3)(x), name="func_nested")


def func_mha():    # MultiHeadAttention: self-attention, then cross-attention without biases (Keras 3 nests their weights)
    inp = keras.Input((6, 8))
    a = L.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp)
    b = L.MultiHeadAttention(num_heads=3, key_dim=2, use_bias=False)(L.Dense(5)(a), inp)
    return keras.Model(inp, L.Dense(3)(b), name="func_mha")


# recurrent layers over (7, 3) sequences: weights set at random (so LSTM's forget-gate bias and
# GRU's two biases are not their initial zeros and ones) rather than trained
def rnn_seq():
    return keras.Sequential([
        keras.Input((7, 3)), L.SimpleRNN(4, return_sequences=True, activation="sigmoid"),
        L.LSTM(3, return_sequences=True, go_backwards=True, recurrent_activation="hard_sigmoid", unit_forget_bias=False),
        L.GRU(3, return_sequences=True, reset_after=False), L.GRU(2, go_backwards=True), L.Dense(2)], name="rnn_seq")


def rnn_bidir():
    return keras.Sequential([keras.Input((7, 3)), L.Bidirectional(L.LSTM(3, return_sequences=True)),
                             L.Bidirectional(L.GRU(2), merge_mode="sum"), L.Dense(2)], name="rnn_bidir")


def rnn_func():
    inp = keras.Input((7, 3))
    a = L.Bidirectional(L.SimpleRNN(3, return_sequences=True), merge_mode="mul")(inp)
    b = L.Bidirectional(L.LSTM(3, return_sequences=True, use_bias=False), merge_mode="ave")(inp)
    x = L.LSTM(4)(L.Concatenate()([a, b]))
    return keras.Model(inp, L.Dense(2)(x), name="rnn_func")


rng = np.random.RandomState(1)
for make in (rnn_seq, rnn_bidir, rnn_func):
    m = make()
    for w in m.weights:
        w.assign(rng.uniform(-0.6, 0.6, w.shape).astype(np.float32))
    m.save(os.path.join(out, m.name + ".keras"))
    m.save(os.path.join(out, m.name + ".h5"))
    m.save_weights(os.path.join(out, m.name + ".weights.h5"))
    open(os.path.join(out, m.name + ".json"), "w").write(m.to_json())
    xt = rng.randn(7, 7, 3).astype(np.float32)
    xt.tofile(os.path.join(out, "x_%s.f32" % m.name))
    np.save(os.path.join(out, "y_%s.npy" % m.name), m.predict(xt, verbose=0))
    print(m.name)
for make in (seq_mlp, seq_cnn, func_branches, func_pool, cli_cnn, seq_conv1d, func_deconv, func_deconv_opad, func_nested,
             func_mha):
    m = make()
    name = m.name
    shape = tuple(m.input_shape[1:])
    x = rng.randn(64, *shape).astype(np.float32) * 2 + 0.5
    m.compile(optimizer="adam", loss="mse")
    m.fit(x, rng.randn(64, *m.output_shape[1:]).astype(np.float32), epochs=3, batch_size=16, verbose=0)
    for l in m.layers:
        if isinstance(l, L.BatchNormalization):
            mm, mv = l.moving_mean.numpy(), l.moving_variance.numpy()
            assert not np.allclose(mm, 0) and not np.allclose(mv, 1), "%s: moving statistics still initial" % l.name
    m.save(os.path.join(out, name + ".keras"))
    m.save(os.path.join(out, name + ".h5"))
    m.save_weights(os.path.join(out, name + ".weights.h5"))
    open(os.path.join(out, name + ".json"), "w").write(m.to_json())
    xt = rng.randn(7, *shape).astype(np.float32)
    xt.tofile(os.path.join(out, "x_%s.f32" % name))
    np.save(os.path.join(out, "y_%s.npy" % name), m.predict(xt, verbose=0))
    print(name)
