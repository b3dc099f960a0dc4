/* A model from its Keras-style JSON config (model_config.c writes it; the format is described
 * there): each layer through nn_layer_from_options, inputs by name; errors name the layer and the
 * option. Also the class-name list a checkpoint holds. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_model.h"
#include "nn/nn_json.h"

typedef struct rd { char why[900]; } rd;

static kiln_status bad(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static kiln_status bad(rd *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    return KILN_INVALID_ARGUMENT;
}

static const nn_opt_spec *spec_of(const char *type, const char *key) {
    nn_kind k;
    if (!nn_layer_kind_named(type, &k)) return NULL;
    for (const nn_opt_spec *s = nn_layer_def_of(k)->opts; s->key; s++) if (!strcmp(s->key, key)) return s;
    return NULL;
}

static double num_or(const nn_json *o, const char *key, double d) { const nn_json *v = nn_json_get(o, key); return v && v->kind == NN_J_NUM ? v->num : d; }

static kiln_status read_init(rd *r, const char *lname, const char *key, const nn_json *v, kiln_init *in) {
    const nn_json *cn = nn_json_get(v, "class_name"), *cfg = nn_json_get(v, "config"), *seed = nn_json_get(cfg, "seed");
    memset(in, 0, sizeof *in);
    int k = 0;
    while (k < KILN_INIT_COUNT && !(cn && cn->kind == NN_J_STR && !strcmp(cn->s, nn_init_class_names[k]))) k++;
    if (k == KILN_INIT_COUNT) return bad(r, "layer '%s': option '%s': unknown initializer %s%s%s", lname, key, cn && cn->kind == NN_J_STR ? "'" : "", cn && cn->kind == NN_J_STR ? cn->s : "(no class_name)", cn && cn->kind == NN_J_STR ? "'" : "");
    in->kind = (kiln_init_kind)k;
    bool ab = k == KILN_INIT_UNIFORM || k == KILN_INIT_NORMAL || k == KILN_INIT_TRUNCATED_NORMAL;
    in->a = k == KILN_INIT_CONSTANT ? num_or(cfg, "value", 0) : k == KILN_INIT_UNIFORM ? num_or(cfg, "minval", -0.05) : ab ? num_or(cfg, "mean", 0) : 0;
    in->b = k == KILN_INIT_UNIFORM ? num_or(cfg, "maxval", 0.05) : ab ? num_or(cfg, "stddev", 0.05) : 0;
    if (seed && seed->kind == NN_J_NUM && seed->is_int && seed->i >= 0) in->seed = (uint64_t)seed->i;
    else if (seed && seed->kind != NN_J_NULL) return bad(r, "layer '%s': option '%s': the initializer's seed must be an int >= 0 or null", lname, key);
    return KILN_OK;
}

/* A layer config's members as options for nn_layer_from_options (which checks them). */
static kiln_status read_opts(rd *r, const char *type, const char *lname, const nn_json *cfg, nn_opt *o, int cap, int *n) {
    *n = 0;
    for (const nn_json *e = cfg->child; e; e = e->next) {
        if (*n == cap) return bad(r, "layer '%s': more than %d options", lname, cap);
        nn_opt *x = &o[(*n)++];
        x->key = e->key;
        const nn_opt_spec *s = spec_of(type, e->key);
        switch (e->kind) {
        case NN_J_NULL: x->val.kind = NN_V_NULL; break;
        case NN_J_BOOL: x->val.kind = NN_V_BOOL; x->val.b = e->b; break;
        case NN_J_STR: x->val.kind = NN_V_STR; x->val.s = e->s; break;
        case NN_J_NUM:
            if (e->is_int) { x->val.kind = NN_V_INT; x->val.i = e->i; }
            else { x->val.kind = NN_V_FLOAT; x->val.f = e->num; }
            break;
        case NN_J_ARR:
            if (e->n > KILN_MAX_DIMS) return bad(r, "layer '%s': option '%s': a list of at most %d ints expected, got %d elements", lname, e->key, KILN_MAX_DIMS, e->n);
            x->val.kind = NN_V_INTS;
            x->val.ints.n = 0;
            for (const nn_json *a = e->child; a; a = a->next) {
                if (a->kind != NN_J_NUM || !a->is_int) return bad(r, "layer '%s': option '%s': a list of ints expected, got %s in it", lname, e->key, nn_json_kind_name(a->kind));
                x->val.ints.v[x->val.ints.n++] = a->i;
            }
            break;
        case NN_J_OBJ:
            if (s && s->type == NN_T_INIT) {
                x->val.kind = NN_V_INIT;
                if (read_init(r, lname, e->key, e, &x->val.init)) return KILN_INVALID_ARGUMENT;
            } else if (s && s->type == NN_T_FLOAT && strstr(s->key, "_regularizer")) {
                const nn_json *cn = nn_json_get(e, "class_name"), *l2 = nn_json_get(nn_json_get(e, "config"), "l2");
                if (!cn || cn->kind != NN_J_STR || strcmp(cn->s, "L2") || !l2 || l2->kind != NN_J_NUM)
                    return bad(r, "layer '%s': option '%s': only {\"class_name\": \"L2\", \"config\": {\"l2\": <number>}} is supported", lname, e->key);
                x->val.kind = NN_V_FLOAT;
                x->val.f = l2->num;
            } else if (s) {
                return bad(r, "layer '%s': option '%s' is an object, which it does not take", lname, e->key);
            } else x->val.kind = NN_V_NULL;      /* unknown key: nn_layer_from_options names it */
            break;
        }
    }
    return KILN_OK;
}

