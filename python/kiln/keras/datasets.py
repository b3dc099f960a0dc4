"""keras.datasets: fashion_mnist, mnist, cifar10 `.load_data()` from local files (Kiln never
downloads). Looked for, in order: the `path` argument (a folder with the files), $KILN_DATASETS/<name>
and $KILN_DATASETS, Debian's /usr/share/datasets/<name> (package dataset-fashion-mnist), and
~/.keras/datasets/<name>. The arrays are uint8 shaped as Keras returns them: images (N, 28, 28) /
(N, 32, 32, 3), labels (N,) / CIFAR-10's (N, 1)."""
import os
import types

import numpy as np

from .._ext import _kiln
from .._ns import missing

_ALIASES = {"fashion-mnist": ("fashion_mnist",), "cifar10": ("cifar-10-batches-bin", "cifar-10")}
_IDX = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _dirs(name, path):
    if path is not None:
        return [os.fspath(path)]
    out = []
    env = os.environ.get("KILN_DATASETS")
    if env:
        out += [os.path.join(env, n) for n in (name,) + _ALIASES.get(name, ())] + [env]
    out += [os.path.join("/usr/share/datasets", name), os.path.expanduser(os.path.join("~/.keras/datasets", name))]
    return out


def _u8(pair):
    buf, shape = pair
    return np.frombuffer(buf, dtype=np.uint8).reshape(tuple(shape))


def _find_idx(d, base):
    for f in (base, base + ".gz"):
        p = os.path.join(d, f)
        if os.path.isfile(p):
            return p
    return None


def _load_idx(name, path):
    tried = _dirs(name, path)
    for d in tried:
        files = [_find_idx(d, b) for b in _IDX]
        if all(files):
            a = [_u8(_kiln.idx_read(f)) for f in files]
            return (a[0], a[1]), (a[2], a[3])
    raise FileNotFoundError(
        f"keras.datasets.{name}: no IDX files ({', '.join(b + '[.gz]' for b in _IDX)}) in " + ", ".join(tried) +
        f". Kiln does not download: put them in $KILN_DATASETS/{name} (or pass load_data(path=FOLDER))" +
        (" or install Debian's dataset-fashion-mnist package" if name == "fashion-mnist" else ""))


def _load_cifar10(path):
    tried = _dirs("cifar10", path)
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    for d0 in tried:
        for d in (d0, os.path.join(d0, "cifar-10-batches-bin")):
            if all(os.path.isfile(os.path.join(d, f)) for f in names):
                parts = [_kiln.cifar10_read(os.path.join(d, f)) for f in names]
                parts = [p if len(p) == 2 else ((p[0], p[1]), (p[2], p[3])) for p in parts]
                xs = [_u8(p[0]) for p in parts]
                ys = [_u8(p[1]).reshape(-1, 1) for p in parts]
                return (np.concatenate(xs[:5]), np.concatenate(ys[:5])), (xs[5], ys[5])
    raise FileNotFoundError(
        "keras.datasets.cifar10: no CIFAR-10 binary batches (data_batch_1.bin .. data_batch_5.bin, test_batch.bin) in "
        + ", ".join(tried) + ". Kiln does not download: unpack https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz "
        "into $KILN_DATASETS/cifar10 (or pass load_data(path=FOLDER))")


fashion_mnist = types.SimpleNamespace(load_data=lambda path=None: _load_idx("fashion-mnist", path))
mnist = types.SimpleNamespace(load_data=lambda path=None: _load_idx("mnist", path))
cifar10 = types.SimpleNamespace(load_data=lambda path=None: _load_cifar10(path))
for _m, _n in ((fashion_mnist, "fashion_mnist"), (mnist, "mnist"), (cifar10, "cifar10")):
    _m.load_data.__doc__ = f"keras.datasets.{_n}.load_data(path=None): ((x_train, y_train), (x_test, y_test)) uint8, from local files."


def __getattr__(name):
    raise missing("keras.datasets", name)
