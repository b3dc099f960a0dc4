"""tf.data, as far as Kiln has it: AUTOTUNE for prefetch, and the Dataset type of Kiln's own
pipelines (keras.utils.image_dataset_from_directory returns one). Datasets built from Python
objects (from_tensor_slices, from_generator) are not Kiln pipelines: pass NumPy arrays to fit."""
from ._ns import missing
from .keras._dataset import AUTOTUNE, Dataset  # noqa: F401

__all__ = ["AUTOTUNE", "Dataset"]


def __getattr__(name):
    raise missing("tf.data", name)
