"""Namespaces shaped like TensorFlow's: an unknown name raises AttributeError naming it."""


def missing(path, name):
    return AttributeError(
        f"{path}.{name}: Kiln does not have {path}.{name} (Kiln runs the Keras-style programs of its scope: "
        "Sequential and functional models, the layers in kiln.keras.layers, compile/fit/evaluate/predict, "
        "callbacks, devices; see docs/python.md)")


class Namespace:
    """A fixed set of functions under a dotted name, e.g. tf.config.experimental."""

    def __init__(self, path, **members):
        object.__setattr__(self, "_path", path)
        for k, v in members.items():
            object.__setattr__(self, k, v)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise missing(self._path, name)

    def __repr__(self):
        return f"<kiln namespace {self._path}>"
