/* kiln_fit on several GPUs of one process (kiln_fit_opts.devices, TensorFlow's MirroredStrategy):
 * one replica of the training step per GPU (src/runtime/replicas.c), each on its rows of every
 * batch, run in lock step with the gradients averaged over NCCL; the step's loss and metrics
 * gathered from every replica. One kind of step for fit_step.c. */
#include <stdlib.h>
#include <string.h>
#include "nn/nn_fit.h"
#include "dist/dist_internal.h"
#include "runtime/replicas.h"
#include "backend/registry.h"

/* o->devices: "all", "gpu:0,gpu:1", "0,1", "/gpu:0,cuda:1" -> GPU indices. */
static kiln_status parse_devices(const char *spec, int *gpus, int *n) {
    *n = 0;
    int visible = kiln_cuda_device_count();
    if (!strcmp(spec, "all")) {
        if (visible < 1) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: devices \"all\": no GPU (%s)", kiln_gpu_unavailable_reason());
        for (int k = 0; k < visible && k < 16; k++) gpus[(*n)++] = k;
        return KILN_OK;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ') t++;
        kiln_device_spec d;
        char *end;
        long idx = strtol(t, &end, 10);
        if (end != t && !*end) d = (kiln_device_spec){ KILN_DEVICE_GPU, (int)idx };
        else if (kiln_parse_device(t, &d) != KILN_OK || d.type != KILN_DEVICE_GPU)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: devices \"%s\": '%s' is not a GPU (use \"all\" or a list such as "
                                  "\"gpu:0,gpu:1\")", spec, t);
        if (d.index < 0 || d.index >= visible)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: devices \"%s\": no GPU %d (%d visible%s%s)", spec, d.index, visible,
                                  visible ? "" : ": ", visible ? "" : kiln_gpu_unavailable_reason());
        if (*n >= 16) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: devices \"%s\": at most 16 GPUs", spec);
        gpus[(*n)++] = d.index;
    }
    if (*n == 0) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: devices \"%s\" names no GPU", spec);
    return KILN_OK;
}

kiln_status nn_mirror_begin(nn_mirror *r, const kiln_fit_opts *o, int *batch) {
    memset(r, 0, sizeof *r);
    int n = 0;
    kiln_status st = parse_devices(o->devices, r->gpus, &n);
    if (st || n < 2) return st;
    if (o->dist && o->dist->size > 1)
        return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: devices with several processes: under mpirun give each process one GPU");
    if (o->data_on_device) return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: data_on_device with several devices is not supported");
    if (o->accumulate_steps > 1)
        return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: gradient accumulation with several devices is not supported yet (use a "
                              "larger global batch over the GPUs instead)");
    if (*batch % n)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: the batch size %d is the global batch, split over %d GPUs: make it a "
                              "multiple of %d (e.g. %d)", *batch, n, n, (*batch / n + 1) * n);
    r->n = n;
    *batch /= n;
    return KILN_OK;
}

/* The replicas, started from replica 0's variables (the model's session), and their outputs. */
kiln_status nn_mirror_session(nn_mirror *r, kiln_model *m, const kiln_fit_opts *o) {
    kiln_status st = kiln_replicas_new(m->s, r->gpus, r->n, &r->rep);
    if (st == KILN_OK && o->bucket_bytes) kiln_replicas_set_bucket_bytes(r->rep, o->bucket_bytes);
    if (st == KILN_OK) st = kiln_replicas_sync_variables(r->rep);
    nn_forward *f = &m->train;
    for (int k = 1; k < r->n && st == KILN_OK; k++)
        if (!(r->outs[2 * k] = kiln_tensor_new(f->loss_t->dtype, f->loss_t->shape)) ||
            !(r->outs[2 * k + 1] = kiln_tensor_new(f->out_t->dtype, f->out_t->shape)))
            st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory");
    for (int k = 1; k < r->n && st == KILN_OK && f->finite; k++)
        if (!(r->finite[k] = kiln_tensor_new(KILN_F32, KILN_SCALAR))) st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory");
    r->lr_synced = m->lr_current;
    /* log_device_placement's report, as the placer's lines (src/compile/placement.c) */
    if (st == KILN_OK && (m->copts.log_device_placement || getenv("KILN_LOG_DEVICE_PLACEMENT")))
        for (int k = 0; k < r->n; k++) kiln_log_msg(KILN_LOG_INFO, "kiln: replica %d of %d: /device:GPU:%d", k, r->n, r->gpus[k]);
    return st;
}

kiln_status nn_mirror_step(nn_mirror *r, kiln_model *m, const kiln_tensor *x, const kiln_tensor *y, double *loss,
                           double *correct, double *topk) {
    nn_forward *f = &m->train;
    int n = r->n;
    int64_t b = f->batch;
    kiln_status st = KILN_OK;
    if (m->lr_current != r->lr_synced) {       /* nn_set_lr changed replica 0's */
        for (int k = 1; k < n && st == KILN_OK; k++) st = kiln_session_assign_variable(kiln_replicas_session(r->rep, k), m->lr_var, m->lr_t);
        if (st) return st;
        r->lr_synced = m->lr_current;
    }
    kiln_tensor xs[16], ys[16], *outs[48];
    kiln_feed feeds[32];
    int nf = f->finite ? 3 : 2;      /* the guard's flag too (grad_guard.c) */
    size_t xrow = kiln_tensor_nbytes(x) / (size_t)x->shape.dim[0], yrow = kiln_tensor_nbytes(y) / (size_t)y->shape.dim[0];
    for (int k = 0; k < n; k++) {      /* replica k's rows: views into the batch, no copy */
        xs[k] = *x; xs[k].shape.dim[0] = b; xs[k].data = (char *)x->data + (size_t)(k * b) * xrow; xs[k].owns_data = false;
        ys[k] = *y; ys[k].shape.dim[0] = b; ys[k].data = (char *)y->data + (size_t)(k * b) * yrow; ys[k].owns_data = false;
        feeds[2 * k] = (kiln_feed){ f->x, &xs[k] };
        feeds[2 * k + 1] = (kiln_feed){ f->y, &ys[k] };
        outs[nf * k] = k ? r->outs[2 * k] : f->loss_t;
        outs[nf * k + 1] = k ? r->outs[2 * k + 1] : f->out_t;
        if (nf == 3) outs[nf * k + 2] = k ? r->finite[k] : f->finite_t;
    }
    kiln_node *fetch[3] = { f->loss, f->out, f->finite };
    if ((st = kiln_replicas_run(r->rep, feeds, 2, fetch, outs, nf, &f->step, 1))) return st;
    *loss = *correct = *topk = 0;
    double finite = 1;
    for (int k = 0; k < n; k++) {
        double c, t;
        nn_batch_metrics(m, outs[nf * k + 1], &ys[k], b, &c, &t);
        *loss += kiln_tensor_get(outs[nf * k], 0) / n;
        *correct += c;
        *topk += t;
        if (nf == 3 && kiln_tensor_get(outs[nf * k + 2], 0) == 0) finite = 0;
    }
    if (nf == 3) kiln_tensor_set(f->finite_t, 0, finite);
    return KILN_OK;
}

void nn_mirror_end(nn_mirror *r) {
    kiln_replicas_free(r->rep);
    r->rep = NULL;
    for (int k = 0; k < 32; k++) { kiln_tensor_free(r->outs[k]); r->outs[k] = NULL; }
    for (int k = 0; k < 16; k++) { kiln_tensor_free(r->finite[k]); r->finite[k] = NULL; }
}
