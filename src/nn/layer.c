/* What every layer type's definition uses (below the types and the table): error messages,
 * variables, parameter counts, shapes in Keras' notation. */
#include <stdio.h>
#include <string.h>
#include "nn/nn_layers.h"
#include "core/checked.h"

char *nn_batched_str(kiln_shape s, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "(None");
    for (int i = 0; i < s.rank && k < n; i++) k += (size_t)snprintf(buf + k, n - k, ", %lld", (long long)s.dim[i]);
    if (k < n) snprintf(buf + k, n - k, ")");
    return buf;
}

kiln_status nn_layer_fail(kiln_layer *l, kiln_status s, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nn_fail(l->model, s, "%s (%s): %s", l->name, l->def->type, msg);
}

kiln_status nn_layer_mul(kiln_layer *l, const char *what, int64_t a, int64_t b, int64_t *out) {
    if (kiln_mul_i64(a, b, out)) return KILN_OK;
    return nn_layer_fail(l, KILN_INVALID_ARGUMENT, "%s: %lld x %lld overflows a 64-bit count; the sizes in the model description are too large",
                         what, (long long)a, (long long)b);
}

kiln_status nn_layer_numel(kiln_layer *l, const char *what, kiln_shape s, int64_t *out) {
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++)
        if (nn_layer_mul(l, what, n, s.dim[i], &n)) return KILN_INVALID_ARGUMENT;
    *out = n;
    return KILN_OK;
}

void nn_layer_add_var(kiln_layer *l, const char *suffix, kiln_shape shape, kiln_init init, bool trainable, double l2) {
    char what[NN_NAME + 200];
    int64_t n;
    snprintf(what, sizeof what, "%s parameters", suffix);
    if (nn_layer_numel(l, what, shape, &n)) return;
    if (l->n_vars == l->cap_vars) {
        int cap = l->cap_vars ? l->cap_vars * 2 : 4;
        nn_var *nv = kiln_realloc(l->vars, (size_t)cap * sizeof *nv);
        if (!nv) { nn_layer_fail(l, KILN_OUT_OF_MEMORY, "out of host memory for %d variables", cap); return; }
        l->vars = nv;
        l->cap_vars = cap;
    }
    nn_var *v = &l->vars[l->n_vars++];
    snprintf(v->name, sizeof v->name, "%s/%s", l->name, suffix);
    v->shape = shape;
    v->init = init;
    v->trainable = trainable;
    v->l2 = l2;
    v->node = NULL;
}

void nn_layer_free(kiln_layer *l) {
    if (!l) return;
    if (l->ext && l->ext->free) l->ext->free(l->ext_data);
    kiln_free(l->vars);
    kiln_free(l->cfg);
    kiln_free(l);
}

/* Saturates: an imported graph's variables are added after its layer's checks (nn_layer_finish). */
int64_t nn_layer_params(const kiln_layer *l, bool trainable_only) {
    int64_t n = 0;
    for (int i = 0; i < l->n_vars; i++)
        if (!trainable_only || l->vars[i].trainable) n = kiln_sat_add_i64(n, kiln_shape_numel(l->vars[i].shape));
    return n;
}

/* Seeds of random initializers left at 0 come from the model seed, the layer and the variable. */
kiln_status nn_create_variables(kiln_model *m, kiln_graph *g) {
    for (int i = 0; i < m->n_layers; i++) {
        kiln_layer *l = m->layers[i];
        for (int j = 0; j < l->n_vars; j++) {
            nn_var *v = &l->vars[j];
            kiln_init init = v->init;
            if (init.seed == 0) init.seed = kiln_mix64(m->seed * 0x100000001B3ull + (uint64_t)i * 16 + (uint64_t)j + 1);
            v->node = kiln_variable_trainable(g, v->name, KILN_F32, v->shape, init, v->trainable);
            if (!v->node) return nn_fail(m, kiln_graph_status(g), "%s: cannot create variable %s: %s", l->name, v->name, kiln_graph_error(g));
            if (strcmp(kiln_node_name(v->node), v->name))
                return nn_fail(m, KILN_INTERNAL, "%s: variable %s was named %s in the graph (name clash)", l->name, v->name, kiln_node_name(v->node));
        }
    }
    return KILN_OK;
}

/* Variables stay f32 (master weights); a precision policy casts them here, where layers read them. */
/* Variables stay f32 (master weights); a precision policy casts them here, where layers read them. */
kiln_node *nn_layer_var(const nn_fwd *f, const kiln_layer *l, const char *suffix) {
    size_t n = strlen(l->name);
    for (int i = 0; i < l->n_vars; i++)
        if (!strncmp(l->vars[i].name, l->name, n) && l->vars[i].name[n] == '/' && !strcmp(l->vars[i].name + n + 1, suffix))
            return l->vars[i].node;
    return NULL;
}
