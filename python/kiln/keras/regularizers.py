"""keras.regularizers: L2 on kernels (Kiln adds l2 * sum(w^2) to the loss, as Keras's L2).
L1 (or L1L2 with l1 != 0) is refused by Kiln when the layer is built."""
from .._ns import missing


class Regularizer:
    def __init__(self, **config):
        self._config = config

    def get_config(self):
        return dict(self._config)

    def _kiln_serialize(self):
        return {"module": "keras.regularizers", "class_name": type(self).__name__,
                "config": dict(self._config), "registered_name": None}

    def __repr__(self):
        return f"{type(self).__name__}({self._config})"


class L2(Regularizer):
    def __init__(self, l2=0.01):
        super().__init__(l2=float(l2))


class L1(Regularizer):
    """Refused by Kiln (L2 only) when its layer is built."""

    def __init__(self, l1=0.01):
        super().__init__(l1=float(l1))


class L1L2(Regularizer):
    def __init__(self, l1=0.0, l2=0.0):
        super().__init__(l1=float(l1), l2=float(l2))


l2, l1, l1_l2 = L2, L1, L1L2


def __getattr__(name):
    raise missing("keras.regularizers", name)
