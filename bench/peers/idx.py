"""Fashion-MNIST's IDX .gz files as numpy arrays, for the CPU peers (tf_cpu.py, torch_cpu.py)."""
import gzip, struct
import numpy as np


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)
