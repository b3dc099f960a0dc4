#!/usr/bin/env python3
"""Writes an MNIST-layout IDX data set (e.g. Debian's Fashion-MNIST) as the .npz file Keras keeps
(keras.datasets: x_train (N, 28, 28) uint8, y_train (N,) uint8, x_test, y_test), for trying
`kiln train --data npz:FILE` on real data. Needs numpy (Debian: python3-numpy).

usage: idx_to_npz.py [DIR] [-o fashion_mnist.npz] [--stored]
  DIR defaults to /usr/share/datasets/fashion-mnist (apt-get install dataset-fashion-mnist)
"""
import argparse
import gzip
import os

import numpy as np


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(d, name):
    for p in (os.path.join(d, name), os.path.join(d, name + ".gz")):
        if os.path.exists(p):
            return p
    raise SystemExit(f"idx_to_npz: {name}[.gz] not found in {d}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", nargs="?", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("-o", "--out", default="fashion_mnist.npz")
    p.add_argument("--stored", action="store_true", help="np.savez (no compression) instead of np.savez_compressed")
    a = p.parse_args()
    arrays = {k: read_idx(find(a.dir, f)) for k, f in [("x_train", "train-images-idx3-ubyte"), ("y_train", "train-labels-idx1-ubyte"),
                                                      ("x_test", "t10k-images-idx3-ubyte"), ("y_test", "t10k-labels-idx1-ubyte")]}
    (np.savez if a.stored else np.savez_compressed)(a.out, **arrays)
    print(f"{a.out}: " + ", ".join(f"{k} {v.shape} {v.dtype}" for k, v in arrays.items()))


if __name__ == "__main__":
    main()
