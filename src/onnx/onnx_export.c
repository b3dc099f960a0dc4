/* kiln_model_export_onnx: a model's inference graph as ONNX (opset 17), layer type by layer type.
 *
 * Layout: ONNX's Conv, pooling and BatchNormalization are NCHW; Kiln is NHWC. The export keeps
 * the model's NHWC input (the arrays Kiln is fed feed the ONNX model too) and inserts one
 * Transpose to NCHW where the first image op needs it; the conv kernels are converted from HWIO
 * to OIHW here, once, instead of transposing activations around every op. Each value remembers
 * whether it is NCHW; where Kiln's element order matters (Flatten, Reshape, the model output) an
 * NCHW value is transposed back to NHWC first, so the Dense weights after a Flatten keep Kiln's
 * (h, w, c) feature order and need no permuting. Runtimes fold or fuse these few Transposes. */
#include <math.h>
#include <string.h>
#include "onnx/onnx_internal.h"
#include "nn/nn_model.h"

typedef struct ev {                 /* a layer's output in the ONNX graph */
    const char *name;
    bool nchw;                      /* an image (rank 3 without batch) in NCHW order */
    const char *other;              /* the same value in the other order, once made */
    bool i64;                       /* int64 token ids (a GPT's input) */
} ev;

typedef struct ex {
    ox_arena a;
    kiln_model *m;
    const char *path;
    Onnx__NodeProto **nodes;
    int n_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    int n_inits, cap_inits;
    int counter;
    kiln_status st;
} ex;

static kiln_status ex_fail(ex *e, kiln_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kiln_status ex_fail(ex *e, kiln_status s, const char *fmt, ...) {
    if (e->st) return e->st;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    e->st = kiln_set_error(s, "ONNX export of model '%s' to %s: %s", kiln_model_name(e->m), e->path, msg);
    return e->st;
}

static bool grow(ex *e, void ***arr, int *cap, int n) {
    if (n < *cap) return true;
    int c = *cap ? *cap * 2 : 32;
    void **p = kiln_realloc(*arr, (size_t)c * sizeof *p);
    if (!p) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return false; }
    *arr = p;
    *cap = c;
    return true;
}

/* A new value name: "<base>/<op>" (unique: a counter when taken). */
static const char *vname(ex *e, const char *base, const char *op) {
    char b[400];
    snprintf(b, sizeof b, "%s/%s_%d", base, op, e->counter++);
    return ox_strdup(&e->a, b);
}

static Onnx__NodeProto *node(ex *e, const char *op, const char *const *in, int n_in, const char *out) {
    if (e->st || !grow(e, (void ***)&e->nodes, &e->cap_nodes, e->n_nodes)) return NULL;
    Onnx__NodeProto *n = ox_alloc(&e->a, sizeof *n);
    char **ins = ox_alloc(&e->a, sizeof *ins * (size_t)(n_in + 1));
    char **outs = ox_alloc(&e->a, sizeof *outs);
    if (!n || !ins || !outs) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    onnx__node_proto__init(n);
    n->op_type = ox_strdup(&e->a, op);
    n->name = ox_strdup(&e->a, out);
    for (int i = 0; i < n_in; i++) ins[i] = ox_strdup(&e->a, in[i]);
    n->input = ins;
    n->n_input = (size_t)n_in;
    outs[0] = ox_strdup(&e->a, out);
    n->output = outs;
    n->n_output = 1;
    e->nodes[e->n_nodes++] = n;
    return n;
}

static Onnx__AttributeProto *attr(ex *e, Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType type) {
    if (!n) return NULL;
    Onnx__AttributeProto **as = ox_alloc(&e->a, sizeof *as * (n->n_attribute + 1));
    Onnx__AttributeProto *a = ox_alloc(&e->a, sizeof *a);
    if (!as || !a) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    onnx__attribute_proto__init(a);
    a->name = ox_strdup(&e->a, name);
    a->has_type = true;
    a->type = type;
    if (n->n_attribute) memcpy(as, n->attribute, n->n_attribute * sizeof *as);
    as[n->n_attribute++] = a;
    n->attribute = as;
    return a;
}
static void attr_int(ex *e, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) { a->has_i = true; a->i = v; }
}
static void attr_float(ex *e, Onnx__NodeProto *n, const char *name, double v) {
    Onnx__AttributeProto *a = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) { a->has_f = true; a->f = (float)v; }
}
static void attr_ints(ex *e, Onnx__NodeProto *n, const char *name, const int64_t *v, int k) {
    Onnx__AttributeProto *a = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    if (!a) return;
    a->ints = ox_alloc(&e->a, sizeof *a->ints * (size_t)(k + 1));
    if (!a->ints) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return; }
    memcpy(a->ints, v, sizeof *v * (size_t)k);
    a->n_ints = (size_t)k;
}
static void attr_tensor(ex *e, Onnx__NodeProto *n, const char *name, const kiln_tensor *t) {
    Onnx__AttributeProto *a = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (a && !(a->t = ox_tensor_proto(&e->a, "", t))) ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory");
}

static const char *init(ex *e, const char *name, const kiln_tensor *t) {
    if (e->st || !grow(e, (void ***)&e->inits, &e->cap_inits, e->n_inits)) return NULL;
    Onnx__TensorProto *p = ox_tensor_proto(&e->a, name, t);
    if (!p) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory for initializer %s", name); return NULL; }
    e->inits[e->n_inits++] = p;
    return p->name;
}

/* A scalar f32 Constant node (not an initializer: importers must not take it for a weight). */
static const char *constant(ex *e, const char *base, double v) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    if (!t) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    *(float *)t->data = (float)v;
    const char *out = vname(e, base, "Constant");
    attr_tensor(e, node(e, "Constant", NULL, 0, out), "value", t);
    kiln_tensor_free(t);
    return out;
}

/* A tensor Constant node (f32 or i64): values an op reads that are not weights. */
static const char *const_tensor(ex *e, const char *base, kiln_tensor *t) {
    if (!t) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    const char *out = vname(e, base, "Constant");
    attr_tensor(e, node(e, "Constant", NULL, 0, out), "value", t);
    kiln_tensor_free(t);
    return out;
}
static const char *const_i64(ex *e, const char *base, const int64_t *v, int n) {
    kiln_tensor *t = kiln_tensor_new(KILN_I64, KILN_SHAPE(n));
    if (t) memcpy(t->data, v, sizeof *v * (size_t)n);
    return const_tensor(e, base, t);
}
static const char *const_f32(ex *e, const char *base, const double *v, int n) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(n));
    for (int i = 0; t && i < n; i++) ((float *)t->data)[i] = (float)v[i];
    return const_tensor(e, base, t);
}

static const char *one(ex *e, const char *op, const char *x, const char *base) {
    const char *out = vname(e, base, op);
    node(e, op, &x, 1, out);
    return out;
}
static const char *two(ex *e, const char *op, const char *x, const char *y, const char *base) {
    const char *out = vname(e, base, op);
    node(e, op, (const char *[]){ x, y }, 2, out);
    return out;
}

/* The variable's current value (owned by the caller). */
static kiln_tensor *weight(ex *e, const kiln_layer *l, const char *suffix) {
    for (int i = 0; i < l->n_vars; i++) {
        const char *nm = l->vars[i].name;
        size_t k = strlen(l->name);
        if (strncmp(nm, l->name, k) || nm[k] != '/' || strcmp(nm + k + 1, suffix)) continue;
        kiln_tensor *t = kiln_tensor_new(KILN_F32, l->vars[i].shape);
        if (!t) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
        kiln_status st = kiln_session_read_variable(e->m->s, l->vars[i].node, t);
        if (st) { kiln_tensor_free(t); ex_fail(e, st, "reading %s: %s", nm, kiln_last_error()); return NULL; }
        return t;
    }
    ex_fail(e, KILN_INTERNAL, "layer %s has no variable %s", l->name, suffix);
    return NULL;
}

