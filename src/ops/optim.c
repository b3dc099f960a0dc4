/* Optimizer update ops (one Apply node per variable, mutating it and its slots in place),
 * gradient clipping by global norm, and NoOp groups. Update formulas: Keras 3 (SEMANTICS.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "graph/graph_internal.h"
#include "ops/ref_kernels.h"

static const char *shp(kiln_shape s, char *buf) { return kiln_shape_str(s, buf, 96); }

/* ---- shape inference shared by the Apply ops: (var, grad, lr, slots...) ---- */
static kiln_status need_state(kiln_node *n, int i, const char *what, kiln_shape shape, kiln_dtype dt) {
    kiln_node *s = n->in[i];
    char b1[96], b2[96];
    if (s->op != KILN_OP_VARIABLE)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "%s '%s' must be a variable (it is updated in place), but is a %s",
                               what, s->name, kiln_op_get(s->op)->name);
    if (!kiln_shape_equal(s->shape, shape) || s->dtype != dt)
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "%s '%s' is %s %s; expected %s %s", what, s->name,
                               kiln_dtype_name(s->dtype), shp(s->shape, b1), kiln_dtype_name(dt), shp(shape, b2));
    return KILN_OK;
}

static kiln_status apply_common(kiln_node *n) {
    kiln_node *v = n->in[0], *g = n->in[1], *lr = n->in[2];
    char b1[96], b2[96];
    if (v->op != KILN_OP_VARIABLE)
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "'%s' is a %s, not a variable: only variables can be updated",
                               v->name, kiln_op_get(v->op)->name);
    if (!kiln_dtype_is_float(v->dtype))
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "variable '%s' is %s; only float variables can be trained", v->name, kiln_dtype_name(v->dtype));
    if (!kiln_shape_equal(g->shape, v->shape))
        return kiln_node_error(n, KILN_SHAPE_MISMATCH, "gradient '%s' has shape %s but variable '%s' has shape %s",
                               g->name, shp(g->shape, b1), v->name, shp(v->shape, b2));
    if (g->dtype != v->dtype)
        return kiln_node_error(n, KILN_DTYPE_MISMATCH, "gradient '%s' is %s but variable '%s' is %s",
                               g->name, kiln_dtype_name(g->dtype), v->name, kiln_dtype_name(v->dtype));
    if (kiln_shape_numel(lr->shape) != 1 || !kiln_dtype_is_float(lr->dtype))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "learning rate '%s' is %s %s; expected a float scalar",
                               lr->name, kiln_dtype_name(lr->dtype), shp(lr->shape, b1));
    if (!(n->attrs.weight_decay >= 0.0))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "weight_decay must be >= 0, got %g", n->attrs.weight_decay);
    n->dtype = KILN_F32;
    n->shape = KILN_SCALAR;
    return KILN_OK;
}

static kiln_status apply_sgd_infer(kiln_node *n) {
    kiln_status s = apply_common(n);
    if (!s && !(n->attrs.momentum >= 0.0 && n->attrs.momentum <= 1.0))
        s = kiln_node_error(n, KILN_INVALID_ARGUMENT, "momentum must be in [0, 1], got %g", n->attrs.momentum);
    if (!s && n->n_in > 3) s = need_state(n, 3, "momentum slot", n->in[0]->shape, n->in[0]->dtype);
    return s;
}

static kiln_status apply_adam_infer(kiln_node *n) {
    kiln_status s = apply_common(n);
    const kiln_attrs *a = &n->attrs;
    if (!s && !(a->beta1 >= 0.0 && a->beta1 < 1.0 && a->beta2 >= 0.0 && a->beta2 < 1.0))
        s = kiln_node_error(n, KILN_INVALID_ARGUMENT, "beta1 and beta2 must be in [0, 1), got %g and %g", a->beta1, a->beta2);
    if (!s && !(a->epsilon > 0.0))
        s = kiln_node_error(n, KILN_INVALID_ARGUMENT, "epsilon must be > 0, got %g", a->epsilon);
    if (!s) s = need_state(n, 3, "first moment slot", n->in[0]->shape, n->in[0]->dtype);
    if (!s) s = need_state(n, 4, "second moment slot", n->in[0]->shape, n->in[0]->dtype);
    if (!s) s = need_state(n, 5, "step count slot", KILN_SCALAR, KILN_F32);
    return s;
}

