/* kiln._kiln: module functions (devices, the layer table, dataset files, model constructors),
 * errors as Python exceptions, and the array helpers the Model methods share. */
#include <string.h>
#include <stdlib.h>
#include "kiln_py.h"

PyObject *kpy_model_type;

PyObject *kpy_raise(kiln_status st, const kiln_model *m) {
    const char *msg = m && kiln_model_status(m) ? kiln_model_error(m) : kiln_last_error();
    if (!msg || !*msg) msg = kiln_status_name(st);
    PyObject *exc = PyExc_RuntimeError;
    switch (st) {
    case KILN_INVALID_ARGUMENT: case KILN_SHAPE_MISMATCH: case KILN_DTYPE_MISMATCH: exc = PyExc_ValueError; break;
    case KILN_OUT_OF_MEMORY: exc = PyExc_MemoryError; break;
    case KILN_UNSUPPORTED: exc = PyExc_NotImplementedError; break;
    case KILN_NOT_FOUND: exc = strstr(msg, "file") || strstr(msg, "No such") || strstr(msg, "cannot open") ? PyExc_FileNotFoundError : PyExc_ValueError; break;
    case KILN_NUMERIC_ERROR: exc = PyExc_FloatingPointError; break;
    default: break;
    }
    PyErr_SetString(exc, msg);
    return NULL;
}

int kpy_shape_from(PyObject *o, kiln_shape *s, const char *what) {
    PyObject *seq = PySequence_Fast(o, what);
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Size(seq);
    if (n < 0 || n > KILN_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: a shape of at most %d dimensions", what, KILN_MAX_DIMS);
        return -1;
    }
    memset(s, 0, sizeof *s);
    s->rank = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_GetItem(seq, i);
        long long v = it ? PyLong_AsLongLong(it) : -1;
        Py_XDECREF(it);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "%s: dimensions must be ints", what);
            return -1;
        }
        s->dim[i] = v;
    }
    Py_DECREF(seq);
    return 0;
}

PyObject *kpy_shape_to(kiln_shape s) {
    PyObject *t = PyTuple_New(s.rank);
    for (int i = 0; t && i < s.rank; i++) PyTuple_SetItem(t, i, PyLong_FromLongLong(s.dim[i]));
    return t;
}

PyObject *kpy_array_out(const void *p, size_t n, kiln_shape s) {
    PyObject *b = PyByteArray_FromStringAndSize(p, (Py_ssize_t)n);
    if (!b) return NULL;
    PyObject *shape = kpy_shape_to(s);
    if (!shape) { Py_DECREF(b); return NULL; }
    PyObject *r = PyTuple_Pack(2, b, shape);
    Py_DECREF(b);
    Py_DECREF(shape);
    return r;
}

int kpy_view_get(PyObject *o, kiln_dtype dtype, const char *what, kpy_view *v) {
    memset(v, 0, sizeof *v);
    if (PyObject_GetBuffer(o, &v->buf, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a C-contiguous array (numpy.ascontiguousarray)", what);
        return -1;
    }
    v->held = true;
    const char *f = v->buf.format ? v->buf.format : "B";
    char c = f[strlen(f) - 1];
    bool ok = v->buf.itemsize == 4 && (dtype == KILN_F32 ? c == 'f' : (c == 'i' || c == 'l'));
    if (!ok || v->buf.ndim < 1 || v->buf.ndim > KILN_MAX_DIMS) {
        PyErr_Format(PyExc_TypeError, "%s: expected a %s array of 1..%d dimensions, got format '%s' (itemsize %d), %d dimensions", what,
                     dtype == KILN_F32 ? "float32" : "int32", KILN_MAX_DIMS, f, (int)v->buf.itemsize, v->buf.ndim);
        kpy_view_release(v);
        return -1;
    }
    v->t.dtype = dtype;
    v->t.shape.rank = v->buf.ndim;
    for (int i = 0; i < v->buf.ndim; i++) v->t.shape.dim[i] = v->buf.shape[i];
    v->t.data = v->buf.buf;
    v->t.owns_data = false;
    return 0;
}

void kpy_view_release(kpy_view *v) {
    if (v->held) PyBuffer_Release(&v->buf);
    v->held = false;
}

/* ---- module functions ---- */
static PyObject *py_version(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(KILN_VERSION_STRING); }
static PyObject *py_gpu_available(PyObject *self, PyObject *noargs) { return PyBool_FromLong(kiln_gpu_available()); }
static PyObject *py_gpu_reason(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(kiln_gpu_unavailable_reason()); }
static PyObject *py_built_with_cuda(PyObject *self, PyObject *noargs) { return PyBool_FromLong(kiln_built_with_cuda()); }
static PyObject *py_cpu_has_bf16(PyObject *self, PyObject *noargs) { return PyBool_FromLong(kiln_cpu_has_bf16()); }

static PyObject *py_gpu_count(PyObject *self, PyObject *noargs) {
    kiln_device_info d[17];
    int n = 0, gpus = 0;
    if (kiln_device_list(d, 17, &n)) return kpy_raise(KILN_DEVICE_ERROR, NULL);
    for (int i = 0; i < n && i < 17; i++) gpus += d[i].kind == KILN_DEVICE_KIND_GPU;
    return PyLong_FromLong(gpus);
}

static PyObject *py_devices(PyObject *self, PyObject *noargs) {
    kiln_device_info d[17];
    int n = 0;
    if (kiln_device_list(d, 17, &n)) return kpy_raise(KILN_DEVICE_ERROR, NULL);
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < n && i < 17; i++) {
        PyObject *t = Py_BuildValue("(sisn)", d[i].kind == KILN_DEVICE_KIND_GPU ? "GPU" : "CPU", d[i].index, d[i].name, (Py_ssize_t)d[i].total_memory);
        if (!t || PyList_Append(l, t) < 0) { Py_XDECREF(t); Py_DECREF(l); return NULL; }
        Py_DECREF(t);
    }
    return l;
}

