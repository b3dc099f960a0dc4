/* Model.fit / evaluate / predict: NumPy buffers borrowed as pipelines (kiln_data_from_arrays, no
 * copy), the GIL released while C trains and taken back only to call Python callbacks, which are
 * also where Ctrl-C is noticed (between steps; the model stays usable). */
#include <math.h>
#include <string.h>
#include "kiln_py.h"

#define MODEL(self) (((ModelObject *)(self))->m)

PyObject *kpy_logs_dict(const kiln_logs *l) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
#define PUT(key, v) do { PyObject *o_ = (v); if (!o_ || PyDict_SetItemString(d, key, o_) < 0) { Py_XDECREF(o_); Py_DECREF(d); return NULL; } Py_DECREF(o_); } while (0)
    PUT("epoch", PyLong_FromLong(l->epoch));
    PUT("batch", PyLong_FromLongLong(l->batch));
    PUT("steps", PyLong_FromLongLong(l->steps));
    PUT("loss", PyFloat_FromDouble(l->loss));
    PUT("accuracy", PyFloat_FromDouble(l->accuracy));
    PUT("top_k", PyFloat_FromDouble(l->top_k));
    if (l->has_val) {
        PUT("val_loss", PyFloat_FromDouble(l->val_loss));
        PUT("val_accuracy", PyFloat_FromDouble(l->val_accuracy));
        PUT("val_top_k", PyFloat_FromDouble(l->val_top_k));
    }
    for (int i = 0; i < l->n_metrics && i < KILN_MAX_METRICS; i++) {   /* compile's metric_list as m0, m1, ... */
        char key[16];
        snprintf(key, sizeof key, "m%d", i);
        PUT(key, PyFloat_FromDouble(l->metrics[i]));
        if (l->has_val) { snprintf(key, sizeof key, "val_m%d", i); PUT(key, PyFloat_FromDouble(l->val_metrics[i])); }
    }
    PUT("lr", PyFloat_FromDouble(l->lr));
    PUT("seconds", PyFloat_FromDouble(l->seconds));
    PUT("images_per_sec", PyFloat_FromDouble(l->images_per_sec));
#undef PUT
    return d;
}

/* evaluate's result: loss, accuracy, top_k, count and compile's metric_list as m0, m1, ... */
static PyObject *eval_dict(const kiln_eval_result *e) {
    PyObject *r = Py_BuildValue("{sdsdsdsL}", "loss", e->loss, "accuracy", e->accuracy, "top_k", e->top_k, "count", (long long)e->count);
    for (int i = 0; r && i < e->n_metrics && i < KILN_MAX_METRICS; i++) {
        char key[16];
        snprintf(key, sizeof key, "m%d", i);
        PyObject *v = PyFloat_FromDouble(e->metrics[i]);
        if (!v || PyDict_SetItemString(r, key, v) < 0) Py_CLEAR(r);
        Py_XDECREF(v);
    }
    return r;
}

/* x (f32) and y (i32 class ids or f32 values) as borrowed views; y may be None. */
static int views(PyObject *x_o, PyObject *y_o, kpy_view *xv, kpy_view *yv, bool *has_y) {
    memset(yv, 0, sizeof *yv);
    *has_y = y_o && y_o != Py_None;
    if (kpy_view_get(x_o, KILN_F32, "x", xv)) return -1;
    if (!*has_y) return 0;
    if (kpy_view_get(y_o, KILN_I32, "y", yv) == 0) return 0;
    PyErr_Clear();
    if (kpy_view_get(y_o, KILN_F32, "y", yv) == 0) return 0;
    PyErr_SetString(PyExc_TypeError, "y: expected int32 class ids or float32 values");
    kpy_view_release(xv);
    return -1;
}

/* A pipeline over rows [from, to) of x, y: shuffled (seed) when asked, batched. NULL with a
 * Python exception set. */
static kiln_data *pipeline(const kpy_view *xv, const kpy_view *yv, bool has_y, int64_t from, int64_t to, bool shuffle, uint64_t seed,
                           int batch, bool drop_remainder) {
    kiln_data *d = kiln_data_from_arrays(&xv->t, has_y ? &yv->t : NULL, 0);
    int64_t n = xv->t.shape.dim[0];
    if (d && to < n) d = kiln_data_take(d, to);
    if (d && from > 0) d = kiln_data_skip(d, from);
    if (d && shuffle) d = kiln_data_shuffle(d, to - from, seed);
    if (d) d = kiln_data_batch(d, batch, drop_remainder);
    if (!d) kpy_raise(KILN_INVALID_ARGUMENT, NULL);
    return d;
}

