"""keras.models: Sequential, functional Model(inputs, outputs), load_model, model_from_json.

A model owns one C model (kiln._kiln.Model). Sequential models are built as soon as their input
shape is known (an Input / InputLayer first, a first layer with input_shape, build(), or the
first fit / predict / evaluate, from x's shape). Subclassed models (a Python call()) are not
supported: Kiln builds models from its layers."""
import json
import os

import numpy as np

from .. import _state
from .._ext import _kiln, array_out, f32
from .._ns import missing
from . import layers as L
from ._training import Training
from . import _restore

_names = {}


def _auto_name(base):
    n = _names.get(base, 0)
    _names[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


class Variable:
    """A model weight, as Keras 3's Variable: name ('kernel'), path ('dense/kernel'), shape,
    numpy(), assign(). Reads and writes go to the C model (copies, not views)."""

    def __init__(self, model, path, shape, trainable):
        self._model, self.path, self.shape, self.trainable = model, path, tuple(shape), bool(trainable)
        self.name = path.rsplit("/", 1)[-1]
        self.dtype = "float32"

    def numpy(self):
        self._model._used = True            # Kiln builds the model's step on first use
        return array_out(self._model._c.get_weight(self.path))

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def assign(self, value):
        v = f32(value, self.path)
        if v.shape != self.shape:
            raise ValueError(f"weight '{self.path}' has shape {self.shape}; the value given has shape {v.shape}")
        self._model._used = True
        self._model._c.set_weight(self.path, v)

    def __repr__(self):
        return f"<Variable path={self.path}, shape={self.shape}, dtype=float32>"


class _Outputs(np.ndarray):
    """What model(x) returns: a NumPy array that also has TensorFlow's .numpy()."""

    def __new__(cls, a):
        return np.asarray(a).view(cls)

    def numpy(self):
        return np.asarray(self)


class Model(Training):
    """keras.Model(inputs, outputs, name=None): a functional model (one input and one output in
    Kiln's first cut; multi-branch, Concatenate and Add inside)."""

    def __init__(self, inputs=None, outputs=None, name=None, **kwargs):
        if inputs is None and outputs is None and not isinstance(self, Sequential):
            raise NotImplementedError(
                f"{type(self).__name__}: subclassed models (a Python call()) are not supported; build the "
                "model from layers: keras.Sequential([...]) or keras.Model(inputs, outputs)")
        self._init_common(name or _auto_name("sequential" if isinstance(self, Sequential) else "functional"), kwargs)
        if isinstance(self, Sequential):
            return
        self._in_list, self._out_list = isinstance(inputs, (list, tuple)), isinstance(outputs, (list, tuple))
        ins = list(inputs) if self._in_list else [inputs]
        outs = list(outputs) if self._out_list else [outputs]
        if not all(isinstance(t, L.KerasTensor) for t in ins + outs):
            raise TypeError("keras.Model(inputs, outputs): give KerasTensors (from keras.Input and layer calls)")
        self.inputs, self.outputs = ins, outs
        cm = _kiln.functional(self._name)
        index = L._build_graph(cm, outs)
        for t in ins:
            if id(t) not in index:
                raise ValueError(f"keras.Model: input '{t.name}' is not connected to the outputs")
        cm.finish(tuple(index[id(t)] for t in ins), tuple(index[id(t)] for t in outs))
        order = sorted(((index[id(t)], t._layer) for t in L._history(outs)), key=lambda p: p[0])
        self._attach(cm, [l for _, l in order], [i for i, _ in order])

    def _init_common(self, name, kwargs):
        for k, v in kwargs.items():
            if not (k == "trainable" and v) and not (k == "dtype" and v in (None, "float32")):
                raise NotImplementedError(f"keras.Model: argument '{k}' = {v!r} is not supported by Kiln")
        self._name, self._c, self._layers, self._idx, self._used = name, None, [], [], False
        self._strategy = _state.current_strategy()
        self._device = _state.current_device()
        self._init_training()

    def _attach(self, cm, layers, indices):
        """Takes the new C model cm; its layer indices[k] is layers[k]. A layer that already
        belongs to another built model (a sub-model over a trained model's layers) stays that
        model's; this model gets a copy of its weights (Kiln has no shared weights)."""
        carried = [(i, l.get_weights()) for l, i in zip(layers, indices) if l.built and l._model is not self]
        info = cm.layers()
        self._c, self._layers, self._idx, self._used = cm, list(layers), list(indices), False
        if _state.seed is not None:
            cm.set_seed(_state.seed)
        for l, i in zip(layers, indices):
            if not l.built or l._model is self:
                l._model, l._index = self, i
                l._c_name = info[i][0]
        for i, ws in carried:
            for v, w in zip(self._vars(i), ws):
                v.assign(w)

    def _vars(self, i):
        return [Variable(self, w[0], tuple(w[1]), w[2]) for w in self._c.layers()[i][4]]

    # ---- Keras attributes ----
    name = property(lambda self: self._name)

    @property
    def trainable(self):
        return True

    @trainable.setter
    def trainable(self, value):
        if not value:
            raise NotImplementedError(f"{self._name}.trainable = False: Kiln trains every layer (no frozen models)")

    @property
    def metrics_names(self):
        """['loss', <the metrics given to compile>] (tf.keras 2's form: evaluate's order)."""
        return ["loss"] + [n for n, _ in self._metrics]

    layers = property(lambda self: list(self._layers))
    built = property(lambda self: self._c is not None)

    @property
    def input_shape(self):
        self._need_built("input_shape")
        return (None,) + tuple(self._c.input_shape())

    @property
    def output_shape(self):
        self._need_built("output_shape")
        return (None,) + tuple(self._c.output_shape())

    input = property(lambda self: self.inputs[0])
    output = property(lambda self: self.outputs[0])

    def _need_built(self, what):
        if self._c is None:
            raise ValueError(f"{what}: model '{self._name}' is not built yet; give it an input shape (keras.Input, "
                             "input_shape=, build()) or call fit / predict first")

    def get_layer(self, name=None, index=None):
        if index is not None:
            return self._layers[index]
        for l in self._layers:
            if l.name == name:
                return l
        raise ValueError(f"No such layer: {name}. Existing layers are: {[l.name for l in self._layers]}")

    @property
    def weights(self):
        if self._c is None:
            return []
        info = self._c.layers()
        return [Variable(self, w[0], tuple(w[1]), w[2]) for i in self._idx for w in info[i][4]]

    trainable_weights = trainable_variables = property(lambda self: [w for w in self.weights if w.trainable])
    non_trainable_weights = property(lambda self: [w for w in self.weights if not w.trainable])
    variables = weights

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        ws = self.weights
        if len(weights) != len(ws):
            raise ValueError(f"model '{self._name}' has {len(ws)} weights; set_weights got {len(weights)}")
        for w, v in zip(ws, weights):
            w.assign(v)

    def count_params(self):
        self._need_built("count_params")
        return int(self._c.param_count(False))

    def summary(self, line_length=None, positions=None, print_fn=None, **kwargs):
        """Prints Kiln's summary (kiln_model_summary: Keras's columns plus FLOPs per example)."""
        self._need_built("summary")
        text = self._c.summary().rstrip("\n")
        (print_fn or print)(text)

    def to_json(self, **kwargs):
        self._need_built("to_json")
        return self._c.to_json()

    def get_config(self):
        return json.loads(self.to_json())["config"]

    # ---- files: Kiln's safetensors (architecture, weights, optimizer state inside) ----
    @staticmethod
    def _check_path(path, what):
        p = os.fspath(path)
        if p.endswith((".keras", ".h5", ".hdf5")):
            raise NotImplementedError(f"{what}('{p}'): Kiln writes safetensors checkpoints (the architecture and "
                                      "weights in one file, read by kiln.keras.models.load_model and `kiln "
                                      "eval --load`), not .keras / .h5 files: use a path ending in .safetensors")
        return p

    def save(self, filepath, overwrite=True, include_optimizer=True, **kwargs):
        if kwargs.get("save_format") not in (None, "safetensors"):
            raise NotImplementedError(f"save: save_format={kwargs['save_format']!r}: Kiln writes safetensors")
        self._need_built("save")
        self._used = True
        self._c.save(self._check_path(filepath, "save"), bool(include_optimizer))

    def save_weights(self, filepath, overwrite=True, **kwargs):
        self._need_built("save_weights")
        self._used = True
        self._c.save(self._check_path(filepath, "save_weights"), False)

    def load_weights(self, filepath, skip_mismatch=False, by_name=False, **kwargs):
        if skip_mismatch or by_name:
            raise NotImplementedError("load_weights: skip_mismatch / by_name: Kiln loads every weight by name")
        self._need_built("load_weights")
        self._used = True
        self._c.load(self._check_path(filepath, "load_weights"), False)

    def __call__(self, x, training=None, **kwargs):
        """On data: predict(x) (a NumPy array; Keras returns a tensor). Calling a model on a
        KerasTensor (nested models) is not supported."""
        if isinstance(x, L.KerasTensor) or (isinstance(x, (list, tuple)) and x and isinstance(x[0], L.KerasTensor)):
            raise NotImplementedError("Kiln does not nest models: add the layers themselves")
        if training:
            raise NotImplementedError("model(x, training=True): Kiln trains through fit")
        return _Outputs(self.predict(x, verbose=0))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise missing("keras.Model", name)

    def __repr__(self):
        return f"<kiln.keras {type(self).__name__} name={self._name}>"


class Sequential(Model):
    """keras.Sequential(layers=None, name=None)."""

    def __init__(self, layers=None, name=None, **kwargs):
        Model.__init__(self, name=name, **kwargs)
        self._input_shape = None
        for l in layers or []:
            self.add(l)

    def add(self, layer):
        if isinstance(layer, L.KerasTensor) and isinstance(layer._layer, L.InputLayer):
            layer = layer._layer
        if isinstance(layer, L.InputLayer):
            if self._layers or self._input_shape is not None:
                raise ValueError("Sequential: an Input / InputLayer must come first")
            self._input_shape = layer._shape
            self._build()
            return
        if isinstance(layer, Model):
            raise NotImplementedError("Sequential.add(model): Kiln does not nest models; add its layers")
        if not isinstance(layer, L.Layer):
            raise TypeError(f"Sequential.add: {layer!r} is not a keras layer")
        if layer._model is not None or layer._called:
            raise ValueError(f"layer '{layer.name}' already belongs to a model: Kiln has no shared layers")
        if not self._layers and self._input_shape is None and layer._input_shape is not None:
            self._input_shape = layer._input_shape
        self._layers.append(layer)
        if self._c is not None and self._used:
            self._rebuild()
        elif self._c is not None:
            try:
                i = self._c.add(layer._class_name, layer._config_json(), ())
            except Exception:
                self._layers.pop()
                self._c = None          # Kiln's errors stick to its model: start again without it
                self._build()
                raise
            layer._model, layer._index, layer._c_name = self, i, self._c.layers()[i][0]
            self._idx.append(i)
            self._chain([layer])
        elif self._input_shape is not None:
            self._build()

    def _rebuild(self):
        """A layer added to a model that has run (Kiln builds its step then, and takes no more
        layers): a new C model with every layer, the earlier layers' weights copied over; compiled
        again at the next fit (the optimizer state starts fresh)."""
        old = [(l, l.get_weights()) for l in self._layers[:-1]]
        cm = _kiln.sequential(self._name, tuple(self._input_shape))
        try:
            idx = [cm.add(l._class_name, l._config_json(), ()) for l in self._layers]
        except Exception:
            self._layers.pop()
            raise
        self._attach(cm, self._layers, idx)
        self._input_tensor = L.InputLayer(shape=self._input_shape)._output
        self._chain(self._layers)
        for l, w in old:
            l.set_weights(w)
        self._c_compiled = False

    def pop(self):
        raise NotImplementedError("Sequential.pop: Kiln cannot remove a layer from a built model; build a new one")

    def build(self, input_shape=None):
        """input_shape includes the batch dimension, as Keras's (None, 28, 28, 1)."""
        if self._c is not None:
            return
        if input_shape is not None:
            self._input_shape = tuple(int(d) for d in tuple(input_shape)[1:])
        if self._input_shape is None:
            raise ValueError("Sequential.build: give input_shape, e.g. build((None, 4))")
        self._build()

    def _build(self):
        if self._c is not None or self._input_shape is None:
            return
        cm = _kiln.sequential(self._name, tuple(self._input_shape))
        idx = [cm.add(l._class_name, l._config_json(), ()) for l in self._layers]
        self._attach(cm, self._layers, idx)
        self._input_tensor = L.InputLayer(shape=self._input_shape)._output
        self._chain(self._layers)

    def _chain(self, layers):
        """Gives each layer the KerasTensor it outputs, as Keras's Sequential does, so that
        keras.Model(model.inputs, model.layers[k].output) makes a sub-model."""
        info = self._c.layers()
        for l in layers:
            prev = self._layers[self._layers.index(l) - 1]._output if self._layers.index(l) else self._input_tensor
            l._output = L.KerasTensor(l, [prev], (None,) + tuple(info[l._index][2]))
            l._called = True

    def _build_for(self, x):
        if self._c is None:
            if x.ndim < 2:
                raise ValueError(f"Sequential '{self._name}': x has shape {x.shape}; Kiln needs a batch "
                                 "dimension first, e.g. (N, 4)")
            self._input_shape = tuple(x.shape[1:])
            self._build()

    @property
    def inputs(self):
        self._need_built("inputs")
        return [self._input_tensor]

    @property
    def outputs(self):
        self._need_built("outputs")
        return [self._layers[-1]._output if self._layers else self._input_tensor]


def model_from_json(json_string, custom_objects=None):
    """Keras JSON (Keras 3 or tf.keras 2, what to_json writes) -> an uncompiled model, fresh weights."""
    if custom_objects:
        raise NotImplementedError("model_from_json: custom_objects: Kiln builds Keras's own layers only")
    return _restore.wrap(_kiln.model_from_json(json_string))


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model from Kiln's safetensors checkpoint (model.save / ModelCheckpoint): architecture,
    weights and epoch. Unlike Keras, the checkpoint does not hold compile()'s loss and metrics:
    compile the model again before fit / evaluate (predict needs no compile)."""
    if custom_objects:
        raise NotImplementedError("load_model: custom_objects: Kiln builds Keras's own layers only")
    p = Model._check_path(filepath, "load_model")
    return _restore.wrap(_kiln.model_from_checkpoint(p))


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model of the same architecture with fresh weights (from its Keras JSON)."""
    if input_tensors is not None or clone_function is not None:
        raise NotImplementedError("clone_model: input_tensors / clone_function are not supported by Kiln")
    return model_from_json(model.to_json())


def __getattr__(name):
    raise missing("keras.models", name)