static PyObject *py_set_num_threads(PyObject *self, PyObject *args) {
    int n;
    if (!PyArg_ParseTuple(args, "i", &n)) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "set_num_threads: %d must be >= 0 (0: every core)", n);
    kiln_set_num_threads(n);
    Py_RETURN_NONE;
}
static PyObject *py_get_num_threads(PyObject *self, PyObject *noargs) { return PyLong_FromLong(kiln_get_num_threads()); }

static PyObject *py_layer_classes(PyObject *self, PyObject *noargs) {
    char *j = NULL;
    kiln_status st = kiln_layer_classes_json(&j);
    if (st) return kpy_raise(st, NULL);
    PyObject *r = PyUnicode_FromString(j);
    free(j);
    return r;
}

static PyObject *py_idx_read(PyObject *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    kiln_tensor *t = NULL;
    kiln_status st;
    Py_BEGIN_ALLOW_THREADS
    st = kiln_idx_read(path, &t);
    Py_END_ALLOW_THREADS
    if (st) return kpy_raise(st, NULL);
    PyObject *r = kpy_array_out(t->data, kiln_tensor_nbytes(t), t->shape);
    kiln_tensor_free(t);
    return r;
}

static PyObject *py_cifar10_read(PyObject *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    kiln_tensor *x = NULL, *y = NULL;
    kiln_status st;
    Py_BEGIN_ALLOW_THREADS
    st = kiln_cifar10_read_u8(path, &x, &y);
    Py_END_ALLOW_THREADS
    if (st) return kpy_raise(st, NULL);
    PyObject *a = kpy_array_out(x->data, kiln_tensor_nbytes(x), x->shape), *b = a ? kpy_array_out(y->data, kiln_tensor_nbytes(y), y->shape) : NULL;
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    PyObject *r = b ? Py_BuildValue("(OO)", a, b) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

static PyObject *py_sequential(PyObject *self, PyObject *args) {
    const char *name;
    PyObject *shape_o;
    kiln_shape s;
    if (!PyArg_ParseTuple(args, "sO", &name, &shape_o) || kpy_shape_from(shape_o, &s, "input_shape")) return NULL;
    kiln_model *m = kiln_sequential(name, s);
    if (!m) return kpy_raise(KILN_OUT_OF_MEMORY, NULL);
    if (kiln_model_status(m)) { kpy_raise(kiln_model_status(m), m); kiln_model_free(m); return NULL; }
    return kpy_model_wrap(m);
}

static PyObject *py_functional(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    kiln_model *m = kiln_model_new(name);
    if (!m) return kpy_raise(KILN_OUT_OF_MEMORY, NULL);
    return kpy_model_wrap(m);
}

static PyObject *py_model_from_json(PyObject *self, PyObject *args) {
    const char *text;
    if (!PyArg_ParseTuple(args, "s", &text)) return NULL;
    kiln_model *m = NULL;
    kiln_status st = kiln_model_from_json(text, &m);
    if (st) return kpy_raise(st, NULL);
    return kpy_model_wrap(m);
}

static PyObject *py_model_from_checkpoint(PyObject *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    kiln_model *m = NULL;
    kiln_status st;
    Py_BEGIN_ALLOW_THREADS
    st = kiln_model_from_checkpoint(path, &m);
    Py_END_ALLOW_THREADS
    if (st) return kpy_raise(st, NULL);
    return kpy_model_wrap(m);
}

static PyObject *py_preset(PyObject *self, PyObject *args) {
    const char *name;
    PyObject *shape_o;
    int classes = 0;
    kiln_shape s = { 0 };
    if (!PyArg_ParseTuple(args, "sOi", &name, &shape_o, &classes)) return NULL;
    if (shape_o != Py_None && kpy_shape_from(shape_o, &s, "input_shape")) return NULL;
    kiln_model *m = kiln_model_preset(name, s, classes);
    if (!m) return kpy_raise(KILN_INVALID_ARGUMENT, NULL);
    return kpy_model_wrap(m);
}

static PyMethodDef methods[] = {
    { "version", py_version, METH_NOARGS, "Kiln's version." },
    { "gpu_available", py_gpu_available, METH_NOARGS, "A CUDA GPU Kiln can use." },
    { "gpu_unavailable_reason", py_gpu_reason, METH_NOARGS, "Why no GPU is used (\"\" when one is)." },
    { "gpu_count", py_gpu_count, METH_NOARGS, "Visible GPUs." },
    { "devices", py_devices, METH_NOARGS, "[(kind, index, name, total_memory)]: the CPU, then visible GPUs." },
    { "built_with_cuda", py_built_with_cuda, METH_NOARGS, "This build has the CUDA backend." },
    { "cpu_has_bf16", py_cpu_has_bf16, METH_NOARGS, "The CPU has native bf16 arithmetic." },
    { "set_num_threads", py_set_num_threads, METH_VARARGS, "set_num_threads(n): CPU threads of every kernel (0: every core)." },
    { "get_num_threads", py_get_num_threads, METH_NOARGS, "CPU threads in use." },
    { "layer_classes", py_layer_classes, METH_NOARGS, "The layer table as JSON (kiln_layer_classes_json)." },
    { "idx_read", py_idx_read, METH_VARARGS, "idx_read(path) -> (bytearray, shape): an IDX file's u8 contents." },
    { "cifar10_read", py_cifar10_read, METH_VARARGS, "cifar10_read(path) -> ((x, shape), (y, shape)): one CIFAR-10 batch file, u8 NHWC." },
    { "data_open", kpy_data_open, METH_VARARGS, "data_open(spec, train=True) -> Data: kiln_data_open's specs (images:DIR, npz:FILE, csv:FILE, mnist:DIR, cifar10:DIR, ...)." },
    { "data_images", kpy_data_images, METH_VARARGS, "data_images(dir, class_names=None) -> Data: an image folder, one sub-folder per class." },
    { "sequential", py_sequential, METH_VARARGS, "sequential(name, input_shape) -> Model." },
    { "functional", py_functional, METH_VARARGS, "functional(name) -> Model (empty)." },
    { "model_from_json", py_model_from_json, METH_VARARGS, "model_from_json(text) -> Model (Keras JSON)." },
    { "model_from_checkpoint", py_model_from_checkpoint, METH_VARARGS, "model_from_checkpoint(path) -> Model with its weights." },
    { "preset", py_preset, METH_VARARGS, "preset(name, input_shape or None, classes) -> Model." },
    { NULL, NULL, 0, NULL },
};

static int exec_module(PyObject *mod) {
    kpy_model_type = PyType_FromSpec(&kpy_model_spec);
    if (!kpy_model_type) return -1;
    Py_INCREF(kpy_model_type);
    if (PyModule_AddObject(mod, "Model", kpy_model_type) < 0) { Py_DECREF(kpy_model_type); return -1; }
    kpy_data_type = PyType_FromSpec(&kpy_data_spec);
    if (!kpy_data_type) return -1;
    Py_INCREF(kpy_data_type);
    if (PyModule_AddObject(mod, "Data", kpy_data_type) < 0) { Py_DECREF(kpy_data_type); return -1; }
    return 0;
}

static PyModuleDef_Slot slots[] = { { Py_mod_exec, exec_module }, { 0, NULL } };
static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "_kiln", "Kiln's C engine under the kiln package (python/src/README.md).", 0, methods, slots, NULL, NULL, NULL };

PyMODINIT_FUNC PyInit__kiln(void) { return PyModuleDef_Init(&module); }