/* What the C callbacks need to reach Python. */
typedef struct fit_ctx {
    PyObject *on_batch, *on_epoch;     /* callables or NULL */
    PyObject *lr_fn;                   /* an "lr_scheduler" callback's callable, or NULL */
    bool failed;                       /* a Python exception (or Ctrl-C) stopped training: kept in exc */
    PyObject *exc_type, *exc_value, *exc_tb;
} fit_ctx;

/* Calls fn(n, logs) with the GIL held; true to stop (it said so, it raised, or Ctrl-C came). */
static bool call_py(fit_ctx *c, PyObject *fn, long n, const kiln_logs *logs) {
    if (c->failed) return true;
    PyGILState_STATE g = PyGILState_Ensure();
    bool stop = false;
    if (PyErr_CheckSignals() < 0) stop = c->failed = true;
    else if (fn) {
        PyObject *d = kpy_logs_dict(logs);
        PyObject *r = d ? PyObject_CallFunction(fn, "lO", n, d) : NULL;
        Py_XDECREF(d);
        if (!r) stop = c->failed = true;
        else stop = PyObject_IsTrue(r) == 1;
        Py_XDECREF(r);
    }
    if (c->failed) PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb);
    PyGILState_Release(g);
    return stop;
}

/* The learning rate an "lr_scheduler" callback's fn(epoch, lr) gives at an epoch's start; on an
 * exception, lr unchanged and training stops at the next batch. */
static double lr_schedule(int epoch, double lr, void *user) {
    fit_ctx *c = user;
    if (c->failed) return lr;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallFunction(c->lr_fn, "id", epoch, lr);
    double v = r ? PyFloat_AsDouble(r) : -1;
    if (r && v == -1 && PyErr_Occurred()) { Py_CLEAR(r); }
    else if (r && !(v >= 0)) { Py_CLEAR(r); PyErr_Format(PyExc_ValueError, "LearningRateScheduler: the schedule gave %g at epoch %d", v, epoch); }
    if (!r) { c->failed = true; PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb); v = lr; }
    Py_XDECREF(r);
    PyGILState_Release(g);
    return v;
}

static bool on_batch_end(kiln_model *m, const kiln_logs *l, void *user) { fit_ctx *c = user; return call_py(c, c->on_batch, (long)l->batch, l); }
static bool on_epoch_end(kiln_model *m, const kiln_logs *l, void *user) { fit_ctx *c = user; return call_py(c, c->on_epoch, l->epoch, l); }

static const char *d_str(PyObject *d, const char *key) {
    PyObject *v = PyDict_GetItemString(d, key);
    return v && v != Py_None ? PyUnicode_AsUTF8AndSize(v, NULL) : NULL;
}
static double d_num(PyObject *d, const char *key, double dflt) {
    PyObject *v = PyDict_GetItemString(d, key);
    return v && v != Py_None ? PyFloat_AsDouble(v) : dflt;
}
static bool d_flag(PyObject *d, const char *key) {
    PyObject *v = PyDict_GetItemString(d, key);
    return v && PyObject_IsTrue(v) == 1;
}

