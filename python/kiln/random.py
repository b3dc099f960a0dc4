"""tf.random: the global seed."""
from . import _state
from ._ns import missing


def set_seed(seed):
    """Seeds models built afterwards (initializers, dropout) and fit's shuffling. Kiln without a
    seed is deterministic (seed 0); TensorFlow without one is not."""
    _state.seed = None if seed is None else int(seed)


def __getattr__(name):
    raise missing("tf.random", name)
