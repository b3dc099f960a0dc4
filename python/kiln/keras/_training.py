"""compile / fit / evaluate / predict with Keras's arguments and semantics, run by Kiln in C.

Differences from Keras, each stated where it matters: fit skips the partial last batch of an
epoch (Kiln's fixed-shape step; a training set smaller than batch_size trains one batch of all of
it); validation_split holds out the last N - ceil(N * (1 - split)) examples, as Keras; Python callbacks see the running
epoch means in on_train_batch_end, as Keras 3. Arguments Kiln cannot honour (sample_weight,
class_weight, ...) raise an error naming them."""
import math

import numpy as np

from .. import _state
from .._ext import _kiln, array_out, f32
from . import callbacks as C
from ._dataset import Dataset
from . import losses, metrics as M, optimizers as O


# losses of one value per example with one output unit (float targets; hinge's -1/1 too)
_VALUE_LOSSES = ("mse", "mae", "huber", "log_cosh", "poisson", "hinge", "squared_hinge")


def _refuse(what, **given):
    for k, (v, default) in given.items():
        if v is not default and not (isinstance(v, (int, float, str, bool)) and v == default):
            raise NotImplementedError(f"{what}: argument '{k}' is not supported by Kiln (got {v!r})")


def _verbose(v):
    return 1 if v == "auto" else int(v)