/* A callback dict {"kind": ..., ...} -> Kiln's C callback (strings borrowed from the dict). */
static int c_callback(PyObject *d, kiln_callback *cb, fit_ctx *ctx) {
    if (!PyDict_Check(d)) { PyErr_SetString(PyExc_TypeError, "callbacks: each must be a dict"); return -1; }
    const char *kind = d_str(d, "kind");
    if (!kind) { PyErr_SetString(PyExc_ValueError, "callbacks: a dict without 'kind'"); return -1; }
    if (!strcmp(kind, "model_checkpoint")) {
        *cb = kiln_callback_model_checkpoint(d_str(d, "path"), d_str(d, "monitor"), d_flag(d, "save_best_only"));
        cb->include_optimizer = d_flag(d, "include_optimizer");
    } else if (!strcmp(kind, "early_stopping")) *cb = kiln_callback_early_stopping(d_str(d, "monitor"), (int)d_num(d, "patience", 0), d_num(d, "min_delta", 0));
    else if (!strcmp(kind, "csv_logger")) *cb = kiln_callback_csv_logger(d_str(d, "path"));
    else if (!strcmp(kind, "lr_scheduler")) {
        PyObject *fn = PyDict_GetItemString(d, "fn");
        if (!fn || !PyCallable_Check(fn) || ctx->lr_fn) { PyErr_SetString(PyExc_ValueError, "callbacks: one lr_scheduler with a callable 'fn'"); return -1; }
        ctx->lr_fn = fn;         /* borrowed from the caller's dict */
        *cb = kiln_callback_lr_scheduler(lr_schedule, ctx);
    } else if (!strcmp(kind, "tensorboard")) *cb = kiln_callback_tensorboard(d_str(d, "log_dir"), (int)d_num(d, "update_freq", 0));
    else { PyErr_Format(PyExc_ValueError, "callbacks: Kiln has no C callback '%s'", kind); return -1; }
    return PyErr_Occurred() ? -1 : 0;
}

typedef struct fit_args {
    PyObject *x, *y, *vx, *vy, *cbs, *on_batch, *on_epoch;
    int batch, epochs, initial, shuffle, verbose, steps;
    unsigned long long seed;
    double split;
    const char *devices;
    PyObject *sw;                  /* sample_weight: f32 [N] or None */
    const float *w; int64_t n_w;   /* its view's data */
} fit_args;

/* Runs kiln_fit_data with the GIL released; the pipelines and views are the caller's. */
static kiln_status run_fit(kiln_model *m, kiln_data *train, kiln_data *val, const fit_args *a, kiln_callback *cbs, int n_cb) {
    kiln_fit_opts o = { .epochs = a->epochs, .initial_epoch = a->initial, .validation_data = val,
                        .verbose = a->verbose ? a->verbose : KILN_VERBOSE_SILENT,   /* Keras's verbose=0: silent */
                        .callbacks = cbs, .n_callbacks = n_cb, .steps_per_epoch = a->steps, .devices = a->devices,
                        .sample_weight = a->w, .n_sample_weight = a->n_w };
    kiln_status st;
    Py_BEGIN_ALLOW_THREADS
    st = kiln_fit_data(m, train, &o);
    Py_END_ALLOW_THREADS
    return st;
}

static PyObject *new_history(kiln_model *m, int before) {
    int n = 0;
    const kiln_logs *h = kiln_model_history(m, &n);
    PyObject *l = PyList_New(0);
    for (int i = before; l && i < n; i++) {
        PyObject *d = kpy_logs_dict(&h[i]);
        if (!d || PyList_Append(l, d) < 0) { Py_XDECREF(d); Py_DECREF(l); return NULL; }
        Py_DECREF(d);
    }
    return l;
}

/* The lambda callback reaching Python, then Kiln's C callbacks from a->cbs (a list of dicts). */
static int callbacks(const fit_args *a, fit_ctx *ctx, kiln_callback *cbs, int *n_cb) {
    *ctx = (fit_ctx){ .on_batch = a->on_batch != Py_None ? a->on_batch : NULL, .on_epoch = a->on_epoch != Py_None ? a->on_epoch : NULL };
    *n_cb = 0;
    cbs[(*n_cb)++] = kiln_callback_lambda(on_batch_end, on_epoch_end, ctx);
    if (a->cbs == Py_None) return 0;
    PyObject *seq = PySequence_Fast(a->cbs, "callbacks must be a list");
    if (!seq) return -1;
    Py_ssize_t k = PySequence_Size(seq);
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *it = PySequence_GetItem(seq, i);
        int bad = *n_cb == 17 || !it || c_callback(it, &cbs[(*n_cb)++], ctx);
        Py_XDECREF(it);
        if (bad) { Py_DECREF(seq); if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "at most 16 callbacks"); return -1; }
    }
    Py_DECREF(seq);          /* the strings borrowed stay alive in the caller's dicts */
    return 0;
}

