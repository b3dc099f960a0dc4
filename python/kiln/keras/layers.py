"""keras.layers: generated from Kiln's layer table (`_kiln.layer_classes()`), so a layer type
added in C appears here without Python code. Each class takes Keras's arguments: the required
options positionally in order, every option by keyword with the table's defaults, and the common
`name`, `input_shape` / `input_dim` / `batch_input_shape` (Keras 2's first layer), `trainable`,
`dtype`, which go into the layer's Keras config for Kiln to honour or refuse with its message.

Differences from Keras: a layer computes nothing in Python (it is a description that C builds
when its model is built); a layer belongs to one model (Kiln has no shared layers); a layer
without a name gets Kiln's automatic name (dense, dense_1, ... counted per model, so that equal
models have equal weight names) when its model is built."""
import inspect
import json
import re

from .._ext import _kiln, layer_classes
from .._ns import missing
from ._serial import to_json_value

# Keras keyword arguments outside Kiln's option table: passed in the config, Kiln accepts the
# values that do not change the math (and refuses the others, naming the key)
_KERAS_EXTRA = {
    "data_format", "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint",
    "depthwise_constraint", "quantization_config", "lora_rank", "lora_alpha", "noise_shape", "keepdims",
    "axis", "center", "scale", "beta_initializer", "gamma_initializer", "moving_mean_initializer",
    "moving_variance_initializer", "beta_regularizer", "gamma_regularizer", "beta_constraint",
    "gamma_constraint", "synchronized", "renorm", "renorm_clipping", "renorm_momentum", "fused",
    "virtual_batch_size", "adjustment", "groups", "threshold", "invert", "interpolation", "pointwise_constraint",
    "unroll", "zero_output_for_mask", "implementation", "time_major", "recurrent_constraint", "backward_layer",
}
_COMMON = ("name", "trainable", "dtype")
# Keras's positional order leaves Kiln's table (which lacks keys such as data_format, axis,
# noise_shape) after this many arguments: more positional arguments than this are refused rather
# than bound to the wrong option (until the table lists Keras's full order)
_KERAS_POSITIONAL = {"Conv2D": 4, "DepthwiseConv2D": 3, "Dropout": 1, "BatchNormalization": 0}


class KerasTensor:
    """A symbolic tensor of the functional API: what `Input` returns and a layer called on
    KerasTensors returns. Its shape (batch None) comes from Kiln, which checks the layer then."""

    def __init__(self, layer, inputs, shape=None):
        self._layer, self._inputs, self._shape = layer, list(inputs), shape

    @property
    def shape(self):
        if self._shape is None:
            self._shape = (None,) + tuple(_probe_shape(self))
        return self._shape

    dtype = "float32"

    @property
    def name(self):
        return self._layer.name

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}, dtype=float32, name={self.name}>"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise missing("KerasTensor", name)


def _history(outputs):
    """The layers behind KerasTensors in an order where each comes after its inputs, and the
    KerasTensors they produce (InputLayers first as they appear)."""
    order, seen = [], set()

    def visit(t):
        if id(t) in seen:
            return
        seen.add(id(t))
        for i in t._inputs:
            visit(i)
        order.append(t)
    for t in outputs:
        visit(t)
    return order


def _build_graph(cm, outputs):
    """Adds the graph behind `outputs` to the empty functional C model cm; returns {id(tensor): index}."""
    index = {}
    for t in _history(outputs):
        layer = t._layer
        if isinstance(layer, InputLayer):
            index[id(t)] = cm.input(tuple(layer._shape), layer._config.get("name"))
        else:
            index[id(t)] = cm.add(layer._class_name, layer._config_json(),
                                  tuple(index[id(i)] for i in t._inputs))
    return index


def _probe_shape(t):
    cm = _kiln.functional("probe")
    idx = _build_graph(cm, [t])
    return tuple(cm.layers()[idx[id(t)]][2])


