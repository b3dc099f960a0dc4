/* A model from Keras model JSON: what Keras 3's and tf.keras 2's model.to_json() write, and the
 * architecture Kiln's checkpoints hold (model_config.c writes Keras 3's form; older Kiln wrote
 * tf.keras 2's). Sequential and Functional; each layer's config goes through keras_layer.c
 * (Keras keys -> Kiln options) and nn_layer_from_options; errors name the layer and the key.
 * Also the class-name list a checkpoint holds. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_model.h"
#include "nn/nn_keras.h"
#include "io/read_file.h"

typedef struct rd { char why[1024]; } rd;

static kiln_status bad(rd *r, kiln_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kiln_status bad(rd *r, kiln_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    return st;
}

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }
static const char *str_of(const cJSON *o, const char *key) { const cJSON *v = get(o, key); return cJSON_IsString(v) ? v->valuestring : NULL; }

static bool one_of(const char *s, const char *const *list) {
    for (; *list; list++) if (!strcmp(s, *list)) return true;
    return false;
}

/* ---- inputs: Keras 3 nodes {"args": [...], "kwargs": {}} with __keras_tensor__ objects, or
 * tf.keras 2 nodes [["name", node, tensor, {kwargs}], ...] ---- */
typedef struct ins {
    const char *name[NN_MAX_MERGE]; int n;
    /* a Keras 3 operation on a tensor and a number (keras.src.ops.numpy Add, Subtract, Multiply,
     * Divide / TrueDivide: x + 3.0, x * (1 / 6), as MobileNetV3 writes hard_sigmoid) */
    bool has_scalar, scalar_first;
    double scalar;
    bool causal;             /* MultiHeadAttention called with use_causal_mask=True */
} ins;

/* Call arguments Kiln cannot honour: any kwarg that is not null, but Keras 3's recorded
 * "training" flag, which Keras 3 itself replaces by the flag of each run (fit: true, predict:
 * false), as Kiln does. tf.keras 2 keeps an explicit training=... (e.g. dropout at inference). */
/* MultiHeadAttention's use_causal_mask becomes the layer's option of that name (in *causal) and
 * return_attention_scores=False is its default. */
static kiln_status check_kwargs(rd *r, const char *lname, const cJSON *kw, bool keras3, bool *causal) {
    const cJSON *e;
    cJSON_ArrayForEach(e, kw) {
        if (causal && !strcmp(e->string, "use_causal_mask") && cJSON_IsBool(e)) { *causal = cJSON_IsTrue(e); continue; }
        if (causal && !strcmp(e->string, "return_attention_scores") && cJSON_IsFalse(e)) continue;
        if (!cJSON_IsNull(e) && !(keras3 && !strcmp(e->string, "training") && cJSON_IsBool(e))) {
            char *p = cJSON_PrintUnformatted(e);
            bad(r, KILN_UNSUPPORTED, "layer '%s': it is called with %s=%.60s; Kiln calls layers on their inputs alone", lname, e->string, p ? p : "?");
            cJSON_free(p);
            return KILN_UNSUPPORTED;
        }
    }
    return KILN_OK;
}

