"""Datasets Kiln reads itself: image folders, npz and CSV files, handed to fit / evaluate as Kiln
input pipelines, so reading, decoding, shuffling, batching, augmenting and prefetching run on C
threads (include/kiln/pipeline.h) and Python adds nothing per step.

Where Kiln differs from tf.data, it says so: a transform (shuffle, batch, ...) CONSUMES the
dataset it is called on (Kiln's pipelines own their input): keep using the one it returns.
There is no `map` with a Python function (it would run Python per example)."""
import numpy as np

from .. import _state
from .._ext import _kiln

AUTOTUNE = -1


class Dataset:
    """A Kiln input pipeline (tf.data-like). Iterating it yields (x, y) NumPy batches (one pass),
    for looking at the data; fit / evaluate train on it in C."""

    def __init__(self, data, class_names=None):
        self._d = data
        info = data.info()
        self.class_names = list(class_names if class_names is not None else info["class_names"]) or None

    def _next(self, d):
        return Dataset(d, self.class_names)

    @property
    def _info(self):
        return self._d.info()

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        if not reshuffle_each_iteration:
            raise NotImplementedError("shuffle(reshuffle_each_iteration=False): Kiln reshuffles every epoch")
        s = seed if seed is not None else (_state.seed or 0)
        return self._next(self._d.shuffle(int(buffer_size), int(s) & 0xFFFFFFFFFFFFFFFF))

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None):
        if self._info["batch_size"] > 1:      # checked here: a refused C transform would free its input
            raise NotImplementedError("batch: the dataset is already batched; Kiln has no batches of batches")
        return self._next(self._d.batch(int(batch_size), bool(drop_remainder)))

    def prefetch(self, buffer_size):
        """Batches prepared ahead on C worker threads (AUTOTUNE: 2)."""
        n = 2 if buffer_size in (None, AUTOTUNE) else int(buffer_size)
        return self._next(self._d.prefetch(max(1, n), 0))

    def cache(self, filename=""):
        if filename:
            raise NotImplementedError("cache(filename): Kiln caches in memory only")
        return self._next(self._d.cache())

    def take(self, count):
        return self._next(self._d.take(int(count)))

    def skip(self, count):
        return self._next(self._d.skip(int(count)))

    def repeat(self, count=None):
        if count is None or count < 0:
            raise NotImplementedError("repeat() without a count: Kiln's fit takes one pass per epoch; give epochs to fit")
        return self._next(self._d.repeat(int(count)))

    def map(self, *args, **kwargs):
        raise NotImplementedError("Dataset.map: Kiln runs no Python per example; use Rescaling / augmentation layers, "
                                  "or Kiln's augment (flip, crop) in kiln train")

    def cardinality(self):
        return int(self._info["cardinality"])

    def __len__(self):
        return self.cardinality()

    def __iter__(self):
        for (x, xs), y in self._d.batches(0, -1):
            xa = np.frombuffer(x, np.float32).reshape(xs)
            ya = None if y is None else np.frombuffer(y[0], np.float32 if self._info["label_dtype"] == "float32" else np.int32).reshape(y[1])
            yield xa, ya

    @property
    def example_shape(self):
        return tuple(self._info["example_shape"])


def _check_images(info, directory, image_size, color_mode):
    shape = tuple(info["example_shape"])
    if tuple(image_size) != shape[:2]:
        raise NotImplementedError(f"image_dataset_from_directory: the images in '{directory}' are {shape[0]}x{shape[1]}; "
                                  f"Kiln does not resize them: pass image_size=({shape[0]}, {shape[1]})")
    want = {"rgb": 3, "grayscale": 1}.get(color_mode)
    if want is None:
        raise NotImplementedError(f"image_dataset_from_directory: color_mode '{color_mode}': Kiln reads rgb or grayscale")
    if shape[2] != want:
        raise NotImplementedError(f"image_dataset_from_directory: the images in '{directory}' have {shape[2]} channel(s) "
                                  f"(Kiln: 3 when any image has colour, else 1); color_mode '{color_mode}' wants {want}")


