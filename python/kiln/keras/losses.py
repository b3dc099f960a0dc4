"""keras.losses: the losses Kiln computes (in C), as names, classes (from_logits) and functions.

Kiln's crossentropies take class ids: categorical_crossentropy's one-hot labels are turned into
ids by fit (Kiln one-hot encodes inside), so soft labels (label smoothing, mixup) are refused.
reduction / label_smoothing other than Keras's defaults are refused."""
from .._ns import missing

_CANON = {
    "sparse_categorical_crossentropy": "sparse_categorical_crossentropy",
    "categorical_crossentropy": "categorical_crossentropy",
    "binary_crossentropy": "binary_crossentropy",
    "mse": "mse", "mean_squared_error": "mse", "MSE": "mse",
    "SparseCategoricalCrossentropy": "sparse_categorical_crossentropy",
    "CategoricalCrossentropy": "categorical_crossentropy",
    "BinaryCrossentropy": "binary_crossentropy",
    "MeanSquaredError": "mse",
}


class Loss:
    _kiln_name = None

    def __init__(self, from_logits=False, reduction="sum_over_batch_size", name=None, label_smoothing=0.0, **kwargs):
        if reduction not in ("sum_over_batch_size", "auto", None):
            raise NotImplementedError(f"{type(self).__name__}: reduction={reduction!r}: Kiln averages the loss over the batch")
        if label_smoothing:
            raise NotImplementedError(f"{type(self).__name__}: label_smoothing: Kiln's crossentropies take hard labels")
        for k in kwargs:
            if k not in ("axis", "ignore_class", "dtype") or kwargs[k] not in (None, -1, "float32"):
                raise NotImplementedError(f"{type(self).__name__}: argument '{k}' = {kwargs[k]!r} is not supported by Kiln")
        self.from_logits = bool(from_logits)
        self.name = name or _snake(type(self).__name__)

    def get_config(self):
        return {"name": self.name, "from_logits": self.from_logits}

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: Kiln computes losses inside fit/evaluate; pass it to compile")


def _snake(s):
    import re
    return re.sub(r"(?<!^)(?=[A-Z])", "_", s).lower()


class SparseCategoricalCrossentropy(Loss):
    _kiln_name = "sparse_categorical_crossentropy"


class CategoricalCrossentropy(Loss):
    _kiln_name = "categorical_crossentropy"


class BinaryCrossentropy(Loss):
    _kiln_name = "binary_crossentropy"


class MeanSquaredError(Loss):
    _kiln_name = "mse"

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", **kwargs):
        super().__init__(False, reduction, name, **kwargs)


def _fn(name):
    def f(y_true, y_pred, from_logits=False, **kwargs):
        raise NotImplementedError(f"keras.losses.{name}: Kiln computes losses inside fit/evaluate; pass it to compile")
    f.__name__ = name
    f._kiln_name = _CANON[name]
    return f


sparse_categorical_crossentropy = _fn("sparse_categorical_crossentropy")
categorical_crossentropy = _fn("categorical_crossentropy")
binary_crossentropy = _fn("binary_crossentropy")
mean_squared_error = mse = MSE = _fn("mean_squared_error")


def resolve(loss):
    """compile's loss -> (Kiln's loss name, from_logits)."""
    if isinstance(loss, Loss):
        return loss._kiln_name, loss.from_logits
    if isinstance(loss, type) and issubclass(loss, Loss):
        return loss._kiln_name, False
    if isinstance(loss, str):
        if loss in _CANON:
            return _CANON[loss], False
        raise ValueError(f"loss '{loss}': Kiln has sparse_categorical_crossentropy, categorical_crossentropy, "
                         "binary_crossentropy, mse (mean_squared_error) and their classes")
    if getattr(loss, "_kiln_name", None):
        return loss._kiln_name, False
    if isinstance(loss, (list, tuple, dict)):
        raise NotImplementedError("compile: several losses: Kiln's models have one output and one loss")
    if callable(loss):
        raise NotImplementedError(f"loss {getattr(loss, '__name__', loss)!r}: custom loss functions are not supported "
                                  "(Kiln computes the loss and its gradient in C)")
    raise TypeError(f"loss {loss!r}: give a Keras loss name or object")


def get(identifier):
    if isinstance(identifier, str):
        resolve(identifier)
        return globals()[identifier] if identifier in globals() else identifier
    return identifier


def __getattr__(name):
    raise missing("keras.losses", name)