static kiln_status apply_rmsprop_infer(kiln_node *n) {
    kiln_status s = apply_common(n);
    const kiln_attrs *a = &n->attrs;
    if (!s && !(a->rho >= 0.0 && a->rho < 1.0))
        s = kiln_node_error(n, KILN_INVALID_ARGUMENT, "rho must be in [0, 1), got %g", a->rho);
    if (!s && !(a->momentum >= 0.0 && a->momentum <= 1.0))
        s = kiln_node_error(n, KILN_INVALID_ARGUMENT, "momentum must be in [0, 1], got %g", a->momentum);
    if (!s && !(a->epsilon > 0.0))
        s = kiln_node_error(n, KILN_INVALID_ARGUMENT, "epsilon must be > 0, got %g", a->epsilon);
    if (!s) s = need_state(n, 3, "mean square slot", n->in[0]->shape, n->in[0]->dtype);
    if (!s && n->n_in > 4) s = need_state(n, 4, "momentum slot", n->in[0]->shape, n->in[0]->dtype);
    return s;
}

static kiln_status apply_adagrad_infer(kiln_node *n) {
    kiln_status s = apply_common(n);
    if (!s && !(n->attrs.epsilon > 0.0))
        s = kiln_node_error(n, KILN_INVALID_ARGUMENT, "epsilon must be > 0, got %g", n->attrs.epsilon);
    if (!s) s = need_state(n, 3, "accumulator slot", n->in[0]->shape, n->in[0]->dtype);
    return s;
}

#define APPLY_FLAGS (KILN_OPF_NO_GRAD | KILN_OPF_MUTATES | KILN_OPF_UPDATE)
const kiln_op_def kiln_opdef_apply_sgd = { "ApplySGD", 3, 4, APPLY_FLAGS, apply_sgd_infer, NULL, kiln_ref_apply_sgd, NULL };
const kiln_op_def kiln_opdef_apply_adam = { "ApplyAdam", 6, 6, APPLY_FLAGS, apply_adam_infer, NULL, kiln_ref_apply_adam, NULL };
const kiln_op_def kiln_opdef_apply_rmsprop = { "ApplyRMSProp", 4, 5, APPLY_FLAGS, apply_rmsprop_infer, NULL, kiln_ref_apply_rmsprop, NULL };
const kiln_op_def kiln_opdef_apply_adagrad = { "ApplyAdagrad", 4, 4, APPLY_FLAGS, apply_adagrad_infer, NULL, kiln_ref_apply_adagrad, NULL };

/* ---- GlobalNorm (x0..xk) -> f32 sqrt(sum of squares of all); ClipScale; NoOp ---- */
static kiln_status global_norm_infer(kiln_node *n) {
    for (int i = 0; i < n->n_in; i++)
        if (!kiln_dtype_is_float(n->in[i]->dtype))
            return kiln_node_error(n, KILN_DTYPE_MISMATCH, "input '%s' is %s; a float dtype is needed", n->in[i]->name, kiln_dtype_name(n->in[i]->dtype));
    n->dtype = KILN_F32;
    n->shape = KILN_SCALAR;
    return KILN_OK;
}

static kiln_status clip_scale_infer(kiln_node *n) {
    kiln_node *x = n->in[0];
    char b[96];
    if (kiln_shape_numel(x->shape) != 1 || !kiln_dtype_is_float(x->dtype))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "norm '%s' is %s %s; expected a float scalar", x->name, kiln_dtype_name(x->dtype), shp(x->shape, b));
    if (!(n->attrs.clip > 0.0) || !isfinite(n->attrs.clip))
        return kiln_node_error(n, KILN_INVALID_ARGUMENT, "clip norm must be a positive finite number, got %g", n->attrs.clip);
    n->dtype = KILN_F32;
    n->shape = KILN_SCALAR;
    return KILN_OK;
}