static kiln_status add_input(rd *r, const char *lname, const cJSON *t, ins *out) {
    const cJSON *hist = NULL, *kw = NULL;
    if (cJSON_IsObject(t)) {            /* Keras 3 */
        const char *cls = str_of(t, "class_name");
        if (!cls || strcmp(cls, "__keras_tensor__")) return bad(r, KILN_UNSUPPORTED, "layer '%s': an input is %s, not a layer's output (a __keras_tensor__)", lname, cls ? cls : "an object");
        hist = get(get(t, "config"), "keras_history");
    } else if (cJSON_IsArray(t)) {      /* tf.keras 2 */
        hist = t;
        kw = cJSON_GetArrayItem(t, 3);
    } else if (cJSON_IsString(t)) {
        hist = NULL;
    } else return bad(r, KILN_INVALID_ARGUMENT, "layer '%s': an input in inbound_nodes is %s", lname, nn_json_kind(t));
    const cJSON *nm = hist ? cJSON_GetArrayItem(hist, 0) : t;
    int64_t node = 0, tensor = 0;
    if (!cJSON_IsString(nm)) return bad(r, KILN_INVALID_ARGUMENT, "layer '%s': an input in inbound_nodes has no layer name", lname);
    if (hist && ((cJSON_GetArraySize(hist) > 1 && !nn_json_int(cJSON_GetArrayItem(hist, 1), &node)) ||
                 (cJSON_GetArraySize(hist) > 2 && !nn_json_int(cJSON_GetArrayItem(hist, 2), &tensor))))
        return bad(r, KILN_INVALID_ARGUMENT, "layer '%s': input '%s': node and tensor indices must be ints", lname, nm->valuestring);
    if (node || tensor)
        return bad(r, KILN_UNSUPPORTED, "layer '%s': input '%s' is its call %lld, output %lld; Kiln supports layers called once with one output (no shared layers)",
                   lname, nm->valuestring, (long long)node, (long long)tensor);
    if (kw && !cJSON_IsObject(kw) && !cJSON_IsNull(kw)) return bad(r, KILN_INVALID_ARGUMENT, "layer '%s': input '%s': the call arguments must be an object", lname, nm->valuestring);
    if (kw && check_kwargs(r, lname, kw, false, NULL)) return KILN_UNSUPPORTED;
    if (out->n == NN_MAX_MERGE) return bad(r, KILN_UNSUPPORTED, "layer '%s': more than %d inputs", lname, NN_MAX_MERGE);
    out->name[out->n++] = nm->valuestring;
    return KILN_OK;
}

static kiln_status read_inputs(rd *r, const char *lname, const char *cls, const cJSON *nodes, bool op, ins *out) {
    out->n = 0;
    out->causal = false;
    bool mha = cls && !strcmp(cls, "MultiHeadAttention");
    if (!nodes || cJSON_IsNull(nodes)) return KILN_OK;
    if (!cJSON_IsArray(nodes)) return bad(r, KILN_INVALID_ARGUMENT, "layer '%s': inbound_nodes must be a list", lname);
    int n = cJSON_GetArraySize(nodes);
    if (n == 0) return KILN_OK;
    if (n > 1) return bad(r, KILN_UNSUPPORTED, "layer '%s' is called %d times (a shared layer); Kiln supports layers called once", lname, n);
    const cJSON *node = cJSON_GetArrayItem(nodes, 0), *t;
    if (cJSON_IsArray(node)) {
        cJSON_ArrayForEach(t, node) if (add_input(r, lname, t, out)) return KILN_INVALID_ARGUMENT;
        return KILN_OK;
    }
    const cJSON *args = get(node, "args"), *kw = get(node, "kwargs");
    if (!cJSON_IsObject(node) || !cJSON_IsArray(args)) return bad(r, KILN_INVALID_ARGUMENT, "layer '%s': an inbound node must be a list of inputs or {\"args\": [...], \"kwargs\": {...}}", lname);
    if (kw && check_kwargs(r, lname, kw, true, mha ? &out->causal : NULL)) return KILN_UNSUPPORTED;
    if (op && cJSON_GetArraySize(args) == 2) {          /* an operation's operands: tensors or a number */
        cJSON_ArrayForEach(t, args) {
            if (!cJSON_IsNumber(t)) { if (add_input(r, lname, t, out)) return KILN_INVALID_ARGUMENT; continue; }
            if (out->has_scalar) return bad(r, KILN_UNSUPPORTED, "layer '%s': an operation on two numbers", lname);
            out->has_scalar = true;
            out->scalar_first = out->n == 0;
            out->scalar = t->valuedouble;
        }
        return KILN_OK;
    }
    if (mha && cJSON_GetArraySize(args) > 1 && cJSON_GetArraySize(args) <= 3) {     /* MultiHeadAttention: (query, value[, key]) */
        cJSON_ArrayForEach(t, args) if (add_input(r, lname, t, out)) return KILN_INVALID_ARGUMENT;
        return KILN_OK;
    }
    if (cJSON_GetArraySize(args) != 1) return bad(r, KILN_UNSUPPORTED, "layer '%s' is called with %d positional arguments; Kiln layers take one (a tensor or a list of tensors)", lname, cJSON_GetArraySize(args));
    const cJSON *a = cJSON_GetArrayItem(args, 0);
    if (cJSON_IsArray(a)) { cJSON_ArrayForEach(t, a) if (add_input(r, lname, t, out)) return KILN_INVALID_ARGUMENT; }
    else if (add_input(r, lname, a, out)) return KILN_INVALID_ARGUMENT;
    return KILN_OK;
}

