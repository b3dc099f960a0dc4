"""The C extension kiln._kiln (python/src/README.md) and the few helpers every module uses."""
import json

try:
    from . import _kiln
except ImportError as e:        # pragma: no cover - a checkout without the built extension
    raise ImportError(
        "kiln: the C extension kiln._kiln is not built. Install the package with `pip install .` from "
        "the repository root, or run `bash python/dev_build.sh` and use PYTHONPATH=python") from e

import numpy as np

_classes = None


def layer_classes():
    """The layer table as a list of dicts (kiln_layer_classes_json), read once."""
    global _classes
    if _classes is None:
        _classes = json.loads(_kiln.layer_classes())
    return _classes


def array_out(pair):
    """(bytearray, shape) from the extension -> a float32 NumPy array (no copy)."""
    buf, shape = pair
    return np.frombuffer(buf, dtype=np.float32).reshape(tuple(shape))


def f32(x, what="x"):
    """x as a C-contiguous float32 array, copying only when it is not one already. uint8 images
    are converted, not scaled (as Keras)."""
    if x is None:
        raise ValueError(f"kiln: {what} is None")
    if not isinstance(x, np.ndarray):
        if hasattr(x, "__next__") or hasattr(x, "as_numpy_iterator"):
            raise TypeError(f"kiln: {what} is a {type(x).__name__}; Kiln's fit takes NumPy arrays "
                            "(or anything np.asarray takes), not Python generators or tf.data datasets")
        x = np.asarray(x)
    if x.dtype == object:
        raise TypeError(f"kiln: {what} has dtype object; give numbers")
    return np.ascontiguousarray(x, dtype=np.float32)
