/* kiln_fit's data parallelism across processes (include/kiln/dist.h): the training loop in
 * fit_data.c stays one loop; these calls shard its pipeline (each rank its B / N rows of every
 * global batch), start every rank from rank 0's variables, hook the gradient all-reduce into the
 * session (src/runtime/grad_reduce.c), reduce each step's loss and metrics, and keep the
 * file-writing callbacks and the progress bar on rank 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_fit.h"
#include "dist/dist_internal.h"
#include "runtime/grad_reduce.h"
#include "data/pipeline_internal.h"
#include "graph/graph_internal.h"
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

/* Mirrored replicas in this process (o->devices). */
static kiln_status begin_mirrored(nn_dist_fit *df, int *batch, const kiln_fit_opts **o) {
    int n = 0;
    kiln_status st = parse_devices((*o)->devices, df->gpus, &n);
    if (st || n < 2) return st;
    if ((*o)->dist && (*o)->dist->size > 1)
        return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: devices with several processes: under mpirun give each process one GPU");
    if ((*o)->data_on_device) return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: data_on_device with several devices is not supported");
    if ((*o)->accumulate_steps > 1)
        return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: gradient accumulation with several devices is not supported yet (use a "
                              "larger global batch over the GPUs instead)");
    if (*batch % n)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: the batch size %d is the global batch, split over %d GPUs: make it a "
                              "multiple of %d (e.g. %d)", *batch, n, n, (*batch / n + 1) * n);
    df->split = n;
    df->world = n;
    *batch /= n;
    df->opts = **o;
    *o = &df->opts;
    return KILN_OK;
}

/* Ranks that differ in their data set's size, batch, epochs or model would wait for each other
 * in an all-reduce forever (or train apart): every rank checks they agree, once, before the first
 * step; a difference is an error on every rank naming it (dist_agree). */
static kiln_status agree(kiln_dist *d, kiln_model *m, const kiln_data *train, int batch, const kiln_fit_opts *o) {
    const kiln_data *b = train;
    while (b && b->kind != KILN_DN_BATCH) b = b->input;
    int64_t steps = kiln_data_cardinality(train);
    if (o->steps_per_epoch > 0 && o->steps_per_epoch < steps) steps = o->steps_per_epoch;
    const dist_fact facts[] = {
        { "training examples", b && b->input ? b->input->card : -1, NULL, false },
        { "global batch size", batch, NULL, false },
        { "steps per epoch", steps, NULL, false },
        { "epochs", o->epochs > 0 ? o->epochs : 1, NULL, false },
        { "initial epoch", o->initial_epoch, NULL, false },
        { "accumulation steps", o->accumulate_steps > 1 ? o->accumulate_steps : 1, NULL, false },
        { "trainable parameters", kiln_model_param_count(m, true), NULL, false },
        { "gradient bucket bytes", (int64_t)d->bucket_bytes, NULL, false },
    };
    return dist_agree(d, facts, (int)(sizeof facts / sizeof *facts));
}

kiln_status nn_dist_begin(nn_dist_fit *df, kiln_model *m, kiln_data **train, int *batch, const kiln_fit_opts **o) {
    memset(df, 0, sizeof *df);
    df->world = 1;
    df->split = 1;
    if ((*o)->devices && *(*o)->devices) return begin_mirrored(df, batch, o);
    kiln_dist *d = (*o)->dist;
    if (!d || d->size <= 1) return KILN_OK;
    df->d = d;
    df->rank = d->rank;
    df->world = d->size;
    kiln_status st = agree(d, m, *train, *batch, *o);
    if (st) return st;
    if (*batch % d->size)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: the batch size %d is the global batch, split over %d processes: "
                              "make it a multiple of %d (e.g. %d)", *batch, d->size, d->size, (*batch / d->size + 1) * d->size);
    if (!(df->shard = kiln_data_shard_borrowed(*train, d->rank, d->size))) return nn_data_status();
    *train = df->shard;
    *batch /= d->size;
    df->opts = **o;
    if (d->rank > 0) {      /* progress and files: rank 0's; every rank keeps the rest */
        df->opts.verbose = 0;
        if ((*o)->n_callbacks > 0 && !(df->cbs = kiln_calloc((size_t)(*o)->n_callbacks, sizeof *df->cbs)))
            return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory");
        int n = 0;
        for (int i = 0; i < (*o)->n_callbacks; i++) {
            kiln_callback_kind k = (*o)->callbacks[i].kind;
            if (k != KILN_CB_MODEL_CHECKPOINT && k != KILN_CB_CSV_LOGGER && k != KILN_CB_TENSORBOARD) df->cbs[n++] = (*o)->callbacks[i];
        }
        df->opts.callbacks = df->cbs;
        df->opts.n_callbacks = n;
    }
    *o = &df->opts;
    return KILN_OK;
}

/* Rank 0's variables (weights, optimizer state; not the resident data set, the same file on
 * every rank) and session step on every rank, then the gradient hook. */