/* input_layers / output_layers: ["name", 0, 0] (Keras 3, one tensor) or [["name", 0, 0]] */
static const char *endpoint(rd *r, const cJSON *cfg, const char *key) {
    const cJSON *l = get(cfg, key);
    if (cJSON_IsArray(l) && cJSON_IsArray(cJSON_GetArrayItem(l, 0))) {
        if (cJSON_GetArraySize(l) != 1) { bad(r, KILN_UNSUPPORTED, "'%s' lists %d tensors; Kiln models have one input and one output", key, cJSON_GetArraySize(l)); return NULL; }
        l = cJSON_GetArrayItem(l, 0);
    }
    const cJSON *n = cJSON_IsArray(l) ? cJSON_GetArrayItem(l, 0) : NULL;
    if (!cJSON_IsString(n)) { bad(r, KILN_INVALID_ARGUMENT, "'%s' must name one layer ([\"name\", 0, 0])", key); return NULL; }
    return n->valuestring;
}

/* ---- layers ---- */
static const char *const entry_keys[] = { "module", "class_name", "config", "registered_name", "build_config", "name", "inbound_nodes", NULL };

/* The layer entry's class and config, checked; its name (config.name, else the entry's). */
static kiln_status entry_of(rd *r, const cJSON *l, int i, const char **cls, const cJSON **cfg, const char **name) {
    *cls = str_of(l, "class_name");
    *cfg = get(l, "config");
    if (!cJSON_IsObject(l) || !*cls) return bad(r, KILN_INVALID_ARGUMENT, "layer %d has no \"class_name\" string", i);
    if (!cJSON_IsObject(*cfg)) return bad(r, KILN_INVALID_ARGUMENT, "layer %d (%s) has no \"config\" object", i, *cls);
    *name = str_of(*cfg, "name");
    if (!*name) *name = str_of(l, "name");
    const char *lname = *name ? *name : "?", *mod = str_of(l, "module"), *reg = str_of(l, "registered_name");
    if (!nn_keras_builtin(l, *cls))
        return bad(r, KILN_UNSUPPORTED, "layer '%s': custom class '%s' (module '%s'); Kiln reads Keras' built-in layers only", lname, reg ? reg : *cls, mod ? mod : "?");
    const cJSON *e;
    cJSON_ArrayForEach(e, l)
        if (!one_of(e->string, entry_keys) && !(!strcmp(e->string, "compile_config") && !strcmp(*cls, "Sequential")))   /* a nested model's: unused */
            return bad(r, KILN_UNSUPPORTED, "layer '%s' (%s): entry key '%s' is not supported%s", lname, *cls, e->string,
                       !strcmp(e->string, "shared_object_id") ? " (a shared layer)" : "");
    return KILN_OK;
}

static kiln_status add_layer(rd *r, kiln_model *m, const char *cls, const cJSON *cfg, const char *name, kiln_layer *const *in, int n_in,
                             bool causal) {
    int rank = n_in ? in[0]->out.rank : m->output ? m->output->out.rank : -1;
    nn_keras_layer kl;
    kiln_status st = nn_keras_layer_read(cls, name, cfg, rank, &kl, r->why, sizeof r->why);
    if (st) return st;
    if (causal && kl.n_opts < NN_KERAS_MAX_OPTS) kl.opts[kl.n_opts++] = NN_BOOL("use_causal_mask", true);   /* the call's argument */
    if (kl.batch_input_shape && m->n_layers > 1)
        return bad(r, KILN_UNSUPPORTED, "layer '%s' (%s): 'batch_input_shape' on a layer that is not the first", name ? name : "?", cls);
    if (!nn_layer_from_options(m, kl.type, in, n_in, kl.opts, kl.n_opts)) return bad(r, kiln_model_status(m), "%s", kiln_model_error(m));
    return KILN_OK;
}