class Layer:
    """The base of Kiln's layers. Subclassing it with a Python call() is not supported (Kiln's
    layers compute in C)."""
    _class_name, _base, _options, _min_inputs, _max_inputs = "Layer", "layer", (), 1, 1

    def __init__(self, *args, **kwargs):
        if type(self) is Layer or "_options" not in type(self).__dict__:
            raise NotImplementedError(f"{type(self).__name__}: custom layers are not supported; Kiln's "
                                      "layers are those of kiln.keras.layers (computed in C)")
        cls, opts = self._class_name, self._options
        most = min(len(opts), _KERAS_POSITIONAL.get(cls, len(opts)))
        if len(args) > most:
            raise TypeError(f"{cls}() takes at most {most} positional arguments ({len(args)} given); "
                            "pass the others by keyword")
        self._config, self._input_shape = {}, None
        self._model, self._index, self._called, self._c_name = None, None, False, None
        given = dict(zip((o["name"] for o in opts), args))
        for k, v in kwargs.items():
            if k in given:
                raise TypeError(f"{cls}() got multiple values for argument '{k}'")
            given[k] = v
        shape = given.pop("input_shape", None)
        if "batch_input_shape" in given:
            shape = tuple(given.pop("batch_input_shape"))[1:]
        if "input_dim" in given and not any(o["name"] == "input_dim" for o in opts):   # Keras 2's Dense(input_dim=); Embedding's is its own
            shape = (given.pop("input_dim"),)
        given.pop("batch_size", None)
        if shape is not None:
            self._input_shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        names = {o["name"] for o in opts}
        for k, v in given.items():
            if k not in names and k not in _COMMON and k not in _KERAS_EXTRA:
                raise TypeError(f"{cls}(): unexpected keyword argument '{k}' (Kiln's {cls} takes "
                                f"{', '.join(o['name'] for o in opts) or 'no options'}, and name, input_shape)")
            if k == "name" and v is None:
                continue
            if k == "activation" and v is None:
                v = "linear"
            if k == "dtype" and hasattr(v, "name"):
                v = v.name
            self._config[k] = to_json_value(v, k)
        wrapped = self._config.get("layer")          # Bidirectional(LSTM(8)): the wrapped layer's own options
        wrapped = wrapped.get("config", {}) if isinstance(wrapped, dict) else {}
        for o in opts:
            if o["required"] and o["name"] not in self._config and o["name"] not in wrapped:
                raise TypeError(f"{cls}() missing required argument '{o['name']}'")

    def _config_json(self):
        return json.dumps(self._config)

    # ---- Keras attributes ----
    @property
    def name(self):
        if self._c_name is not None:
            return self._c_name
        return self._config.get("name", self._base)

    @property
    def built(self):
        return self._model is not None and self._model._c is not None

    @property
    def trainable(self):
        return True

    @trainable.setter
    def trainable(self, value):
        if not value:
            raise NotImplementedError(f"{self.name}.trainable = False: Kiln trains every layer (no frozen layers)")

    @property
    def dtype(self):
        return "float32"

    def get_config(self):
        cfg = {"name": self.name, "trainable": True, "dtype": "float32"}
        for o in self._options:
            if o["name"] in self._config:
                cfg[o["name"]] = self._config[o["name"]]
            elif "default" in o:
                cfg[o["name"]] = o["default"]
        cfg.update({k: v for k, v in self._config.items() if k not in cfg or k == "name"})
        return cfg

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        for o in type(self)._options:
            if o["name"] == name:
                return self._config.get(name, o.get("default"))
        for w in self.weights:             # Keras 3's layer.kernel, layer.bias, layer.gamma, ...
            if w.name == name:
                return w
        raise missing(f"keras.layers.{self._class_name}", name)

    def _c_layer(self):
        if not self.built:
            return None
        return self._model._c.layers()[self._index]

    @property
    def output_shape(self):
        l = self._c_layer()
        if l is None:
            raise ValueError(f"layer '{self.name}' is not built yet: its output shape is known once its model is")
        return (None,) + tuple(l[2])

    @property
    def weights(self):
        from .models import Variable
        l = self._c_layer()
        return [] if l is None else [Variable(self._model, w[0], tuple(w[1]), w[2]) for w in l[4]]

    trainable_weights = trainable_variables = property(lambda self: [w for w in self.weights if w.trainable])
    non_trainable_weights = property(lambda self: [w for w in self.weights if not w.trainable])
    variables = weights

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        ws = self.weights
        if len(weights) != len(ws):
            raise ValueError(f"layer '{self.name}' expects {len(ws)} weights, got {len(weights)}")
        for w, v in zip(ws, weights):
            w.assign(v)

    def count_params(self):
        l = self._c_layer()
        if l is None:
            raise ValueError(f"layer '{self.name}' is not built yet; count_params needs its input shape")
        return int(l[3])

    def _attention_call(self, query, args, kwargs):
        """Keras's mha(query, value, key=None, use_causal_mask=False): the inputs, in that order."""
        if len(args) > 2:
            raise TypeError(f"{self.name}: called with {len(args) + 1} positional arguments (query, value, key)")
        value = args[0] if args else kwargs.pop("value", None)
        key = args[1] if len(args) > 1 else kwargs.pop("key", None)
        if value is None:
            raise TypeError(f"{self.name}: MultiHeadAttention is called as layer(query, value[, key])")
        if kwargs.pop("use_causal_mask", False):
            self._config["use_causal_mask"] = True
        if kwargs.pop("return_attention_scores", False):
            raise NotImplementedError(f"{self.name}: return_attention_scores: Kiln's fused attention keeps no [T, T] scores")
        for k in ("attention_mask", "query_mask", "value_mask", "key_mask"):
            if kwargs.get(k, None) is not None:
                raise NotImplementedError(f"{self.name}: {k}: Kiln's attention takes the causal mask only (use_causal_mask=True)")
            kwargs.pop(k, None)
        return [query, value] + ([key] if key is not None else []), kwargs

    def __call__(self, inputs, *args, **kwargs):
        if self._class_name == "MultiHeadAttention" and not isinstance(inputs, (list, tuple)):
            inputs, kwargs = self._attention_call(inputs, args, kwargs)
            args = ()
        training = kwargs.pop("training", None)
        if args or kwargs or training is not None:
            extra = list(kwargs) + (["training"] if training is not None else []) + (["positional"] if args else [])
            raise NotImplementedError(f"{self.name}: call arguments {extra} are not supported (Kiln sets "
                                      "training mode itself: fit trains, evaluate/predict infer)")
        ts = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not all(isinstance(t, KerasTensor) for t in ts):
            raise TypeError(f"{self.name}: Kiln's layers are called on keras.Input tensors to build a "
                            "functional model; to run a layer on data, put it in a model and use predict")
        if self._called:
            raise ValueError(f"layer '{self.name}' is called a second time: Kiln has no shared layers")
        out = KerasTensor(self, ts)
        out.shape               # Kiln checks the layer against its inputs now, as Keras does
        self._called = True
        self._output = out
        return out

    @property
    def output(self):
        if getattr(self, "_output", None) is None:
            raise ValueError(f"layer '{self.name}' has no output: it was not called on a KerasTensor")
        return self._output

    def __repr__(self):
        return f"<{self._class_name} name={self.name}>"


