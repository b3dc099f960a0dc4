"""Python models over C models that Kiln built itself (model_from_json, load_model): the layer
objects and, for functional models, the KerasTensor graph, read back from the model's Keras JSON."""
import json

from . import layers as L


def _tensor_refs(args):
    """The keras_history [name, node, index] of every __keras_tensor__ in an inbound node's args."""
    out = []
    if isinstance(args, dict):
        if args.get("class_name") == "__keras_tensor__":
            return [args["config"]["keras_history"][0]]
        for v in args.values():
            out += _tensor_refs(v)
    elif isinstance(args, list):
        for v in args:
            out += _tensor_refs(v)
    return out


def wrap(cm):
    from .models import Model, Sequential
    cfg = json.loads(cm.to_json())
    seq = cfg.get("class_name") == "Sequential"
    m = Sequential.__new__(Sequential) if seq else Model.__new__(Model)
    m._init_common(cm.name(), {})
    info = cm.layers()
    index = {li[0]: i for i, li in enumerate(info)}
    layers, idx, by_name = [], [], {}
    for lcfg in cfg["config"]["layers"]:
        name = lcfg["config"]["name"]
        if lcfg["class_name"] == "InputLayer":
            if seq:
                continue
            l = L.InputLayer(shape=tuple(info[index[name]][2]))
        else:
            cls = L.CLASSES[lcfg["class_name"]]
            l = cls.__new__(cls)
            l._config = {k: v for k, v in lcfg["config"].items() if k not in ("trainable", "dtype")}
            l._input_shape, l._called, l._output = None, True, None
        l._model, l._index, l._c_name = None, None, None
        layers.append(l)
        idx.append(index[name])
        by_name[name] = (l, lcfg)
    order = sorted(range(len(layers)), key=lambda k: idx[k])
    layers, idx = [layers[k] for k in order], [idx[k] for k in order]
    if seq:
        m._input_shape = tuple(cm.input_shape())
    m._attach(cm, layers, idx)
    m._used = True                      # a checkpoint's weights are in it
    if seq:
        m._input_tensor = L.InputLayer(shape=m._input_shape)._output
        m._chain(layers)
        return m
    # functional: each layer's output tensor from its inbound nodes (Kiln writes inputs first)
    for l, i in zip(layers, idx):
        if isinstance(l, L.InputLayer):
            continue
        lcfg = by_name[info[i][0]][1]
        ins = [by_name[n][0]._output for n in _tensor_refs(lcfg.get("inbound_nodes", []))]
        l._output = L.KerasTensor(l, ins, (None,) + tuple(info[i][2]))
    c = cfg["config"]
    m._in_list = m._out_list = False
    m.inputs = [by_name[r[0]][0]._output for r in c.get("input_layers", [])]
    m.outputs = [by_name[r[0]][0]._output for r in c.get("output_layers", [])]
    return m
