"""tf.config: the devices Kiln sees and the CPU threads it uses."""
import collections

from . import _state
from ._ext import _kiln
from ._ns import Namespace, missing

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])


def _devices(device_type, prefix, cls):
    kinds = ["CPU", "GPU"] if device_type is None else [str(device_type).upper()]
    out = []
    for kind in kinds:
        n = 1 if kind == "CPU" else (_kiln.gpu_count() if kind == "GPU" and _kiln.gpu_available() else 0)
        out += [cls(f"{prefix}{kind}:{i}", kind) for i in range(n)]
    return out


def list_physical_devices(device_type=None):
    """The CPU (always one, as TensorFlow lists it) and each CUDA GPU Kiln can use."""
    return _devices(device_type, "/physical_device:", PhysicalDevice)


def list_logical_devices(device_type=None):
    return _devices(device_type, "/device:", LogicalDevice)


def get_visible_devices(device_type=None):
    return list_physical_devices(device_type)


def set_memory_growth(device, enable):
    """Accepted for every GPU, with no effect to ask for: Kiln never reserves a GPU's memory up
    front as TensorFlow does. It allocates what the training step's memory plan needs when the
    model is first run (docs/devices.md, "Memory"), so memory grows with the model either way."""
    if not isinstance(device, PhysicalDevice) or device.device_type != "GPU":
        raise ValueError(f"set_memory_growth: {device!r} is not a GPU of list_physical_devices('GPU')")
    return None


def get_memory_growth(device):
    return True


def set_intra_op_parallelism_threads(num_threads):
    """Kiln's CPU threads (0: every core, the default): the process's (kiln_set_num_threads, as
    `kiln train --threads`) and those of models compiled afterwards."""
    n = int(num_threads)
    if n < 0:
        raise ValueError(f"set_intra_op_parallelism_threads: {num_threads} must be >= 0")
    if n and hasattr(_kiln, "set_num_threads"):
        _kiln.set_num_threads(n)
    _state.threads = n


def get_intra_op_parallelism_threads():
    return _state.threads


def set_inter_op_parallelism_threads(num_threads):
    """Kiln runs the ops of a step in order on its intra-op threads: only 0 (TensorFlow's
    default, 'let the runtime choose') is accepted."""
    if int(num_threads) != 0:
        raise NotImplementedError("set_inter_op_parallelism_threads: Kiln runs ops one after another; "
                                  "use set_intra_op_parallelism_threads for Kiln's CPU threads")


def get_inter_op_parallelism_threads():
    return 0


experimental = Namespace("tf.config.experimental", set_memory_growth=set_memory_growth,
                         get_memory_growth=get_memory_growth, list_physical_devices=list_physical_devices,
                         list_logical_devices=list_logical_devices)
threading = Namespace("tf.config.threading",
                      set_intra_op_parallelism_threads=set_intra_op_parallelism_threads,
                      get_intra_op_parallelism_threads=get_intra_op_parallelism_threads,
                      set_inter_op_parallelism_threads=set_inter_op_parallelism_threads,
                      get_inter_op_parallelism_threads=get_inter_op_parallelism_threads)


def __getattr__(name):
    raise missing("tf.config", name)