/* A weight as an initializer, its axes permuted (NULL: as is). */
static const char *weight_init(ex *e, const kiln_layer *l, const char *suffix, const int *perm) {
    kiln_tensor *t = weight(e, l, suffix);
    if (!t) return NULL;
    kiln_tensor *p = perm ? ox_permute(t, perm) : t;
    char name[300];
    snprintf(name, sizeof name, "%s/%s", l->name, suffix);
    const char *r = p ? init(e, name, p) : NULL;
    if (!p) ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory");
    if (p != t) kiln_tensor_free(p);
    kiln_tensor_free(t);
    return r;
}

/* v in NCHW (nchw true) or in Kiln's NHWC order: one Transpose, remembered. */
static const char *order(ex *e, ev *v, bool nchw, int rank) {
    if (rank != 3 || v->nchw == nchw) return v->name;
    if (!v->other) {
        v->other = vname(e, v->name, nchw ? "ToNCHW" : "ToNHWC");
        static const int64_t to_nchw[4] = { 0, 3, 1, 2 }, to_nhwc[4] = { 0, 2, 3, 1 };
        attr_ints(e, node(e, "Transpose", &v->name, 1, v->other), "perm", nchw ? to_nchw : to_nhwc, 4);
    }
    return v->other;
}

static const char *activation(ex *e, const char *x, kiln_activation a, bool nchw, const char *base) {
    switch (a) {
    case KILN_LINEAR: return x;
    case KILN_RELU: return one(e, "Relu", x, base);
    case KILN_SIGMOID: return one(e, "Sigmoid", x, base);
    case KILN_TANH: return one(e, "Tanh", x, base);
    case KILN_SOFTPLUS: return one(e, "Softplus", x, base);
    case KILN_SOFTMAX: {       /* Kiln: over the last (channel) axis */
        const char *y = one(e, "Softmax", x, base);
        attr_int(e, e->n_nodes ? e->nodes[e->n_nodes - 1] : NULL, "axis", nchw ? 1 : -1);
        return y;
    }
    case KILN_ELU: {
        const char *y = one(e, "Elu", x, base);
        attr_float(e, e->nodes[e->n_nodes - 1], "alpha", 1.0);
        return y;
    }
    case KILN_LEAKY_RELU: {    /* nn_activate's slope */
        const char *y = one(e, "LeakyRelu", x, base);
        attr_float(e, e->nodes[e->n_nodes - 1], "alpha", 0.2);
        return y;
    }
    case KILN_GELU: {          /* exact GELU (Kiln's, erf form): opset 17 has no Gelu op */
        const char *r2 = constant(e, base, M_SQRT2), *c1 = constant(e, base, 1.0), *h = constant(e, base, 0.5);
        const char *t = one(e, "Erf", two(e, "Div", x, r2, base), base);
        return two(e, "Mul", two(e, "Mul", x, two(e, "Add", t, c1, base), base), h, base);
    }
    case KILN_SILU: return two(e, "Mul", x, one(e, "Sigmoid", x, base), base);
    case KILN_RELU6: {         /* opset 11+: Clip's bounds are inputs */
        const char *y = vname(e, base, "Clip");
        node(e, "Clip", (const char *[]){ x, constant(e, base, 0.0), constant(e, base, 6.0) }, 3, y);
        return y;
    }
    case KILN_HARD_SIGMOID: case KILN_HARD_SILU: {   /* Keras 3's relu6(x + 3) / 6: alpha 1/6, beta 0.5 */
        const char *y = one(e, a == KILN_HARD_SIGMOID ? "HardSigmoid" : "HardSwish", x, base);
        if (a == KILN_HARD_SIGMOID) {        /* HardSwish's attributes are fixed at these values */
            attr_float(e, e->nodes[e->n_nodes - 1], "alpha", 1.0 / 6.0);
            attr_float(e, e->nodes[e->n_nodes - 1], "beta", 0.5);
        }
        return y;
    }
    case KILN_SELU: return one(e, "Selu", x, base);   /* ONNX's default alpha and gamma are Keras's */
    case KILN_SOFTSIGN: return one(e, "Softsign", x, base);
    case KILN_MISH: return two(e, "Mul", x, one(e, "Tanh", one(e, "Softplus", x, base), base), base);   /* opset 17 has no Mish */
    case KILN_EXPONENTIAL: return one(e, "Exp", x, base);
    default:
        ex_fail(e, KILN_UNSUPPORTED, "activation %d has no ONNX export", (int)a);
        return NULL;
    }
}

/* Explicit pads of Kiln's SAME (TensorFlow's) for one axis. */
static void same_pads(int64_t in, int k_eff, int s, int64_t *before, int64_t *after) {
    int64_t out = (in + s - 1) / s, total = (out - 1) * s + k_eff - in;
    if (total < 0) total = 0;
    *before = total / 2;
    *after = total - total / 2;
}

static void window_attrs(ex *e, Onnx__NodeProto *n, const kiln_layer *l, int dil) {
    kiln_shape s = l->in[0]->out;
    int64_t k[2] = { l->kh, l->kw }, st[2] = { l->sh, l->sw }, pads[4] = { 0 };
    if (l->padding == KILN_SAME) {
        same_pads(s.dim[0], (l->kh - 1) * dil + 1, l->sh, &pads[0], &pads[2]);
        same_pads(s.dim[1], (l->kw - 1) * dil + 1, l->sw, &pads[1], &pads[3]);
    }
    attr_ints(e, n, "kernel_shape", k, 2);
    attr_ints(e, n, "strides", st, 2);
    attr_ints(e, n, "pads", pads, 4);
}

/* Batch norm's gamma / beta: the weight, or (scale / center false) a constant of ones / zeros. */
static const char *bn_param(ex *e, const kiln_layer *l, const char *suffix, bool has, double v) {
    if (has) return weight_init(e, l, suffix, NULL);
    int64_t ch = l->out.dim[l->out.rank - 1];
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(ch));
    for (int64_t i = 0; t && i < ch; i++) ((float *)t->data)[i] = (float)v;
    return const_tensor(e, l->name, t);
}

/* An attribute string. */
static void attr_str(ex *e, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (a) { a->has_s = true; a->s.data = (uint8_t *)ox_strdup(&e->a, v); a->s.len = strlen(v); }
}

/* 1-D layers on [N, steps, C]: ONNX's 1-D Conv and pooling between Transposes to [N, C, steps]
 * and back; global pooling as reductions over axis 1; UpSampling1D as a nearest Resize. */
static void export_1d(ex *e, kiln_layer *l, ev *vals) {
    const char *x = vals[l->in[0]->index].name, *base = l->name;
    ev *y = &vals[l->index];
    kiln_shape s = l->in[0]->out;
    static const int64_t ncw[3] = { 0, 2, 1 };
    if (l->kind == NN_GAP1D || l->kind == NN_GMP1D) {
        y->name = one(e, l->kind == NN_GAP1D ? "ReduceMean" : "ReduceMax", x, base);
        Onnx__NodeProto *n = e->n_nodes ? e->nodes[e->n_nodes - 1] : NULL;
        attr_ints(e, n, "axes", (const int64_t[]){ 1 }, 1);
        attr_int(e, n, "keepdims", l->out.rank == 2);
        return;
    }
    if (l->kind == NN_UPSAMPLE1D) {
        const char *out = vname(e, base, "Resize");
        Onnx__NodeProto *n = node(e, "Resize", (const char *[]){ x, "", const_f32(e, base, (const double[]){ 1, l->cfg->size[0], 1 }, 3) }, 3, out);
        attr_str(e, n, "mode", "nearest");
        attr_str(e, n, "coordinate_transformation_mode", "asymmetric");
        attr_str(e, n, "nearest_mode", "floor");
        y->name = out;
        return;
    }
    const char *t = one(e, "Transpose", x, base), *out;
    attr_ints(e, e->n_nodes ? e->nodes[e->n_nodes - 1] : NULL, "perm", ncw, 3);
    int64_t pads[2] = { 0, 0 }, eff = (int64_t)(l->kw - 1) * l->dil + 1;
    if (l->padding == KILN_SAME) same_pads(s.dim[0], (int)eff, l->sw, &pads[0], &pads[1]);
    if (l->padding == KILN_EXPLICIT) pads[0] = eff - 1;     /* causal */
    Onnx__NodeProto *n;
    if (l->kind == NN_CONV1D) {
        const char *w = weight_init(e, l, "kernel", (const int[]){ 2, 1, 0 });   /* [k, in/g, F] -> [F, in/g, k] */
        const char *b = l->use_bias ? weight_init(e, l, "bias", NULL) : NULL;
        out = vname(e, base, "Conv");
        n = node(e, "Conv", (const char *[]){ t, w, b }, b ? 3 : 2, out);
        attr_ints(e, n, "dilations", (const int64_t[]){ l->dil }, 1);
        attr_int(e, n, "group", l->groups);
        out = activation(e, out, l->act, true, base);      /* softmax over axis 1: the channels */
    } else {
        const char *op = l->kind == NN_MAXPOOL1D ? "MaxPool" : "AveragePool";
        out = vname(e, base, op);
        n = node(e, op, &t, 1, out);      /* AveragePool: count_include_pad 0, TensorFlow's divisor */
    }
    attr_ints(e, n, "kernel_shape", (const int64_t[]){ l->kw }, 1);
    attr_ints(e, n, "strides", (const int64_t[]){ l->sw }, 1);
    attr_ints(e, n, "pads", pads, 2);
    y->name = one(e, "Transpose", out, base);
    attr_ints(e, e->n_nodes ? e->nodes[e->n_nodes - 1] : NULL, "perm", ncw, 3);
}

