/* The TensorBoard callback: Keras' layout and tag names (train/ and validation/ runs under the log
 * directory, epoch_* scalars per epoch at step = the 0-based epoch, batch_* every update_freq
 * batches), written through src/io/tfevents.c. */
#include <stdio.h>
#include "io/tfevents.h"
#include "nn/nn_fit.h"

struct nn_tb { kiln_tfevents *train, *val; };

kiln_status nn_tb_open(const char *dir, bool has_val, nn_tb **out) {
    *out = NULL;
    nn_tb *t = kiln_calloc(1, sizeof *t);
    if (!t) return kiln_set_error(KILN_OUT_OF_MEMORY, "tensorboard: out of host memory");
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/train", dir);
    kiln_status st = kiln_tfevents_open(sub, &t->train);
    if (!st && has_val) {
        snprintf(sub, sizeof sub, "%s/validation", dir);
        st = kiln_tfevents_open(sub, &t->val);
    }
    if (st) { nn_tb_close(t); return st; }
    *out = t;
    return KILN_OK;
}

/* compile's metric_list under Keras' tags: epoch_auc, batch_precision, ... */
static kiln_status metric_scalars(kiln_tfevents *w, const kiln_model *m, const char *prefix, int n, const double *v, int64_t step) {
    kiln_status st = KILN_OK;
    for (int i = 0; i < n && !st; i++) {
        char tag[96];
        snprintf(tag, sizeof tag, "%s%s", prefix, kiln_model_metric_name(m, i));
        st = kiln_tfevents_scalar(w, tag, v[i], step);
    }
    return st;
}

kiln_status nn_tb_batch(nn_tb *t, const kiln_model *m, int update_freq, const kiln_logs *l) {
    int64_t step = (int64_t)(l->epoch - 1) * l->steps + l->batch;    /* batches over all epochs, from 1 */
    if (update_freq <= 0 || step % update_freq) return KILN_OK;
    unsigned mt = m->copts.metrics;
    kiln_status st = kiln_tfevents_scalar(t->train, "batch_loss", l->loss, step);
    if (!st && (mt & KILN_METRIC_ACCURACY)) st = kiln_tfevents_scalar(t->train, "batch_accuracy", l->accuracy, step);
    if (!st && (mt & KILN_METRIC_TOP_K)) st = kiln_tfevents_scalar(t->train, "batch_top_k", l->top_k, step);
    if (!st) st = metric_scalars(t->train, m, "batch_", l->n_metrics, l->metrics, step);
    if (!st) st = kiln_tfevents_scalar(t->train, "batch_learning_rate", l->lr, step);
    return st;
}

kiln_status nn_tb_epoch(nn_tb *t, const kiln_model *m, const kiln_logs *l) {
    int64_t step = l->epoch - 1;
    unsigned mt = m->copts.metrics;
    kiln_status st = kiln_tfevents_scalar(t->train, "epoch_loss", l->loss, step);
    if (!st && (mt & KILN_METRIC_ACCURACY)) st = kiln_tfevents_scalar(t->train, "epoch_accuracy", l->accuracy, step);
    if (!st && (mt & KILN_METRIC_TOP_K)) st = kiln_tfevents_scalar(t->train, "epoch_top_k", l->top_k, step);
    if (!st) st = metric_scalars(t->train, m, "epoch_", l->n_metrics, l->metrics, step);
    if (!st) st = kiln_tfevents_scalar(t->train, "epoch_learning_rate", l->lr, step);
    if (!st) st = kiln_tfevents_flush(t->train);
    if (st || !t->val || !l->has_val) return st;
    st = kiln_tfevents_scalar(t->val, "epoch_loss", l->val_loss, step);
    if (!st && (mt & KILN_METRIC_ACCURACY)) st = kiln_tfevents_scalar(t->val, "epoch_accuracy", l->val_accuracy, step);
    if (!st && (mt & KILN_METRIC_TOP_K)) st = kiln_tfevents_scalar(t->val, "epoch_top_k", l->val_top_k, step);
    if (!st) st = metric_scalars(t->val, m, "epoch_", l->n_metrics, l->val_metrics, step);
    if (!st) st = kiln_tfevents_flush(t->val);
    return st;
}

void nn_tb_close(nn_tb *t) {
    if (!t) return;
    kiln_tfevents_close(t->train);
    kiln_tfevents_close(t->val);
    kiln_free(t);
}
