"""tf.debugging: device-placement logging."""
from . import _state
from ._ns import missing


def set_log_device_placement(enabled):
    """Models compiled afterwards print where their ops run (Kiln's log_device_placement)."""
    _state.log_device_placement = bool(enabled)


def __getattr__(name):
    raise missing("tf.debugging", name)