static kiln_status sequential(rd *r, const cJSON *cfg, const char *mname, kiln_model **out) {
    const cJSON *layers = get(cfg, "layers"), *l;
    kiln_shape shape = { 0 };
    kiln_status st = KILN_OK;
    const char *cls, *name, *in_name = NULL;
    const cJSON *lc;
    int i = 0;
    /* the input shape: an InputLayer first, else Keras 3's build_input_shape, else tf.keras 2's
     * batch_input_shape on the first layer */
    const cJSON *first = cJSON_GetArrayItem(layers, 0);
    if ((st = entry_of(r, first, 0, &cls, &lc, &name))) return st;
    bool has_input = !strcmp(cls, "InputLayer");
    if (has_input) {
        nn_keras_layer kl;
        if ((st = nn_keras_layer_read(cls, name, lc, -1, &kl, r->why, sizeof r->why))) return st;
        shape = kl.shape;
        in_name = name;
    } else {
        const cJSON *b = get(cfg, "build_input_shape");
        if (!b) b = get(lc, "batch_input_shape");
        if (!b || cJSON_IsNull(b))
            return bad(r, KILN_INVALID_ARGUMENT, "Sequential model '%s' does not say its input shape: in Keras, start it with keras.Input(shape=...) "
                       "(or call model.build()) before model.to_json()", mname ? mname : "?");
        if (!nn_keras_shape(b, true, &shape))
            return bad(r, KILN_INVALID_ARGUMENT, "Sequential model '%s': the input shape must be [null, d1, ...] with known dimensions >= 1", mname ? mname : "?");
    }
    kiln_model *m = kiln_sequential(mname, shape);
    if (!m || kiln_model_status(m)) { st = bad(r, KILN_INVALID_ARGUMENT, "%s", m ? kiln_model_error(m) : kiln_last_error()); kiln_model_free(m); return st; }
    if (in_name && nn_layer_rename(m->layers[0], in_name)) { st = bad(r, kiln_model_status(m), "%s", kiln_model_error(m)); kiln_model_free(m); return st; }
    cJSON_ArrayForEach(l, layers) {
        if (i++ == 0 && has_input) continue;
        if ((st = entry_of(r, l, i - 1, &cls, &lc, &name))) break;
        if (!strcmp(cls, "InputLayer")) { st = bad(r, KILN_INVALID_ARGUMENT, "layer '%s': an InputLayer after the first layer of a Sequential model", name ? name : "?"); break; }
        if (get(l, "inbound_nodes") && cJSON_GetArraySize(get(l, "inbound_nodes")) > 1) { st = bad(r, KILN_UNSUPPORTED, "layer '%s' is shared", name ? name : "?"); break; }
        if ((st = add_layer(r, m, cls, lc, name, NULL, 0, false))) break;
    }
    if (st) { kiln_model_free(m); return st; }
    *out = m;
    return KILN_OK;
}

/* A Functional model's layer entries, read once; built in an order where each layer's inputs
 * exist (Kahn's: a layer waits on one missing input's entry, and is tried again when that entry
 * is built), so that n layers load in O(n) whatever their order in the file. */
typedef struct fentry {
    const char *cls, *name;
    const cJSON *cfg;
    ins x;
    int next_waiter;           /* the list of entries waiting on the same entry: -1 ends it */
    bool done;
} fentry;
typedef struct fgraph { fentry *e; int *waiters; int n; kiln_name_index names; } fgraph;

static const char *fentry_name(const void *g, int i) { return ((const fgraph *)g)->e[i].name; }

/* Builds entry i when its inputs exist; else puts it on the waiting list of its first missing
 * input's entry (or leaves it: an input no entry names is reported at the end). */
static kiln_status try_build(rd *r, kiln_model *m, fgraph *g, int i, int *stack, int *sp) {
    fentry *e = &g->e[i];
    kiln_layer *in[NN_MAX_MERGE];
    for (int j = 0; j < e->x.n; j++)
        if (!(in[j] = kiln_model_find_layer(m, e->x.name[j]))) {
            int p = kiln_name_index_find(&g->names, e->x.name[j]);
            if (p >= 0) { e->next_waiter = g->waiters[p]; g->waiters[p] = i; }
            return KILN_OK;
        }
    kiln_status st;
    if (e->x.n == 0 && strcmp(e->cls, "InputLayer"))
        return bad(r, KILN_INVALID_ARGUMENT, "layer '%s' (%s) has no inbound_nodes (no inputs)", e->name ? e->name : "?", e->cls);
    if ((st = add_layer(r, m, e->cls, e->cfg, e->name, in, e->x.n, e->x.causal))) return st;
    e->done = true;
    int p = kiln_name_index_find(&g->names, m->layers[m->n_layers - 1]->name);   /* wake the layers waiting for it */
    for (int w = p >= 0 ? g->waiters[p] : -1; w >= 0; w = g->e[w].next_waiter) stack[(*sp)++] = w;
    if (p >= 0) g->waiters[p] = -1;
    return KILN_OK;
}