/* The layer types keras.applications brought (issue 29); false for a type it does not know. */
static bool export_apps_layer(ex *e, kiln_layer *l, ev *vals) {
    ev *x = &vals[l->in[0]->index], *y = &vals[l->index];
    int rank = l->in[0]->out.rank;
    const char *base = l->name;
    const nn_layer_cfg *c = l->cfg;
    switch (l->kind) {
    case NN_RELU: {             /* Relu or Clip, minus slope * Relu(-x) */
        const char *v = c->max_value > 0 ? NULL : one(e, "Relu", x->name, base);
        if (!v) {
            v = vname(e, base, "Clip");
            node(e, "Clip", (const char *[]){ x->name, constant(e, base, 0.0), constant(e, base, c->max_value) }, 3, v);
        }
        if (c->alpha != 0) v = two(e, "Sub", v, two(e, "Mul", one(e, "Relu", one(e, "Neg", x->name, base), base), constant(e, base, c->alpha), base), base);
        *y = (ev){ .name = v, .nchw = x->nchw };
        return true;
    }
    case NN_RESCALING: case NN_LEAKY_RELU: case NN_ELU: {      /* elementwise: any layout */
        const char *v = x->name;
        if (l->kind == NN_RESCALING) {
            v = two(e, "Mul", v, constant(e, base, c->scale), base);
            if (c->offset != 0) v = two(e, "Add", v, constant(e, base, c->offset), base);
        } else {
            v = one(e, l->kind == NN_ELU ? "Elu" : "LeakyRelu", v, base);
            attr_float(e, e->nodes[e->n_nodes - 1], "alpha", c->alpha);
        }
        *y = (ev){ .name = v, .nchw = x->nchw };
        return true;
    }
    case NN_PRELU: case NN_LAYER_SCALE: {    /* alpha / gamma in Kiln's layout (batch excluded) broadcast over x */
        const char *in = order(e, x, false, rank);
        const char *w = weight_init(e, l, l->kind == NN_PRELU ? "alpha" : "gamma", NULL);
        y->name = l->kind == NN_PRELU ? two(e, "PRelu", in, w, base) : two(e, "Mul", in, w, base);
        return true;
    }
    case NN_NORMALIZATION: {    /* (x - mean) / max(sqrt(variance), 1e-7) over Kiln's last axis */
        int64_t ch = l->out.dim[l->out.rank - 1];
        double *mv = kiln_calloc((size_t)ch * 2, sizeof *mv);
        kiln_tensor *tm = c->mean.n ? NULL : weight(e, l, "mean"), *tv = c->mean.n ? NULL : weight(e, l, "variance");
        if (!mv || (!c->mean.n && (!tm || !tv))) { kiln_free(mv); kiln_tensor_free(tm); kiln_tensor_free(tv); if (!e->st) ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return true; }
        for (int64_t i = 0; i < ch; i++) {
            double m = c->mean.n ? c->mean.v[c->mean.n > 1 ? i : 0] : ((float *)tm->data)[i];
            double v = c->mean.n ? c->variance.v[c->variance.n > 1 ? i : 0] : ((float *)tv->data)[i];
            mv[i] = m;
            mv[ch + i] = fmax(sqrt(v), 1e-7);
        }
        const char *in = order(e, x, false, rank);
        y->name = two(e, "Div", two(e, "Sub", in, const_f32(e, base, mv, (int)ch), base), const_f32(e, base, mv + ch, (int)ch), base);
        kiln_free(mv);
        kiln_tensor_free(tm);
        kiln_tensor_free(tv);
        return true;
    }
    case NN_ZEROPAD2D: case NN_CROPPING2D: {
        const int *q = c->pads;
        const char *in = order(e, x, true, rank);
        if (l->kind == NN_ZEROPAD2D)
            y->name = two(e, "Pad", in, const_i64(e, base, (const int64_t[]){ 0, 0, q[0], q[2], 0, 0, q[1], q[3] }, 8), base);
        else {
            int64_t h = l->in[0]->out.dim[0], w = l->in[0]->out.dim[1];
            const char *out = vname(e, base, "Slice");
            node(e, "Slice", (const char *[]){ in, const_i64(e, base, (const int64_t[]){ q[0], q[2] }, 2),
                                                const_i64(e, base, (const int64_t[]){ h - q[1], w - q[3] }, 2), const_i64(e, base, (const int64_t[]){ 2, 3 }, 2) }, 4, out);
            y->name = out;
        }
        y->nchw = true;
        return true;
    }
    case NN_UPSAMPLE2D: {       /* nearest, each pixel repeated: asymmetric coordinates, floor; bilinear: tf.image.resize's half-pixel centres */
        const char *out = vname(e, base, "Resize");
        Onnx__NodeProto *n = node(e, "Resize", (const char *[]){ order(e, x, true, rank), "", const_f32(e, base, (const double[]){ 1, 1, c->size[0], c->size[1] }, 4) }, 3, out);
        attr_str(e, n, "mode", c->mode == 1 ? "linear" : "nearest");
        attr_str(e, n, "coordinate_transformation_mode", c->mode == 1 ? "half_pixel" : "asymmetric");
        if (c->mode != 1) attr_str(e, n, "nearest_mode", "floor");
        *y = (ev){ .name = out, .nchw = true };
        return true;
    }
    case NN_SEPCONV2D: {        /* a grouped Conv (one group per channel), then a 1x1 Conv */
        int64_t cin = l->in[0]->out.dim[2], mid = cin * c->depth_multiplier;
        kiln_tensor *dw = weight(e, l, "depthwise_kernel"), *pw = weight(e, l, "pointwise_kernel");
        kiln_tensor *dwp = NULL, *pwp = NULL;
        if (dw) { dw->shape = KILN_SHAPE(l->kh, l->kw, 1, mid); dwp = ox_permute(dw, (const int[]){ 3, 2, 0, 1 }); }   /* same elements */
        if (pw) pwp = ox_permute(pw, (const int[]){ 3, 2, 0, 1 });
        char nm[300];
        snprintf(nm, sizeof nm, "%s/depthwise_kernel", l->name);
        const char *wd = dwp ? init(e, nm, dwp) : NULL;
        snprintf(nm, sizeof nm, "%s/pointwise_kernel", l->name);
        const char *wp = pwp ? init(e, nm, pwp) : NULL;
        if ((!dwp || !pwp) && !e->st) ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory");
        kiln_tensor_free(dw); kiln_tensor_free(pw); kiln_tensor_free(dwp); kiln_tensor_free(pwp);
        const char *d = vname(e, base, "Conv");
        Onnx__NodeProto *n = node(e, "Conv", (const char *[]){ order(e, x, true, rank), wd }, 2, d);
        window_attrs(e, n, l, l->dil);
        attr_ints(e, n, "dilations", (const int64_t[]){ l->dil, l->dil }, 2);
        attr_int(e, n, "group", cin);
        const char *b = l->use_bias ? weight_init(e, l, "bias", NULL) : NULL, *out = vname(e, base, "Conv");
        node(e, "Conv", (const char *[]){ d, wp, b }, b ? 3 : 2, out);
        *y = (ev){ .name = activation(e, out, l->act, true, base), .nchw = true };
        return true;
    }
    case NN_CONV1D: case NN_MAXPOOL1D: case NN_AVGPOOL1D: case NN_GAP1D: case NN_GMP1D: case NN_UPSAMPLE1D:
        export_1d(e, l, vals);
        return true;
    case NN_CONV2D_TRANSPOSE: {   /* ConvTranspose: W [in, filters, kh, kw]; pads and output_padding give Kiln's size */
        kiln_shape s = l->in[0]->out;
        int64_t pads[4] = { 0 }, opad[2];
        if (l->padding == KILN_SAME) {
            same_pads(l->out.dim[0], l->kh, l->sh, &pads[0], &pads[2]);
            same_pads(l->out.dim[1], l->kw, l->sw, &pads[1], &pads[3]);
        }
        opad[0] = l->out.dim[0] - ((s.dim[0] - 1) * l->sh + l->kh - pads[0] - pads[2]);
        opad[1] = l->out.dim[1] - ((s.dim[1] - 1) * l->sw + l->kw - pads[1] - pads[3]);
        const char *w = weight_init(e, l, "kernel", (const int[]){ 3, 2, 0, 1 });   /* [kh, kw, F, in] -> [in, F, kh, kw] */
        const char *b = l->use_bias ? weight_init(e, l, "bias", NULL) : NULL, *out = vname(e, base, "ConvTranspose");
        Onnx__NodeProto *n = node(e, "ConvTranspose", (const char *[]){ order(e, x, true, rank), w, b }, b ? 3 : 2, out);
        attr_ints(e, n, "kernel_shape", (const int64_t[]){ l->kh, l->kw }, 2);
        attr_ints(e, n, "strides", (const int64_t[]){ l->sh, l->sw }, 2);
        attr_ints(e, n, "pads", pads, 4);
        attr_ints(e, n, "output_padding", opad, 2);
        *y = (ev){ .name = activation(e, out, l->act, true, base), .nchw = true };
        return true;
    }
    case NN_SPATIAL_DROPOUT2D: case NN_GAUSSIAN_NOISE: case NN_GAUSSIAN_DROPOUT:
        *y = *x; return true;      /* inference: the identity (as tf2onnx exports Keras's noise layers) */
    case NN_MULTIPLY: case NN_SUBTRACT: case NN_AVERAGE: case NN_MAXIMUM: case NN_MINIMUM: {
        bool nchw = rank == 3 && x->nchw;
        const char *ins[NN_MAX_MERGE] = { 0 };
        for (int i = 0; i < l->n_in; i++) {
            if (l->in[i]->out.rank != l->out.rank) { ex_fail(e, KILN_UNSUPPORTED, "layer %s (%s): inputs of different ranks have no ONNX export", l->name, kiln_layer_type(l)); return true; }
            ins[i] = order(e, &vals[l->in[i]->index], nchw, rank);
        }
        static const char *const ops[] = { [NN_MULTIPLY] = "Mul", [NN_SUBTRACT] = "Sub", [NN_AVERAGE] = "Mean", [NN_MAXIMUM] = "Max", [NN_MINIMUM] = "Min" };
        const char *v = ins[0];
        if (l->kind == NN_AVERAGE || l->kind == NN_MAXIMUM || l->kind == NN_MINIMUM) { v = vname(e, base, ops[l->kind]); node(e, ops[l->kind], ins, l->n_in, v); }
        else for (int i = 1; i < l->n_in; i++) v = two(e, ops[l->kind], v, ins[i], base);
        *y = (ev){ .name = v, .nchw = nchw };
        return true;
    }
    default:
        return false;
    }
}

