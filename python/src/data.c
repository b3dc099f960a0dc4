/* kiln._kiln.Data: a Kiln input pipeline (include/kiln/pipeline.h) held by Python, so files Kiln
 * reads itself (image folders, npz, CSV, MNIST, CIFAR) are shuffled, batched, augmented and
 * prefetched on C threads and handed to Model.fit_data as they are. A transform takes its input
 * pipeline (Kiln's ownership rule): the object it was called on is empty afterwards. */
#include <string.h>
#include "kiln_py.h"

typedef struct {
    PyObject_HEAD
    kiln_data *d;
} DataObject;

PyObject *kpy_data_type;

kiln_data *kpy_data_of(PyObject *o, const char *what) {
    if (!PyObject_TypeCheck(o, (PyTypeObject *)kpy_data_type)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a kiln dataset (kiln._kiln.Data)", what);
        return NULL;
    }
    kiln_data *d = ((DataObject *)o)->d;
    if (!d) PyErr_Format(PyExc_ValueError, "%s: this dataset was consumed by a transform (shuffle, batch, ...): use the dataset that returned", what);
    return d;
}

static PyObject *wrap(kiln_data *d) {
    if (!d) return kpy_raise(KILN_INVALID_ARGUMENT, NULL);
    DataObject *o = PyObject_New(DataObject, (PyTypeObject *)kpy_data_type);
    if (!o) { kiln_data_free(d); return NULL; }
    o->d = d;
    return (PyObject *)o;
}

/* Takes self's pipeline for a transform (self is empty afterwards). */
static kiln_data *take(PyObject *self) {
    kiln_data *d = kpy_data_of(self, "dataset");
    if (d) ((DataObject *)self)->d = NULL;
    return d;
}

static void data_dealloc(PyObject *self) {
    PyTypeObject *tp = Py_TYPE(self);
    kiln_data_free(((DataObject *)self)->d);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

/* ---- sources (module functions) ---- */
PyObject *kpy_data_open(PyObject *mod, PyObject *args) {
    const char *spec;
    int train = 1;
    if (!PyArg_ParseTuple(args, "s|p", &spec, &train)) return NULL;
    kiln_data *d = NULL;
    kiln_status st;
    Py_BEGIN_ALLOW_THREADS
    st = kiln_data_open(spec, train, &d);
    Py_END_ALLOW_THREADS
    if (st) return kpy_raise(st, NULL);
    return wrap(d);
}

PyObject *kpy_data_images(PyObject *mod, PyObject *args) {
    const char *dir;
    PyObject *classes_o = Py_None;
    if (!PyArg_ParseTuple(args, "s|O", &dir, &classes_o)) return NULL;
    kiln_data *d = NULL;
    kiln_status st = KILN_OK;
    if (classes_o == Py_None) {
        Py_BEGIN_ALLOW_THREADS
        st = kiln_data_from_images(dir, &d);
        Py_END_ALLOW_THREADS
    } else {
        PyObject *seq = PySequence_Fast(classes_o, "class_names must be a list of strings");
        if (!seq) return NULL;
        Py_ssize_t n = PySequence_Size(seq);
        const char **names = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *names);
        PyObject **items = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *items);
        int bad = !names || !items;
        for (Py_ssize_t i = 0; !bad && i < n; i++) {
            items[i] = PySequence_GetItem(seq, i);
            bad = !items[i] || !(names[i] = PyUnicode_AsUTF8AndSize(items[i], NULL));
        }
        if (!bad) {
            Py_BEGIN_ALLOW_THREADS
            st = kiln_data_from_images_classes(dir, names, (int)n, &d);
            Py_END_ALLOW_THREADS
        }
        for (Py_ssize_t i = 0; items && i < n; i++) Py_XDECREF(items[i]);
        PyMem_Free(items);
        PyMem_Free(names);
        Py_DECREF(seq);
        if (bad) return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    if (st) return kpy_raise(st, NULL);
    return wrap(d);
}

