"""tf.test: whether Kiln can use a GPU."""
from ._ext import _kiln
from ._ns import missing


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """True when Kiln has a CUDA GPU it can use (the first call says once on stderr that Kiln
    uses the CPU when there is none, as the CLI does)."""
    if min_cuda_compute_capability is not None:
        raise NotImplementedError("is_gpu_available: min_cuda_compute_capability is not checked by Kiln")
    return bool(_kiln.gpu_available())


def is_built_with_cuda():
    """True when this build of Kiln has its CUDA module (libkiln_cuda.so)."""
    return bool(_kiln.built_with_cuda())


def is_built_with_gpu_support():
    return is_built_with_cuda()


def gpu_device_name():
    return "/device:GPU:0" if _kiln.gpu_available() else ""


def __getattr__(name):
    raise missing("tf.test", name)
