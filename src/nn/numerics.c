/* Numbers that go wrong in training. A non-finite loss stops kiln_fit with an error naming the
 * epoch and step and, checked after the fact (the normal step pays nothing), the first layer in
 * forward order whose variables are non-finite: the update of that step (or an earlier one) wrote
 * them from non-finite gradients. With debug_numerics (TF's enable_check_numerics) every op's
 * output is checked as the step runs (kiln_session_set_check_numerics): the first NaN/Inf stops the
 * step before its update, and the error names that op and its layer (its place in the backward
 * pass for a gradient op). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_fit.h"

/* "layer dense_1 (Dense)", "the backward pass", "the loss" for a node name */
static void where_of(const kiln_model *m, const char *node, char *buf, size_t n) {
    const char *slash = strchr(node, '/');
    size_t len = slash ? (size_t)(slash - node) : strlen(node);
    for (int i = 0; i < m->n_layers; i++)
        if (strlen(m->layers[i]->name) == len && !strncmp(m->layers[i]->name, node, len)) {
            snprintf(buf, n, "layer %s (%s)", m->layers[i]->name, kiln_layer_type(m->layers[i]));
            return;
        }
    if (!strncmp(node, "gradients/", 10)) snprintf(buf, n, "the backward pass (the gradients)");
    else if (!strncmp(node, "loss/", 5)) snprintf(buf, n, "the loss");
    else snprintf(buf, n, "op %.*s", (int)len, node);
}

static bool finite_var(kiln_model *m, kiln_node *v) {
    kiln_tensor *t = kiln_tensor_new(kiln_node_dtype(v), kiln_node_shape(v));
    bool ok = true;
    if (t && kiln_session_read_variable(m->s, v, t) == KILN_OK)
        for (int64_t i = 0; i < kiln_shape_numel(t->shape) && ok; i++) ok = isfinite(kiln_tensor_get(t, i));
    kiln_tensor_free(t);
    return ok;
}

kiln_status nn_numerics_loss(kiln_model *m, int epoch, int64_t step, double lr, double loss) {
    char diag[512] = "";
    for (int i = 0; i < m->n_layers && !diag[0]; i++) {
        kiln_layer *l = m->layers[i];
        for (int j = 0; j < l->n_vars && !diag[0]; j++)
            if (l->vars[j].node && !finite_var(m, l->vars[j].node))
                snprintf(diag, sizeof diag, "; the first layer (forward order) whose weights are now non-finite is %s (%s), written by the "
                         "update from non-finite gradients", l->name, kiln_node_name(l->vars[j].node));
    }
    return kiln_set_error(KILN_NUMERIC_ERROR, "model '%s': the loss became %s at epoch %d, step %lld (learning rate %g): training diverged%s. "
                          "Try a lower learning rate (e.g. --lr %g); --debug-numerics (kiln_fit_opts.debug_numerics) checks every op and stops "
                          "at the first NaN/Inf, before the update, naming its layer", m->name, isnan(loss) ? "NaN" : "Inf", epoch,
                          (long long)step, lr, diag, lr / 10);
}

kiln_status nn_numerics_step(kiln_model *m, int epoch, int64_t step) {
    char msg[1024], where[160], node[256];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    size_t k = strcspn(msg, " ");
    snprintf(node, sizeof node, "%.*s", (int)(k < sizeof node ? k : sizeof node - 1), msg);
    where_of(m, node, where, sizeof where);
    return kiln_set_error(KILN_NUMERIC_ERROR, "model '%s': a value became non-finite at epoch %d, step %lld, first in %s: %s; the step's "
                          "update was not applied", m->name, epoch, (long long)step, where, msg);
}