class Training:
    def _init_training(self):
        self._compile_kw, self._c_compiled, self._sched_key = None, False, None
        self.optimizer, self.loss, self._metrics, self.stop_training, self.history = None, None, [], False, None
        self._fits, self._last_lr, self._lr_logs = 0, None, False

    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly=False, steps_per_execution=1, jit_compile="auto", auto_scale_loss=True, **kwargs):
        """Keras's compile. jit_compile is accepted (Kiln always compiles the step); the device
        is the tf.device() around the model's construction or this call, threads and precision
        come from tf.config.threading / keras.mixed_precision."""
        _refuse("compile", loss_weights=(loss_weights, None), weighted_metrics=(weighted_metrics, None),
                run_eagerly=(run_eagerly, False), steps_per_execution=(steps_per_execution, 1),
                auto_scale_loss=(auto_scale_loss, True), **{k: (v, None) for k, v in kwargs.items()})
        opt = O.get(optimizer)
        loss_name, from_logits = losses.resolve(loss) if loss is not None else (None, False)
        bits, top_k, order, metric_list = M.resolve(metrics)
        self.optimizer, self.loss, self._metrics = opt, loss, order
        opt._model = self
        if _state.current_strategy() is not None and self._strategy is None:
            self._strategy = _state.current_strategy()
        device = _state.current_device() or self._device or "auto"
        self._compile_kw = dict(loss=loss_name, from_logits=from_logits, metrics=bits, top_k=top_k,
                                huber_delta=float(getattr(loss, "delta", 0.0) or 0.0), metric_list=metric_list,
                                precision=_state.precision, device=device, threads=_state.threads,
                                log_device_placement=_state.log_device_placement)
        self._c_compiled, self._sched_key = False, None
        if self._c is not None and loss_name is not None and not isinstance(opt._lr, O.schedules.LearningRateSchedule):
            self._c_compile()

    def _c_compile(self, spe=None, epochs=None, eval_only=False):
        opt, sched = self.optimizer._kiln(spe, epochs, eval_only)
        self._c.compile(opt, self._compile_kw["loss"], schedule=sched,
                        **{k: v for k, v in self._compile_kw.items() if k != "loss"})
        self._c_compiled = True
        self._sched_key = "eval" if eval_only else (spe, epochs) if sched else None

    def _ready(self, x, spe=None, epochs=None, need_loss=True):
        """Builds the model for x (Sequential without an input shape) and compiles it in C."""
        if self._c is None:
            self._build_for(x)
        self._used = True
        if tuple(x.shape[1:]) != tuple(self._c.input_shape()):
            raise ValueError(f"model '{self._name}' takes inputs of shape {(None,) + tuple(self._c.input_shape())}; "
                             f"x has shape {x.shape}")
        if self._compile_kw is None or self._compile_kw["loss"] is None:
            if need_loss:
                raise RuntimeError("You must compile your model before training/testing. "
                                   "Use `model.compile(optimizer, loss)`.")
            return
        self._device_check()
        sched = isinstance(self.optimizer._lr, O.schedules.LearningRateSchedule)
        if not sched:
            if not self._c_compiled:
                self._c_compile()
        elif spe is None:               # evaluate / predict before any fit: the schedule needs fit's steps
            if not self._c_compiled:
                self._c_compile(eval_only=True)
        elif self._sched_key != (spe, epochs):
            if self._c_compiled and self._sched_key != "eval":
                raise NotImplementedError("fit: Kiln mapped the learning-rate schedule onto the first fit's steps "
                                          f"{self._sched_key}; this fit has {(spe, epochs)}: compile again")
            self._c_compile(spe, epochs)

    def _device_check(self):
        """fit / evaluate / predict inside tf.device(...): an untrained model is compiled again for
        that device (weights kept); a trained one cannot move (its optimizer state lives there)."""
        dev, have = _state.current_device(), self._compile_kw["device"]
        if dev is None or dev == have or (have == "auto" and dev == ("cuda" if _kiln.gpu_available() else "auto")):
            return
        if self._fits:
            raise NotImplementedError(f"tf.device: model '{self._name}' was compiled and trained on '{have}'; Kiln does "
                                      "not move a trained model: compile it inside the tf.device(...) block")
        self._compile_kw["device"], self._c_compiled = dev, False

    def _build_for(self, x):
        raise ValueError(f"model '{self._name}' is not built")

    # ---- labels: what Kiln's loss takes (class ids int32, or float32 values) ----
    def _labels(self, y, n, what="y"):
        if y is None:
            raise ValueError(f"fit: {what} is None; Kiln trains on (x, y) arrays")
        y = np.asarray(y)
        if y.shape[0] != n:
            raise ValueError(f"Data cardinality is ambiguous: x has {n} samples, {what} has {y.shape[0]}")
        loss, units = self._compile_kw["loss"], int(np.prod(self._c.output_shape()))
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.reshape(n)
        onehot_losses = ("categorical_crossentropy", "kl_divergence", "categorical_hinge", "cosine_similarity") + _VALUE_LOSSES
        if y.ndim == 2 and loss in onehot_losses and units == y.shape[1] and units > 1:
            if not (np.isin(y, (0, 1)).all() and (y.sum(axis=1) == 1).all()):
                raise ValueError(f"{what}: Kiln's {loss} takes one-hot rows (or class ids); soft labels are not supported")
            return np.ascontiguousarray(y.argmax(axis=1), dtype=np.int32)
        if y.ndim != 1:
            raise ValueError(f"{what} has shape {y.shape}; Kiln's {loss} takes class ids [N] (or one-hot rows "
                             f"[N, {units}] for categorical_crossentropy)" + (" and mse fits one value per example" if loss == "mse" else ""))
        if loss in _VALUE_LOSSES and units == 1:
            return np.ascontiguousarray(y, dtype=np.float32)
        if not np.issubdtype(y.dtype, np.integer):
            if not (np.isfinite(y).all() and (y == np.round(y)).all()):
                why = {"binary_crossentropy": " 0 or 1; soft labels are not supported",
                       "mse": f" with {units} output units (one-hot encoded inside); mse fits one value per example "
                              "only with one output unit"}.get(loss, "")
                raise ValueError(f"{what}: Kiln's {loss} takes class ids (whole numbers){why}")
        if y.size and (y.min() < 0 or y.max() >= max(units, 2)):
            raise ValueError(f"{what}: class ids must be in [0, {max(units, 2)}) for the model's {units} output "
                             f"unit(s); got {y.min()}..{y.max()}")
        return np.ascontiguousarray(y, dtype=np.int32)

    # ---- logs: Kiln's keys -> the names given to compile ----
    def _keras_logs(self, d):
        self._last_lr = d.get("lr")
        out = {"loss": d["loss"]}
        for name, kind in self._metrics:
            out[name] = d[kind]
        if "val_loss" in d:
            out["val_loss"] = d["val_loss"]
            for name, kind in self._metrics:
                out["val_" + name] = d["val_" + kind]
        out = dict(sorted(out.items()))         # Keras's logs and History are sorted by key
        if self._lr_logs:                       # Keras 3's LearningRateScheduler adds it
            out["learning_rate"] = d["lr"]
        return out

    def _sample_weight(self, sample_weight, ds, n, validation_split):
        """fit's sample_weight as float32 [n] (Kiln weighs the training loss as Keras; its validation
        loss is unweighted, so validation_split, whose held-out part Keras weighs, is refused with it)."""
        if sample_weight is None:
            return None
        if ds is not None:
            raise NotImplementedError("fit: sample_weight with a dataset: give x, y and sample_weight arrays")
        if validation_split:
            raise NotImplementedError("fit: sample_weight with validation_split: Kiln's validation loss is unweighted "
                                      "(pass validation_data=(x, y) instead)")
        w = np.ascontiguousarray(sample_weight, dtype=np.float32)
        if w.ndim == 2 and w.shape[1] == 1:
            w = w.reshape(-1)
        if w.shape != (n,):
            raise ValueError(f"fit: sample_weight has shape {w.shape}; Kiln takes one weight per example, ({n},)")
        return w

    def _kiln_monitor(self, monitor, mode, who):
        val = monitor.startswith("val_")
        base = monitor[4:] if val else monitor
        kind = "loss" if base == "loss" else dict(self._metrics).get(base)
        if kind is None:
            raise ValueError(f"{who}: monitor '{monitor}' is not one of this model's logs "
                             f"({', '.join(['loss'] + [n for n, _ in self._metrics])}, and their val_ forms)")
        listed = kind.startswith("m") and kind[1:].isdigit()     # Kiln's C callbacks know it by its name
        kiln = ("val_" if val else "") + (base if listed else kind)
        want = "min" if kind == "loss" or (listed and not any(w in base for w in ("auc", "precision", "recall", "acc"))) else "max"
        if mode not in ("auto", want):
            raise NotImplementedError(f"{who}: mode '{mode}' for '{monitor}': Kiln {want}imizes it")
        return kiln

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=1,
            max_queue_size=10, workers=1, use_multiprocessing=False):
        _refuse("fit", class_weight=(class_weight, None),
                validation_steps=(validation_steps, None), validation_batch_size=(validation_batch_size, None),
                validation_freq=(validation_freq, 1), max_queue_size=(max_queue_size, 10), workers=(workers, 1),
                use_multiprocessing=(use_multiprocessing, False))
        if shuffle not in (True, False):
            raise NotImplementedError(f"fit: shuffle={shuffle!r}: Kiln shuffles examples (True) or not (False)")
        ds = x if isinstance(x, Dataset) else None
        if ds is not None:
            spe = self._dataset_args(ds, y, batch_size, validation_split, validation_data)
            x = np.zeros((1,) + ds.example_shape, np.float32)      # the shape, to build the model
            batch = 0
        else:
            x = f32(x)
            n = x.shape[0]
            n_train = math.ceil(n * (1.0 - validation_split)) if validation_split else n   # Keras's split, as Kiln's
            batch = int(batch_size or 32)
            batch = max(1, min(batch, n_train))
            spe = n_train // batch
        if steps_per_epoch:
            spe = min(spe, int(steps_per_epoch))
        self._ready(x, spe, int(epochs))
        y = self._labels(y, n) if ds is None else None
        sw = self._sample_weight(sample_weight, ds, n if ds is None else 0, validation_split)
        vx = vy = None
        if ds is None and validation_data is not None:
            if len(validation_data) == 3 and validation_data[2] is not None:
                raise NotImplementedError("fit: validation_data with sample weights is not supported by Kiln")
            vx = f32(validation_data[0], "validation_data x")
            vy = self._labels(validation_data[1], vx.shape[0], "validation_data y")
        verbose = _verbose(verbose)
        cbs = list(callbacks or [])
        for c in cbs:
            if not isinstance(c, C.Callback):
                raise TypeError(f"fit: callbacks: {c!r} is not a keras.callbacks.Callback")
        in_c = [isinstance(c, C._CCallback) and c._in_c() for c in cbs]
        c_dicts = [c._kiln_dict(self) for c, k in zip(cbs, in_c) if k]
        py = [c for c, k in zip(cbs, in_c) if not k]
        self._lr_logs = any(isinstance(c, (C.LearningRateScheduler, C.ReduceLROnPlateau)) for c in cbs)
        history = C.History()
        params = {"verbose": verbose, "epochs": int(epochs), "steps": spe}
        for c in py + [history]:
            c.set_model(self)
            c.set_params(params)
        batches = any(c._uses_batches() for c in py)
        self.stop_training = False
        first = int(initial_epoch)

        def on_batch_end(b, d):
            logs = self._keras_logs(d)
            for c in py:
                c.on_train_batch_end(b - 1, logs)
            if self.stop_training:
                return True
            if b < d["steps"]:
                for c in py:
                    c.on_train_batch_begin(b, {})
            return False

        def on_epoch_end(e, d):
            logs = self._keras_logs(d)
            for c in py:
                c.on_epoch_end(e - 1, logs)
            if self.stop_training:
                return True
            if e < epochs:
                for c in py:
                    c.on_epoch_begin(e, {})
                if batches:
                    for c in py:
                        c.on_train_batch_begin(0, {})
            return False

        history.on_train_begin()
        for c in py:
            c.on_train_begin({})
        if first < epochs:
            for c in py:
                c.on_epoch_begin(first, {})
            if batches:
                for c in py:
                    c.on_train_batch_begin(0, {})
        if first >= epochs:                # Keras trains nothing (Kiln reads epochs 0 as 1)
            for c in py:
                c.on_train_end({})
            self.history = history
            return history
        devices = self._strategy._fit_devices() if self._strategy is not None else None
        seed = ((_state.seed or 0) + self._fits) & 0xFFFFFFFFFFFFFFFF
        self._fits += 1
        if ds is not None:               # Kiln's own pipeline: read and batched on C threads
            logs_list = self._c.fit_data(ds._d, epochs=int(epochs), initial_epoch=first,
                                         validation_data=validation_data._d if validation_data is not None else None,
                                         verbose=verbose, callbacks=c_dicts, on_batch_end=on_batch_end if batches else None,
                                         on_epoch_end=on_epoch_end if py else None,
                                         steps_per_epoch=int(steps_per_epoch or 0), devices=devices)
        else:
            logs_list = self._c.fit(x, y, batch_size=batch, epochs=int(epochs), initial_epoch=first, shuffle=bool(shuffle),
                                    seed=seed, validation_split=float(validation_split or 0.0), validation_x=vx,
                                    validation_y=vy, verbose=verbose, callbacks=c_dicts,
                                    on_batch_end=on_batch_end if batches else None,
                                    on_epoch_end=on_epoch_end if py else None,
                                    steps_per_epoch=int(steps_per_epoch or 0), devices=devices, sample_weight=sw)
        history.kiln_logs = logs_list      # Kiln's own per-epoch logs: lr, seconds, images_per_sec, ...
        for d in logs_list:
            history.on_epoch_end(d["epoch"] - 1, self._keras_logs(d))
        last = self._keras_logs(logs_list[-1]) if logs_list else {}
        for c in py:
            c.on_train_end(last)
        self.history = history
        return history

    def _dataset_args(self, ds, y, batch_size, validation_split, validation_data):
        """fit on a Dataset: what Keras also refuses there, and the steps per epoch."""
        if y is not None:
            raise ValueError("fit: y must not be given when x is a dataset (it yields (x, y) batches)")
        if batch_size is not None:
            raise ValueError("fit: batch_size must not be given when x is a dataset (it is batched)")
        if validation_split:
            raise ValueError("fit: validation_split is not supported with a dataset; use validation_data "
                             "(image_dataset_from_directory(..., validation_split=, subset='both'))")
        if validation_data is not None and not isinstance(validation_data, Dataset):
            raise NotImplementedError("fit: with a Kiln dataset as x, validation_data must be a Kiln dataset too")
        return ds.cardinality()

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False, **kwargs):
        _refuse("evaluate", sample_weight=(sample_weight, None), steps=(steps, None), callbacks=(callbacks or None, None),
                **{k: (v, None) for k, v in kwargs.items()})
        if isinstance(x, Dataset):
            if y is not None:
                raise ValueError("evaluate: y must not be given when x is a dataset")
            self._ready(np.zeros((1,) + x.example_shape, np.float32))
            r = self._c.evaluate_data(x._d, verbose=_verbose(verbose))
        else:
            x = f32(x)
            self._ready(x)
            y = self._labels(y, x.shape[0])
            r = self._c.evaluate(x, y, batch_size=int(batch_size or 32), verbose=_verbose(verbose))
        out = {"loss": r["loss"]}
        for name, kind in self._metrics:
            out[name] = r[kind]
        if return_dict:
            return dict(sorted(out.items()))
        return out["loss"] if len(out) == 1 else list(out.values())

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None, **kwargs):
        """Model outputs as a float32 NumPy array (Kiln prints no progress bar for predict)."""
        _refuse("predict", steps=(steps, None), callbacks=(callbacks or None, None), **{k: (v, None) for k, v in kwargs.items()})
        if isinstance(x, Dataset):      # its batches in order (one pass), predicted in C
            outs = [self.predict(bx, batch_size=len(bx)) for bx, _ in x]
            return np.concatenate(outs) if outs else np.zeros((0,) + tuple(self._c.output_shape()), np.float32)
        x = f32(x)
        self._ready(x, need_loss=False)
        return array_out(self._c.predict(x, batch_size=int(batch_size or 32)))

    def predict_on_batch(self, x):
        return self.predict(x, batch_size=max(1, len(x)), verbose=0)