/* ---- transformer layers: sequences (batch, T, features), never NCHW ---- */
static const char *int64_init(ex *e, const char *base, const char *what, const int64_t *v, int n) {
    kiln_tensor *t = kiln_tensor_new(KILN_I64, KILN_SHAPE(n));
    if (!t) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    memcpy(t->data, v, sizeof *v * (size_t)n);
    char nm[300];
    snprintf(nm, sizeof nm, "%s/%s", base, what);
    const char *r = init(e, nm, t);
    kiln_tensor_free(t);
    return r;
}

/* A [d] initializer of ones or zeros (LayerNormalization without gamma / beta). */
static const char *filled_init(ex *e, const kiln_layer *l, const char *what, int64_t d, float v) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(d));
    if (!t) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    for (int64_t i = 0; i < d; i++) ((float *)t->data)[i] = v;
    char nm[300];
    snprintf(nm, sizeof nm, "%s/%s", l->name, what);
    const char *r = init(e, nm, t);
    kiln_tensor_free(t);
    return r;
}

/* Weight `suffix` of l flattened to [a, b] (b 0: [a]), as an initializer. */
static const char *flat_init(ex *e, const kiln_layer *l, const char *suffix, int64_t a, int64_t b) {
    kiln_tensor *w = weight(e, l, suffix);
    if (!w) return NULL;
    w->shape = b ? KILN_SHAPE(a, b) : KILN_SHAPE(a);
    char full[300];
    snprintf(full, sizeof full, "%s/%s", l->name, suffix);
    const char *r = init(e, full, w);
    kiln_tensor_free(w);
    return r;
}

/* x (N, T, D) -> (N, H, T, K) (k_last false) or (N, H, K, T) for k^T: MatMul, Add, Reshape, Transpose. */
static const char *mha_heads(ex *e, const kiln_layer *l, const char *x, const char *which, bool k_last) {
    char nm[40];
    int64_t H = l->heads, K = l->key_dim;
    int64_t D = l->in[0]->out.dim[1];
    if (!strcmp(which, "value")) D = l->in[l->n_in > 1 ? 1 : 0]->out.dim[1];
    if (!strcmp(which, "key")) D = l->in[l->n_in > 2 ? 2 : l->n_in > 1 ? 1 : 0]->out.dim[1];
    snprintf(nm, sizeof nm, "%s/kernel", which);
    const char *y = two(e, "MatMul", x, flat_init(e, l, nm, D, H * K), l->name);   /* [D, H, K] row-major is [D, H K] */
    if (l->use_bias) {
        snprintf(nm, sizeof nm, "%s/bias", which);
        y = two(e, "Add", y, flat_init(e, l, nm, H * K, 0), l->name);
    }
    y = two(e, "Reshape", y, int64_init(e, l->name, which, (const int64_t[]){ 0, 0, H, K }, 4), l->name);
    const char *t = one(e, "Transpose", y, l->name);
    attr_ints(e, e->nodes[e->n_nodes - 1], "perm", k_last ? (const int64_t[]){ 0, 2, 3, 1 } : (const int64_t[]){ 0, 2, 1, 3 }, 4);
    return t;
}

/* Attention as MatMul / Softmax: the [T, T] scores exist in the exported graph (opset 17 has no
 * fused attention); causal: a constant [Tq, Tk] mask of 0 and -1e30 added before the softmax. */