/* After kiln_fit_data: the exception a callback raised, Kiln's error, or this fit's epochs. */
static PyObject *fit_result(kiln_model *m, kiln_status st, fit_ctx *ctx, int before) {
    if (ctx->failed) { PyErr_Restore(ctx->exc_type, ctx->exc_value, ctx->exc_tb); return NULL; }
    if (st) return kpy_raise(st, NULL);
    return new_history(m, before);
}

PyObject *kpy_model_fit(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "x", "y", "batch_size", "epochs", "initial_epoch", "shuffle", "seed", "validation_split", "validation_x",
                           "validation_y", "verbose", "callbacks", "on_batch_end", "on_epoch_end", "steps_per_epoch", "devices",
                           "sample_weight", NULL };
    fit_args a = { .vx = Py_None, .vy = Py_None, .cbs = Py_None, .on_batch = Py_None, .on_epoch = Py_None, .batch = 32, .epochs = 1,
                   .shuffle = 1, .verbose = 1, .sw = Py_None };
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|iiipKdOOiOOOizO", kws, &a.x, &a.y, &a.batch, &a.epochs, &a.initial, &a.shuffle, &a.seed,
                                     &a.split, &a.vx, &a.vy, &a.verbose, &a.cbs, &a.on_batch, &a.on_epoch, &a.steps, &a.devices, &a.sw))
        return NULL;
    kiln_model *m = MODEL(self);
    if (a.batch < 1) return PyErr_Format(PyExc_ValueError, "batch_size %d must be at least 1", a.batch);
    if (!(a.split >= 0 && a.split < 1)) return PyErr_Format(PyExc_ValueError, "validation_split %g must be in [0, 1)", a.split);
    kiln_callback cbs[17];
    int n_cb = 0;
    fit_ctx ctx;
    if (callbacks(&a, &ctx, cbs, &n_cb)) return NULL;
    kpy_view xv, yv, vxv, vyv, wv;
    bool has_y, has_vy = false, has_val = a.vx != Py_None, has_w = a.sw != Py_None;
    if (has_w) {                   /* Keras' sample_weight: one per row of x (C checks the count and values) */
        if (kpy_view_get(a.sw, KILN_F32, "sample_weight", &wv)) return NULL;
        a.w = wv.t.data;
        a.n_w = kiln_shape_numel(wv.t.shape);
    }
    if (views(a.x, a.y, &xv, &yv, &has_y)) { if (has_w) kpy_view_release(&wv); return NULL; }
    if (has_val && views(a.vx, a.vy, &vxv, &vyv, &has_vy)) { kpy_view_release(&xv); kpy_view_release(&yv); return NULL; }
    int64_t n = xv.t.shape.dim[0], split_at = a.split > 0 ? (int64_t)ceil((double)n * (1.0 - a.split)) : n;   /* Keras rounds up */
    PyObject *result = NULL;
    kiln_data *train = NULL, *val = NULL;
    if (a.split > 0 && has_val) PyErr_SetString(PyExc_ValueError, "give validation_split or validation_data, not both");
    else if (a.split > 0 && (split_at < 1 || split_at >= n))
        PyErr_Format(PyExc_ValueError, "validation_split %g of %lld examples leaves no training or no validation examples", a.split, (long long)n);
    else if ((train = pipeline(&xv, &yv, has_y, 0, split_at, a.shuffle, a.seed, a.batch, true)) &&
             (split_at == n || (val = pipeline(&xv, &yv, has_y, split_at, n, false, 0, a.batch, false))) &&
             (!has_val || (val = pipeline(&vxv, &vyv, has_vy, 0, vxv.t.shape.dim[0], false, 0, a.batch, false)))) {
        int before = 0;
        kiln_model_history(m, &before);
        result = fit_result(m, run_fit(m, train, val, &a, cbs, n_cb), &ctx, before);
    }
    kiln_data_free(train);
    kiln_data_free(val);
    kpy_view_release(&xv);
    kpy_view_release(&yv);
    if (has_val) { kpy_view_release(&vxv); kpy_view_release(&vyv); }
    if (has_w) kpy_view_release(&wv);
    return result;
}

