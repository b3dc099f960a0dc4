/* Layers from a type name and key/value options, as a Keras layer config describes them: the
 * base that model-file readers and ONNX import build on. Values are checked against the type's
 * options schema (nn_layer_def.opts); defaults come from the same schema, for the typed builders
 * too (nn_layer_defaults). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "nn/nn_layers.h"

static const char *const val_kind_name[] = { "nothing", "null", "an int", "a number", "a bool", "a string", "a list of ints", "an initializer", "a list of numbers" };

static bool int_in(int64_t v, int min) { return v >= min && v <= INT_MAX; }

/* Stores v in the cfg field of spec s. NULL when done, else why not (in why). */
static const char *store(const nn_opt_spec *s, const nn_val *v, nn_layer_cfg *c, char *why, size_t n) {
    void *p = (char *)c + s->off;
    const char *got = (unsigned)v->kind < sizeof val_kind_name / sizeof *val_kind_name ? val_kind_name[v->kind] : "an unknown value kind";
    switch (s->type) {
    case NN_T_INT:
        if (v->kind != NN_V_INT) break;
        if (!int_in(v->i, s->min)) { snprintf(why, n, "must be an int >= %d, got %lld", s->min, (long long)v->i); return why; }
        *(int *)p = (int)v->i;
        return NULL;
    case NN_T_INT1:
    case NN_T_INT2: {
        int64_t a, b;
        if (s->type == NN_T_INT1 && v->kind == NN_V_INTS && v->ints.n != 1) { snprintf(why, n, "expects an int or a list of 1 int, got a list of %d", v->ints.n); return why; }
        if (v->kind == NN_V_INT) a = b = v->i;
        else if (v->kind == NN_V_INTS && (v->ints.n == 1 || v->ints.n == 2)) { a = v->ints.v[0]; b = v->ints.v[v->ints.n - 1]; }
        else { snprintf(why, n, "expects an int or a list of 2 ints (height, width), got %s%s", got, v->kind == NN_V_INTS ? " of another length" : ""); return why; }
        if (!int_in(a, s->min) || !int_in(b, s->min)) { snprintf(why, n, "must be >= %d, got (%lld, %lld)", s->min, (long long)a, (long long)b); return why; }
        ((int *)p)[0] = (int)a;
        ((int *)p)[1] = (int)b;
        return NULL;
    }
    case NN_T_FLOAT: {
        if (v->kind != NN_V_FLOAT && v->kind != NN_V_INT) break;
        double d = v->kind == NN_V_INT ? (double)v->i : v->f;
        if (!isfinite(d)) { snprintf(why, n, "must be finite, got %g", d); return why; }
        *(double *)p = d;
        return NULL;
    }
    case NN_T_BOOL:
        if (v->kind != NN_V_BOOL) break;
        *(bool *)p = v->b;
        return NULL;
    case NN_T_SEED:
        if (v->kind != NN_V_INT) break;
        if (v->i < 0) { snprintf(why, n, "must be >= 0, got %lld", (long long)v->i); return why; }
        *(uint64_t *)p = (uint64_t)v->i;
        return NULL;
    case NN_T_SHAPE: {
        if (v->kind != NN_V_INTS) break;
        if (v->ints.n < 1 || v->ints.n > KILN_MAX_DIMS - 1) { snprintf(why, n, "expects 1..%d dims (batch excluded), got %d", KILN_MAX_DIMS - 1, v->ints.n); return why; }
        kiln_shape sh = { .rank = v->ints.n };
        for (int i = 0; i < sh.rank; i++) sh.dim[i] = v->ints.v[i];
        *(kiln_shape *)p = sh;
        return NULL;
    }
    case NN_T_ACTIVATION:
        if (v->kind != NN_V_STR || !v->s) break;
        for (int i = 0; i < KILN_ACTIVATION_COUNT; i++)
            if (!strcmp(v->s, nn_activation_names[i])) { *(kiln_activation *)p = (kiln_activation)i; return NULL; }
        if (nn_activation_alias(v->s) != KILN_ACTIVATION_COUNT) { *(kiln_activation *)p = nn_activation_alias(v->s); return NULL; }
        snprintf(why, n, "unknown activation '%s' (", v->s);
        for (int i = 0; i < KILN_ACTIVATION_COUNT; i++)
            snprintf(why + strlen(why), n - strlen(why), "%s%s", i ? ", " : "", nn_activation_names[i]);
        snprintf(why + strlen(why), n - strlen(why), ")");
        return why;
    case NN_T_PADDING:
        if (v->kind != NN_V_STR || !v->s) break;
        if (!strcasecmp(v->s, "valid")) *(kiln_padding *)p = KILN_VALID;
        else if (!strcasecmp(v->s, "same")) *(kiln_padding *)p = KILN_SAME;
        else { snprintf(why, n, "must be \"valid\" or \"same\", got \"%s\"", v->s); return why; }
        return NULL;
    case NN_T_ENUM:
        if (v->kind != NN_V_STR || !v->s) break;
        for (int i = 0; s->names && s->names[i]; i++)
            if (!strcasecmp(v->s, s->names[i])) { *(int *)p = i; return NULL; }
        snprintf(why, n, "must be one of");
        for (int i = 0; s->names && s->names[i]; i++) snprintf(why + strlen(why), n - strlen(why), "%s \"%s\"", i ? "," : "", s->names[i]);
        snprintf(why + strlen(why), n - strlen(why), ", got \"%s\"", v->s);
        return why;
    case NN_T_PAD4: {
        int64_t q[4];
        if (v->kind == NN_V_INT) q[0] = q[1] = q[2] = q[3] = v->i;
        else if (v->kind == NN_V_INTS && v->ints.n == 2) { q[0] = q[1] = v->ints.v[0]; q[2] = q[3] = v->ints.v[1]; }
        else if (v->kind == NN_V_INTS && v->ints.n == 4) for (int i = 0; i < 4; i++) q[i] = v->ints.v[i];
        else break;
        for (int i = 0; i < 4; i++) {
            if (!int_in(q[i], 0)) { snprintf(why, n, "must be >= 0, got %lld", (long long)q[i]); return why; }
            ((int *)p)[i] = (int)q[i];
        }
        return NULL;
    }
    case NN_T_FLOATS: {
        nn_floats *f = p;
        if (v->kind == NN_V_INT || v->kind == NN_V_FLOAT) *f = (nn_floats){ 1, { v->kind == NN_V_INT ? (double)v->i : v->f } };
        else if (v->kind == NN_V_FLOATS) *f = v->floats;
        else if (v->kind == NN_V_INTS) { f->n = v->ints.n; for (int i = 0; i < f->n; i++) f->v[i] = (double)v->ints.v[i]; }
        else break;
        for (int i = 0; i < f->n; i++) if (!isfinite(f->v[i])) { snprintf(why, n, "must be finite numbers"); return why; }
        return NULL;
    }
    case NN_T_NOISE: {
        if (v->kind != NN_V_INTS) break;
        if (v->ints.n < 1 || v->ints.n > KILN_MAX_DIMS) { snprintf(why, n, "expects 1..%d dims (the batch included), got %d", KILN_MAX_DIMS, v->ints.n); return why; }
        kiln_shape sh = { .rank = v->ints.n };
        for (int i = 0; i < sh.rank; i++) {
            if (v->ints.v[i] < 0) { snprintf(why, n, "dims must be >= 1 or None, got %lld", (long long)v->ints.v[i]); return why; }
            sh.dim[i] = v->ints.v[i];
        }
        *(kiln_shape *)p = sh;
        return NULL;
    }
    case NN_T_INIT:
        if (v->kind != NN_V_INIT) break;
        if ((unsigned)v->init.kind >= KILN_INIT_COUNT) { snprintf(why, n, "unknown initializer kind %d", (int)v->init.kind); return why; }
        *(kiln_init *)p = v->init;
        return NULL;
    }
    static const char *const want[] = { "an int", "an int or a list of 2 ints", "a number", "a bool", "an int seed",
                                        "a list of ints", "an activation name", "\"valid\" or \"same\"", "an initializer",
                                        "an int, 2 ints or ((top, bottom), (left, right))", "a number or a list of numbers",
                                        "a noise shape (ints; None as 0)" };
    snprintf(why, n, "expects %s, got %s", (unsigned)s->type < sizeof want / sizeof *want ? want[s->type] : "?", got);
    return why;
}

