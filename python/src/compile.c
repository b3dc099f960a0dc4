/* Model.compile: the optimizer and schedule dicts the Python side builds from Keras's objects,
 * read into kiln_compile_opts. A key Kiln does not know is an error naming it. */
#include <string.h>
#include "kiln_py.h"

/* dict[key] as a double / bool into *out when present; -1 with an exception set on a bad value. */
static int get_num(PyObject *d, const char *key, double *out) {
    PyObject *v = PyDict_GetItemString(d, key);      /* borrowed */
    if (!v || v == Py_None) return 0;
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred()) { PyErr_Format(PyExc_TypeError, "%s must be a number", key); return -1; }
    *out = x;
    return 0;
}

static int get_bool(PyObject *d, const char *key, bool *out) {
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v || v == Py_None) return 0;
    int b = PyObject_IsTrue(v);
    if (b < 0) return -1;
    *out = b;
    return 0;
}

/* Every key of d is one of allowed (NULL-terminated); else ValueError naming it. */
static int check_keys(PyObject *d, const char *what, const char *const *allowed) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        const char *s = PyUnicode_AsUTF8AndSize(k, NULL);
        if (!s) return -1;
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(*a, s);
        if (!ok) { PyErr_Format(PyExc_ValueError, "%s: Kiln has no option '%s'", what, s); return -1; }
    }
    return 0;
}

static int read_optimizer(PyObject *d, kiln_optimizer *o) {
    static const char *const keys[] = { "kind", "lr", "momentum", "nesterov", "beta1", "beta2", "epsilon", "weight_decay", "rho",
                                        "initial_accumulator", "clip_norm", NULL };
    if (!PyDict_Check(d)) { PyErr_SetString(PyExc_TypeError, "optimizer must be a dict"); return -1; }
    if (check_keys(d, "optimizer", keys)) return -1;
    PyObject *kind = PyDict_GetItemString(d, "kind");
    const char *k = kind ? PyUnicode_AsUTF8AndSize(kind, NULL) : "sgd";
    if (!k) return -1;
    memset(o, 0, sizeof *o);
    int i = 0;
    for (; i < KILN_OPT_COUNT && strcmp(kiln_optimizer_name((kiln_optimizer_kind)i), k); i++) {}
    if (i == KILN_OPT_COUNT) { PyErr_Format(PyExc_ValueError, "optimizer '%s': Kiln has sgd, adam, adamw, rmsprop, adagrad", k); return -1; }
    switch ((kiln_optimizer_kind)i) {     /* Kiln's constructors give each kind its defaults */
    case KILN_OPT_ADAM: *o = kiln_adam(1e-3); break;
    case KILN_OPT_ADAMW: *o = kiln_adamw(1e-3, 0.004); break;
    case KILN_OPT_RMSPROP: *o = kiln_rmsprop(1e-3); break;
    case KILN_OPT_ADAGRAD: *o = kiln_adagrad(1e-3); break;
    default: *o = kiln_sgd(0.01); break;
    }
    return get_num(d, "lr", &o->lr) || get_num(d, "momentum", &o->momentum) || get_bool(d, "nesterov", &o->nesterov) ||
           get_num(d, "beta1", &o->beta1) || get_num(d, "beta2", &o->beta2) || get_num(d, "epsilon", &o->epsilon) ||
           get_num(d, "weight_decay", &o->weight_decay) || get_num(d, "rho", &o->rho) ||
           get_num(d, "initial_accumulator", &o->initial_accumulator) || get_num(d, "clip_norm", &o->clip_norm) ? -1 : 0;
}

static int read_schedule(PyObject *d, kiln_lr_schedule *s) {
    static const char *const keys[] = { "kind", "gamma", "step_epochs", "warmup_epochs", "min_lr", "pct_start", "div_factor",
                                        "final_div_factor", NULL };
    static const char *const kinds[KILN_LR_KIND_COUNT] = { "constant", "step", "exponential", "cosine", "one_cycle" };
    memset(s, 0, sizeof *s);
    if (d == Py_None) return 0;
    if (!PyDict_Check(d)) { PyErr_SetString(PyExc_TypeError, "schedule must be a dict or None"); return -1; }
    if (check_keys(d, "schedule", keys)) return -1;
    PyObject *kind = PyDict_GetItemString(d, "kind");
    const char *k = kind ? PyUnicode_AsUTF8AndSize(kind, NULL) : "constant";
    if (!k) return -1;
    int i = 0;
    for (; i < KILN_LR_KIND_COUNT && strcmp(kinds[i], k); i++) {}
    if (i == KILN_LR_KIND_COUNT) { PyErr_Format(PyExc_ValueError, "schedule '%s': Kiln has constant, step, exponential, cosine, one_cycle", k); return -1; }
    s->kind = (kiln_lr_kind)i;
    double step_epochs = 0;
    if (get_num(d, "gamma", &s->gamma) || get_num(d, "step_epochs", &step_epochs) || get_num(d, "warmup_epochs", &s->warmup_epochs) ||
        get_num(d, "min_lr", &s->min_lr) || get_num(d, "pct_start", &s->pct_start) || get_num(d, "div_factor", &s->div_factor) ||
        get_num(d, "final_div_factor", &s->final_div_factor))
        return -1;
    s->step_epochs = (int)step_epochs;
    return 0;
}

PyObject *kpy_model_compile(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kws[] = { "optimizer", "loss", "from_logits", "metrics", "top_k", "precision", "device", "threads",
                           "log_device_placement", "schedule", "sync_batchnorm", "huber_delta", "metric_list", NULL };
    PyObject *opt_o, *sched_o = Py_None;
    const char *loss, *precision = "float32", *device = "auto";
    int from_logits = 0, metrics = 0, top_k = 0, threads = 0, log_place = 0, sync_bn = 0;
    double huber_delta = 0;
    const char *metric_list = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Os|pIizzipOpdz", kws, &opt_o, &loss, &from_logits, &metrics, &top_k, &precision, &device,
                                     &threads, &log_place, &sched_o, &sync_bn, &huber_delta, &metric_list))
        return NULL;
    kiln_compile_opts o = { .from_logits = from_logits, .metrics = (unsigned)metrics, .top_k = top_k, .device = device,
                            .num_threads = threads, .log_device_placement = log_place, .sync_batchnorm = sync_bn,
                            .huber_delta = huber_delta, .metric_list = metric_list };
    kiln_status st;
    if (read_optimizer(opt_o, &o.optimizer) || read_schedule(sched_o, &o.schedule)) return NULL;
    if ((st = kiln_loss_from_name(loss, &o.loss)) || (precision && (st = kiln_precision_parse(precision, &o.precision))))
        return kpy_raise(st, NULL);
    kiln_model *m = ((ModelObject *)self)->m;
    if (threads > 0) kiln_set_num_threads(threads);    /* every CPU kernel's pool, as kiln train --threads */
    Py_BEGIN_ALLOW_THREADS
    st = kiln_compile(m, &o);
    Py_END_ALLOW_THREADS
    if (st) return kpy_raise(st, m);
    Py_RETURN_NONE;
}