static const char *export_mha(ex *e, const kiln_layer *l, ev *vals) {
    const char *q_in = vals[l->in[0]->index].name, *v_in = vals[l->in[l->n_in > 1 ? 1 : 0]->index].name;
    const char *k_in = l->n_in > 2 ? vals[l->in[2]->index].name : v_in, *base = l->name;
    int64_t Tq = l->in[0]->out.dim[0], Tk = l->in[l->n_in > 1 ? 1 : 0]->out.dim[0], HK = (int64_t)l->heads * l->key_dim;
    const char *q = mha_heads(e, l, q_in, "query", false), *kt = mha_heads(e, l, k_in, "key", true), *v = mha_heads(e, l, v_in, "value", false);
    const char *s = two(e, "Mul", two(e, "MatMul", q, kt, base), constant(e, base, 1.0 / sqrt((double)l->key_dim)), base);
    if (l->causal) {
        kiln_tensor *m = kiln_tensor_new(KILN_F32, KILN_SHAPE(Tq, Tk));
        if (!m) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
        for (int64_t i = 0; i < Tq; i++)
            for (int64_t j = 0; j < Tk; j++) ((float *)m->data)[i * Tk + j] = j <= i + Tk - Tq ? 0.0f : -1e30f;
        char nm[300];
        snprintf(nm, sizeof nm, "%s/causal_mask", base);
        s = two(e, "Add", s, init(e, nm, m), base);
        kiln_tensor_free(m);
    }
    const char *p = one(e, "Softmax", s, base);
    attr_int(e, e->nodes[e->n_nodes - 1], "axis", -1);
    const char *o = one(e, "Transpose", two(e, "MatMul", p, v, base), base);
    attr_ints(e, e->nodes[e->n_nodes - 1], "perm", (const int64_t[]){ 0, 2, 1, 3 }, 4);
    o = two(e, "Reshape", o, int64_init(e, base, "merge_heads", (const int64_t[]){ 0, 0, HK }, 3), base);
    o = two(e, "MatMul", o, flat_init(e, l, "attention_output/kernel", HK, l->out.dim[1]), base);
    return l->use_bias ? two(e, "Add", o, weight_init(e, l, "attention_output/bias", NULL), base) : o;
}

/* GPTBlock's x @ kernel + bias over the last axis */
static const char *gpt_linear(ex *e, const kiln_layer *l, const char *x, const char *which) {
    char k[64], b[64];
    snprintf(k, sizeof k, "%s/kernel", which);
    snprintf(b, sizeof b, "%s/bias", which);
    return two(e, "Add", two(e, "MatMul", x, weight_init(e, l, k, NULL), l->name), weight_init(e, l, b, NULL), l->name);
}
static const char *gpt_layer_norm(ex *e, const kiln_layer *l, const char *x, const char *which) {
    char g[64], b[64];
    snprintf(g, sizeof g, "%s/gamma", which);
    snprintf(b, sizeof b, "%s/beta", which);
    const char *ins[3] = { x, weight_init(e, l, g, NULL), weight_init(e, l, b, NULL) }, *out = vname(e, l->name, "LayerNormalization");
    Onnx__NodeProto *n = node(e, "LayerNormalization", ins, 3, out);
    attr_int(e, n, "axis", -1);
    attr_float(e, n, "epsilon", l->epsilon);
    return out;
}
/* (N, T, D) -> heads (N, H, T, K), or (N, H, K, T) for k^T */
static const char *gpt_heads(ex *e, const kiln_layer *l, const char *x, bool k_last) {
    const char *y = two(e, "Reshape", x, const_i64(e, l->name, (const int64_t[]){ 0, 0, l->heads, l->key_dim }, 4), l->name);
    const char *t = one(e, "Transpose", y, l->name);
    attr_ints(e, e->nodes[e->n_nodes - 1], "perm", k_last ? (const int64_t[]){ 0, 2, 3, 1 } : (const int64_t[]){ 0, 2, 1, 3 }, 4);
    return t;
}
/* GPTBlock (inference: no dropout) as ONNX ops: x + c_proj(attn(LN1 x)), then + mlp(LN2 x). The
 * attention is export_mha's (MatMul, Softmax, the causal mask a constant of 0 / -1e30); GELU
 * written out (opset 17 has no Gelu): tanh 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), or
 * erf 0.5 x (1 + erf(x / sqrt 2)). */
static const char *export_gpt_block(ex *e, const kiln_layer *l, const char *x) {
    const char *base = l->name, *parts[3];
    int64_t T = l->out.dim[0], D = l->out.dim[1];
    const char *qkv = gpt_linear(e, l, gpt_layer_norm(e, l, x, "ln_1"), "attn/c_attn");
    const char *sizes = const_i64(e, base, (const int64_t[]){ D, D, D }, 3);
    for (int i = 0; i < 3; i++) parts[i] = vname(e, base, "Split");
    Onnx__NodeProto *sp = node(e, "Split", (const char *[]){ qkv, sizes }, 2, parts[0]);
    if (!sp) return NULL;
    sp->output = ox_alloc(&e->a, 3 * sizeof *sp->output);
    if (!sp->output) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    for (int i = 0; i < 3; i++) sp->output[i] = (char *)parts[i];
    sp->n_output = 3;
    attr_int(e, sp, "axis", -1);
    const char *q = gpt_heads(e, l, parts[0], false), *kt = gpt_heads(e, l, parts[1], true), *v = gpt_heads(e, l, parts[2], false);
    const char *s = two(e, "Mul", two(e, "MatMul", q, kt, base), constant(e, base, 1.0 / sqrt((double)l->key_dim)), base);
    kiln_tensor *m = kiln_tensor_new(KILN_F32, KILN_SHAPE(T, T));
    if (!m) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = 0; j < T; j++) ((float *)m->data)[i * T + j] = j <= i ? 0.0f : -1e30f;
    s = two(e, "Add", s, const_tensor(e, base, m), base);
    const char *p = one(e, "Softmax", s, base);
    attr_int(e, e->nodes[e->n_nodes - 1], "axis", -1);
    const char *o = one(e, "Transpose", two(e, "MatMul", p, v, base), base);
    attr_ints(e, e->nodes[e->n_nodes - 1], "perm", (const int64_t[]){ 0, 2, 1, 3 }, 4);
    o = two(e, "Reshape", o, const_i64(e, base, (const int64_t[]){ 0, 0, D }, 3), base);
    x = two(e, "Add", x, gpt_linear(e, l, o, "attn/c_proj"), base);
    const char *f = gpt_linear(e, l, gpt_layer_norm(e, l, x, "ln_2"), "mlp/c_fc"), *g;
    if (l->approximate) {
        const char *f3 = two(e, "Mul", two(e, "Mul", f, f, base), f, base);
        const char *in = two(e, "Mul", two(e, "Add", f, two(e, "Mul", f3, constant(e, base, 0.044715), base), base),
                             constant(e, base, sqrt(2.0 / M_PI)), base);
        g = two(e, "Mul", two(e, "Mul", f, two(e, "Add", one(e, "Tanh", in, base), constant(e, base, 1.0), base), base), constant(e, base, 0.5), base);
    } else g = activation(e, f, KILN_GELU, false, base);
    return two(e, "Add", x, gpt_linear(e, l, g, "mlp/c_proj"), base);
}