nn_layer_cfg nn_layer_defaults(nn_kind k) {
    nn_layer_cfg c = { 0 };
    char why[16];
    for (const nn_opt_spec *s = nn_layer_def_of(k)->opts; s->key; s++)
        if (s->dflt.kind >= NN_V_INT) store(s, &s->dflt, &c, why, sizeof why);   /* schema defaults are valid (test_layer_table) */
        else if (s->dflt.kind == NN_V_NULL && s->type == NN_T_INT2 && s->min == 0) {  /* None where 0 is a value: -1 */
            int *p = (int *)((char *)&c + s->off);
            p[0] = p[1] = -1;
        }
    return c;
}

static void list_keys(const nn_layer_def *d, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "name");
    for (const nn_opt_spec *s = d->opts; s->key && k < n; s++) k += (size_t)snprintf(buf + k, n - k, ", %s", s->key);
}

static kiln_layer *drop(kiln_layer *l) { kiln_free(l); return NULL; }

kiln_layer *nn_layer_from_options(kiln_model *m, const char *type, kiln_layer *const *in, int n_in, const nn_opt *opts, int n_opts) {
    if (!m) { kiln_set_error(KILN_INVALID_ARGUMENT, "%s: NULL model", type ? type : "layer"); return NULL; }
    if (m->status != KILN_OK) { nn_check(m); return NULL; }
    if (n_opts < 0 || (n_opts > 0 && !opts)) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: no option list (%d options)", type ? type : "layer", n_opts); return NULL; }
    const char *name = NULL;          /* first, so that every later error names the layer */
    for (int i = 0; i < n_opts; i++) {
        if (!opts[i].key || strcmp(opts[i].key, "name")) continue;
        if (opts[i].val.kind != NN_V_STR || !opts[i].val.s) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: option 'name' must be a string", type ? type : "layer"); return NULL; }
        if (name) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s '%s': option 'name' is given twice", type ? type : "layer", name); return NULL; }
        name = opts[i].val.s;
    }
    nn_kind k;
    if (!nn_layer_kind_named(type, &k)) {
        char known[1024];
        size_t p = 0;
        for (int i = 0; i < NN_KIND_COUNT && p < sizeof known; i++) p += (size_t)snprintf(known + p, sizeof known - p, "%s%s", i ? ", " : "", nn_kind_type((nn_kind)i));
        nn_fail(m, KILN_INVALID_ARGUMENT, "layer '%s': unknown type '%s'; known types: %s", name ? name : "?", type ? type : "", known);
        return NULL;
    }
    const nn_layer_def *d = nn_layer_def_of(k);
    kiln_layer *l = nn_layer_begin(m, k, name, in, n_in);
    if (!l) return NULL;
    nn_layer_cfg c = nn_layer_defaults(k);
    c.name = name;
    uint64_t given = 0;               /* schema entries with a value (bit per entry) */
    char why[512];
    for (int i = 0; i < n_opts; i++) {
        const char *key = opts[i].key;
        if (!key) { nn_layer_fail(l, KILN_INVALID_ARGUMENT, "option %d has no key", i); return drop(l); }
        if (!strcmp(key, "name")) continue;
        int j = 0;
        while (d->opts[j].key && strcmp(d->opts[j].key, key)) j++;
        if (!d->opts[j].key) {
            list_keys(d, why, sizeof why);
            nn_layer_fail(l, KILN_INVALID_ARGUMENT, "unknown option '%s'; %s takes %s", key, d->type, why);
            return drop(l);
        }
        for (int i2 = 0; i2 < i; i2++)
            if (opts[i2].key && !strcmp(opts[i2].key, key)) { nn_layer_fail(l, KILN_INVALID_ARGUMENT, "option '%s' is given twice", key); return drop(l); }
        if (opts[i].val.kind == NN_V_NULL) continue;      /* Keras None: the default */
        if (store(&d->opts[j], &opts[i].val, &c, why, sizeof why)) { nn_layer_fail(l, KILN_INVALID_ARGUMENT, "option '%s': %s", key, why); return drop(l); }
        given |= 1ull << j;
    }
    for (int j = 0; d->opts[j].key; j++)
        if (d->opts[j].dflt.kind == NN_V_NONE && !(given & (1ull << j))) {
            nn_layer_fail(l, KILN_INVALID_ARGUMENT, "missing option '%s' (required)", d->opts[j].key);
            return drop(l);
        }
    return nn_layer_finish(l, &c);
}
