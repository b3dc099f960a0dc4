"""keras.mixed_precision: the precision policy models compiled afterwards train with:
'float32', 'mixed_bfloat16', 'mixed_float16' (docs/precision.md: on a CPU without bf16
instructions Kiln says so once and trains in float32)."""
from .. import _state
from .._ns import missing

_POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")


class Policy:
    def __init__(self, name):
        if name not in _POLICIES:
            raise ValueError(f"Policy '{name}': Kiln has {', '.join(_POLICIES)}")
        self.name = name

    compute_dtype = property(lambda self: {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}[self.name])
    variable_dtype = property(lambda self: "float32")

    def __repr__(self):
        return f'<Policy "{self.name}">'


def set_global_policy(policy):
    name = policy.name if isinstance(policy, Policy) else "float32" if policy is None else str(policy)
    _state.precision = Policy(name).name


def global_policy():
    return Policy(_state.precision)


def __getattr__(name):
    raise missing("keras.mixed_precision", name)
