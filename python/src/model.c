/* kiln._kiln.Model: a kiln_model and its building, inspection, checkpoint and weight methods
 * (compile in compile.c; fit / evaluate / predict in train.c). Layers are referred to by index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln_py.h"

#define MODEL(self) (((ModelObject *)(self))->m)

PyObject *kpy_model_wrap(kiln_model *m) {
    ModelObject *o = PyObject_New(ModelObject, (PyTypeObject *)kpy_model_type);
    if (!o) { kiln_model_free(m); return NULL; }
    o->m = m;
    return (PyObject *)o;
}

static void model_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    kiln_model_free(MODEL(self));
    MODEL(self) = NULL;
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

/* The layer at index i, or NULL with IndexError set. */
static kiln_layer *layer_at(kiln_model *m, Py_ssize_t i) {
    if (i < 0 || i >= kiln_model_layer_count(m)) {
        PyErr_Format(PyExc_IndexError, "model '%s' has no layer %zd", kiln_model_name(m), i);
        return NULL;
    }
    return kiln_model_layer(m, (int)i);
}

/* A tuple of layer indices -> layers (at most n). -1 with an exception set. */
static int layers_from(kiln_model *m, PyObject *o, kiln_layer **out, int n, int *count) {
    PyObject *seq = PySequence_Fast(o, "layer indices");
    if (!seq) return -1;
    Py_ssize_t k = PySequence_Size(seq);
    if (k > n) { Py_DECREF(seq); PyErr_Format(PyExc_ValueError, "at most %d inputs", n); return -1; }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *it = PySequence_GetItem(seq, i);
        Py_ssize_t v = it ? PyLong_AsSsize_t(it) : -1;
        Py_XDECREF(it);
        if ((v == -1 && PyErr_Occurred()) || !(out[i] = layer_at(m, v))) { Py_DECREF(seq); return -1; }
    }
    Py_DECREF(seq);
    *count = (int)k;
    return 0;
}

static PyObject *index_of(kiln_model *m, kiln_layer *l) {
    if (!l) return kpy_raise(kiln_model_status(m) ? kiln_model_status(m) : KILN_INVALID_ARGUMENT, m);
    for (int i = kiln_model_layer_count(m) - 1; i >= 0; i--)
        if (kiln_model_layer(m, i) == l) return PyLong_FromLong(i);
    return PyLong_FromLong(kiln_model_layer_count(m) - 1);
}

static PyObject *m_input(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "shape", "name", NULL };
    PyObject *shape_o;
    const char *name = NULL;
    kiln_shape s;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|z", kws, &shape_o, &name) || kpy_shape_from(shape_o, &s, "shape")) return NULL;
    kiln_model *m = MODEL(self);
    kiln_layer *l = kiln_input(m, s);
    if (l && name && *name) {       /* Keras's Input(name=...) */
        kiln_status st = kiln_layer_rename(l, name);
        if (st) return kpy_raise(st, m);
    }
    return index_of(m, l);
}

static PyObject *m_add(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "class_name", "config_json", "inputs", NULL };
    const char *cls, *cfg;
    PyObject *ins_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sz|O", kws, &cls, &cfg, &ins_o)) return NULL;
    kiln_model *m = MODEL(self);
    kiln_layer *ins[16];
    int n = 0;
    if (ins_o && layers_from(m, ins_o, ins, 16, &n)) return NULL;
    return index_of(m, kiln_layer_from_config(m, cls, cfg, ins, n));
}

static PyObject *m_finish(PyObject *self, PyObject *args) {
    PyObject *in_o, *out_o;
    if (!PyArg_ParseTuple(args, "OO", &in_o, &out_o)) return NULL;
    kiln_model *m = MODEL(self);
    kiln_layer *ins[16], *outs[16];
    int ni = 0, no = 0;
    if (layers_from(m, in_o, ins, 16, &ni) || layers_from(m, out_o, outs, 16, &no)) return NULL;
    kiln_status st = kiln_model_functional(m, ins, ni, outs, no);
    if (st) return kpy_raise(st, m);
    Py_RETURN_NONE;
}

