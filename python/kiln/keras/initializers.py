"""keras.initializers: the initializers Kiln draws (in C). Objects serialize to Keras's
{"class_name": ..., "config": ...}; Kiln draws the same distributions as Keras with other random
numbers (seed None: from the model seed)."""
from .._ns import missing


class Initializer:
    _params = ()

    def __init__(self, **kwargs):
        self._config = kwargs

    def get_config(self):
        return dict(self._config)

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def _kiln_serialize(self):
        return {"module": "keras.initializers", "class_name": type(self).__name__,
                "config": dict(self._config), "registered_name": None}

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: Kiln draws initial weights in C; pass the "
                                  "initializer to a layer (kernel_initializer=...)")

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._config.items())})"


def _cls(name, defaults, doc=""):
    def __init__(self, *args, **kwargs):
        keys = list(defaults)
        if len(args) > len(keys):
            raise TypeError(f"{name} takes at most {len(keys)} positional arguments")
        cfg = dict(defaults)
        cfg.update(zip(keys, args))
        for k, v in kwargs.items():
            if k not in defaults:
                raise TypeError(f"{name}: unexpected keyword argument '{k}'")
            cfg[k] = v
        Initializer.__init__(self, **cfg)
    return type(name, (Initializer,), {"__init__": __init__, "__doc__": doc or f"Keras's {name}."})


Zeros = _cls("Zeros", {})
Ones = _cls("Ones", {})
Constant = _cls("Constant", {"value": 0.0})
RandomUniform = _cls("RandomUniform", {"minval": -0.05, "maxval": 0.05, "seed": None})
RandomNormal = _cls("RandomNormal", {"mean": 0.0, "stddev": 0.05, "seed": None})
TruncatedNormal = _cls("TruncatedNormal", {"mean": 0.0, "stddev": 0.05, "seed": None})
GlorotUniform = _cls("GlorotUniform", {"seed": None})
GlorotNormal = _cls("GlorotNormal", {"seed": None})
HeUniform = _cls("HeUniform", {"seed": None})
HeNormal = _cls("HeNormal", {"seed": None})
VarianceScaling = _cls("VarianceScaling", {"scale": 1.0, "mode": "fan_in", "distribution": "truncated_normal", "seed": None},
                       "Keras's VarianceScaling: Kiln takes the four equal to Glorot/He uniform/normal.")
Orthogonal = _cls("Orthogonal", {"gain": 1.0, "seed": None})
zeros, ones, constant, orthogonal = Zeros, Ones, Constant, Orthogonal
random_uniform, random_normal, truncated_normal = RandomUniform, RandomNormal, TruncatedNormal
glorot_uniform, glorot_normal, he_uniform, he_normal = GlorotUniform, GlorotNormal, HeUniform, HeNormal


def get(identifier):
    if identifier is None or isinstance(identifier, (str, Initializer)):
        return identifier
    raise TypeError(f"keras.initializers.get: {identifier!r} is not an initializer")


def __getattr__(name):
    raise missing("keras.initializers", name)