static kiln_status group_infer(kiln_node *n) { n->dtype = KILN_F32; n->shape = KILN_SCALAR; return KILN_OK; }

const kiln_op_def kiln_opdef_global_norm = { "GlobalNorm", 1, KILN_MAX_INPUTS, KILN_OPF_NO_GRAD, global_norm_infer, NULL, kiln_ref_global_norm, NULL };
const kiln_op_def kiln_opdef_clip_scale = { "ClipScale", 1, 1, KILN_OPF_NO_GRAD, clip_scale_infer, NULL, kiln_ref_clip_scale, NULL };
const kiln_op_def kiln_opdef_group = { "NoOp", 0, KILN_MAX_INPUTS, KILN_OPF_NO_GRAD, group_infer, NULL, kiln_ref_group, NULL };

/* Reduces n nodes to one through a tree of `op` nodes of at most KILN_MAX_INPUTS inputs.
 * Valid for NoOp (runs everything) and GlobalNorm (the norm of chunk norms is the global norm). */
static kiln_node *tree(kiln_graph *g, kiln_op op, kiln_node *const *nodes, int n, const kiln_attrs *a) {
    if (n <= KILN_MAX_INPUTS) return kiln_node_new(g, op, nodes, n, a);
    int m = (n + KILN_MAX_INPUTS - 1) / KILN_MAX_INPUTS;
    kiln_node **lvl = kiln_malloc((size_t)m * sizeof *lvl);
    if (!lvl) { kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "%s: out of host memory", kiln_op_get(op)->name); return NULL; }
    kiln_node *r = NULL;
    int k = 0;
    for (int i = 0; i < n; i += KILN_MAX_INPUTS) {
        int c = n - i < KILN_MAX_INPUTS ? n - i : KILN_MAX_INPUTS;
        if (!(lvl[k++] = kiln_node_new(g, op, nodes + i, c, a))) goto out;
    }
    r = tree(g, op, lvl, m, a);
out:
    kiln_free(lvl);
    return r;
}

