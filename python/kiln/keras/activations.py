"""keras.activations: the activations Kiln has, usable as `activation=keras.activations.relu`
(serialized by name; Kiln computes them in C, so these are not callable on data)."""
from .._ns import missing

_NAMES = ["linear", "relu", "sigmoid", "tanh", "softmax", "gelu", "elu", "leaky_relu", "softplus", "silu", "relu6",
          "hard_sigmoid", "hard_silu", "selu", "softsign", "mish", "exponential"]
_ALIASES = {"swish": "silu", "hard_swish": "hard_silu"}     # Keras's other names of the same functions


def _make(name):
    def act(*args, **kwargs):
        raise NotImplementedError(f"keras.activations.{name}: Kiln computes activations inside its layers; "
                                  f"pass activation='{name}' (or this function) to a layer")
    act.__name__ = act.__qualname__ = name
    act.__module__ = __name__
    return act


for _n in _NAMES:
    globals()[_n] = _make(_n)
for _a, _n in _ALIASES.items():
    globals()[_a] = globals()[_n]


def get(identifier):
    if identifier is None:
        return globals()["linear"]
    if isinstance(identifier, str) and identifier in _ALIASES:
        identifier = _ALIASES[identifier]
    if isinstance(identifier, str) and identifier in _NAMES:
        return globals()[identifier]
    if callable(identifier) and getattr(identifier, "__name__", None) in _NAMES:
        return identifier
    raise ValueError(f"keras.activations.get({identifier!r}): Kiln has {', '.join(_NAMES)}")


def serialize(fn):
    return fn.__name__


def __getattr__(name):
    raise missing("keras.activations", name)