/* ["name", 0, 0, {}] or "name" */
static const char *node_name(const nn_json *e) {
    if (e && e->kind == NN_J_ARR) e = nn_json_at(e, 0);
    return e && e->kind == NN_J_STR ? e->s : NULL;
}

static kiln_status read_inputs(rd *r, kiln_model *m, const char *lname, const nn_json *in, kiln_layer **out, int *n) {
    *n = 0;
    if (!in || in->kind == NN_J_NULL) return KILN_OK;
    if (in->kind != NN_J_ARR) return bad(r, "layer '%s': inbound_nodes must be a list", lname);
    if (in->n == 0) return KILN_OK;
    const nn_json *node = nn_json_at(in, 0);
    if (in->n > 1 || !node || node->kind != NN_J_ARR) return bad(r, "layer '%s': inbound_nodes must hold one node (a list of inputs); a shared layer is not supported", lname);
    for (const nn_json *e = node->child; e; e = e->next) {
        const char *name = node_name(e);
        if (!name) return bad(r, "layer '%s': an input in inbound_nodes has no layer name", lname);
        if (*n == NN_MAX_MERGE) return bad(r, "layer '%s': more than %d inputs", lname, NN_MAX_MERGE);
        if (!(out[(*n)++] = kiln_model_find_layer(m, name))) return bad(r, "layer '%s': input '%s' is not a layer listed before it", lname, name);
    }
    return KILN_OK;
}

static kiln_layer *named_end(rd *r, kiln_model *m, const nn_json *cfg, const char *key) {
    const nn_json *l = nn_json_get(cfg, key);
    const char *name = l && l->kind == NN_J_ARR && l->n == 1 ? node_name(nn_json_at(l, 0)) : NULL;
    if (!name) { bad(r, "'%s' must list one layer ([[\"name\", 0, 0]])", key); return NULL; }
    kiln_layer *x = kiln_model_find_layer(m, name);
    if (!x) bad(r, "%s: no layer named '%s'", key, name);
    return x;
}

