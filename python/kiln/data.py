"""tf.data, as far as Kiln has it: AUTOTUNE for prefetch, and the Dataset type of Kiln's own
pipelines (keras.utils.image_dataset_from_directory returns one), and Kiln's readers of npz and
CSV files (csv_dataset, npz_dataset: Kiln's names). Datasets built from Python
objects (from_tensor_slices, from_generator) are not Kiln pipelines: pass NumPy arrays to fit."""
from ._ns import missing
from .keras._dataset import AUTOTUNE, Dataset, csv_dataset, npz_dataset  # noqa: F401

__all__ = ["AUTOTUNE", "Dataset", "csv_dataset", "npz_dataset"]


def __getattr__(name):
    raise missing("tf.data", name)
