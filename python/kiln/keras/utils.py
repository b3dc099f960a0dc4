"""keras.utils: to_categorical, set_random_seed, image_dataset_from_directory."""
import random as _random

import numpy as np

from .. import _state
from .._ns import missing
from ._dataset import image_dataset_from_directory  # noqa: F401  (Kiln's image-folder pipeline)


def to_categorical(x, num_classes=None, dtype="float32"):
    """Class ids -> one-hot rows, as Keras (NumPy; fit turns them back into ids for Kiln)."""
    y = np.asarray(x, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.reshape(-1)
    n = int(num_classes) if num_classes is not None else int(y.max()) + 1 if y.size else 0
    out = np.zeros((y.shape[0], n), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out.reshape(shape + (n,))


def set_random_seed(seed):
    """Seeds Python's random, NumPy and Kiln (models built afterwards and fit's shuffling)."""
    seed = int(seed)
    _random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    _state.seed = seed


def __getattr__(name):
    raise missing("keras.utils", name)
