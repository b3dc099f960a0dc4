"""Python values -> the JSON of a Keras layer config (what kiln_layer_from_config reads)."""
import numbers

import numpy as np


def to_json_value(v, key="value"):
    """Keras tuples/lists, NumPy scalars, initializer / regularizer / policy objects and named
    activation functions as Keras serializes them."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, (tuple, list, np.ndarray)):
        return [to_json_value(e, key) for e in v]
    if isinstance(v, dict):
        return {str(k): to_json_value(e, key) for k, e in v.items()}
    if hasattr(v, "_kiln_serialize"):
        return v._kiln_serialize()
    if hasattr(v, "_class_name") and hasattr(v, "_config"):     # a layer given to a wrapper (Bidirectional(LSTM(8)))
        return {"module": "keras.layers", "class_name": v._class_name, "config": dict(v._config)}
    if callable(v) and getattr(v, "__module__", "").startswith("kiln.") and hasattr(v, "__name__"):
        return v.__name__                      # keras.activations.relu -> "relu"
    raise TypeError(f"'{key}' = {v!r} ({type(v).__name__}): Kiln takes numbers, strings, tuples, "
                    "Keras initializer / regularizer objects, or the names of Kiln's activations")