/* A Keras 3 operation entry (keras.src.ops.numpy) as a Kiln layer: with a number, a Rescaling
 * (x + c, c + x, x - c, c - x, x * c, x / c); on two tensors, the merge layer of that name. */
static kiln_status op_layer(rd *r, fentry *e, const char *name, cJSON *made) {
    const char *c = e->cls, *lname = name ? name : "?";
    bool add = !strcmp(c, "Add"), sub = !strcmp(c, "Subtract"), mul = !strcmp(c, "Multiply"), div = !strcmp(c, "Divide") || !strcmp(c, "TrueDivide");
    if (!add && !sub && !mul && !div)
        return bad(r, KILN_UNSUPPORTED, "layer '%s': the operation %s (keras.src.ops.numpy); Kiln reads Add, Subtract, Multiply and Divide on a tensor and a number", lname, c);
    if (!e->x.has_scalar) {
        if (div) return bad(r, KILN_UNSUPPORTED, "layer '%s': %s of two tensors; Kiln divides by numbers only", lname, c);
        return KILN_OK;            /* Kiln's Add / Subtract / Multiply layer */
    }
    double s = e->x.scalar, scale = 1, offset = 0;
    if (e->x.n != 1) return bad(r, KILN_UNSUPPORTED, "layer '%s': %s needs one tensor beside its number", lname, c);
    if (div && (e->x.scalar_first || s == 0)) return bad(r, KILN_UNSUPPORTED, "layer '%s': %s: Kiln divides a tensor by a nonzero number only", lname, c);
    if (add) offset = s;
    else if (sub) { scale = e->x.scalar_first ? -1 : 1; offset = e->x.scalar_first ? s : -s; }
    else if (mul) scale = s;
    else scale = 1 / s;
    cJSON *cfg = cJSON_CreateObject();
    if (!cfg) return bad(r, KILN_OUT_OF_MEMORY, "out of host memory");
    cJSON_AddItemToArray(made, cfg);
    if (name) cJSON_AddStringToObject(cfg, "name", name);
    cJSON_AddNumberToObject(cfg, "scale", scale);
    cJSON_AddNumberToObject(cfg, "offset", offset);
    e->cls = "Rescaling";
    e->cfg = cfg;
    return KILN_OK;
}

/* ---- a Sequential nested in a Functional model (keras.applications.convnext's stem and
 * downsampling blocks): inlined, its layers chained one to the next, the first on the nested
 * model's inputs; the nested model's name then stands for its last layer (an alias) ---- */
typedef struct alias { const char *from, *to; } alias;

static bool nested_model(const cJSON *l) {
    const char *c = str_of(l, "class_name");
    return c && (!strcmp(c, "Sequential") || !strcmp(c, "Functional") || !strcmp(c, "Model"));
}
/* Entries a layer entry makes: a nested Sequential's layers but its InputLayer; else 1. */
static int entry_count(const cJSON *l) {
    if (!nested_model(l)) return 1;
    const cJSON *ls = get(get(l, "config"), "layers"), *f = cJSON_GetArrayItem(ls, 0);
    int k = cJSON_GetArraySize(ls);
    return k - (f && str_of(f, "class_name") && !strcmp(str_of(f, "class_name"), "InputLayer")) + 1;
}
/* Fills entries e[0..] from nested model entry l (inputs x); *made: how many; *last: the name of
 * its last layer. */
