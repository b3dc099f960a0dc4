/* The kiln._kiln extension (python/src/README.md): shared declarations. CPython's limited API
 * 3.11 (abi3), Kiln's public C API, no NumPy C API. */
#ifndef KILN_PY_H
#define KILN_PY_H
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include "kiln/kiln.h"

/* A kiln_model owned by a Python object. */
typedef struct {
    PyObject_HEAD
    kiln_model *m;
} ModelObject;

extern PyType_Spec kpy_model_spec;
/* The Model type, made at module init (kpy_model_spec). */
extern PyObject *kpy_model_type;

/* Raises the Python exception for status st with Kiln's message (kiln_last_error(), or the
 * model's sticky error when m is given); returns NULL for `return kpy_raise(...)`. */
PyObject *kpy_raise(kiln_status st, const kiln_model *m);
/* A new Model object taking m (freed on failure). */
PyObject *kpy_model_wrap(kiln_model *m);

/* Python tuple of ints <-> kiln_shape. -1 with an exception set on a bad tuple. */
int kpy_shape_from(PyObject *o, kiln_shape *s, const char *what);
PyObject *kpy_shape_to(kiln_shape s);
/* A bytearray of n bytes copied from p, returned with its shape: (bytearray, shape). */
PyObject *kpy_array_out(const void *p, size_t n, kiln_shape s);
/* A borrowed view of a C-contiguous buffer of the given dtype (f32 or i32: itemsize 4) as a
 * tensor with the buffer's shape; release with kpy_view_release. -1 with TypeError / ValueError
 * set otherwise. */
typedef struct kpy_view { Py_buffer buf; kiln_tensor t; bool held; } kpy_view;
int kpy_view_get(PyObject *o, kiln_dtype dtype, const char *what, kpy_view *v);
void kpy_view_release(kpy_view *v);

/* train.c: Model.fit / evaluate / predict */
PyObject *kpy_model_fit(PyObject *self, PyObject *args, PyObject *kw);
PyObject *kpy_model_evaluate(PyObject *self, PyObject *args, PyObject *kw);
PyObject *kpy_model_predict(PyObject *self, PyObject *args, PyObject *kw);
/* A Kiln logs struct as the dict Python callbacks and History see. */
PyObject *kpy_logs_dict(const kiln_logs *l);

PyObject *kpy_model_fit_data(PyObject *self, PyObject *args, PyObject *kw);
PyObject *kpy_model_evaluate_data(PyObject *self, PyObject *args, PyObject *kw);

/* data.c: the Data type (a kiln_data pipeline) and its sources */
extern PyType_Spec kpy_data_spec;
extern PyObject *kpy_data_type;
/* The pipeline of a Data object; NULL with TypeError / ValueError (consumed) set. */
kiln_data *kpy_data_of(PyObject *o, const char *what);
PyObject *kpy_data_open(PyObject *mod, PyObject *args);
PyObject *kpy_data_images(PyObject *mod, PyObject *args);

/* compile.c: Model.compile */
PyObject *kpy_model_compile(PyObject *self, PyObject *args, PyObject *kw);

#endif
