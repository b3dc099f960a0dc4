"""tf.distribute.MirroredStrategy: Kiln's mirrored replicas (fit's devices="all").

A model built or compiled inside `strategy.scope()` (or built inside and compiled outside, as the
seed program does: TensorFlow 2.21 refuses that, Kiln runs it) trains with one replica of the
step on every visible GPU, each on its share of the batch, gradients averaged (NCCL). Without a
GPU there is one replica, on the CPU. Batch norm keeps per-replica statistics, as TensorFlow's."""
import contextlib

from . import _state
from ._ext import _kiln
from ._ns import missing


def _gpu_names(devices):
    out = []
    for d in devices:
        s = str(d).lower().replace("/device:", "/").replace("/physical_device:", "/").lstrip("/")
        if not s.startswith("gpu:"):
            raise ValueError(f"MirroredStrategy: device {d!r}: Kiln mirrors over GPUs ('/gpu:0', '/gpu:1', ...)")
        out.append(s)
    return out


class MirroredStrategy:
    def __init__(self, devices=None, cross_device_ops=None):
        if cross_device_ops is not None:
            raise NotImplementedError("MirroredStrategy: cross_device_ops: Kiln averages gradients with NCCL")
        self._devices = None if devices is None else _gpu_names(devices)
        if self._devices and self._devices[0] != "gpu:0":
            raise ValueError("MirroredStrategy: Kiln's first device must be /gpu:0")

    @property
    def num_replicas_in_sync(self):
        if self._devices is not None:
            return len(self._devices)
        return max(1, _kiln.gpu_count() if _kiln.gpu_available() else 0)

    def _fit_devices(self):
        """fit's `devices` argument: None for one replica (as compiled)."""
        if self.num_replicas_in_sync < 2:
            return None
        return "all" if self._devices is None else ",".join(self._devices)

    @contextlib.contextmanager
    def scope(self):
        _state.strategy_stack.append(self)
        try:
            yield self
        finally:
            _state.strategy_stack.pop()

    @property
    def extended(self):
        raise missing("MirroredStrategy", "extended")

    def __repr__(self):
        return f"<kiln MirroredStrategy replicas={self.num_replicas_in_sync}>"


def get_strategy():
    """The strategy of the innermost scope, or None (TensorFlow returns a default strategy)."""
    return _state.current_strategy()


def has_strategy():
    return _state.current_strategy() is not None


def __getattr__(name):
    raise missing("tf.distribute", name)