static kiln_status inline_nested(rd *r, const cJSON *l, const char *sname, const ins *x, fentry *e, int room, int *made, const char **last) {
    const char *cls = str_of(l, "class_name");
    const cJSON *cfg = get(l, "config"), *ls = get(cfg, "layers"), *il, *tr = get(cfg, "trainable");
    *made = 0;
    if (strcmp(cls, "Sequential"))
        return bad(r, KILN_UNSUPPORTED, "layer '%s': a %s model nested in a Functional model; Kiln inlines nested Sequential models only", sname, cls);
    if (!cJSON_IsArray(ls) || cJSON_GetArraySize(ls) == 0) return bad(r, KILN_INVALID_ARGUMENT, "nested model '%s': config.layers must be a non-empty list", sname);
    if (tr && !cJSON_IsTrue(tr)) return bad(r, KILN_UNSUPPORTED, "nested model '%s': trainable is not true; Kiln trains every layer (no frozen models)", sname);
    const char *prev = NULL;
    int i = 0;
    cJSON_ArrayForEach(il, ls) {
        fentry *f = &e[*made];
        const char *name;
        if (nested_model(il)) return bad(r, KILN_UNSUPPORTED, "nested model '%s': a model nested in it; Kiln inlines one level", sname);
        if (entry_of(r, il, i, &f->cls, &f->cfg, &name)) return KILN_INVALID_ARGUMENT;
        if (!strcmp(f->cls, "InputLayer")) {
            if (i++ == 0) continue;
            return bad(r, KILN_INVALID_ARGUMENT, "nested model '%s': an InputLayer after its first layer", sname);
        }
        if (!name) return bad(r, KILN_INVALID_ARGUMENT, "nested model '%s': layer %d has no name", sname, i);
        if (*made == room) return bad(r, KILN_INVALID_ARGUMENT, "nested model '%s': more layers than counted", sname);
        if (prev) f->x = (ins){ .name = { prev }, .n = 1 };
        else f->x = *x;
        f->name = prev = name;
        (*made)++;
        i++;
    }
    if (!prev) return bad(r, KILN_INVALID_ARGUMENT, "nested model '%s' has no layers but its input", sname);
    *last = prev;
    return KILN_OK;
}
static void resolve_aliases(fgraph *g, const alias *a, int n_a) {
    for (int i = 0; i < g->n; i++)
        for (int j = 0; j < g->e[i].x.n; j++)
            for (int k = 0; k < n_a; k++) if (!strcmp(g->e[i].x.name[j], a[k].from)) g->e[i].x.name[j] = a[k].to;
}

