"""Kiln for Python: `import kiln as tf` runs TensorFlow 2 / Keras programs of the scope Kiln
covers, `from kiln import keras` Keras 3 programs. Everything that trains runs in C (libkiln,
through the extension kiln._kiln); this package is Keras's names, arguments and semantics.

A TensorFlow name Kiln does not have raises AttributeError naming it."""
import contextlib
import os

# OpenMP threads with nothing to do sleep rather than spin (libgomp reads this once, when the
# extension loads it): spinning threads make every parallel region wait when other processes
# share the cores (docs/performance.md). A policy already set is kept; the `kiln` CLI does the same.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "passive"

from . import _state
from ._ext import _kiln
from ._ns import missing
from . import config, test, debugging, random, distribute, data
from . import keras

__version__ = _kiln.version()
__all__ = ["keras", "config", "test", "distribute", "debugging", "random", "data", "device", "__version__"]


def _parse_device(name):
    s = str(name).strip().lower()
    if "device:" in s:
        s = s.split("device:")[-1]
    s = s.lstrip("/")
    kind, _, idx = s.partition(":")
    if kind not in ("cpu", "gpu") or (idx and not idx.isdigit()):
        raise ValueError(f"tf.device({name!r}): Kiln places models on '/cpu:0' or '/gpu:0'")
    if kind == "cpu":
        return "cpu"
    if idx and int(idx) != 0:
        raise NotImplementedError(f"tf.device({name!r}): one model runs on /gpu:0; several GPUs train "
                                  "together through tf.distribute.MirroredStrategy")
    # TensorFlow's soft placement: without a GPU the model runs on the CPU ("auto" says so once)
    return "cuda" if _kiln.gpu_available() else "auto"


@contextlib.contextmanager
def device(device_name):
    """Models built or compiled inside run on this device ('/gpu:0' or '/cpu:0'). Without a GPU,
    '/gpu:0' falls back to the CPU as TensorFlow's soft placement does (Kiln says so once)."""
    _state.device_stack.append(_parse_device(device_name))
    try:
        yield
    finally:
        _state.device_stack.pop()


def __getattr__(name):
    raise missing("tf", name)
