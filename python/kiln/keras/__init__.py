"""kiln.keras: Keras's API over Kiln (`from kiln import keras`, or `tf.keras` after
`import kiln as tf`)."""
from .._ns import missing
from . import activations, initializers, regularizers, layers, losses, metrics, optimizers, callbacks
from . import utils, mixed_precision, datasets, models, backend
from .layers import Input, InputLayer, Layer
from .models import Model, Sequential

__version__ = "3.0.0+kiln"      # the Keras 3 API, on Kiln
__all__ = ["activations", "initializers", "regularizers", "layers", "losses", "metrics", "optimizers", "callbacks",
           "utils", "mixed_precision", "datasets", "models", "backend", "Input", "InputLayer", "Layer", "Model",
           "Sequential"]


def __getattr__(name):
    raise missing("keras", name)
