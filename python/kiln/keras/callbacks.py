"""keras.callbacks. EarlyStopping, ModelCheckpoint, CSVLogger and TensorBoard are Kiln's C
callbacks (they run in C between epochs, no Python per step); Callback subclasses,
LambdaCallback, LearningRateScheduler and ReduceLROnPlateau run in Python at the batch / epoch
hooks fit gives them. Batch hooks are only called when a callback defines one (Python then runs
once per step). on_test_* / on_predict_* hooks are not called: evaluate and predict run in C."""
import os

from .._ns import missing

_NOT_DEFAULT = object()


class Callback:
    def __init__(self):
        self.model, self.params, self.validation_data = None, {}, None

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_batch_begin(self, batch, logs=None): pass
    def on_batch_end(self, batch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): self.on_batch_begin(batch, logs)
    def on_train_batch_end(self, batch, logs=None): self.on_batch_end(batch, logs)
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass

    def _uses_batches(self):
        base = Callback.__dict__
        return any(getattr(type(self), n) is not base[n]
                   for n in ("on_batch_begin", "on_batch_end", "on_train_batch_begin", "on_train_batch_end"))


class History(Callback):
    """fit's return value: .history {key: [value per epoch]} with Keras's keys, .epoch, .params;
    Kiln adds .kiln_logs, its own per-epoch logs (lr, seconds, images_per_sec, ...)."""

    def __init__(self):
        super().__init__()
        self.history, self.epoch, self.kiln_logs = {}, [], []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


class _CCallback(Callback):
    """A callback Kiln runs in C: _kiln_dict(model) gives its description."""

    def _in_c(self):
        return True

    def _kiln_dict(self, model):
        raise NotImplementedError


def _check(cls, name, value, ok, why):
    if value is not _NOT_DEFAULT and value not in ok:
        raise NotImplementedError(f"{cls}: {name}={value!r} is not supported: {why}")


def _path(cls, p):
    p = os.fspath(p)
    if p.endswith((".keras", ".h5", ".hdf5")):
        raise NotImplementedError(f"{cls}('{p}'): Kiln writes safetensors checkpoints, not .keras / .h5: use a "
                                  "path ending in .safetensors (Keras's placeholders such as {epoch:02d} work)")
    return p


class EarlyStopping(_CCallback):
    """Kiln's C early stopping (the last epoch's weights kept). With restore_best_weights, a
    baseline or start_from_epoch it runs in Python at each epoch end instead, as Keras's does
    (restoring copies the best epoch's weights back when it stops)."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor, self.min_delta, self.patience, self.mode = monitor, abs(min_delta), int(patience), mode
        self.verbose, self.baseline, self.restore_best_weights = verbose, baseline, bool(restore_best_weights)
        self.start_from_epoch = int(start_from_epoch)

    def _in_c(self):
        return not self.restore_best_weights and self.baseline is None and self.start_from_epoch == 0

    def _kiln_dict(self, model):
        return {"kind": "early_stopping", "monitor": model._kiln_monitor(self.monitor, self.mode, "EarlyStopping"),
                "patience": self.patience, "min_delta": float(self.min_delta)}

    def on_train_begin(self, logs=None):
        kind = self.model._kiln_monitor(self.monitor, self.mode, "EarlyStopping")
        self._max = not kind.endswith("loss")
        self.wait, self.stopped_epoch, self.best_weights, self.best_epoch = 0, 0, None, 0
        self.best = self.baseline if self.baseline is not None else (-float("inf") if self._max else float("inf"))

    def _better(self, v, ref):
        return v - self.min_delta > ref if self._max else v + self.min_delta < ref

    def on_epoch_end(self, epoch, logs=None):
        v = (logs or {}).get(self.monitor)
        if v is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._better(v, self.best):
            self.best, self.best_epoch = v, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose:
                    print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
                self.model.set_weights(self.best_weights)


class ModelCheckpoint(_CCallback):
    """Kiln's checkpoints: safetensors with the architecture inside (load_model reads them), the
    optimizer state too unless save_weights_only. Saved at each epoch end (save_freq='epoch')."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None, options=None, **kwargs):
        super().__init__()
        _check("ModelCheckpoint", "save_freq", save_freq, ("epoch",), "Kiln saves at epoch ends")
        _check("ModelCheckpoint", "initial_value_threshold", initial_value_threshold, (None,), "Kiln has no threshold")
        _check("ModelCheckpoint", "options", options, (None,), "Kiln writes safetensors")
        if kwargs:
            raise TypeError(f"ModelCheckpoint: unexpected keyword argument '{next(iter(kwargs))}'")
        self.filepath = _path("ModelCheckpoint", filepath)
        self.monitor, self.save_best_only, self.save_weights_only, self.mode = monitor, save_best_only, save_weights_only, mode

    def _kiln_dict(self, model):
        return {"kind": "model_checkpoint", "path": self.filepath, "save_best_only": bool(self.save_best_only),
                "monitor": model._kiln_monitor(self.monitor, self.mode, "ModelCheckpoint"),
                "include_optimizer": not self.save_weights_only}