static kiln_status functional(rd *r, const cJSON *cfg, const char *mname, kiln_model **out) {
    const cJSON *layers = get(cfg, "layers"), *l;
    int n = 0, sp = 0, i = 0, n_alias = 0;
    cJSON_ArrayForEach(l, layers) n += entry_count(l);
    alias *aliases = kiln_calloc((size_t)cJSON_GetArraySize(layers) + 1, sizeof *aliases);
    fgraph g = { kiln_calloc((size_t)n, sizeof *g.e), kiln_malloc((size_t)n * sizeof *g.waiters), n, { 0 } };
    int *stack = kiln_malloc((size_t)n * sizeof *stack);       /* a waiter is on one list at a time */
    kiln_name_index_init(&g.names, fentry_name, &g);
    kiln_model *m = kiln_model_new(mname);
    cJSON *made = cJSON_CreateArray();      /* the configs op_layer writes, alive until the layers exist */
    kiln_status st = KILN_OK;
    if (!made || !aliases || !g.e || !g.waiters || !stack || !m || kiln_model_status(m)) st = bad(r, KILN_OUT_OF_MEMORY, "%s", m ? kiln_model_error(m) : "out of host memory");
    if (!st) cJSON_ArrayForEach(l, layers) {
        fentry *e = &g.e[i];
        const char *name;
        const char *mod = str_of(l, "module");
        bool op = mod && !strcmp(mod, "keras.src.ops.numpy");
        int k = 1;
        if ((st = entry_of(r, l, i, &e->cls, &e->cfg, &name)) || (st = read_inputs(r, name ? name : "?", e->cls, get(l, "inbound_nodes"), op, &e->x))) break;
        if (op && (st = op_layer(r, e, name, made))) break;
        e->name = name;
        if (nested_model(l)) {
            ins x = e->x;
            if (!name) { st = bad(r, KILN_INVALID_ARGUMENT, "a nested %s model has no name", e->cls); break; }
            if ((st = inline_nested(r, l, name, &x, e, n - i, &k, &aliases[n_alias].to))) break;
            aliases[n_alias++].from = name;
        }
        for (int j = i; j < i + k; j++) {
            g.e[j].next_waiter = g.waiters[j] = -1;
            if (g.e[j].name && kiln_name_index_find(&g.names, g.e[j].name) < 0 && !kiln_name_index_add(&g.names, j)) { st = bad(r, KILN_OUT_OF_MEMORY, "out of host memory"); break; }
        }
        if (st) break;
        i += k;
    }
    if (!st) resolve_aliases(&g, aliases, n_alias);
    n = g.n = st ? n : i;
    for (i = 0; !st && i < n; i++) {
        if (!g.e[i].done) st = try_build(r, m, &g, i, stack, &sp);
        while (!st && sp > 0) st = try_build(r, m, &g, stack[--sp], stack, &sp);
    }
    for (i = 0; !st && i < n; i++) {       /* left over: name the first such layer and its missing input */
        const fentry *e = &g.e[i];
        for (int j = 0; !e->done && j < e->x.n && !st; j++)
            if (!kiln_model_find_layer(m, e->x.name[j]))
                st = bad(r, KILN_INVALID_ARGUMENT, "layer '%s': input '%s' %s", e->name ? e->name : "?", e->x.name[j],
                         kiln_name_index_find(&g.names, e->x.name[j]) >= 0 ? "is itself waiting for this layer (the layers form a cycle)" : "is not a layer of the model");
        if (!st && !e->done) st = bad(r, KILN_INVALID_ARGUMENT, "the layers cannot be ordered by their inputs");
    }
    if (!st) {
        const char *a = endpoint(r, cfg, "input_layers"), *b = a ? endpoint(r, cfg, "output_layers") : NULL;
        for (int k = 0; b && k < n_alias; k++) if (!strcmp(b, aliases[k].from)) b = aliases[k].to;
        kiln_layer *x = a ? kiln_model_find_layer(m, a) : NULL, *y = b ? kiln_model_find_layer(m, b) : NULL;
        if (!a || !b) st = KILN_INVALID_ARGUMENT;
        else if (!x || !y) st = bad(r, KILN_INVALID_ARGUMENT, "%s: no layer named '%s'", x ? "output_layers" : "input_layers", x ? b : a);
        else if (kiln_model_functional(m, &x, 1, &y, 1)) st = bad(r, kiln_model_status(m), "%s", kiln_model_error(m));
    }
    kiln_name_index_free(&g.names);
    cJSON_Delete(made);
    kiln_free(aliases);
    kiln_free(g.e);
    kiln_free(g.waiters);
    kiln_free(stack);
    if (st) { kiln_model_free(m); return st; }
    *out = m;
    return KILN_OK;
}

static const char *const top_keys[] = { "module", "class_name", "config", "registered_name", "build_config", "compile_config",
                                        "keras_version", "backend", NULL };
static const char *const config_keys[] = { "name", "trainable", "dtype", "layers", "input_layers", "output_layers",
                                           "build_input_shape", "seed", NULL };

