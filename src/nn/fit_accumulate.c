/* Gradient accumulation, the loop side: one training step of B examples as N runs of the
 * micro-batch step (accumulate.c builds it). The batch's feeds are sliced into N views (no copy,
 * no allocation); the loss is the mean of the micro-batch losses (each a mean over B/N examples:
 * the mean over B), the metrics are summed over the whole batch. */
#include <math.h>
#include <string.h>
#include "nn/nn_fit.h"

/* Micro-batch i of a [B, ...] tensor: a view of rows i*b .. (i+1)*b - 1. */
kiln_tensor nn_accum_slice(const kiln_tensor *t, int64_t b, int i) {
    kiln_tensor v = *t;
    size_t row = kiln_tensor_nbytes(t) / (size_t)t->shape.dim[0];
    v.shape.dim[0] = b;
    v.data = (char *)t->data + (size_t)i * (size_t)b * row;
    v.owns_data = false;
    return v;
}

kiln_status nn_accum_check(kiln_model *m, int batch, int accumulate_steps, const char *who) {
    if (accumulate_steps < 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: accumulate_steps %d is negative (1 or 0: no accumulation)", who, accumulate_steps);
    int n = accumulate_steps > 1 ? accumulate_steps : 1;
    if (batch % n)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: the batch size %d is not divisible by accumulate_steps %d: each step runs %d micro-batches "
                              "of equal size; use a batch size that is a multiple of %d (e.g. %d)", who, batch, n, n, n, (batch / n + 1) * n);
    m->accumulate = n;
    return KILN_OK;
}

/* The accumulators back to zero from the host: after a skipped update they may hold NaN/Inf,
 * which the graph's reset (acc -= acc) keeps. Only on that rare path, so it may allocate. */
kiln_status nn_accum_zero(kiln_model *m) {
    kiln_status st = KILN_OK;
    for (int id = 0; id < kiln_graph_node_count(m->g) && !st; id++) {
        kiln_node *n = kiln_graph_node(m->g, id);
        if (!kiln_node_is_variable(n) || strncmp(kiln_node_name(n), NN_ACCUM_PREFIX, sizeof NN_ACCUM_PREFIX - 1)) continue;
        kiln_tensor *z = kiln_tensor_new(kiln_node_dtype(n), kiln_node_shape(n));    /* zeroed */
        st = z ? kiln_session_assign_variable(m->s, n, z) : kiln_set_error(KILN_OUT_OF_MEMORY, "resetting the accumulators: out of host memory");
        kiln_tensor_free(z);
    }
    return st;
}

kiln_status nn_accum_run(kiln_model *m, nn_forward *f, const kiln_feed *feeds, int n_feeds, const kiln_tensor *y,
                         const kiln_feed *next, int n_next, double *loss, double *correct, double *topk) {
    int N = f->accumulate;
    int64_t b = f->batch;
    kiln_tensor cur[NN_ACCUM_FEEDS], ahead[NN_ACCUM_FEEDS];
    kiln_feed fc[NN_ACCUM_FEEDS], fn[NN_ACCUM_FEEDS];
    kiln_node *fetch[3] = { f->loss, f->out, f->finite };
    kiln_tensor *outs[3] = { f->loss_t, f->out_t, f->finite_t };
    kiln_node *last[2] = { f->step, f->accum_reset };
    if (n_feeds > NN_ACCUM_FEEDS || n_next > NN_ACCUM_FEEDS) return kiln_set_error(KILN_INTERNAL, "gradient accumulation: %d feeds", n_feeds);
    *loss = *correct = *topk = 0;
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < n_feeds; k++) {
            cur[k] = nn_accum_slice(feeds[k].value, b, i);
            fc[k] = (kiln_feed){ feeds[k].node, &cur[k] };
        }
        /* the next run's feeds, copied ahead to a device: this batch's next slice, or the next batch's first */
        int nn = i + 1 < N ? n_feeds : n_next;
        for (int k = 0; k < nn; k++) {
            const kiln_feed *src = i + 1 < N ? &feeds[k] : &next[k];
            ahead[k] = nn_accum_slice(src->value, b, i + 1 < N ? i + 1 : 0);
            fn[k] = (kiln_feed){ src->node, &ahead[k] };
        }
        bool final = i == N - 1;
        /* the update's run fetches the guard's flag too (grad_guard.c) */
        int n_fetch = final && f->finite ? 3 : 2;
        kiln_status st = kiln_session_run_ahead(m->s, fc, n_feeds, fetch, outs, n_fetch, final ? last : &f->accum_step, final ? 2 : 1, fn, nn);
        if (st) return st;
        double li = kiln_tensor_get(f->loss_t, 0);
        if (!isfinite(li) && !f->loss_scale && !final) {
            /* a non-finite micro-batch loss outside loss scaling: no update for this batch (the
             * caller stops training); the accumulators start from zero for the re-run */
            *loss = li;
            if (f->finite_t) kiln_tensor_set(f->finite_t, 0, 0);
            return nn_accum_zero(m);
        }
        /* a skipped update (non-finite gradients): the accumulators may hold NaN/Inf */
        if (final && f->finite && kiln_tensor_get(f->finite_t, 0) == 0 && (st = nn_accum_zero(m))) return st;
        kiln_tensor yv = nn_accum_slice(y, b, i);
        double c = 0, k = 0;
        nn_batch_metrics(m, f->out_t, &yv, b, &c, &k);
        *loss += li / N;
        *correct += c;
        *topk += k;
    }
    return KILN_OK;
}