PyObject *kpy_model_evaluate(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "x", "y", "batch_size", "verbose", NULL };
    PyObject *x_o, *y_o;
    int batch = 32, verbose = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|ii", kws, &x_o, &y_o, &batch, &verbose)) return NULL;
    if (batch < 1) return PyErr_Format(PyExc_ValueError, "batch_size %d must be at least 1", batch);
    kpy_view xv, yv;
    bool has_y;
    if (views(x_o, y_o, &xv, &yv, &has_y)) return NULL;
    kiln_data *d = pipeline(&xv, &yv, has_y, 0, xv.t.shape.dim[0], false, 0, batch, false);
    PyObject *r = NULL;
    if (d) {
        kiln_eval_result e = { 0 };
        kiln_status st;
        kiln_model *m = MODEL(self);
        Py_BEGIN_ALLOW_THREADS
        st = kiln_evaluate_data(m, d, &(kiln_eval_opts){ .verbose = verbose }, &e);
        Py_END_ALLOW_THREADS
        if (st) kpy_raise(st, NULL);
        else r = eval_dict(&e);
    }
    kiln_data_free(d);
    kpy_view_release(&xv);
    kpy_view_release(&yv);
    return r;
}

PyObject *kpy_model_predict(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "x", "batch_size", NULL };
    PyObject *x_o;
    int batch = 32;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i", kws, &x_o, &batch)) return NULL;
    if (batch < 1) return PyErr_Format(PyExc_ValueError, "batch_size %d must be at least 1", batch);
    kpy_view xv;
    if (kpy_view_get(x_o, KILN_F32, "x", &xv)) return NULL;
    kiln_tensor *out = NULL;
    kiln_status st;
    kiln_model *m = MODEL(self);
    Py_BEGIN_ALLOW_THREADS
    st = kiln_predict(m, &xv.t, &(kiln_eval_opts){ .batch_size = batch }, &out);
    Py_END_ALLOW_THREADS
    kpy_view_release(&xv);
    if (st) return kpy_raise(st, NULL);
    PyObject *r = kpy_array_out(out->data, kiln_tensor_nbytes(out), out->shape);
    kiln_tensor_free(out);
    return r;
}

/* fit on Kiln pipelines (Data objects: image folders, npz, CSV, ...), read on C threads. */
PyObject *kpy_model_fit_data(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "data", "epochs", "initial_epoch", "validation_data", "verbose", "callbacks", "on_batch_end", "on_epoch_end",
                           "steps_per_epoch", "devices", NULL };
    PyObject *data_o;
    fit_args a = { .vx = Py_None, .cbs = Py_None, .on_batch = Py_None, .on_epoch = Py_None, .epochs = 1, .verbose = 1 };
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iiOiOOOiz", kws, &data_o, &a.epochs, &a.initial, &a.vx, &a.verbose, &a.cbs, &a.on_batch,
                                     &a.on_epoch, &a.steps, &a.devices))
        return NULL;
    kiln_data *train = kpy_data_of(data_o, "fit"), *val = NULL;
    if (!train || (a.vx != Py_None && !(val = kpy_data_of(a.vx, "validation_data")))) return NULL;
    kiln_callback cbs[17];
    int n_cb = 0, before = 0;
    fit_ctx ctx;
    if (callbacks(&a, &ctx, cbs, &n_cb)) return NULL;
    kiln_model *m = MODEL(self);
    kiln_model_history(m, &before);
    Py_INCREF(data_o);           /* the pipelines stay alive while C trains without the GIL */
    Py_XINCREF(a.vx);
    PyObject *r = fit_result(m, run_fit(m, train, val, &a, cbs, n_cb), &ctx, before);
    Py_DECREF(data_o);
    Py_XDECREF(a.vx);
    return r;
}

PyObject *kpy_model_evaluate_data(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "data", "verbose", NULL };
    PyObject *data_o;
    int verbose = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i", kws, &data_o, &verbose)) return NULL;
    kiln_data *d = kpy_data_of(data_o, "evaluate");
    if (!d) return NULL;
    kiln_eval_result e = { 0 };
    kiln_status st;
    kiln_model *m = MODEL(self);
    Py_INCREF(data_o);
    Py_BEGIN_ALLOW_THREADS
    st = kiln_evaluate_data(m, d, &(kiln_eval_opts){ .verbose = verbose }, &e);
    Py_END_ALLOW_THREADS
    Py_DECREF(data_o);
    if (st) return kpy_raise(st, NULL);
    return eval_dict(&e);
}
