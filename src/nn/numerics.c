/* Numbers that go wrong in training. Every training step carries a finiteness guard
 * (grad_guard.c): a step whose loss or gradients went NaN/Inf updates nothing. kiln_fit then stops
 * with an error naming the epoch and step and, found by running the same batch once more with
 * every op's output checked (kiln_session_set_check_numerics; the weights are still the ones the
 * bad step started from), the first value that went non-finite: ops run in forward order, then
 * the backward pass, so that is the first layer whose output went non-finite, else the gradient
 * op where a non-finite value was born (the ones after it only carry it). With debug_numerics
 * (TF's enable_check_numerics) every step is checked as it runs and the first NaN/Inf stops it
 * (nn_numerics_step). Nothing is written after the bad step: the last good checkpoint stays. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_fit.h"
#include "ops/op.h"

static const kiln_layer *layer_of(const kiln_model *m, const char *node) {
    const char *slash = strchr(node, '/');
    size_t len = slash ? (size_t)(slash - node) : strlen(node);
    for (int i = 0; i < m->n_layers; i++)
        if (strlen(m->layers[i]->name) == len && !strncmp(m->layers[i]->name, node, len)) return m->layers[i];
    return NULL;
}

/* The layer of a node, or of its nearest input in one (an L2 penalty's Square reads a kernel). */
static const kiln_layer *layer_near(const kiln_model *m, const kiln_node *nd, int depth) {
    const kiln_layer *l = layer_of(m, nd->name);
    for (int k = 0; !l && depth > 0 && k < nd->n_in; k++) l = layer_near(m, nd->in[k], depth - 1);
    return l;
}

/* "layer dense_1 (Dense)", "the gradient of layer dense_1 (Dense)", "the loss", ... for a node name:
 * a gradient op is placed by the forward node whose gradient autodiff made it for (grad_of). */
static void where_of(const kiln_model *m, const char *node, char *buf, size_t n) {
    const kiln_node *nd = m->g ? kiln_graph_find(m->g, node) : NULL;
    const kiln_node *fwd = nd ? nd->grad_of : NULL;
    const char *key = fwd ? fwd->name : node, *what = fwd ? "the gradient of " : "";
    const kiln_layer *l = layer_of(m, key), *near = NULL;
    if (!l && fwd && strncmp(key, "loss/", 5)) l = layer_near(m, fwd, 3);
    if (!l && nd && !fwd && strncmp(key, "loss/", 5)) near = layer_near(m, nd, 3);
    if (l) snprintf(buf, n, "%slayer %s (%s)", what, l->name, kiln_layer_type(l));
    else if (!strncmp(key, "loss/", 5)) snprintf(buf, n, "%sthe loss", what);
    else if (fwd || !strncmp(node, "gradients/", 10)) snprintf(buf, n, "the backward pass (the gradients)");
    else if (near) snprintf(buf, n, "op %s (outside the layers, reading layer %s (%s))", node, near->name, kiln_layer_type(near));
    else snprintf(buf, n, "op %s", node);
}

/* The node name that starts a message of rt_check_numerics, and where it is. */
static void where_of_msg(const kiln_model *m, const char *msg, char *buf, size_t n) {
    char node[256];
    size_t k = strcspn(msg, " ");
    snprintf(node, sizeof node, "%.*s", (int)(k < sizeof node ? k : sizeof node - 1), msg);
    where_of(m, node, buf, n);
}

kiln_status nn_numerics_step(kiln_model *m, int epoch, int64_t step) {
    char msg[1024], where[512];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    where_of_msg(m, msg, where, sizeof where);
    return kiln_set_error(KILN_NUMERIC_ERROR, "model '%s': a value became non-finite at epoch %d, step %lld, first in %s: %s; the step's "
                          "update was not applied", m->name, epoch, (long long)step, where, msg);
}

bool nn_numerics_tripped(const nn_forward *f, double loss) {
    if (f->loss_scale) return false;          /* mixed_float16: a skipped step, counted in the graph */
    return !isfinite(loss) || (f->finite && kiln_tensor_get(f->finite_t, 0) == 0);
}

static bool finite_var(kiln_model *m, kiln_node *v) {
    kiln_tensor *t = kiln_tensor_new(kiln_node_dtype(v), kiln_node_shape(v));
    bool ok = true;
    if (t && kiln_session_read_variable(m->s, v, t) == KILN_OK)
        for (int64_t i = 0; i < kiln_shape_numel(t->shape) && ok; i++) ok = isfinite(kiln_tensor_get(t, i));
    kiln_tensor_free(t);
    return ok;
}

/* The batch once more with every op checked, micro-batch by micro-batch (the accumulators zeroed):
 * found gets the first non-finite value's place and the check's message, or stays empty. */