static PyObject *layer_tuple(const kiln_layer *l) {
    PyObject *w = PyList_New(0);
    for (int j = 0; w && j < kiln_layer_weight_count(l); j++) {
        PyObject *shape = kpy_shape_to(kiln_layer_weight_shape(l, j));
        PyObject *t = shape ? Py_BuildValue("(sOO)", kiln_layer_weight_name(l, j), shape, kiln_layer_weight_trainable(l, j) ? Py_True : Py_False) : NULL;
        Py_XDECREF(shape);
        if (!t || PyList_Append(w, t) < 0) { Py_XDECREF(t); Py_DECREF(w); return NULL; }
        Py_DECREF(t);
    }
    PyObject *shape = w ? kpy_shape_to(kiln_layer_output_shape(l)) : NULL;
    int64_t params = 0;
    for (int j = 0; j < kiln_layer_weight_count(l); j++) {
        kiln_shape s = kiln_layer_weight_shape(l, j);
        int64_t k = 1;
        for (int d = 0; d < s.rank; d++) k *= s.dim[d];
        params += k;
    }
    PyObject *r = shape ? Py_BuildValue("(ssOLO)", kiln_layer_name(l), kiln_layer_type(l), shape, (long long)params, w) : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(w);
    return r;
}

static PyObject *m_layers(PyObject *self, PyObject *noargs) {
    kiln_model *m = MODEL(self);
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < kiln_model_layer_count(m); i++) {
        PyObject *t = layer_tuple(kiln_model_layer(m, i));
        if (!t || PyList_Append(l, t) < 0) { Py_XDECREF(t); Py_DECREF(l); return NULL; }
        Py_DECREF(t);
    }
    return l;
}

static PyObject *m_name(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(kiln_model_name(MODEL(self))); }
static PyObject *m_input_shape(PyObject *self, PyObject *noargs) { return kpy_shape_to(kiln_model_input_shape(MODEL(self))); }
static PyObject *m_output_shape(PyObject *self, PyObject *noargs) { return kpy_shape_to(kiln_model_output_shape(MODEL(self))); }
static PyObject *m_epoch(PyObject *self, PyObject *noargs) { return PyLong_FromLong(kiln_model_epoch(MODEL(self))); }
static PyObject *m_precision(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(kiln_precision_name(kiln_model_precision(MODEL(self)))); }
static PyObject *m_outputs_probabilities(PyObject *self, PyObject *noargs) { return PyBool_FromLong(kiln_model_outputs_probabilities(MODEL(self))); }

static PyObject *m_param_count(PyObject *self, PyObject *args) {
    int trainable = 0;
    if (!PyArg_ParseTuple(args, "|p", &trainable)) return NULL;
    return PyLong_FromLongLong(kiln_model_param_count(MODEL(self), trainable));
}

static PyObject *m_summary(PyObject *self, PyObject *noargs) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return PyErr_NoMemory();
    kiln_model_summary(MODEL(self), f);
    fclose(f);
    PyObject *r = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)n, "replace");
    free(buf);
    return r;
}

static PyObject *m_to_json(PyObject *self, PyObject *noargs) {
    char *j = NULL;
    kiln_status st = kiln_model_to_json(MODEL(self), &j);
    if (st) return kpy_raise(st, MODEL(self));
    PyObject *r = PyUnicode_FromString(j);
    free(j);
    return r;
}

static PyObject *m_set_seed(PyObject *self, PyObject *args) {
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "K", &seed)) return NULL;
    kiln_model_set_seed(MODEL(self), seed);
    Py_RETURN_NONE;
}

static PyObject *m_save(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "path", "include_optimizer", NULL };
    const char *path;
    int opt = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|p", kws, &path, &opt)) return NULL;
    kiln_status st;
    Py_BEGIN_ALLOW_THREADS
    st = kiln_model_save(MODEL(self), path, opt);
    Py_END_ALLOW_THREADS
    if (st) return kpy_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *m_load(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "path", "resume", NULL };
    const char *path;
    int resume = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|p", kws, &path, &resume)) return NULL;
    kiln_status st;
    Py_BEGIN_ALLOW_THREADS
    st = kiln_model_load_opts(MODEL(self), path, &(kiln_load_opts){ .resume = resume });
    Py_END_ALLOW_THREADS
    if (st) return kpy_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *m_get_weight(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    kiln_tensor *t = NULL;
    kiln_status st = kiln_model_get_weight(MODEL(self), name, &t);
    if (st) return kpy_raise(st, NULL);
    PyObject *r = kpy_array_out(t->data, kiln_tensor_nbytes(t), t->shape);
    kiln_tensor_free(t);
    return r;
}

