"""keras.optimizers: SGD (momentum, nesterov), Adam, AdamW, RMSprop, Adagrad with Keras's
arguments and defaults, run by Kiln in C. `global_clipnorm` is Kiln's clip by global norm;
Keras's per-variable `clipnorm`, `clipvalue`, `amsgrad`, `centered`, EMA are refused.
learning_rate may be a float or a schedule of keras.optimizers.schedules that Kiln has."""
from ..._ns import missing
from . import schedules

_UNSUPPORTED = {
    "clipnorm": "Kiln clips by the global norm: use global_clipnorm",
    "clipvalue": "Kiln clips by the global norm: use global_clipnorm",
    "use_ema": "Kiln keeps no moving average of the weights",
    "loss_scale_factor": "Kiln scales the loss itself under mixed_float16",
    "gradient_accumulation_steps": "use Kiln's accumulation (kiln train --accumulate) instead",
    "amsgrad": "Kiln's Adam has no AMSGrad variant", "centered": "Kiln's RMSprop is not centered",
}
_DEFAULTS = {"clipnorm": None, "clipvalue": None, "use_ema": False, "loss_scale_factor": None,
             "gradient_accumulation_steps": None, "amsgrad": False, "centered": False,
             "ema_momentum": 0.99, "ema_overwrite_frequency": None, "jit_compile": True, "decay": 0.0}


class Optimizer:
    _kind = None

    def __init__(self, learning_rate, name, weight_decay=None, global_clipnorm=None, lr=None, **kwargs):
        if lr is not None:          # tf.keras 2's old name
            learning_rate = lr
        for k, v in kwargs.items():
            if k not in _DEFAULTS:
                raise TypeError(f"{type(self).__name__}: unexpected keyword argument '{k}'")
            if v != _DEFAULTS[k]:
                raise NotImplementedError(f"{type(self).__name__}: {k}={v!r} is not supported: "
                                          f"{_UNSUPPORTED.get(k, 'Kiln does not have it')}")
        self._lr, self.name = learning_rate, name
        self.weight_decay = weight_decay
        self.global_clipnorm = global_clipnorm
        self._model = None          # the compiled model, set by compile

    @property
    def learning_rate(self):
        """The base learning rate (the schedule object when one was given). After a fit, Kiln's
        current rate of the model it trains."""
        m = self._model
        if m is not None and m._c is not None and m._c_compiled and hasattr(m._c, "learning_rate"):
            return m._c.learning_rate()
        if m is not None and m._last_lr is not None:
            return m._last_lr          # Kiln's rate at the end of the last epoch trained
        return self._lr

    @learning_rate.setter
    def learning_rate(self, value):
        m = self._model
        if m is not None and m._c is not None and m._c_compiled:
            if hasattr(m._c, "set_learning_rate"):
                m._c.set_learning_rate(float(value))
            elif m._fits == 0:
                m._c_compiled = False       # not trained yet: compiled again with this rate at the next fit
            else:
                raise NotImplementedError("optimizer.learning_rate = ...: this build of kiln._kiln cannot change "
                                          "the learning rate of a trained model (Model.set_learning_rate)")
        self._lr = value

    lr = learning_rate

    def _kiln(self, steps_per_epoch=None, epochs=None, eval_only=False):
        """(optimizer dict, schedule dict or None) for _kiln.Model.compile; eval_only: a
        schedule's initial rate, for evaluate before the first fit."""
        d = {"kind": self._kind}
        d.update({k: v for k, v in self._extra().items() if v is not None})
        sched = None
        if isinstance(self._lr, schedules.LearningRateSchedule) and eval_only:
            d["lr"] = self._lr.initial_learning_rate
        elif isinstance(self._lr, schedules.LearningRateSchedule):
            d["lr"], sched = self._lr._kiln(steps_per_epoch, epochs)
        else:
            d["lr"] = float(self._lr)
        if self.global_clipnorm:
            d["clip_norm"] = float(self.global_clipnorm)
        if self.weight_decay:
            if self._kind not in ("sgd", "adam", "adamw"):
                raise NotImplementedError(f"{type(self).__name__}: weight_decay: Kiln decays weights with sgd, adam, adamw")
            d["weight_decay"] = float(self.weight_decay)
        return d, sched

    def _extra(self):
        return {}

    def get_config(self):
        return {"name": self.name, "learning_rate": self._lr, **self._extra()}

    def __repr__(self):
        return f"<kiln.keras.optimizers.{type(self).__name__} {self.get_config()}>"


class SGD(Optimizer):
    _kind = "sgd"

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(learning_rate, name, **kwargs)
        self.momentum, self.nesterov = float(momentum), bool(nesterov)

    def _extra(self):
        return {"momentum": self.momentum, "nesterov": self.nesterov}


class Adam(Optimizer):
    _kind = "adam"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="adam", **kwargs):
        super().__init__(learning_rate, name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _extra(self):
        return {"beta1": self.beta_1, "beta2": self.beta_2, "epsilon": self.epsilon}


class AdamW(Adam):
    _kind = "adamw"

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="adamw", **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, weight_decay=weight_decay, **kwargs)

    def _kiln(self, steps_per_epoch=None, epochs=None, eval_only=False):
        d, s = super()._kiln(steps_per_epoch, epochs, eval_only)
        if not self.weight_decay:     # Kiln's adamw reads 0 as its default 0.004: no decay is Adam
            d["kind"] = "adam"
        return d, s


class RMSprop(Optimizer):
    _kind = "rmsprop"

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, name="rmsprop", **kwargs):
        super().__init__(learning_rate, name, **kwargs)
        self.rho, self.momentum, self.epsilon = float(rho), float(momentum), float(epsilon)

    def _extra(self):
        return {"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon}


class Adagrad(Optimizer):
    _kind = "adagrad"

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, name="adagrad", **kwargs):
        super().__init__(learning_rate, name, **kwargs)
        self.initial_accumulator_value, self.epsilon = float(initial_accumulator_value), float(epsilon)

    def _extra(self):
        return {"initial_accumulator": self.initial_accumulator_value, "epsilon": self.epsilon}


_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier):
    """compile's optimizer: a name ('adam', ...), an Optimizer object or class."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Optimizer):
        return identifier()
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"optimizer {identifier!r}: Kiln has {', '.join(_BY_NAME)} (names or keras.optimizers objects)")


def __getattr__(name):
    raise missing("keras.optimizers", name)
