"""keras.metrics: accuracy and top-k accuracy, which Kiln computes in C during fit/evaluate.

'accuracy' / 'acc' is resolved as Keras does: binary accuracy (output above 0.5) for one output
unit, else categorical (the arg-max against the class id). The History and evaluate keys are the
names given, as in Keras."""
from .._ns import missing

_ACC = {"accuracy", "acc", "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy"}
_TOPK = {"top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy"}


class Metric:
    _kind, _default_name = None, None

    def __init__(self, name=None, dtype=None, **kwargs):
        self.name = name or self._default_name
        self._k = 5

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: Kiln computes metrics inside fit/evaluate; pass it to compile")


def _acc_class(cls, default):
    return type(cls, (Metric,), {"_kind": "accuracy", "_default_name": default})


Accuracy = _acc_class("Accuracy", "accuracy")
SparseCategoricalAccuracy = _acc_class("SparseCategoricalAccuracy", "sparse_categorical_accuracy")
CategoricalAccuracy = _acc_class("CategoricalAccuracy", "categorical_accuracy")


class BinaryAccuracy(Metric):
    _kind, _default_name = "accuracy", "binary_accuracy"

    def __init__(self, name=None, dtype=None, threshold=0.5):
        if threshold != 0.5:
            raise NotImplementedError("BinaryAccuracy: Kiln's threshold is 0.5")
        super().__init__(name)


class SparseTopKCategoricalAccuracy(Metric):
    _kind, _default_name = "top_k", "sparse_top_k_categorical_accuracy"

    def __init__(self, k=5, name=None, dtype=None, **kwargs):
        super().__init__(name)
        self._k = int(k)


class TopKCategoricalAccuracy(SparseTopKCategoricalAccuracy):
    _default_name = "top_k_categorical_accuracy"


def resolve(metrics):
    """compile's metrics -> (bits, top_k, [(display name, 'accuracy' | 'top_k')] in order)."""
    if metrics is None:
        return 0, 0, []
    if isinstance(metrics, dict):
        raise NotImplementedError("compile: metrics per output: Kiln's models have one output")
    if isinstance(metrics, (str, Metric)) or callable(metrics):
        metrics = [metrics]
    bits, top_k, order = 0, 0, []
    for m in metrics:
        if isinstance(m, type) and issubclass(m, Metric):
            m = m()
        if isinstance(m, Metric):
            kind, name, k = m._kind, m.name, m._k
        elif isinstance(m, str) and (m in _ACC or m in _TOPK):
            kind, name, k = ("accuracy" if m in _ACC else "top_k"), m, 5
        elif getattr(m, "_kiln_metric", None):
            kind, name, k = m._kiln_metric, m.__name__, 5
        else:
            shown = m if isinstance(m, str) else getattr(m, "__name__", repr(m))
            raise NotImplementedError(f"metric '{shown}': Kiln computes accuracy ('accuracy', 'acc', "
                                      "'sparse_categorical_accuracy', 'categorical_accuracy', 'binary_accuracy') and "
                                      "top-k accuracy ('sparse_top_k_categorical_accuracy', SparseTopKCategoricalAccuracy(k))")
        bit = 1 if kind == "accuracy" else 2
        if bits & bit:
            raise NotImplementedError(f"metric '{name}': Kiln computes one {kind} metric per model")
        bits |= bit
        if kind == "top_k":
            top_k = k
        order.append((name, kind))
    return bits, top_k, order


def _fn(name, kind):
    def f(y_true, y_pred, **kwargs):
        raise NotImplementedError(f"keras.metrics.{name}: pass it to compile; Kiln computes it in C")
    f.__name__, f._kiln_metric = name, kind
    return f


sparse_categorical_accuracy = _fn("sparse_categorical_accuracy", "accuracy")
categorical_accuracy = _fn("categorical_accuracy", "accuracy")
binary_accuracy = _fn("binary_accuracy", "accuracy")
sparse_top_k_categorical_accuracy = _fn("sparse_top_k_categorical_accuracy", "top_k")
top_k_categorical_accuracy = _fn("top_k_categorical_accuracy", "top_k")


def __getattr__(name):
    raise missing("keras.metrics", name)