kiln_node *kiln_group(kiln_graph *g, kiln_node *const *nodes, int n) {
    if (!g) return NULL;
    if (n < 0 || (n > 0 && !nodes)) { kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_group: %d nodes from a %s array", n, nodes ? "non-NULL" : "NULL"); return NULL; }
    return tree(g, KILN_OP_GROUP, nodes, n, NULL);
}

kiln_status kiln_clip_by_global_norm(kiln_graph *g, kiln_node *const *grads, int n, double clip_norm,
                                     kiln_node **clipped) {
    if (!g) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_clip_by_global_norm: NULL graph");
    if (!clipped || !grads || n <= 0)
        return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_clip_by_global_norm: need n > 0 gradients and an output array (n = %d)", n);
    if (!(clip_norm > 0.0) || !isfinite(clip_norm))
        return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_clip_by_global_norm: clip_norm must be a positive finite number, got %g", clip_norm);
    for (int i = 0; i < n; i++)
        if (!grads[i])
            return kiln_set_error(g->status ? g->status : KILN_INVALID_ARGUMENT,
                                  "kiln_clip_by_global_norm: grads[%d] is NULL (an earlier build step failed: %s)", i, g->error);
    kiln_attrs a = { 0 };
    a.clip = clip_norm;
    kiln_node *scale = kiln_node_new(g, KILN_OP_CLIP_SCALE, (kiln_node *[]){ tree(g, KILN_OP_GLOBAL_NORM, grads, n, NULL) }, 1, &a);
    for (int i = 0; i < n && scale; i++) {
        kiln_node *s = grads[i]->dtype == KILN_F32 ? scale : kiln_cast(g, scale, grads[i]->dtype);
        clipped[i] = kiln_mul(g, grads[i], s);
        if (!clipped[i]) break;
    }
    kiln_status st = kiln_graph_status(g);
    if (st || !scale || !clipped[n - 1]) {
        for (int i = 0; i < n; i++) clipped[i] = NULL;
        return st ? st : KILN_INTERNAL;
    }
    return KILN_OK;
}

/* ---- builders ---- */
/* Slot "<var>/<slot>": named after the variable whatever scope we are in, non-trainable, and
 * placed with its variable (the update reads both). */
static kiln_node *make_slot(kiln_graph *g, kiln_node *var, const char *slot, kiln_dtype dt, kiln_shape shape, kiln_init init) {
    char name[600];
    snprintf(name, sizeof name, "%s/%s", var->name, slot);
    int saved = g->n_scopes;
    g->n_scopes = 0;
    kiln_node *s = kiln_variable_trainable(g, name, dt, shape, init, false);
    g->n_scopes = saved;
    if (s) memcpy(s->device, var->device, sizeof s->device);
    return s;
}

static kiln_node *slot_like(kiln_graph *g, kiln_node *var, const char *slot, kiln_init init) {
    return make_slot(g, var, slot, var->dtype, var->shape, init);
}

typedef struct apply_ctx {
    const char *who;           /* builder name for messages */
    kiln_node *lr;
} apply_ctx;

/* Common argument checks; resolves the learning-rate node. */
static kiln_status begin(kiln_graph *g, apply_ctx *c, const char *who, kiln_node *const *vars, kiln_node *const *grads,
                         int n, const void *opts, kiln_node *lr_node, double lr, double default_lr) {
    c->who = who;
    c->lr = NULL;
    if (!opts) return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s: NULL options (pass &(kiln_..._opts){ .lr = ... })", who);
    if (n < 0 || (n > 0 && (!vars || !grads))) return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s: bad variable list (n = %d)", who, n);
    for (int i = 0; i < n; i++) {
        if (!vars[i] || !grads[i])
            return kiln_set_error(g->status ? g->status : KILN_INVALID_ARGUMENT, "%s: %s[%d] is NULL (an earlier build step failed: %s)",
                                  who, vars[i] ? "grads" : "vars", i, g->error);
        if (!kiln_node_is_variable(vars[i]))
            return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s: vars[%d] '%s' is a %s, not a variable", who, i, vars[i]->name, kiln_node_op_name(vars[i]));
    }
    if (lr_node) {
        c->lr = lr_node;      /* checked (float scalar) by each Apply node's inference */
    } else {
        if (!(lr >= 0.0) || !isfinite(lr)) return kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "%s: learning rate must be finite and >= 0, got %g", who, lr);
        c->lr = kiln_scalar(g, KILN_F32, lr > 0.0 ? lr : default_lr);
        if (!c->lr) return kiln_graph_status(g);
    }
    return KILN_OK;
}

/* Groups the n apply nodes; frees the array. */
static kiln_node *finish(kiln_graph *g, kiln_node **applies, int n, bool ok) {
    kiln_node *r = ok ? kiln_group(g, applies, n) : NULL;
    kiln_free(applies);
    return r;
}

static kiln_node **alloc_nodes(kiln_graph *g, int n, const char *who) {
    kiln_node **a = kiln_calloc((size_t)(n > 0 ? n : 1), sizeof *a);
    if (!a) kiln_graph_fail(g, KILN_OUT_OF_MEMORY, "%s: out of host memory", who);
    return a;
}

static double or_default(double v, double d) { return v != 0.0 ? v : d; }

kiln_node *kiln_apply_sgd(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_sgd_opts *o) {
    apply_ctx c;
    if (!g || begin(g, &c, "kiln_apply_sgd", vars, grads, n, o, o ? o->lr_node : NULL, o ? o->lr : 0, 0.01)) return NULL;
    kiln_node **ap = alloc_nodes(g, n, c.who);
    if (!ap) return NULL;
    kiln_attrs a = { 0 };
    a.momentum = o->momentum;
    a.nesterov = o->nesterov;
    a.weight_decay = o->weight_decay;
    a.n_vars = 1;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        kiln_node *in[4] = { vars[i], grads[i], c.lr, NULL };
        int k = 3;
        if (o->momentum != 0.0 && !(in[k++] = slot_like(g, vars[i], "momentum", kiln_init_zeros()))) { ok = false; break; }
        ok = (ap[i] = kiln_node_new(g, KILN_OP_APPLY_SGD, in, k, &a)) != NULL;
    }
    return finish(g, ap, n, ok);
}