/* ---- transforms ---- */
static PyObject *d_split(PyObject *self, PyObject *args) {
    double f;
    if (!PyArg_ParseTuple(args, "d", &f)) return NULL;
    kiln_data *d = take(self), *a = NULL, *b = NULL;
    if (!d) return NULL;
    kiln_status st = kiln_data_split_source(d, f, &a, &b);
    if (st) return kpy_raise(st, NULL);
    PyObject *x = wrap(a), *y = x ? wrap(b) : (kiln_data_free(b), NULL);
    PyObject *r = y ? PyTuple_Pack(2, x, y) : NULL;
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

static PyObject *d_shuffle(PyObject *self, PyObject *args) {
    long long buffer;
    unsigned long long seed = 0;
    if (!PyArg_ParseTuple(args, "L|K", &buffer, &seed)) return NULL;
    kiln_data *d = take(self);
    return d ? wrap(kiln_data_shuffle(d, buffer, seed)) : NULL;
}

static PyObject *d_batch(PyObject *self, PyObject *args) {
    long long n;
    int drop = 0;
    if (!PyArg_ParseTuple(args, "L|p", &n, &drop)) return NULL;
    kiln_data *d = take(self);
    return d ? wrap(kiln_data_batch(d, n, drop)) : NULL;
}

static PyObject *d_take(PyObject *self, PyObject *args) {
    long long n;
    if (!PyArg_ParseTuple(args, "L", &n)) return NULL;
    kiln_data *d = take(self);
    return d ? wrap(kiln_data_take(d, n)) : NULL;
}

static PyObject *d_skip(PyObject *self, PyObject *args) {
    long long n;
    if (!PyArg_ParseTuple(args, "L", &n)) return NULL;
    kiln_data *d = take(self);
    return d ? wrap(kiln_data_skip(d, n)) : NULL;
}

static PyObject *d_repeat(PyObject *self, PyObject *args) {
    long long n;
    if (!PyArg_ParseTuple(args, "L", &n)) return NULL;
    kiln_data *d = take(self);
    return d ? wrap(kiln_data_repeat(d, n)) : NULL;
}

static PyObject *d_cache(PyObject *self, PyObject *noargs) {
    kiln_data *d = take(self);
    return d ? wrap(kiln_data_cache(d)) : NULL;
}

static PyObject *d_scale(PyObject *self, PyObject *args) {      /* x * scale (e.g. 255: Keras's 0..255 pixels) */
    double scale;
    if (!PyArg_ParseTuple(args, "d", &scale)) return NULL;
    if (!(scale > 0)) return PyErr_Format(PyExc_ValueError, "scale %g must be > 0", scale);
    kiln_data *d = kpy_data_of(self, "dataset");
    if (!d) return NULL;
    kiln_shape es = kiln_data_example_shape(d);
    int c = es.rank > 0 ? (int)es.dim[es.rank - 1] : 1;
    float mean[4096], std[4096];
    if (c > 4096) return PyErr_Format(PyExc_ValueError, "scale: %d channels", c);
    for (int i = 0; i < c; i++) { mean[i] = 0; std[i] = (float)(1.0 / scale); }
    d = take(self);
    return wrap(kiln_data_normalize(d, mean, std, c));
}

static PyObject *d_augment(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "crop_pad", "flip", "cutout_size", "seed", NULL };
    int crop = 0, flip = 0, cutout = 0;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ipiK", kws, &crop, &flip, &cutout, &seed)) return NULL;
    kiln_data *d = take(self);
    return d ? wrap(kiln_data_augment(d, &(kiln_augment_opts){ .crop_pad = crop, .flip = flip, .cutout_size = cutout, .seed = seed })) : NULL;
}

static PyObject *d_prefetch(PyObject *self, PyObject *args) {
    int buffers = 2, workers = 0;
    if (!PyArg_ParseTuple(args, "|ii", &buffers, &workers)) return NULL;
    kiln_data *d = take(self);
    return d ? wrap(kiln_data_prefetch(d, buffers, workers)) : NULL;
}

