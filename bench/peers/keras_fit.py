#!/usr/bin/env python3
"""One Keras-style training script, run under Kiln's Python package (`import kiln as tf`) or
TensorFlow 2.21 (`import tensorflow as tf`), for bench/python_fit.sh: the same model, data,
optimizer, batch and threads; only the import differs.

  fashion_cnn: real Fashion-MNIST (IDX .gz), Adam 1e-3, batch 64, model.fit on NumPy arrays.
  cifar_cnn:   synthetic 32x32x3 in NumPy arrays, SGD momentum 0.9 lr 0.01, batch 128.
Training images/s are those of the last epoch (the first holds graph building / tracing), timed
by a callback between on_epoch_begin and on_epoch_end. Prints one line: RESULT key=value ...
"""
import argparse, os, time

p = argparse.ArgumentParser()
p.add_argument("--framework", choices=["kiln", "tensorflow"], required=True)
p.add_argument("--model", default="fashion_cnn")
p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--limit", type=int, default=0, help="training examples (0: all of Fashion-MNIST; cifar_cnn: 5120)")
p.add_argument("--threads", type=int, default=2)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
if a.framework == "kiln":
    import kiln as tf
else:
    import tensorflow as tf
from idx import read_idx

tf.config.threading.set_intra_op_parallelism_threads(a.threads)
if a.framework == "tensorflow":
    tf.config.threading.set_inter_op_parallelism_threads(1)
tf.keras.utils.set_random_seed(a.seed)
layers = tf.keras.layers


def fashion_cnn():
    return tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        layers.Conv2D(32, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Conv2D(64, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10)])


def cifar_cnn():
    return tf.keras.Sequential([
        tf.keras.Input((32, 32, 3)),
        layers.Conv2D(64, 5, padding="same", activation="relu"), layers.MaxPooling2D(3, 2, padding="same"),
        layers.Conv2D(64, 5, padding="same", activation="relu"), layers.MaxPooling2D(3, 2, padding="same"),
        layers.Flatten(), layers.Dense(384, activation="relu"), layers.Dense(192, activation="relu"),
        layers.Dense(10)])


class EpochTimer(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.t0 = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.t0


if a.model == "fashion_cnn":
    d = a.data
    x = read_idx(os.path.join(d, "train-images-idx3-ubyte.gz")).astype(np.float32)[..., None] / 255.0
    y = read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype(np.int32)
    batch, model, opt = 64, fashion_cnn(), tf.keras.optimizers.Adam(1e-3)
else:
    rng = np.random.default_rng(a.seed)
    n = a.limit or 5120
    x = rng.random((n, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, n).astype(np.int32)
    batch, model, opt = 128, cifar_cnn(), tf.keras.optimizers.SGD(0.01, momentum=0.9)
n = (a.limit or len(x)) // batch * batch                # full batches (Kiln skips a partial last one)
x, y = x[:n], y[:n]
model.compile(optimizer=opt, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
timer = EpochTimer()
h = model.fit(x, y, batch_size=batch, epochs=a.epochs, shuffle=True, verbose=0, callbacks=[timer])
print(f"RESULT peer={a.framework}-python model={a.model} train_ips={n / timer.seconds:.1f} "
      f"last_epoch_s={timer.seconds:.2f} loss={h.history['loss'][-1]:.4f}", flush=True)
