"""keras.backend: the little of it that applies to Kiln."""
from .._ns import missing
from . import models


def clear_session():
    """Resets Keras-style automatic model names (Kiln keeps no global graph)."""
    models._names.clear()


def backend():
    return "kiln"


def floatx():
    return "float32"


def image_data_format():
    return "channels_last"


def __getattr__(name):
    raise missing("keras.backend", name)