class CSVLogger(_CCallback):
    """Kiln's history CSV: columns epoch (1-based), loss, accuracy, val_loss, val_accuracy, lr,
    seconds, images_per_sec (Keras writes epoch from 0 and the logs' keys)."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        _check("CSVLogger", "separator", separator, (",",), "Kiln writes commas")
        _check("CSVLogger", "append", append, (False,), "Kiln appends when training resumes (initial_epoch > 0)")
        self.filename = os.fspath(filename)

    def _kiln_dict(self, model):
        return {"kind": "csv_logger", "path": self.filename}


class TensorBoard(_CCallback):
    """Kiln's TensorBoard event files: scalars (epoch_loss, epoch_accuracy, epoch_learning_rate,
    and batch_* with update_freq); no graph, histograms, images or profiles."""

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False, write_steps_per_second=False,
                 update_freq="epoch", profile_batch=0, embeddings_freq=0, embeddings_metadata=None, **kwargs):
        super().__init__()
        _check("TensorBoard", "histogram_freq", histogram_freq, (0,), "Kiln writes scalars only")
        _check("TensorBoard", "write_images", write_images, (False,), "Kiln writes scalars only")
        _check("TensorBoard", "write_steps_per_second", write_steps_per_second, (False,), "Kiln writes scalars only")
        _check("TensorBoard", "profile_batch", profile_batch, (0, 2, None), "Kiln does not profile")
        _check("TensorBoard", "embeddings_freq", embeddings_freq, (0,), "Kiln writes scalars only")
        if kwargs:
            raise TypeError(f"TensorBoard: unexpected keyword argument '{next(iter(kwargs))}'")
        if update_freq == "epoch":
            self.update_freq = 0
        elif update_freq == "batch":
            self.update_freq = 1
        elif isinstance(update_freq, int) and update_freq > 0:
            self.update_freq = update_freq
        else:
            raise ValueError(f"TensorBoard: update_freq {update_freq!r}: 'epoch', 'batch' or a number of batches")
        self.log_dir = os.fspath(log_dir)

    def _kiln_dict(self, model):
        return {"kind": "tensorboard", "log_dir": self.log_dir, "update_freq": self.update_freq}


class LambdaCallback(Callback):
    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, on_batch_begin=None, on_batch_end=None, **kwargs):
        super().__init__()
        if kwargs:
            raise NotImplementedError(f"LambdaCallback: {sorted(kwargs)}: Kiln calls the training hooks only")
        fns = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end, on_train_begin=on_train_begin,
                   on_train_end=on_train_end, on_train_batch_begin=on_train_batch_begin or on_batch_begin,
                   on_train_batch_end=on_train_batch_end or on_batch_end)
        for k, f in fns.items():
            if f is not None:
                setattr(self, k, f)
        self._batches = fns["on_train_batch_begin"] is not None or fns["on_train_batch_end"] is not None

    def _uses_batches(self):
        return self._batches


class LearningRateScheduler(_CCallback):
    """schedule(epoch, lr) -> lr at each epoch's start (epoch from 0, lr the current rate, as
    Keras), called by Kiln's C scheduler callback; the logs and History get 'learning_rate'."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def _call(self, epoch1, lr):
        try:
            new = self.schedule(epoch1 - 1, lr)
        except TypeError:
            new = self.schedule(epoch1 - 1)
        new = float(new)
        if self.verbose:
            print(f"\nEpoch {epoch1}: LearningRateScheduler setting learning rate to {new}.")
        return new

    def _kiln_dict(self, model):
        return {"kind": "lr_scheduler", "fn": self._call}


class ReduceLROnPlateau(Callback):
    """Keras's ReduceLROnPlateau, deciding in Python at each epoch end; Kiln's optimizer takes the
    rate from the next step (Model.set_learning_rate). Logs get 'learning_rate', as Keras 3."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0, **kwargs):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0")
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, verbose
        self.min_delta, self.cooldown, self.min_lr = min_delta, cooldown, min_lr
        self.maximize = mode == "max" or (mode == "auto" and "acc" in monitor)
        self.best, self.wait, self.cooldown_counter = None, 0, 0

    def on_train_begin(self, logs=None):
        if not hasattr(self.model._c, "set_learning_rate"):
            raise NotImplementedError("ReduceLROnPlateau: this build of kiln._kiln cannot change a compiled "
                                      "model's learning rate between epochs (Model.set_learning_rate)")

    def on_epoch_end(self, epoch, logs=None):
        v = (logs or {}).get(self.monitor)
        if v is None:
            raise ValueError(f"ReduceLROnPlateau: monitor '{self.monitor}' is not in the logs ({sorted(logs or {})})")
        better = self.best is None or (v > self.best + self.min_delta if self.maximize else v < self.best - self.min_delta)
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if better:
            self.best, self.wait = v, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                opt = self.model.optimizer
                old = float(opt.learning_rate)
                if old > self.min_lr:
                    opt.learning_rate = max(old * self.factor, self.min_lr)
                    if self.verbose:
                        print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {float(opt.learning_rate)}.")
                self.cooldown_counter, self.wait = self.cooldown, 0


def __getattr__(name):
    raise missing("keras.callbacks", name)