static kiln_node *adam(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_adam_opts *o,
                       const char *who, double default_wd) {
    apply_ctx c;
    if (!g || begin(g, &c, who, vars, grads, n, o, o ? o->lr_node : NULL, o ? o->lr : 0, 0.001)) return NULL;
    kiln_node **ap = alloc_nodes(g, n, who);
    if (!ap) return NULL;
    kiln_attrs a = { 0 };
    a.beta1 = or_default(o->beta1, 0.9);
    a.beta2 = or_default(o->beta2, 0.999);
    a.epsilon = or_default(o->epsilon, 1e-7);
    a.weight_decay = or_default(o->weight_decay, default_wd);
    a.n_vars = 1;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        kiln_node *in[6] = { vars[i], grads[i], c.lr,
                             slot_like(g, vars[i], "m", kiln_init_zeros()),
                             slot_like(g, vars[i], "v", kiln_init_zeros()),
                             make_slot(g, vars[i], "t", KILN_F32, KILN_SCALAR, kiln_init_zeros()) };
        ok = (ap[i] = kiln_node_new(g, KILN_OP_APPLY_ADAM, in, 6, &a)) != NULL;
    }
    return finish(g, ap, n, ok);
}

kiln_node *kiln_apply_adam(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_adam_opts *o) {
    return adam(g, vars, grads, n, o, "kiln_apply_adam", 0.0);
}

/* Keras AdamW's default weight decay is 0.004. */
kiln_node *kiln_apply_adamw(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_adam_opts *o) {
    return adam(g, vars, grads, n, o, "kiln_apply_adamw", 0.004);
}

kiln_node *kiln_apply_rmsprop(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_rmsprop_opts *o) {
    apply_ctx c;
    if (!g || begin(g, &c, "kiln_apply_rmsprop", vars, grads, n, o, o ? o->lr_node : NULL, o ? o->lr : 0, 0.001)) return NULL;
    kiln_node **ap = alloc_nodes(g, n, c.who);
    if (!ap) return NULL;
    kiln_attrs a = { 0 };
    a.rho = or_default(o->rho, 0.9);
    a.momentum = o->momentum;
    a.epsilon = or_default(o->epsilon, 1e-7);
    a.n_vars = 1;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        kiln_node *in[5] = { vars[i], grads[i], c.lr, slot_like(g, vars[i], "rms", kiln_init_zeros()), NULL };
        int k = 4;
        if (o->momentum != 0.0 && !(in[k++] = slot_like(g, vars[i], "momentum", kiln_init_zeros()))) { ok = false; break; }
        ok = (ap[i] = kiln_node_new(g, KILN_OP_APPLY_RMSPROP, in, k, &a)) != NULL;
    }
    return finish(g, ap, n, ok);
}

kiln_node *kiln_apply_adagrad(kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n, const kiln_adagrad_opts *o) {
    apply_ctx c;
    if (!g || begin(g, &c, "kiln_apply_adagrad", vars, grads, n, o, o ? o->lr_node : NULL, o ? o->lr : 0, 0.001)) return NULL;
    if (!(o->initial_accumulator >= 0.0)) {
        kiln_graph_fail(g, KILN_INVALID_ARGUMENT, "kiln_apply_adagrad: initial_accumulator must be >= 0, got %g", o->initial_accumulator);
        return NULL;
    }
    kiln_node **ap = alloc_nodes(g, n, c.who);
    if (!ap) return NULL;
    kiln_attrs a = { 0 };
    a.epsilon = or_default(o->epsilon, 1e-7);
    a.n_vars = 1;
    kiln_init acc0 = kiln_init_constant(or_default(o->initial_accumulator, 0.1));
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        kiln_node *in[4] = { vars[i], grads[i], c.lr, slot_like(g, vars[i], "accumulator", acc0) };
        ok = (ap[i] = kiln_node_new(g, KILN_OP_APPLY_ADAGRAD, in, 4, &a)) != NULL;
    }
    return finish(g, ap, n, ok);
}