static void export_transformer(ex *e, kiln_layer *l, ev *vals) {
    ev *x = &vals[l->in[0]->index], *y = &vals[l->index];
    const char *base = l->name;
    switch (l->kind) {
    case NN_EMBEDDING: {       /* float ids truncated as Kiln does: Cast to int64 (toward zero), Gather */
        const char *ids = x->name;
        if (!x->i64) {
            ids = one(e, "Cast", x->name, base);
            attr_int(e, e->nodes[e->n_nodes - 1], "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
        }
        y->name = two(e, "Gather", weight_init(e, l, "embeddings", NULL), ids, base);
        attr_int(e, e->nodes[e->n_nodes - 1], "axis", 0);
        return;
    }
    case NN_LAYER_NORM: {
        int64_t d = l->out.dim[l->out.rank - 1];
        const char *g = l->scale ? weight_init(e, l, "gamma", NULL) : filled_init(e, l, "gamma", d, 1.0f);
        const char *b = l->center ? weight_init(e, l, "beta", NULL) : filled_init(e, l, "beta", d, 0.0f);
        const char *out = vname(e, base, "LayerNormalization");
        Onnx__NodeProto *n = node(e, "LayerNormalization", (const char *[]){ x->name, g, b }, 3, out);
        attr_int(e, n, "axis", -1);
        attr_float(e, n, "epsilon", l->epsilon);
        y->name = out;
        return;
    }
    case NN_POS_EMBEDDING: {   /* the first T rows, expanded to x's shape */
        kiln_tensor *w = weight(e, l, "embeddings");
        if (!w) return;
        w->shape.dim[0] = l->out.dim[0];      /* rows are contiguous: the first T of them */
        char nm[300];
        snprintf(nm, sizeof nm, "%s/embeddings", base);
        const char *p = init(e, nm, w);
        kiln_tensor_free(w);
        y->name = two(e, "Expand", p, one(e, "Shape", x->name, base), base);
        return;
    }
    case NN_MHA: y->name = export_mha(e, l, vals); return;
    case NN_GPT_BLOCK: y->name = export_gpt_block(e, l, x->name); return;
    case NN_TIED_OUTPUT: {     /* h E^T, E the Embedding's initializer (written once, shared) */
        char nm[300];
        snprintf(nm, sizeof nm, "%s/embeddings", l->in[1]->name);
        const char *w = NULL;
        for (int i = 0; i < e->n_inits && !w; i++) if (!strcmp(e->inits[i]->name, nm)) w = e->inits[i]->name;
        if (!w) w = weight_init(e, l->in[1], "embeddings", NULL);
        const char *wt = one(e, "Transpose", w, base);
        attr_ints(e, e->nodes[e->n_nodes - 1], "perm", (const int64_t[]){ 1, 0 }, 2);
        y->name = two(e, "MatMul", x->name, wt, base);
        return;
    }
    default: ex_fail(e, KILN_UNSUPPORTED, "layer %s (%s) has no ONNX export", l->name, kiln_layer_type(l));
    }
}

/* ---- recurrent layers: ONNX's RNN / LSTM / GRU (opset 14 defaults: time-major) ---- */
static const char *rnn_act_name(kiln_activation a) {
    switch (a) {
    case KILN_SIGMOID: return "Sigmoid";
    case KILN_TANH: return "Tanh";
    case KILN_RELU: return "Relu";
    case KILN_HARD_SIGMOID: return "HardSigmoid";     /* alpha 1/6, beta 0.5: Keras 3's */
    case KILN_SOFTSIGN: return "Softsign";
    case KILN_SOFTPLUS: return "Softplus";
    default: return NULL;
    }
}
/* W [dirs, kU, F], R [dirs, kU, U] (Keras's [F, kU] / [U, kU] transposed, LSTM's gates i f c o
 * reordered to ONNX's i o f c) and B [dirs, 2 kU] (input bias, then GRU's recurrent bias or 0). */
static void rnn_weights(ex *e, const kiln_layer *l, int dirs, const char **w, const char **r, const char **b) {
    static const int lstm[4] = { 0, 3, 1, 2 }, same[4] = { 0, 1, 2, 3 };
    int64_t U = l->units, k = l->cell == 1 ? 4 : l->cell == 2 ? 3 : 1, F = l->in[0]->out.dim[1];
    const int *perm = l->cell == 1 ? lstm : same;
    kiln_tensor *W = kiln_tensor_new(KILN_F32, KILN_SHAPE(dirs, k * U, F)), *R = kiln_tensor_new(KILN_F32, KILN_SHAPE(dirs, k * U, U));
    kiln_tensor *B = kiln_tensor_new(KILN_F32, KILN_SHAPE(dirs, 2 * k * U));
    if (!W || !R || !B) ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory");
    for (int d = 0; d < dirs && !e->st; d++) {
        const char *pre = dirs == 1 ? "" : d ? "backward/" : "forward/";
        char nm[48];
        snprintf(nm, sizeof nm, "%skernel", pre);
        kiln_tensor *kw = weight(e, l, nm);
        snprintf(nm, sizeof nm, "%srecurrent_kernel", pre);
        kiln_tensor *kr = kw ? weight(e, l, nm) : NULL;
        snprintf(nm, sizeof nm, "%sbias", pre);
        kiln_tensor *kb = kr && l->use_bias ? weight(e, l, nm) : NULL;
        for (int64_t g = 0; kr && g < k; g++)
            for (int64_t u = 0; u < U; u++) {
                int64_t row = (d * k + g) * U + u, col = perm[g] * U + u;
                for (int64_t f = 0; f < F; f++) ((float *)W->data)[row * F + f] = ((float *)kw->data)[f * k * U + col];
                for (int64_t h = 0; h < U; h++) ((float *)R->data)[row * U + h] = ((float *)kr->data)[h * k * U + col];
                float *bd = (float *)B->data + d * 2 * k * U;
                bd[g * U + u] = kb ? ((float *)kb->data)[col] : 0;
                bd[(k + g) * U + u] = kb && l->reset_after ? ((float *)kb->data)[k * U + col] : 0;
            }
        kiln_tensor_free(kw);
        kiln_tensor_free(kr);
        kiln_tensor_free(kb);
    }
    char nm[300];
    snprintf(nm, sizeof nm, "%s/W", l->name);
    *w = e->st ? NULL : init(e, nm, W);
    snprintf(nm, sizeof nm, "%s/R", l->name);
    *r = e->st ? NULL : init(e, nm, R);
    snprintf(nm, sizeof nm, "%s/B", l->name);
    *b = e->st ? NULL : init(e, nm, B);
    kiln_tensor_free(W);
    kiln_tensor_free(R);
    kiln_tensor_free(B);
}
/* x (B, T, F) -> Transpose (T, B, F) -> RNN / LSTM / GRU -> Y (T, dirs, B, U) or Y_h (dirs, B, U),
 * back to (B, T, U) / (B, U); Bidirectional's two directions concatenated or reduced. */
static const char *export_rnn(ex *e, const kiln_layer *l, const char *x) {
    static const char *const ops[3] = { "RNN", "LSTM", "GRU" };
    const char *base = l->name, *fn = rnn_act_name(l->act), *fr = rnn_act_name(l->rec_act);
    bool bi = l->kind == NN_BIDIRECTIONAL;
    int dirs = bi ? 2 : 1;
    int64_t U = l->units;
    if (!fn || (l->cell && !fr)) { ex_fail(e, KILN_UNSUPPORTED, "layer %s (%s): activation %s has no ONNX recurrent form", base, kiln_layer_type(l), nn_activation_names[fn ? l->rec_act : l->act]); return NULL; }
    if (bi && l->go_backwards) { ex_fail(e, KILN_UNSUPPORTED, "layer %s (Bidirectional): a wrapped layer with go_backwards has no ONNX export", base); return NULL; }
    const char *w, *r, *b;
    rnn_weights(e, l, dirs, &w, &r, &b);
    const char *xt = one(e, "Transpose", x, base);
    attr_ints(e, e->nodes[e->n_nodes - 1], "perm", (const int64_t[]){ 1, 0, 2 }, 3);
    const char *y = vname(e, base, ops[l->cell]), *yh = vname(e, base, "Y_h");
    Onnx__NodeProto *n = node(e, ops[l->cell], (const char *[]){ xt, w, r, b }, 4, y);
    if (!n) return NULL;
    if (!l->return_sequences) {         /* only Y_h: Y left out ("") */
        char **outs = ox_alloc(&e->a, 2 * sizeof *outs);
        if (!outs) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
        outs[0] = ox_strdup(&e->a, "");
        outs[1] = ox_strdup(&e->a, yh);
        n->output = outs;
        n->n_output = 2;
    }
    attr_int(e, n, "hidden_size", U);
    Onnx__AttributeProto *a = attr(e, n, "direction", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    const char *dir = bi ? "bidirectional" : l->go_backwards ? "reverse" : "forward";
    if (a) { a->has_s = true; a->s.data = (uint8_t *)ox_strdup(&e->a, dir); a->s.len = strlen(dir); }
    a = attr(e, n, "activations", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    const char *acts[3] = { l->cell ? fr : fn, fn, fn };
    int n_act = (l->cell == 1 ? 3 : l->cell == 2 ? 2 : 1) * dirs;
    if (a && (a->strings = ox_alloc(&e->a, (size_t)n_act * sizeof *a->strings))) {
        for (int i = 0; i < n_act; i++) {
            const char *s = acts[i % (n_act / dirs)];
            a->strings[i].data = (uint8_t *)ox_strdup(&e->a, s);
            a->strings[i].len = strlen(s);
        }
        a->n_strings = (size_t)n_act;
    }
    int n_hard = 0;       /* activation_alpha / beta: one each per HardSigmoid, in order (the only one here that reads them) */
    for (int i = 0; i < n_act; i++) n_hard += !strcmp(acts[i % (n_act / dirs)], "HardSigmoid");
    if (n_hard) {
        Onnx__AttributeProto *al = attr(e, n, "activation_alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
        Onnx__AttributeProto *be = attr(e, n, "activation_beta", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
        if (al && be && (al->floats = ox_alloc(&e->a, (size_t)n_hard * sizeof(float))) && (be->floats = ox_alloc(&e->a, (size_t)n_hard * sizeof(float)))) {
            for (int i = 0; i < n_hard; i++) { al->floats[i] = 1.0f / 6.0f; be->floats[i] = 0.5f; }
            al->n_floats = be->n_floats = (size_t)n_hard;
        }
    }
    if (l->cell == 2) attr_int(e, n, "linear_before_reset", l->reset_after ? 1 : 0);
    const char *o;
    if (l->return_sequences) {          /* (T, dirs, B, U) -> (B, T, dirs, U) */
        o = one(e, "Transpose", y, base);
        attr_ints(e, e->nodes[e->n_nodes - 1], "perm", (const int64_t[]){ 2, 0, 1, 3 }, 4);
        if (l->go_backwards && !bi) {   /* Keras: steps in processing order */
            const char *st = int64_init(e, base, "rev_start", (const int64_t[]){ -1 }, 1), *en = int64_init(e, base, "rev_end", (const int64_t[]){ INT64_MIN }, 1);
            const char *ax = int64_init(e, base, "rev_axis", (const int64_t[]){ 1 }, 1), *sp = int64_init(e, base, "rev_step", (const int64_t[]){ -1 }, 1);
            const char *rv = vname(e, base, "Slice");
            node(e, "Slice", (const char *[]){ o, st, en, ax, sp }, 5, rv);
            o = rv;
        }
    } else {                            /* (dirs, B, U) -> (B, dirs, U) */
        o = one(e, "Transpose", yh, base);
        attr_ints(e, e->nodes[e->n_nodes - 1], "perm", (const int64_t[]){ 1, 0, 2 }, 3);
    }
    int dir_axis = l->return_sequences ? 2 : 1;
    if (bi && l->merge_mode != 0) {
        static const char *const red[4] = { NULL, "ReduceSum", "ReduceProd", "ReduceMean" };
        const char *rd = vname(e, base, red[l->merge_mode]);
        Onnx__NodeProto *rn = l->merge_mode == 1 ? node(e, "ReduceSum", (const char *[]){ o, int64_init(e, base, "dir_axis", (const int64_t[]){ dir_axis }, 1) }, 2, rd)
                                                 : node(e, red[l->merge_mode], &o, 1, rd);
        if (l->merge_mode != 1) attr_ints(e, rn, "axes", (const int64_t[]){ dir_axis }, 1);     /* opset 17: an attribute but for ReduceSum */
        attr_int(e, rn, "keepdims", 0);
        return rd;
    }
    /* concat (or one direction): merge the last two axes */
    return two(e, "Reshape", o, int64_init(e, base, "merge_dirs", l->return_sequences ? (const int64_t[]){ 0, 0, dirs * U } : (const int64_t[]){ 0, dirs * U },
                                           l->return_sequences ? 3 : 2), base);
}

/* One layer: its output into out[l->index]. */
/* A GPT (GPTBlock / TiedOutput layers) whose input feeds only Embeddings takes int64 token ids,
 * as ONNX language models do; other models keep their f32 input (Keras models' float ids). */
static bool token_input(const kiln_model *m) {
    bool gpt = false;
    for (int i = 0; i < m->n_layers; i++) {
        const kiln_layer *l = m->layers[i];
        gpt |= l->kind == NN_GPT_BLOCK || l->kind == NN_TIED_OUTPUT;
        for (int j = 0; j < l->n_in; j++)
            if (l->in[j] == m->input && l->kind != NN_EMBEDDING) return false;
    }
    return gpt;
}

static void export_layer(ex *e, kiln_layer *l, ev *vals) {
    ev *x = l->n_in ? &vals[l->in[0]->index] : NULL;
    int rank = l->n_in ? l->in[0]->out.rank : 0;
    ev *y = &vals[l->index];
    const char *base = l->name;
    switch (l->kind) {
    case NN_INPUT:
        y->name = ox_strdup(&e->a, l->name);
        y->i64 = token_input(e->m);
        return;
    case NN_DENSE: {
        const char *w = weight_init(e, l, "kernel", NULL), *b = l->use_bias ? weight_init(e, l, "bias", NULL) : NULL;
        const char *out = vname(e, base, "Gemm");
        if (rank > 1) {         /* over the last axis of Kiln's layout: MatMul (+ Add) */
            out = two(e, "MatMul", order(e, x, false, rank), w, base);
            if (b) out = two(e, "Add", out, b, base);
        } else node(e, "Gemm", (const char *[]){ x->name, w, b }, b ? 3 : 2, out);
        y->name = activation(e, out, l->act, false, base);
        return;
    }
    case NN_CONV2D: case NN_DWCONV2D: {
        const char *in = order(e, x, true, rank);
        const char *w = weight_init(e, l, l->kind == NN_DWCONV2D ? "depthwise_kernel" : "kernel", (const int[]){ 3, 2, 0, 1 });   /* HWIO -> OIHW */
        const char *b = l->use_bias ? weight_init(e, l, "bias", NULL) : NULL;
        const char *out = vname(e, base, "Conv");
        Onnx__NodeProto *n = node(e, "Conv", (const char *[]){ in, w, b }, b ? 3 : 2, out);
        window_attrs(e, n, l, l->dil);
        attr_ints(e, n, "dilations", (const int64_t[]){ l->dil, l->dil }, 2);
        attr_int(e, n, "group", l->groups);
        y->name = activation(e, out, l->act, true, base);
        y->nchw = true;
        return;
    }
    case NN_MAXPOOL: case NN_AVGPOOL: {
        const char *out = vname(e, base, l->kind == NN_MAXPOOL ? "MaxPool" : "AveragePool");
        Onnx__NodeProto *n = node(e, l->kind == NN_MAXPOOL ? "MaxPool" : "AveragePool", (const char *[]){ order(e, x, true, rank) }, 1, out);
        window_attrs(e, n, l, 1);      /* AveragePool: count_include_pad 0, Kiln's (TensorFlow's) divisor */
        y->name = out;
        y->nchw = true;
        return;
    }
    case NN_GAP: case NN_GMP: {
        bool avg = l->kind == NN_GAP, keep = l->out.rank == 3;
        if (x->nchw) {           /* keepdims: NCHW [N, C, 1, 1] stays an image */
            const char *g = one(e, avg ? "GlobalAveragePool" : "GlobalMaxPool", x->name, base);
            *y = (ev){ .name = keep ? g : one(e, "Flatten", g, base), .nchw = keep };
        } else {
            y->name = one(e, avg ? "ReduceMean" : "ReduceMax", x->name, base);
            Onnx__NodeProto *n = e->nodes[e->n_nodes - 1];
            attr_ints(e, n, "axes", (const int64_t[]){ 1, 2 }, 2);
            attr_int(e, n, "keepdims", keep);
        }
        return;
    }
    case NN_FLATTEN:
        y->name = one(e, "Flatten", order(e, x, false, rank), base);
        return;
    case NN_RESHAPE: {
        int64_t dims[KILN_MAX_DIMS];
        dims[0] = -1;
        for (int i = 0; i < l->target.rank; i++) dims[i + 1] = l->target.dim[i];
        kiln_tensor *t = kiln_tensor_new(KILN_I64, KILN_SHAPE(l->target.rank + 1));
        if (!t) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return; }
        memcpy(t->data, dims, sizeof *dims * (size_t)(l->target.rank + 1));
        char nm[300];
        snprintf(nm, sizeof nm, "%s/shape", l->name);
        const char *s = init(e, nm, t);
        kiln_tensor_free(t);
        y->name = two(e, "Reshape", order(e, x, false, rank), s, base);
        return;
    }
    case NN_DROPOUT: *y = *x; return;      /* inference: the identity */
    case NN_BN: {
        const char *ins[5] = { NULL, bn_param(e, l, "gamma", l->cfg->scale_on, 1), bn_param(e, l, "beta", l->cfg->center, 0),
                               weight_init(e, l, "moving_mean", NULL), weight_init(e, l, "moving_variance", NULL) };
        int64_t mv[KILN_MAX_DIMS], back[KILN_MAX_DIMS];
        bool permute = rank >= 2 && rank != 3;      /* channels (Kiln: the last axis) to axis 1 and back */
        if (rank == 3) { ins[0] = order(e, x, true, rank); y->nchw = true; }
        else if (permute) {
            int r = rank + 1;
            mv[0] = 0; mv[1] = r - 1;
            for (int i = 2; i < r; i++) mv[i] = i - 1;
            for (int i = 0; i < r; i++) back[mv[i]] = i;
            ins[0] = one(e, "Transpose", x->name, base);
            attr_ints(e, e->nodes[e->n_nodes - 1], "perm", mv, r);
        } else ins[0] = x->name;
        const char *out = vname(e, base, "BatchNormalization");
        attr_float(e, node(e, "BatchNormalization", ins, 5, out), "epsilon", l->epsilon);
        if (permute) {
            out = one(e, "Transpose", out, base);
            attr_ints(e, e->nodes[e->n_nodes - 1], "perm", back, rank + 1);
        }
        y->name = out;
        return;
    }
    case NN_ACTIVATION:
        y->name = activation(e, x->name, l->act, x->nchw, base);
        y->nchw = x->nchw;
        return;
    case NN_CONCAT: {
        bool nchw = rank == 3 && x->nchw;
        const char *ins[NN_MAX_MERGE];
        for (int i = 0; i < l->n_in; i++) ins[i] = order(e, &vals[l->in[i]->index], nchw, rank);
        int axis = l->axis;            /* counting the batch, in Kiln's order */
        if (nchw) axis = axis == 3 ? 1 : axis + 1;
        const char *out = vname(e, base, "Concat");
        attr_int(e, node(e, "Concat", ins, l->n_in, out), "axis", axis);
        y->name = out;
        y->nchw = nchw;
        return;
    }
    case NN_ADD: {
        bool nchw = rank == 3 && x->nchw;
        const char *ins[NN_MAX_MERGE];
        for (int i = 0; i < l->n_in; i++) ins[i] = order(e, &vals[l->in[i]->index], nchw, rank);
        const char *out = vname(e, base, l->n_in == 2 ? "Add" : "Sum");
        node(e, l->n_in == 2 ? "Add" : "Sum", ins, l->n_in, out);
        y->name = out;
        y->nchw = nchw;
        return;
    }
    case NN_EMBEDDING: case NN_LAYER_NORM: case NN_POS_EMBEDDING: case NN_MHA: case NN_GPT_BLOCK: case NN_TIED_OUTPUT:
        export_transformer(e, l, vals);
        return;
    case NN_SIMPLE_RNN: case NN_LSTM: case NN_GRU: case NN_BIDIRECTIONAL:
        y->name = export_rnn(e, l, x->name);
        return;
    default:
        if (!export_apps_layer(e, l, vals)) ex_fail(e, KILN_UNSUPPORTED, "layer %s (%s) has no ONNX export", l->name, kiln_layer_type(l));
    }
}

static Onnx__ValueInfoProto *value_info(ex *e, const char *name, kiln_shape s, bool i64) {
    Onnx__ValueInfoProto *v = ox_alloc(&e->a, sizeof *v);
    Onnx__TypeProto *t = ox_alloc(&e->a, sizeof *t);
    Onnx__TypeProto__Tensor *tt = ox_alloc(&e->a, sizeof *tt);
    Onnx__TensorShapeProto *sh = ox_alloc(&e->a, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims = ox_alloc(&e->a, sizeof *dims * (size_t)(s.rank + 1));
    if (!v || !t || !tt || !sh || !dims) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i <= s.rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = ox_alloc(&e->a, sizeof *d);
        if (!d) { ex_fail(e, KILN_OUT_OF_MEMORY, "out of host memory"); return NULL; }
        onnx__tensor_shape_proto__dimension__init(d);
        if (i == 0) { d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM; d->dim_param = ox_strdup(&e->a, "N"); }
        else { d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE; d->dim_value = s.dim[i - 1]; }
        dims[i] = d;
    }
    sh->dim = dims;
    sh->n_dim = (size_t)s.rank + 1;
    tt->has_elem_type = true;
    tt->elem_type = i64 ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    v->name = ox_strdup(&e->a, name);
    v->type = t;
    return v;
}

kiln_status kiln_model_export_onnx(kiln_model *m, const char *path, const kiln_onnx_export_opts *o) {
    if (!m || !path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_export_onnx: NULL %s", m ? "path" : "model");
    kiln_onnx_export_opts def = { 0 };
    if (!o) o = &def;
    kiln_status st = nn_check(m);
    if (st) return st;
    if (m->functional && !m->finalized)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_export_onnx: model '%s' has no outputs yet: call kiln_model_functional() first", m->name);
    for (int i = 0; i < m->n_layers; i++) {
        kiln_layer *l = m->layers[i];
        if (l->kind != NN_IMPORTED) continue;
        /* kiln_model_from_onnx's model (input -> the graph): the source graph with its current weights */
        if (m->n_layers != 2 || l != m->output || l->in[0] != m->input)
            return kiln_set_error(KILN_UNSUPPORTED, "kiln_model_export_onnx: model '%s': its layer %s is an imported ONNX graph among other layers; "
                                  "Kiln writes back an imported graph only as the whole model", m->name, l->name);
        if (o->probabilities)
            return kiln_set_error(KILN_UNSUPPORTED, "kiln_model_export_onnx: model '%s' was imported from an ONNX file, which is written back "
                                  "with its own output; probabilities (an added Softmax) are for Kiln's own layers", m->name);
        st = ox_model_write_imported(m, l, path);
        return st ? kiln_set_error(st, "kiln_model_export_onnx: model '%s': %s", m->name, kiln_last_error()) : KILN_OK;
    }
    if ((st = nn_ensure_session(m, 1))) return st;       /* the weights live in the session */
    ex e = { .m = m, .path = path };
    ev *vals = kiln_calloc((size_t)m->n_layers, sizeof *vals);
    if (!vals) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_model_export_onnx: out of host memory");
    for (int i = 0; i < m->n_layers && !e.st; i++) {
        kiln_layer *l = m->layers[i];
        export_layer(&e, l, vals);
        if (!e.st && !vals[i].name) ex_fail(&e, KILN_OUT_OF_MEMORY, "out of host memory");
        if (l == m->output) break;
    }
    const char *out = NULL;
    if (!e.st) {
        ev *y = &vals[m->output->index];
        out = order(&e, y, false, m->output->out.rank);
        if (o->probabilities && m->output->act != KILN_SOFTMAX) {
            const char *p = vname(&e, "probabilities", "Softmax");
            attr_int(&e, node(&e, "Softmax", &out, 1, p), "axis", -1);
            out = p;
        }
    }
    Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsets[1] = { &opset };
    Onnx__ValueInfoProto *in_vi = e.st ? NULL : value_info(&e, m->input->name, m->input->out, vals[m->input->index].i64);
    Onnx__ValueInfoProto *out_vi = e.st ? NULL : value_info(&e, out, m->output->out, false);
    if (!e.st) {
        opset.domain = "";
        opset.has_version = true;
        opset.version = OX_OPSET;
        model.has_ir_version = true;
        model.ir_version = OX_IR_VERSION;
        model.opset_import = opsets;
        model.n_opset_import = 1;
        model.producer_name = "kiln";
        model.producer_version = KILN_VERSION;
        model.doc_string = "Exported by Kiln: input NHWC [N, H, W, C] as Kiln takes it; weights as initializers";
        graph.name = m->name;
        graph.node = e.nodes;
        graph.n_node = (size_t)e.n_nodes;
        graph.initializer = e.inits;
        graph.n_initializer = (size_t)e.n_inits;
        graph.input = &in_vi;
        graph.n_input = 1;
        graph.output = &out_vi;
        graph.n_output = 1;
        model.graph = &graph;
        st = ox_model_write(&model, path);
    } else st = e.st;
    kiln_free(vals);
    kiln_free(e.nodes);
    kiln_free(e.inits);
    ox_arena_free(&e.a);
    return st;
}
