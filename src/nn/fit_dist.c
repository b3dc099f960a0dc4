/* kiln_fit's data parallelism across processes (include/kiln/dist.h): the training loop in
 * fit_data.c stays one loop; these calls shard its pipeline (each rank its B / N rows of every
 * global batch), start every rank from rank 0's variables, hook the gradient all-reduce into the
 * session (src/runtime/grad_reduce.c), reduce each step's loss and metrics, and keep the
 * file-writing callbacks and the progress bar on rank 0. fit_step.c calls these around any kind
 * of step; they call nothing above them. */
#include <string.h>
#include "nn/nn_fit.h"
#include "dist/dist_internal.h"
#include "runtime/grad_reduce.h"
#include "data/pipeline_internal.h"
#include "graph/graph_internal.h"

/* Ranks that differ in their data set's size, batch, epochs or model would wait for each other
 * in an all-reduce forever (or train apart): every rank checks they agree, once, before the first
 * step; a difference is an error on every rank naming it (kiln_dist_agree). */
static kiln_status agree(kiln_dist *d, kiln_model *m, const kiln_data *train, int batch, const kiln_fit_opts *o) {
    const kiln_data *b = train;
    while (b && b->kind != KILN_DN_BATCH) b = b->input;
    int64_t steps = kiln_data_cardinality(train);
    if (o->steps_per_epoch > 0 && o->steps_per_epoch < steps) steps = o->steps_per_epoch;
    const kiln_dist_fact facts[] = {
        { "training examples", b && b->input ? b->input->card : -1, NULL, false },
        { "global batch size", batch, NULL, false },
        { "steps per epoch", steps, NULL, false },
        { "epochs", o->epochs > 0 ? o->epochs : 1, NULL, false },
        { "initial epoch", o->initial_epoch, NULL, false },
        { "accumulation steps", o->accumulate_steps > 1 ? o->accumulate_steps : 1, NULL, false },
        { "trainable parameters", kiln_model_param_count(m, true), NULL, false },
        { "gradient bucket bytes", (int64_t)d->bucket_bytes, NULL, false },
    };
    return kiln_dist_agree(d, facts, (int)(sizeof facts / sizeof *facts));
}

kiln_status nn_dist_begin(nn_dist_fit *df, kiln_model *m, kiln_data **train, int *batch, kiln_fit_opts *o) {
    memset(df, 0, sizeof *df);
    df->world = 1;
    kiln_dist *d = o->dist;
    if (!d || d->size <= 1) return KILN_OK;
    df->d = d;
    df->rank = d->rank;
    df->world = d->size;
    kiln_status st = agree(d, m, *train, *batch, o);
    if (st) return st;
    if (*batch % d->size)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: the batch size %d is the global batch, split over %d processes: "
                              "make it a multiple of %d (e.g. %d)", *batch, d->size, d->size, (*batch / d->size + 1) * d->size);
    if (!(df->shard = kiln_data_shard_borrowed(*train, d->rank, d->size))) return nn_data_status();
    *train = df->shard;
    *batch /= d->size;
    if (d->rank > 0) {      /* progress and files: rank 0's; every rank keeps the rest */
        o->verbose = KILN_VERBOSE_SILENT;
        if (o->n_callbacks > 0 && !(df->cbs = kiln_calloc((size_t)o->n_callbacks, sizeof *df->cbs)))
            return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory");
        int n = 0;
        for (int i = 0; i < o->n_callbacks; i++) {
            kiln_callback_kind k = o->callbacks[i].kind;
            if (k != KILN_CB_MODEL_CHECKPOINT && k != KILN_CB_CSV_LOGGER && k != KILN_CB_TENSORBOARD) df->cbs[n++] = o->callbacks[i];
        }
        o->callbacks = df->cbs;
        o->n_callbacks = n;
    }
    return KILN_OK;
}

/* Rank 0's variables (weights, optimizer state; not the resident data set, the same file on
 * every rank) and session step on every rank, then the gradient hook. */
kiln_status nn_dist_session(nn_dist_fit *df, kiln_model *m, const kiln_fit_opts *o) {
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
    size_t bucket = o->bucket_bytes ? o->bucket_bytes : df->d->bucket_bytes;
    kiln_collectives mpi = kiln_dist_collectives(df->d);
    if (st == KILN_OK) st = kiln_session_set_collectives(m->s, &mpi, bucket, kiln_grad_overlap_enabled(), m->copts.sync_batchnorm);
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
    if (!df->d) return;
    if (m->s) kiln_session_set_collectives(m->s, NULL, 0, false, false);
    kiln_data_free(df->shard);     /* borrows the caller's pipeline: frees only itself */
    kiln_free(df->cbs);
    df->d = NULL;
}
