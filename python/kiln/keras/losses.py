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
    "mae": "mae", "mean_absolute_error": "mae", "MAE": "mae", "MeanAbsoluteError": "mae",
    "huber": "huber", "huber_loss": "huber", "Huber": "huber",
    "log_cosh": "log_cosh", "logcosh": "log_cosh", "LogCosh": "log_cosh",
    "kl_divergence": "kl_divergence", "kld": "kl_divergence", "KLD": "kl_divergence",
    "kullback_leibler_divergence": "kl_divergence", "KLDivergence": "kl_divergence",
    "poisson": "poisson", "Poisson": "poisson",
    "hinge": "hinge", "Hinge": "hinge", "squared_hinge": "squared_hinge", "SquaredHinge": "squared_hinge",
    "categorical_hinge": "categorical_hinge", "CategoricalHinge": "categorical_hinge",
    "cosine_similarity": "cosine_similarity", "CosineSimilarity": "cosine_similarity",
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


def _plain(cls_name, kiln_name, default_name):
    """A Keras loss class without from_logits (reduction and name only)."""
    def __init__(self, reduction="sum_over_batch_size", name=default_name, **kwargs):
        Loss.__init__(self, False, reduction, name, **kwargs)
    return type(cls_name, (Loss,), {"_kiln_name": kiln_name, "__init__": __init__})


MeanAbsoluteError = _plain("MeanAbsoluteError", "mae", "mean_absolute_error")
LogCosh = _plain("LogCosh", "log_cosh", "log_cosh")
KLDivergence = _plain("KLDivergence", "kl_divergence", "kl_divergence")
Poisson = _plain("Poisson", "poisson", "poisson")
Hinge = _plain("Hinge", "hinge", "hinge")
SquaredHinge = _plain("SquaredHinge", "squared_hinge", "squared_hinge")
CategoricalHinge = _plain("CategoricalHinge", "categorical_hinge", "categorical_hinge")


class Huber(Loss):
    _kiln_name = "huber"

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss", **kwargs):
        super().__init__(False, reduction, name, **kwargs)
        if not delta > 0:
            raise ValueError(f"Huber: delta must be positive, got {delta!r}")
        self.delta = float(delta)

    def get_config(self):
        return {"name": self.name, "delta": self.delta}


class CosineSimilarity(Loss):
    _kiln_name = "cosine_similarity"

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity", **kwargs):
        if axis not in (-1, 1):
            raise NotImplementedError(f"CosineSimilarity: axis={axis!r}: Kiln compares the last axis")
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
mean_absolute_error = mae = MAE = _fn("mean_absolute_error")
huber = _fn("huber")
log_cosh = logcosh = _fn("log_cosh")
kl_divergence = kld = KLD = kullback_leibler_divergence = _fn("kl_divergence")
poisson = _fn("poisson")
hinge = _fn("hinge")
squared_hinge = _fn("squared_hinge")
categorical_hinge = _fn("categorical_hinge")
cosine_similarity = _fn("cosine_similarity")


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
                         "binary_crossentropy, mse (mean_squared_error), mae (mean_absolute_error), huber, log_cosh, "
                         "kl_divergence, poisson, hinge, squared_hinge, categorical_hinge, cosine_similarity and their classes")
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
