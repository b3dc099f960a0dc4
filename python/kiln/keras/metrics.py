"""keras.metrics: accuracy, top-k accuracy, precision, recall, AUC, MAE, MSE and RMSE, which Kiln
computes in C during fit/evaluate (compile's metric_list beyond accuracy and top-k).

'accuracy' / 'acc' is resolved as Keras does: binary accuracy (output above 0.5) for one output
unit, else categorical (the arg-max against the class id). The History and evaluate keys are the
names given, as in Keras."""
from .._ns import missing

_ACC = {"accuracy", "acc", "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy"}
_TOPK = {"top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy"}
# names of Kiln's metric_list (C): string -> Kiln's kind
_MORE = {"precision": "precision", "Precision": "precision", "recall": "recall", "Recall": "recall",
         "auc": "auc", "AUC": "auc", "mae": "mae", "mean_absolute_error": "mae", "MAE": "mae",
         "mse": "mse", "mean_squared_error": "mse", "MSE": "mse",
         "rmse": "rmse", "root_mean_squared_error": "rmse", "RootMeanSquaredError": "rmse"}


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


class _Listed(Metric):
    """A metric of Kiln's metric_list (_kiln_kind), shown under its name."""
    _kind = "list"

    def __init__(self, name=None, dtype=None):
        super().__init__(name)


class Precision(_Listed):
    _kiln_kind, _default_name = "precision", "precision"

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        if thresholds not in (None, 0.5) or top_k is not None or class_id is not None:
            raise NotImplementedError(f"{type(self).__name__}: Kiln counts at the threshold 0.5 over every output "
                                      "(thresholds, top_k and class_id are not supported)")
        super().__init__(name)


class Recall(Precision):
    _kiln_kind, _default_name = "recall", "recall"


class AUC(_Listed):
    _kiln_kind, _default_name = "auc", "auc"

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name=None, dtype=None,
                 thresholds=None, multi_label=False, num_labels=None, label_weights=None, from_logits=False):
        if (num_thresholds, curve, summation_method, thresholds, multi_label, num_labels, label_weights, from_logits) != \
                (200, "ROC", "interpolation", None, False, None, None, False):
            raise NotImplementedError("AUC: Kiln computes Keras's default AUC (ROC, 200 thresholds, interpolation, "
                                      "multi_label=False, probabilities)")
        super().__init__(name)


class MeanAbsoluteError(_Listed):
    _kiln_kind, _default_name = "mae", "mean_absolute_error"


class MeanSquaredError(_Listed):
    _kiln_kind, _default_name = "mse", "mean_squared_error"


class RootMeanSquaredError(_Listed):
    _kiln_kind, _default_name = "rmse", "root_mean_squared_error"


def resolve(metrics):
    """compile's metrics -> (bits, top_k, [(display name, 'accuracy' | 'top_k' | 'm<i>')] in order,
    Kiln's metric_list). 'm<i>' is entry i of the metric_list (the key in Kiln's logs)."""
    bits, top_k, order = _resolve(metrics)
    listed = [(n, k, kk) for n, k, kk in order if k == "list"]
    mlist = ",".join(f"{kk}@{n}" for n, _, kk in listed) or None
    keys, i = [], 0
    for n, k, _ in order:
        if k == "list":
            keys.append((n, f"m{i}"))
            i += 1
        else:
            keys.append((n, k))
    if i > 16:
        raise NotImplementedError("compile: Kiln computes at most 16 metrics besides accuracy and top-k")
    return bits, top_k, keys, mlist


def _resolve(metrics):
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
        if isinstance(m, _Listed):
            if "," in m.name or "@" in m.name:
                raise ValueError(f"metric name {m.name!r}: Kiln's names have no ',' or '@'")
            order.append((m.name, "list", m._kiln_kind))
            continue
        if isinstance(m, str) and m in _MORE:
            order.append((m, "list", _MORE[m]))
            continue
        if isinstance(m, Metric):
            kind, name, k = m._kind, m.name, m._k
        elif isinstance(m, str) and (m in _ACC or m in _TOPK):
            kind, name, k = ("accuracy" if m in _ACC else "top_k"), m, 5
        elif getattr(m, "_kiln_metric", None) == "list":
            order.append((m.__name__, "list", _MORE[m.__name__]))
            continue
        elif getattr(m, "_kiln_metric", None):
            kind, name, k = m._kiln_metric, m.__name__, 5
        else:
            shown = m if isinstance(m, str) else getattr(m, "__name__", repr(m))
            raise NotImplementedError(f"metric '{shown}': Kiln computes accuracy ('accuracy', 'acc', "
                                      "'sparse_categorical_accuracy', 'categorical_accuracy', 'binary_accuracy'), "
                                      "top-k accuracy ('sparse_top_k_categorical_accuracy', SparseTopKCategoricalAccuracy(k)), "
                                      "'precision', 'recall', 'auc', 'mae', 'mse', 'rmse' and their classes")
        bit = 1 if kind == "accuracy" else 2
        if bits & bit:
            raise NotImplementedError(f"metric '{name}': Kiln computes one {kind} metric per model")
        bits |= bit
        if kind == "top_k":
            top_k = k
        order.append((name, kind, None))
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
mean_absolute_error = mae = _fn("mean_absolute_error", "list")
mean_squared_error = mse = _fn("mean_squared_error", "list")


def __getattr__(name):
    raise missing("keras.metrics", name)