static kiln_status build(rd *r, const cJSON *root, kiln_model **out) {
    const char *cls = str_of(root, "class_name");
    const cJSON *cfg = get(root, "config"), *e;
    if (!cJSON_IsObject(root) || !cls || (strcmp(cls, "Sequential") && strcmp(cls, "Functional") && strcmp(cls, "Model")))
        return bad(r, KILN_INVALID_ARGUMENT, "the top level must be an object with \"class_name\" \"Sequential\" or \"Functional\" (Keras' model.to_json())%s%s",
                   cls ? ", not " : "", cls ? cls : "");
    if (!cJSON_IsObject(cfg)) return bad(r, KILN_INVALID_ARGUMENT, "no \"config\" object");
    cJSON_ArrayForEach(e, root)
        if (!one_of(e->string, top_keys)) return bad(r, KILN_UNSUPPORTED, "top-level key '%s' is not supported", e->string);
    cJSON_ArrayForEach(e, cfg)
        if (!one_of(e->string, config_keys)) return bad(r, KILN_UNSUPPORTED, "model config key '%s' is not supported", e->string);
    const cJSON *name = get(cfg, "name"), *seed = get(cfg, "seed"), *layers = get(cfg, "layers"), *tr = get(cfg, "trainable"), *dt = get(cfg, "dtype");
    if (name && !cJSON_IsString(name)) return bad(r, KILN_INVALID_ARGUMENT, "config.name must be a string");
    if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) == 0) return bad(r, KILN_INVALID_ARGUMENT, "config.layers must be a non-empty list");
    if (tr && !cJSON_IsTrue(tr)) return bad(r, KILN_UNSUPPORTED, "config.trainable is not true; Kiln trains every layer (no frozen models)");
    if (!nn_keras_builtin(root, cls)) return bad(r, KILN_UNSUPPORTED, "the model is of a custom class (module / registered_name); Kiln reads Keras' Sequential and Functional");
    if (!nn_keras_float32(dt)) return bad(r, KILN_UNSUPPORTED, "config.dtype is not float32; Kiln computes in float32");
    uint64_t sd = 0;
    if (seed && !cJSON_IsNull(seed) && !nn_json_seed(seed, &sd)) return bad(r, KILN_INVALID_ARGUMENT, "config.seed must be an int >= 0");
    const char *mname = name ? name->valuestring : NULL;
    kiln_model *m = NULL;
    kiln_status st = !strcmp(cls, "Sequential") ? sequential(r, cfg, mname, &m) : functional(r, cfg, mname, &m);
    if (st) return st;
    kiln_model_set_seed(m, sd);
    *out = m;
    return KILN_OK;
}

static kiln_status from_json(const char *json, const char *what, kiln_model **out) {
    rd r = { { 0 } };
    cJSON *root = nn_json_parse(json, r.why, sizeof r.why);
    if (!root) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: not valid JSON: %s", what, r.why);
    kiln_status st = build(&r, root, out);
    cJSON_Delete(root);
    if (st) return kiln_set_error(st, "%s: %s", what, r.why);
    return KILN_OK;
}

kiln_status kiln_model_from_json(const char *json, kiln_model **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_json: NULL out");
    *out = NULL;
    return from_json(json, "model architecture", out);
}

kiln_status nn_model_from_json_named(const char *json, const char *what, kiln_model **out) {
    *out = NULL;
    return from_json(json, what, out);
}

kiln_status kiln_model_from_json_file(const char *path, kiln_model **out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_json_file: NULL out");
    *out = NULL;
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_from_json_file: no path");
    char *text = NULL;
    size_t n = 0;
    /* the shared reader: a FIFO or a device is refused at once instead of waited on */
    kiln_status st = kiln_file_read_all(path, "model file", (uint64_t)256 << 20, (uint8_t **)&text, &n);
    if (!st) {
        text[n] = 0;
        if (strlen(text) != n) st = kiln_set_error(KILN_INVALID_ARGUMENT, "model file '%s': not a JSON text (it holds a NUL byte)", path);
        else {
            char what[4200];
            snprintf(what, sizeof what, "model file '%s'", path);
            st = from_json(text, what, out);
        }
    }
    kiln_free(text);
    return st;
}

/* ---- class names ---- */
kiln_status nn_class_names_read(kiln_model *m, const char *json, char *why, size_t why_n) {
    cJSON *a = nn_json_parse(json, why, why_n);
    if (!a) return KILN_INVALID_ARGUMENT;
    kiln_status st = KILN_OK;
    int n = cJSON_GetArraySize(a), i = 0;
    const char **names = NULL;
    const cJSON *e;
    if (!cJSON_IsArray(a)) { snprintf(why, why_n, "must be a list of strings, got %s", nn_json_kind(a)); st = KILN_INVALID_ARGUMENT; }
    else if (n && !(names = kiln_calloc((size_t)n, sizeof *names))) { snprintf(why, why_n, "out of host memory"); st = KILN_OUT_OF_MEMORY; }
    if (!st) cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsString(e)) { snprintf(why, why_n, "element %d is %s, not a string", i, nn_json_kind(e)); st = KILN_INVALID_ARGUMENT; break; }
        names[i++] = e->valuestring;
    }
    if (!st && (st = kiln_model_set_class_names(m, names, n))) snprintf(why, why_n, "%s", kiln_last_error());
    kiln_free(names);
    cJSON_Delete(a);
    return st;
}