static PyObject *m_set_weight(PyObject *self, PyObject *args) {
    const char *name;
    PyObject *buf_o;
    if (!PyArg_ParseTuple(args, "sO", &name, &buf_o)) return NULL;
    kpy_view v;
    if (kpy_view_get(buf_o, KILN_F32, name, &v)) return NULL;
    kiln_status st = kiln_model_set_weight(MODEL(self), name, &v.t);
    kpy_view_release(&v);
    if (st) return kpy_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *m_learning_rate(PyObject *self, PyObject *noargs) { return PyFloat_FromDouble(kiln_model_learning_rate(MODEL(self))); }

static PyObject *m_set_learning_rate(PyObject *self, PyObject *args) {
    double lr;
    if (!PyArg_ParseTuple(args, "d", &lr)) return NULL;
    kiln_status st = kiln_model_set_learning_rate(MODEL(self), lr);
    if (st) return kpy_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *m_history(PyObject *self, PyObject *noargs) {
    int n = 0;
    const kiln_logs *h = kiln_model_history(MODEL(self), &n);
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < n; i++) {
        PyObject *d = kpy_logs_dict(&h[i]);
        if (!d || PyList_Append(l, d) < 0) { Py_XDECREF(d); Py_DECREF(l); return NULL; }
        Py_DECREF(d);
    }
    return l;
}

static PyMethodDef model_methods[] = {
    { "input", (PyCFunction)(void (*)(void))m_input, METH_VARARGS | METH_KEYWORDS, "input(shape) -> layer index." },
    { "add", (PyCFunction)(void (*)(void))m_add, METH_VARARGS | METH_KEYWORDS, "add(class_name, config_json, inputs=()) -> layer index." },
    { "finish", m_finish, METH_VARARGS, "finish(inputs, outputs): the functional model's ends." },
    { "layers", m_layers, METH_NOARGS, "[(name, class_name, output_shape, params, [(weight, shape, trainable)])]." },
    { "name", m_name, METH_NOARGS, NULL },
    { "input_shape", m_input_shape, METH_NOARGS, NULL },
    { "output_shape", m_output_shape, METH_NOARGS, NULL },
    { "epoch", m_epoch, METH_NOARGS, "Epochs completed." },
    { "precision", m_precision, METH_NOARGS, "The policy the compiled model trains with." },
    { "outputs_probabilities", m_outputs_probabilities, METH_NOARGS, "The model ends in softmax or sigmoid." },
    { "param_count", m_param_count, METH_VARARGS, "param_count(trainable_only=False)." },
    { "summary", m_summary, METH_NOARGS, "The summary table as a string." },
    { "to_json", m_to_json, METH_NOARGS, "Keras JSON." },
    { "set_seed", m_set_seed, METH_VARARGS, "set_seed(seed): initializers and dropout." },
    { "save", (PyCFunction)(void (*)(void))m_save, METH_VARARGS | METH_KEYWORDS, "save(path, include_optimizer=True): safetensors." },
    { "load", (PyCFunction)(void (*)(void))m_load, METH_VARARGS | METH_KEYWORDS, "load(path, resume=False)." },
    { "get_weight", m_get_weight, METH_VARARGS, "get_weight(name) -> (bytearray, shape)." },
    { "set_weight", m_set_weight, METH_VARARGS, "set_weight(name, float32 array)." },
    { "history", m_history, METH_NOARGS, "Per-epoch logs of every fit so far." },
    { "learning_rate", m_learning_rate, METH_NOARGS, "The compiled model's base learning rate." },
    { "set_learning_rate", m_set_learning_rate, METH_VARARGS, "set_learning_rate(lr): from the next step (also inside callbacks)." },
    { "compile", (PyCFunction)(void (*)(void))kpy_model_compile, METH_VARARGS | METH_KEYWORDS, "See python/src/README.md." },
    { "fit", (PyCFunction)(void (*)(void))kpy_model_fit, METH_VARARGS | METH_KEYWORDS, "See python/src/README.md." },
    { "evaluate", (PyCFunction)(void (*)(void))kpy_model_evaluate, METH_VARARGS | METH_KEYWORDS, "evaluate(x, y, batch_size=32, verbose=0) -> dict." },
    { "fit_data", (PyCFunction)(void (*)(void))kpy_model_fit_data, METH_VARARGS | METH_KEYWORDS, "fit_data(data, epochs=1, ...): train on a Data pipeline." },
    { "evaluate_data", (PyCFunction)(void (*)(void))kpy_model_evaluate_data, METH_VARARGS | METH_KEYWORDS, "evaluate_data(data, verbose=0) -> dict." },
    { "predict", (PyCFunction)(void (*)(void))kpy_model_predict, METH_VARARGS | METH_KEYWORDS, "predict(x, batch_size=32) -> (bytearray, shape)." },
    { NULL, NULL, 0, NULL },
};

static PyType_Slot model_slots[] = {
    { Py_tp_dealloc, model_dealloc },
    { Py_tp_methods, model_methods },
    { Py_tp_doc, "A Kiln model (kiln_model): built, compiled and trained in C." },
    { 0, NULL },
};

PyType_Spec kpy_model_spec = { "kiln._kiln.Model", sizeof(ModelObject), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, model_slots };