def image_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, color_mode="rgb",
                                 batch_size=32, image_size=(256, 256), shuffle=True, seed=None, validation_split=None,
                                 subset=None, interpolation="bilinear", follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, verbose=True):
    """keras.utils.image_dataset_from_directory over Kiln's image-folder reader: directory/CLASS/*.png|jpg,
    classes sorted by name, pixels as float32 in 0..255 (as Keras; add a Rescaling(1/255) layer).
    Where Kiln differs: images are not resized (all must have image_size; an error says the size
    found); validation_split holds out evenly spaced files of each class (Keras: the last files
    after a seeded shuffle); labels are class ids for every label_mode (Kiln's categorical and
    binary losses take ids)."""
    if labels != "inferred":
        raise NotImplementedError("image_dataset_from_directory: labels must be 'inferred' (one sub-folder per class)")
    if label_mode not in ("int", "categorical", "binary"):
        raise NotImplementedError(f"image_dataset_from_directory: label_mode {label_mode!r}: Kiln trains on labelled images")
    for name, val, ok in (("follow_links", follow_links, False), ("crop_to_aspect_ratio", crop_to_aspect_ratio, False),
                          ("pad_to_aspect_ratio", pad_to_aspect_ratio, False)):
        if val != ok:
            raise NotImplementedError(f"image_dataset_from_directory: {name}={val!r} is not supported by Kiln")
    if data_format not in (None, "channels_last"):
        raise NotImplementedError("image_dataset_from_directory: Kiln's images are channels_last")
    src = _kiln.data_images(str(directory), list(class_names) if class_names is not None else None)
    info = src.info()
    _check_images(info, directory, image_size, color_mode)
    if label_mode == "binary" and info["num_classes"] != 2:
        raise ValueError(f"image_dataset_from_directory: label_mode 'binary' needs 2 classes; '{directory}' has {info['num_classes']}")
    if verbose:
        print(f"Found {info['source_size']} files belonging to {info['num_classes']} classes.")
    if (validation_split is None) != (subset is None):
        raise ValueError("image_dataset_from_directory: give validation_split and subset together")
    parts = [src]
    if validation_split:
        tr, va = src.split(float(validation_split))
        parts = {"training": [tr], "validation": [va], "both": [tr, va]}.get(subset)
        if parts is None:
            raise ValueError(f"subset {subset!r}: 'training', 'validation' or 'both'")
    s = int(seed if seed is not None else (_state.seed or 0)) & 0xFFFFFFFFFFFFFFFF
    out = []
    for p in parts:
        n = p.info()["source_size"]
        if verbose and validation_split:
            print(f"Using {n} files for {'training' if p is parts[0] and subset != 'validation' else 'validation'}.")
        p = p.scale(255.0)
        if shuffle:
            p = p.shuffle(n, s)
        if batch_size is not None:
            p = p.batch(int(batch_size), False)
        out.append(Dataset(p.prefetch(2, 0), info["class_names"]))
    return out[0] if len(out) == 1 else out


def _file_dataset(spec, train, batch_size, shuffle, seed):
    d = _kiln.data_open(spec, train)
    n = d.info()["source_size"]
    if shuffle:
        d = d.shuffle(n, int(seed if seed is not None else (_state.seed or 0)) & 0xFFFFFFFFFFFFFFFF)
    if batch_size is not None:
        d = d.batch(int(batch_size), False)
    return Dataset(d.prefetch(2, 0))


def npz_dataset(path, split="train", batch_size=32, shuffle=True, seed=None):
    """Kiln's reader of a NumPy .npz archive (x_train, y_train [, x_test, y_test], as the
    keras.datasets files): uint8 images scaled to [0, 1], labels class ids (or float values for
    mse), read and batched in C. Kiln's own function (Keras has none): kiln.data.npz_dataset."""
    if split not in ("train", "test"):
        raise ValueError(f"npz_dataset: split {split!r}: 'train' or 'test'")
    return _file_dataset(f"npz:{path}", split == "train", batch_size, shuffle and split == "train", seed)


def csv_dataset(path, batch_size=32, shuffle=True, seed=None):
    """Kiln's reader of a CSV file of numbers: one example per row, the label in the last column
    (a header row is detected), read and batched in C. Kiln's own function: kiln.data.csv_dataset
    (tf.data.experimental.make_csv_dataset yields dicts of columns; Kiln trains on arrays)."""
    return _file_dataset(f"csv:{path}", True, batch_size, shuffle, seed)