static kiln_status build(rd *r, const nn_json *root, kiln_model **out) {
    const nn_json *cn = nn_json_get(root, "class_name"), *cfg = nn_json_get(root, "config");
    if (!cn || cn->kind != NN_J_STR || (strcmp(cn->s, "Sequential") && strcmp(cn->s, "Functional") && strcmp(cn->s, "Model")))
        return bad(r, "the top level must be an object with \"class_name\" \"Sequential\" or \"Functional\"");
    if (!cfg || cfg->kind != NN_J_OBJ) return bad(r, "no \"config\" object");
    bool functional = strcmp(cn->s, "Sequential") != 0;
    const nn_json *name = nn_json_get(cfg, "name"), *seed = nn_json_get(cfg, "seed"), *layers = nn_json_get(cfg, "layers");
    if (name && name->kind != NN_J_STR) return bad(r, "config.name must be a string");
    if (!layers || layers->kind != NN_J_ARR || layers->n == 0) return bad(r, "config.layers must be a non-empty list");
    uint64_t sd = 0;
    if (seed && seed->kind == NN_J_NUM && seed->is_int && seed->i >= 0) sd = (uint64_t)seed->i;
    else if (seed && seed->kind == NN_J_STR && *seed->s) { char *e; sd = strtoull(seed->s, &e, 10); if (*e) return bad(r, "config.seed '%.40s' is not a whole number", seed->s); }
    else if (seed && seed->kind != NN_J_NULL) return bad(r, "config.seed must be an int >= 0");
    const char *mname = name ? name->s : NULL;
    kiln_model *m = NULL;
    kiln_status st = KILN_OK;
    int i = 0;
    for (const nn_json *l = layers->child; l && !st; l = l->next, i++) {
        const nn_json *t = nn_json_get(l, "class_name"), *c = nn_json_get(l, "config");
        if (!t || t->kind != NN_J_STR) { st = bad(r, "layer %d has no \"class_name\" string", i); break; }
        if (!c || c->kind != NN_J_OBJ) { st = bad(r, "layer %d (%s) has no \"config\" object", i, t->s); break; }
        const nn_json *ln = nn_json_get(c, "name");
        const char *lname = ln && ln->kind == NN_J_STR ? ln->s : "?";
        if (!functional && i == 0) {      /* a sequential model's input comes from kiln_sequential */
            const nn_json *sh = nn_json_get(c, "shape");
            if (strcmp(t->s, "InputLayer")) { st = bad(r, "a Sequential model's first layer must be an InputLayer, not %s", t->s); break; }
            if (!sh || sh->kind != NN_J_ARR || sh->n < 1 || sh->n > KILN_MAX_DIMS - 1) { st = bad(r, "layer '%s' (InputLayer): 'shape' must be a list of 1..%d ints", lname, KILN_MAX_DIMS - 1); break; }
            kiln_shape s = { .rank = sh->n };
            int d = 0;
            for (const nn_json *x = sh->child; x; x = x->next, d++) {
                if (x->kind != NN_J_NUM || !x->is_int || x->i < 1) { st = bad(r, "layer '%s' (InputLayer): 'shape' must hold ints >= 1", lname); break; }
                s.dim[d] = x->i;
            }
            if (st) break;
            if (!(m = kiln_sequential(mname, s))) { st = bad(r, "%s", kiln_last_error()); break; }
            continue;
        }
        if (!m && !(m = kiln_model_new(mname))) { st = bad(r, "%s", kiln_last_error()); break; }
        nn_opt opts[32];
        kiln_layer *in[NN_MAX_MERGE];
        int n_opts = 0, n_in = 0;
        if ((st = read_opts(r, t->s, lname, c, opts, 32, &n_opts))) break;
        if (functional && (st = read_inputs(r, m, lname, nn_json_get(l, "inbound_nodes"), in, &n_in))) break;
        if (!nn_layer_from_options(m, t->s, in, n_in, opts, n_opts)) st = bad(r, "%s", kiln_model_error(m));
    }
    if (!st && m) kiln_model_set_seed(m, sd);
    if (!st && m && functional) {
        kiln_layer *a = named_end(r, m, cfg, "input_layers"), *b = a ? named_end(r, m, cfg, "output_layers") : NULL;
        if (!a || !b) st = KILN_INVALID_ARGUMENT;
        else if (kiln_model_functional(m, &a, 1, &b, 1)) st = bad(r, "%s", kiln_model_error(m));
    }
    if (st) { kiln_model_free(m); return st; }
    *out = m;
    return KILN_OK;
}

kiln_status kiln_model_from_json(const char *json, kiln_model **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_json: NULL out");
    *out = NULL;
    rd r = { { 0 } };
    nn_json_doc *d = nn_json_parse(json, r.why, sizeof r.why);
    if (!d) return kiln_set_error(KILN_INVALID_ARGUMENT, "model architecture: not valid JSON: %s", r.why);
    kiln_status st = build(&r, nn_json_root(d), out);
    nn_json_free(d);
    if (st) return kiln_set_error(st, "model architecture: %s", r.why);
    return KILN_OK;
}

/* ---- class names ---- */
kiln_status nn_class_names_read(kiln_model *m, const char *json, char *why, size_t why_n) {
    nn_json_doc *d = nn_json_parse(json, why, why_n);
    if (!d) return KILN_INVALID_ARGUMENT;
    const nn_json *a = nn_json_root(d);
    kiln_status st = KILN_OK;
    const char **names = NULL;
    if (a->kind != NN_J_ARR) { snprintf(why, why_n, "must be a list of strings, got %s", nn_json_kind_name(a->kind)); st = KILN_INVALID_ARGUMENT; }
    else if (a->n && !(names = kiln_calloc((size_t)a->n, sizeof *names))) { snprintf(why, why_n, "out of host memory"); st = KILN_OUT_OF_MEMORY; }
    int i = 0;
    for (const nn_json *e = st ? NULL : a->child; e; e = e->next, i++) {
        if (e->kind != NN_J_STR) { snprintf(why, why_n, "element %d is %s, not a string", i, nn_json_kind_name(e->kind)); st = KILN_INVALID_ARGUMENT; break; }
        names[i] = e->s;
    }
    if (!st && (st = kiln_model_set_class_names(m, names, a->n))) snprintf(why, why_n, "%s", kiln_last_error());
    kiln_free(names);
    nn_json_free(d);
    return st;
}
