#!/usr/bin/env python3
"""TensorFlow / Keras 3 peer for bench/compare_cpu.sh: the same models, batch, optimizer and thread
count as Kiln (src/nn/zoo.c presets), on the CPU, with tensorflow-cpu from PyPI (oneDNN inside).

  fashion_cnn: real Fashion-MNIST (IDX .gz), Adam 1e-3, batch 64, N epochs through model.fit:
               training images/s (epoch time as Keras measures it, first epoch's warm-up step
               excluded), inference images/s (model.predict on the test set), test accuracy.
  cifar_cnn:   synthetic 32x32x3, SGD momentum 0.9 lr 0.01, batch 128: training images/s over
               --steps steps after 3 warm-up steps, inference images/s.
--jit 0|1 selects Keras' jit_compile (XLA); compare_cpu.sh runs both and keeps the better.
Prints one line: RESULT key=value ...
"""
import argparse, os, time

p = argparse.ArgumentParser()
p.add_argument("--model", default="fashion_cnn")
p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--jit", type=int, default=0)
p.add_argument("--precision", default="float32")   # or mixed_bfloat16
a = p.parse_args()

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
import keras
from keras import layers
from idx import read_idx

tf.config.threading.set_intra_op_parallelism_threads(a.threads)
tf.config.threading.set_inter_op_parallelism_threads(1)
keras.utils.set_random_seed(a.seed)
if a.precision != "float32":
    keras.mixed_precision.set_global_policy(a.precision)


def fashion_cnn():
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        layers.Conv2D(32, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Conv2D(64, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10, dtype="float32")])


def cifar_cnn():
    return keras.Sequential([
        keras.Input((32, 32, 3)),
        layers.Conv2D(64, 5, padding="same", activation="relu"), layers.MaxPooling2D(3, 2, padding="same"),
        layers.Conv2D(64, 5, padding="same", activation="relu"), layers.MaxPooling2D(3, 2, padding="same"),
        layers.Flatten(), layers.Dense(384, activation="relu"), layers.Dense(192, activation="relu"),
        layers.Dense(10, dtype="float32")])


class StepTimer(keras.callbacks.Callback):
    """Wall time of the training batches after the first `skip` (tracing / XLA compilation)."""
    def __init__(self, skip):
        super().__init__()
        self.skip, self.seen, self.t0, self.t1 = skip, 0, None, None

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1
        if self.seen == self.skip:
            self.t0 = time.perf_counter()
        self.t1 = time.perf_counter()

    def timed_batches(self):
        return self.seen - self.skip


def infer_ips(model, x, batch):
    model.predict(x[:batch], batch_size=batch, verbose=0)
    t = time.perf_counter()
    model.predict(x, batch_size=batch, verbose=0)
    return len(x) / (time.perf_counter() - t)


def compile_model(model, opt):
    model.compile(optimizer=opt, jit_compile=bool(a.jit), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))


if a.model == "fashion_cnn":
    d = a.data
    xtr = read_idx(os.path.join(d, "train-images-idx3-ubyte.gz")).astype(np.float32)[..., None] / 255.0
    ytr = read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    xte = read_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).astype(np.float32)[..., None] / 255.0
    yte = read_idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    n = len(xtr) // a.batch * a.batch                 # full batches, as Kiln's fit
    model = fashion_cnn()
    compile_model(model, keras.optimizers.Adam(1e-3))
    timer = StepTimer(skip=3)
    model.fit(xtr[:n], ytr[:n], batch_size=a.batch, epochs=a.epochs, shuffle=True, verbose=0, callbacks=[timer])
    train_ips = timer.timed_batches() * a.batch / (timer.t1 - timer.t0)
    _, acc = model.evaluate(xte, yte, batch_size=1000, verbose=0)
    print(f"RESULT peer=tensorflow model=fashion_cnn jit={a.jit} train_ips={train_ips:.1f} "
          f"infer_ips={infer_ips(model, xte, a.batch):.1f} test_acc={100.0 * acc:.2f}", flush=True)
else:
    rng = np.random.default_rng(a.seed)
    x = rng.random((a.batch * 4, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, a.batch * 4).astype(np.int64)
    model = cifar_cnn()
    compile_model(model, keras.optimizers.SGD(0.01, momentum=0.9))
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(a.batch).repeat().prefetch(2)
    timer = StepTimer(skip=3)
    model.fit(ds, steps_per_epoch=a.steps + 3, epochs=1, verbose=0, callbacks=[timer])
    train_ips = timer.timed_batches() * a.batch / (timer.t1 - timer.t0)
    print(f"RESULT peer=tensorflow model=cifar_cnn jit={a.jit} train_ips={train_ips:.1f} "
          f"infer_ips={infer_ips(model, x, a.batch):.1f}", flush=True)