class InputLayer(Layer):
    """Keras's InputLayer: `InputLayer(shape=(28, 28, 1))` (Keras 3) or `input_shape=` (Keras 2)."""
    _class_name, _base, _options = "InputLayer", "input_layer", ()

    def __init__(self, shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None,
                 input_tensor=None, name=None, input_shape=None, batch_input_shape=None, **kwargs):
        if kwargs:
            raise TypeError(f"InputLayer(): unexpected keyword argument '{next(iter(kwargs))}'")
        if sparse or input_tensor is not None:
            raise NotImplementedError("InputLayer: Kiln's inputs are dense arrays it feeds itself (sparse, input_tensor)")
        if dtype not in (None, "float32"):
            raise NotImplementedError(f"InputLayer: dtype {dtype!r}: Kiln's inputs are float32")
        shape = shape if shape is not None else input_shape
        bshape = batch_shape if batch_shape is not None else batch_input_shape
        if shape is None and bshape is not None:
            shape = tuple(bshape)[1:]
        if shape is None:
            raise ValueError("InputLayer: give shape=(...) (batch excluded)")
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if any(d is None for d in shape):
            raise ValueError(f"InputLayer: shape {shape}: Kiln needs every dimension known (batch excluded)")
        self._shape = tuple(int(d) for d in shape)
        self._config = {"name": name} if name else {}
        self._input_shape = self._shape
        self._model, self._index, self._called, self._c_name = None, None, False, None
        self._output = KerasTensor(self, [], (None,) + self._shape)


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None, tensor=None, **kwargs):
    """keras.Input: a KerasTensor to call layers on (shape excludes the batch)."""
    return InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse, batch_shape=batch_shape,
                      input_tensor=tensor, name=name, **kwargs)._output