static kiln_status rerun(kiln_model *m, nn_forward *f, const kiln_feed *feeds, int n_feeds, char *found, size_t n) {
    int N = f->accumulate > 1 ? f->accumulate : 1;
    kiln_status st = N > 1 ? nn_accum_zero(m) : KILN_OK;
    if (st) return st;
    if (n_feeds > NN_ACCUM_FEEDS) return kiln_set_error(KILN_INTERNAL, "numerics: %d feeds", n_feeds);
    /* the flag depends on the loss and every gradient, and runs no update */
    kiln_node *fetch = f->finite ? f->finite : f->loss;
    kiln_tensor *out = f->finite ? f->finite_t : f->loss_t;
    kiln_session_set_check_numerics(m->s, true);
    for (int i = 0; i < N && !found[0]; i++) {
        kiln_tensor cur[NN_ACCUM_FEEDS];
        kiln_feed fc[NN_ACCUM_FEEDS];
        for (int k = 0; k < n_feeds; k++) {
            cur[k] = nn_accum_slice(feeds[k].value, f->batch, i);
            fc[k] = (kiln_feed){ feeds[k].node, &cur[k] };
        }
        st = kiln_session_run(m->s, fc, n_feeds, &fetch, &out, 1, NULL, 0);
        if (st == KILN_NUMERIC_ERROR) {
            char msg[768], where[512];
            snprintf(msg, sizeof msg, "%s", kiln_last_error());
            where_of_msg(m, msg, where, sizeof where);
            snprintf(found, n, "%.500s: %.500s", where, msg);
            if (N > 1) {
                size_t k = strlen(found);
                snprintf(found + k, n - k, " (micro-batch %d of %d)", i + 1, N);
            }
            st = KILN_OK;
        } else if (st) break;
    }
    kiln_session_set_check_numerics(m->s, false);
    return st;
}

/* "; the batch's input holds NaN (example 40, element 2)" when it does */
static void input_note(const kiln_tensor *x, char *buf, size_t n) {
    buf[0] = 0;
    if (!x || x->dtype != KILN_F32 || x->shape.rank < 1 || x->shape.dim[0] < 1) return;
    int64_t numel = kiln_shape_numel(x->shape), row = numel / x->shape.dim[0];
    const float *p = x->data;
    for (int64_t i = 0; i < numel; i++)
        if (!isfinite(p[i])) {
            snprintf(buf, n, " The batch's input holds %s (example %lld of the batch, element %lld): check the data.",
                     isnan(p[i]) ? "NaN" : "Inf", (long long)(i / row), (long long)(i % row));
            return;
        }
}

/* " Layer bn's moving statistics went non-finite ..." for state the forward pass itself writes */
static void state_note(kiln_model *m, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < m->n_layers; i++) {
        kiln_layer *l = m->layers[i];
        for (int j = 0; j < l->n_vars; j++)
            if (l->vars[j].node && !l->vars[j].trainable && !finite_var(m, l->vars[j].node)) {
                snprintf(buf, n, " Layer %s's %s, which the forward pass itself updates, is now non-finite: reload the last checkpoint "
                         "before training on.", l->name, kiln_node_name(l->vars[j].node));
                return;
            }
    }
}

kiln_status nn_numerics_bad_step(kiln_model *m, nn_forward *f, int epoch, int64_t step, double lr, double loss,
                                 const kiln_feed *feeds, int n_feeds, const kiln_tensor *x, bool rerun_it) {
    char what[128], found[1024] = "", input[192], state[256];
    if (isfinite(loss)) snprintf(what, sizeof what, "the gradients became non-finite at epoch %d, step %lld (the loss was %g)", epoch, (long long)step, loss);
    else snprintf(what, sizeof what, "the loss became %s at epoch %d, step %lld", isnan(loss) ? "NaN" : "Inf", epoch, (long long)step);
    kiln_status st = rerun_it ? rerun(m, f, feeds, n_feeds, found, sizeof found) : f->accumulate > 1 ? nn_accum_zero(m) : KILN_OK;
    if (st) return st;
    input_note(x, input, sizeof input);
    state_note(m, state, sizeof state);
    char where[1100];
    if (found[0]) snprintf(where, sizeof where, " The first non-finite value (forward order, then the backward pass) is in %s.", found);
    else if (rerun_it)
        snprintf(where, sizeof where, " Running the batch again with every op checked found no non-finite value (it did not repeat: a "
                 "random op, or another replica's or process's batch); --debug-numerics checks every step as it runs.");
    else snprintf(where, sizeof where, " --debug-numerics (kiln_fit_opts.debug_numerics) checks every op and names the first NaN/Inf.");
    return kiln_set_error(KILN_NUMERIC_ERROR, "model '%s': %s and training stopped.%s%s The step's update was skipped: the weights and "
                          "optimizer state are those before it, and nothing was saved after it (the last checkpoint is intact).%s Try a "
                          "lower learning rate (it was %g; e.g. --lr %g), gradient clipping (--clipnorm 1; C API: the optimizer's "
                          "clip_norm), and check the input data for NaN/Inf.", m->name, what, where, input, state, lr, lr / 10);
}