/* ---- information ---- */
static PyObject *d_info(PyObject *self, PyObject *noargs) {
    kiln_data *d = kpy_data_of(self, "dataset");
    if (!d) return NULL;
    int nc = kiln_data_num_classes(d);
    PyObject *names = PyList_New(0);
    for (int i = 0; names && i < nc; i++) {
        const char *n = kiln_data_class_name(d, i);
        if (!n) break;
        PyObject *s = PyUnicode_FromString(n);
        if (!s || PyList_Append(names, s) < 0) { Py_XDECREF(s); Py_CLEAR(names); }
        Py_XDECREF(s);
    }
    PyObject *shape = names ? kpy_shape_to(kiln_data_example_shape(d)) : NULL;
    PyObject *r = shape ? Py_BuildValue("{sOsisOsLsLsLss}", "example_shape", shape, "num_classes", nc, "class_names", names,
                                        "batch_size", (long long)kiln_data_batch_size(d), "cardinality", (long long)kiln_data_cardinality(d),
                                        "source_size", (long long)kiln_data_source_size(d), "label_dtype",
                                        kiln_data_label_dtype(d) == KILN_F32 ? "float32" : "int32")
                        : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(names);
    return r;
}

/* One pass (epoch) as a list of ((x bytes, shape), (y bytes, shape)) batches: for looking at the
 * data from Python (`for x, y in ds`), not for training (fit_data trains in C). */
static PyObject *d_batches(PyObject *self, PyObject *args) {
    unsigned long long epoch = 0;
    long long limit = -1;
    if (!PyArg_ParseTuple(args, "|KL", &epoch, &limit)) return NULL;
    kiln_data *d = kpy_data_of(self, "dataset");
    if (!d) return NULL;
    kiln_data_iter *it = NULL;
    kiln_status st = kiln_data_iter_new(d, epoch, &it);
    if (st) return kpy_raise(st, NULL);
    PyObject *l = PyList_New(0);
    for (long long k = 0; l && (limit < 0 || k < limit); k++) {
        kiln_tensor *x = NULL, *y = NULL;
        Py_BEGIN_ALLOW_THREADS
        st = kiln_data_iter_next(it, &x, &y);
        Py_END_ALLOW_THREADS
        if (st) { kpy_raise(st, NULL); Py_CLEAR(l); break; }
        if (!x) break;
        PyObject *a = kpy_array_out(x->data, kiln_tensor_nbytes(x), x->shape);
        PyObject *b = a && y ? kpy_array_out(y->data, kiln_tensor_nbytes(y), y->shape) : (Py_XINCREF(Py_None), Py_None);
        PyObject *t = a && b ? PyTuple_Pack(2, a, b) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (!t || PyList_Append(l, t) < 0) Py_CLEAR(l);
        Py_XDECREF(t);
    }
    kiln_data_iter_free(it);
    return l;
}

static PyMethodDef data_methods[] = {
    { "split", d_split, METH_VARARGS, "split(fraction) -> (train, held_out): a bare source, evenly spaced examples held out." },
    { "shuffle", d_shuffle, METH_VARARGS, "shuffle(buffer, seed=0)." },
    { "batch", d_batch, METH_VARARGS, "batch(n, drop_remainder=False)." },
    { "take", d_take, METH_VARARGS, "take(n)." },
    { "skip", d_skip, METH_VARARGS, "skip(n)." },
    { "repeat", d_repeat, METH_VARARGS, "repeat(count)." },
    { "cache", d_cache, METH_NOARGS, "cache()." },
    { "scale", d_scale, METH_VARARGS, "scale(s): x * s (255: pixels in 0..255 as Keras's image datasets)." },
    { "augment", (PyCFunction)(void (*)(void))d_augment, METH_VARARGS | METH_KEYWORDS, "augment(crop_pad=0, flip=False, cutout_size=0, seed=0)." },
    { "prefetch", d_prefetch, METH_VARARGS, "prefetch(buffers=2, workers=0): C worker threads." },
    { "info", d_info, METH_NOARGS, "dict: example_shape, num_classes, class_names, batch_size, cardinality, source_size, label_dtype." },
    { "batches", d_batches, METH_VARARGS, "batches(epoch=0, limit=-1) -> [((x, shape), (y, shape))]: one pass, for inspection." },
    { NULL, NULL, 0, NULL },
};

static PyType_Slot data_slots[] = {
    { Py_tp_dealloc, data_dealloc },
    { Py_tp_methods, data_methods },
    { Py_tp_doc, "A Kiln input pipeline (kiln_data): read, shuffled, batched and prefetched in C." },
    { 0, NULL },
};

PyType_Spec kpy_data_spec = { "kiln._kiln.Data", sizeof(DataObject), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, data_slots };