def _signature(spec):
    """Keras's order; a required option after an optional one (Bidirectional's `layer` after the
    wrapped layer's options) can only be given by keyword, as a Python signature requires."""
    pos, kw, seen_default = [], [], False
    for o in spec:
        if not o["required"]:
            seen_default = True
            pos.append(inspect.Parameter(o["name"], inspect.Parameter.POSITIONAL_OR_KEYWORD, default=o.get("default")))
        elif seen_default:
            kw.append(inspect.Parameter(o["name"], inspect.Parameter.KEYWORD_ONLY))
        else:
            pos.append(inspect.Parameter(o["name"], inspect.Parameter.POSITIONAL_OR_KEYWORD))
    return inspect.Signature(pos + kw + [inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])


def _make_class(c):
    opts = tuple(c["options"])
    listing = "\n".join(f"    {o['name']} ({o['type']})" + ("" if o["required"] else f" = {o.get('default')!r}") for o in opts)
    doc = (f"Keras's {c['class_name']}, built in C by Kiln (generated from its layer table).\n\n"
           f"Options, in Keras's order:\n{listing or '    (none)'}\n")
    return type(c["class_name"], (Layer,), {
        "_class_name": c["class_name"], "_base": c["base"], "_options": opts,
        "_min_inputs": c["min_inputs"], "_max_inputs": c["max_inputs"], "__doc__": doc,
        "__signature__": _signature(opts), "__module__": __name__})


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _merge_function(cls):
    def fn(inputs, **kwargs):
        return cls(**kwargs)(inputs)
    fn.__name__ = _snake(cls.__name__)
    fn.__doc__ = f"keras.layers.{fn.__name__}(inputs, **kwargs) = {cls.__name__}(**kwargs)(inputs)."
    return fn


CLASSES = {}
for _c in layer_classes():
    CLASSES[_c["class_name"]] = globals()[_c["class_name"]] = _make_class(_c)
    if _c["min_inputs"] > 1:      # merge layers: keras.layers.add(...), concatenate(...)
        globals()[_snake(_c["class_name"])] = _merge_function(CLASSES[_c["class_name"]])
for _alias, _target in {"Convolution2D": "Conv2D", "MaxPool2D": "MaxPooling2D", "AvgPool2D": "AveragePooling2D",
                        "GlobalAvgPool2D": "GlobalAveragePooling2D"}.items():
    if _target in CLASSES:
        globals()[_alias] = CLASSES[_target]
CLASSES["InputLayer"] = InputLayer


def deserialize(config):
    """A layer from Keras's {"class_name": ..., "config": ...}."""
    cls = CLASSES.get(config.get("class_name"))
    if cls is None:
        raise ValueError(f"keras.layers.deserialize: Kiln has no layer '{config.get('class_name')}'")
    return cls.from_config(config.get("config", {}))


def serialize(layer):
    return {"module": "keras.layers", "class_name": layer._class_name, "config": layer.get_config()}


def __getattr__(name):
    raise missing("keras.layers", name)