static kiln_status mirrored_session(nn_dist_fit *df, kiln_model *m) {
    kiln_status st = kiln_replicas_new(m->s, df->gpus, df->split, &df->rep);
    if (st == KILN_OK && df->opts.bucket_bytes) kiln_replicas_set_bucket_bytes(df->rep, df->opts.bucket_bytes);
    if (st == KILN_OK) st = kiln_replicas_sync_variables(df->rep);
    nn_forward *f = &m->train;
    for (int k = 1; k < df->split && st == KILN_OK; k++)
        if (!(df->rep_outs[2 * k] = kiln_tensor_new(f->loss_t->dtype, f->loss_t->shape)) ||
            !(df->rep_outs[2 * k + 1] = kiln_tensor_new(f->out_t->dtype, f->out_t->shape)))
            st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory");
    for (int k = 1; k < df->split && st == KILN_OK && f->finite; k++)
        if (!(df->rep_finite[k] = kiln_tensor_new(KILN_F32, KILN_SCALAR))) st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory");
    df->lr_synced = m->lr_current;
    if (st == KILN_OK && (m->copts.log_device_placement || getenv("KILN_LOG_DEVICE_PLACEMENT")))
        for (int k = 0; k < df->split; k++) fprintf(stderr, "kiln: replica %d of %d: /device:GPU:%d\n", k, df->split, df->gpus[k]);
    return st;
}

kiln_status nn_mirror_step(nn_dist_fit *df, kiln_model *m, const kiln_tensor *x, const kiln_tensor *y, double *loss,
                           double *correct, double *topk) {
    nn_forward *f = &m->train;
    int n = df->split;
    int64_t b = f->batch;
    kiln_status st = KILN_OK;
    if (m->lr_current != df->lr_synced) {       /* nn_set_lr changed replica 0's */
        for (int k = 1; k < n && st == KILN_OK; k++) st = kiln_session_assign_variable(kiln_replicas_session(df->rep, k), m->lr_var, m->lr_t);
        if (st) return st;
        df->lr_synced = m->lr_current;
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
        outs[nf * k] = k ? df->rep_outs[2 * k] : f->loss_t;
        outs[nf * k + 1] = k ? df->rep_outs[2 * k + 1] : f->out_t;
        if (nf == 3) outs[nf * k + 2] = k ? df->rep_finite[k] : f->finite_t;
    }
    kiln_node *fetch[3] = { f->loss, f->out, f->finite };
    if ((st = kiln_replicas_run(df->rep, feeds, 2, fetch, outs, nf, &f->step, 1))) return st;
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

kiln_status nn_dist_session(nn_dist_fit *df, kiln_model *m) {
    if (df->split > 1) return mirrored_session(df, m);
    if (!df->d) return KILN_OK;
    kiln_status st = KILN_OK;
    int n = kiln_graph_node_count(m->g);
    for (int i = 0; i < n && st == KILN_OK; i++) {
        kiln_node *v = kiln_graph_node(m->g, i);
        if (v->op != KILN_OP_VARIABLE || !strncmp(kiln_node_name(v), "_data/", 6)) continue;
        kiln_tensor *t = kiln_tensor_new(kiln_node_dtype(v), kiln_node_shape(v));
        if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory broadcasting '%s'", kiln_node_name(v));
        st = kiln_session_read_variable(m->s, v, t);
        if (st == KILN_OK) st = kiln_dist_broadcast(df->d, t->data, kiln_tensor_nbytes(t), 0);
        if (st == KILN_OK && df->rank > 0) st = kiln_session_assign_variable(m->s, v, t);
        kiln_tensor_free(t);
    }
    uint64_t step = kiln_session_step(m->s);
    if (st == KILN_OK) st = kiln_dist_broadcast(df->d, &step, sizeof step, 0);
    if (st == KILN_OK) kiln_session_set_step(m->s, step);
    size_t bucket = df->opts.bucket_bytes ? df->opts.bucket_bytes : df->d->bucket_bytes;
    if (st == KILN_OK) st = kiln_session_set_grad_reduce(m->s, kiln_dist_grad_mean, df->d, bucket);
    static const kiln_grad_reduce_async overlapped = { kiln_dist_grad_mean_start, kiln_dist_grad_mean_progress, kiln_dist_grad_mean_finish };
    if (st == KILN_OK && kiln_grad_overlap_enabled()) st = kiln_session_set_grad_reduce_async(m->s, &overlapped, df->d);
    if (st == KILN_OK && m->copts.sync_batchnorm) st = kiln_session_set_cross_replica_sum(m->s, kiln_dist_cross_replica_sum, df->d);
    return st;
}

kiln_status nn_dist_step(nn_dist_fit *df, double *loss, double *correct, double *topk) {
    if (!df->d) return KILN_OK;
    double v[3] = { *loss, *correct, *topk };
    kiln_status st = kiln_dist_allreduce_sum_f64(df->d, v, 3);
    *loss = v[0] / df->world;     /* every rank's loss is the mean over the same number of rows */
    *correct = v[1];
    *topk = v[2];
    df->d->stats.steps++;
    return st;
}

void nn_dist_end(nn_dist_fit *df, kiln_model *m) {
    kiln_replicas_free(df->rep);
    df->rep = NULL;
    for (int k = 0; k < 32; k++) { kiln_tensor_free(df->rep_outs[k]); df->rep_outs[k] = NULL; }
    for (int k = 0; k < 16; k++) { kiln_tensor_free(df->rep_finite[k]); df->rep_finite[k] = NULL; }
    if (!df->d) return;
    if (m->s) kiln_session_set_grad_reduce(m->s, NULL, NULL, 0);
    kiln_data_free(df->shard);     /* borrows the caller's pipeline: frees only itself */
    kiln_free(df->cbs);
    df->d = NULL;
}
