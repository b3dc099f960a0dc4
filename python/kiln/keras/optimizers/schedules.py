"""keras.optimizers.schedules mapped onto Kiln's epoch-based schedules (include/kiln/nn.h).

Keras counts decay in optimizer steps, Kiln in epochs (t = epoch + step / steps_per_epoch); the
mapping is made at the first fit, when steps per epoch are known, and is exact:
  ExponentialDecay(staircase=False)    -> exponential, gamma = decay_rate ** (steps_per_epoch / decay_steps)
  ExponentialDecay(staircase=True)     -> step, when decay_steps is a whole number of epochs
  CosineDecay(warmup_steps=0)          -> cosine to alpha * lr, when decay_steps covers the whole fit
Anything else is refused with the reason (NotImplementedError)."""
from ..._ns import missing


class LearningRateSchedule:
    initial_learning_rate = 0.0

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__}: Kiln evaluates schedules in C")

    def _kiln(self, steps_per_epoch, epochs):
        raise NotImplementedError(f"{type(self).__name__}: Kiln has no such schedule")


class ExponentialDecay(LearningRateSchedule):
    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        if decay_steps <= 0:
            raise ValueError("ExponentialDecay: decay_steps must be > 0")
        self.initial_learning_rate, self.decay_steps = float(initial_learning_rate), decay_steps
        self.decay_rate, self.staircase, self.name = float(decay_rate), bool(staircase), name

    def _kiln(self, spe, epochs):
        if not self.staircase:
            return self.initial_learning_rate, {"kind": "exponential", "gamma": self.decay_rate ** (spe / self.decay_steps)}
        if self.decay_steps % spe:
            raise NotImplementedError(f"ExponentialDecay(staircase=True): decay_steps {self.decay_steps} is not a whole "
                                      f"number of epochs ({spe} steps each); Kiln's step schedule decays at epoch ends")
        return self.initial_learning_rate, {"kind": "step", "gamma": self.decay_rate, "step_epochs": self.decay_steps // spe}


class CosineDecay(LearningRateSchedule):
    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None, warmup_steps=0):
        if warmup_steps or warmup_target is not None:
            raise NotImplementedError("CosineDecay: warmup_steps / warmup_target: Kiln's cosine schedule warms up from 0 "
                                      "(kiln train --schedule cosine --warmup-epochs); not Keras's warm-up")
        self.initial_learning_rate, self.decay_steps, self.alpha, self.name = float(initial_learning_rate), decay_steps, float(alpha), name

    def _kiln(self, spe, epochs):
        if self.decay_steps != spe * epochs:
            raise NotImplementedError(f"CosineDecay: decay_steps {self.decay_steps} must equal the fit's steps "
                                      f"({spe} per epoch x {epochs} epochs = {spe * epochs}): Kiln decays over the whole fit")
        return self.initial_learning_rate, {"kind": "cosine", "warmup_epochs": 0, "min_lr": self.alpha * self.initial_learning_rate}


def __getattr__(name):
    raise missing("keras.optimizers.schedules", name)
