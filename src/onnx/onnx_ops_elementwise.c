/* ONNX elementwise ops on Kiln's: unary activations and math, binary ops with ONNX (numpy)
 * broadcasting, variadic Sum / Mean / Max / Min, Clip, Pow with a constant exponent, Cast, Equal.
 * Elementwise ops keep their input's layout; binary ones bring both sides to one layout (the
 * larger side's) and a lower-rank side to the same rank first (leading 1s, as ONNX broadcasts). */
#include <math.h>
#include <string.h>
#include "onnx/onnx_ops.h"
#include "ops/op.h"

/* A node with its layout and logical shape. */
typedef struct opnd { kiln_node *node; int perm[KILN_MAX_DIMS]; kiln_shape shape; kiln_dtype dtype; } opnd;

static bool opnd_of(ox_importer *im, ox_val *v, opnd *o) {
    o->node = ox_node_any(im, v, o->perm);
    o->shape = v->shape;
    o->dtype = v->dtype;
    return o->node != NULL;
}

static opnd opnd_node(kiln_node *x, const int *perm) {
    opnd o = { .node = x };
    if (!x) return o;                  /* a builder failed: the graph's error says why */
    o.shape = kiln_node_shape(x);
    o.dtype = kiln_node_dtype(x);
    kiln_shape s = o.shape;
    for (int j = 0; j < s.rank; j++) { o.perm[j] = perm ? perm[j] : j; o.shape.dim[o.perm[j]] = s.dim[j]; }
    return o;
}

/* The ONNX (numpy) broadcast of shapes a and b into *out; false after an error naming the inputs
 * and both shapes. */
static bool broadcast(ox_importer *im, const char *an, kiln_shape a, const char *bn, kiln_shape b, kiln_shape *out) {
    int r = a.rank > b.rank ? a.rank : b.rank;
    kiln_shape s = { .rank = r };
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a.rank), ib = i - (r - b.rank);
        int64_t da = ia >= 0 ? a.dim[ia] : 1, db = ib >= 0 ? b.dim[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char x[96], y[96];
            ox_fail(im, KILN_SHAPE_MISMATCH, "inputs '%s' %s and '%s' %s do not broadcast (dimension %d of the result: %lld vs %lld)", an,
                    kiln_shape_str(a, x, sizeof x), bn, kiln_shape_str(b, y, sizeof y), i, (long long)da, (long long)db);
            return false;
        }
        s.dim[i] = da == 1 ? db : da;
    }
    *out = s;
    return true;
}

/* o's node in layout want (same rank). */
static kiln_node *as_layout(ox_importer *im, const opnd *o, const int *want) {
    int r = o->shape.rank, t[KILN_MAX_DIMS];
    bool same = true;
    for (int i = 0; i < r; i++) { t[i] = ox_perm_find(o->perm, r, want[i]); same &= t[i] == i; }
    return same ? o->node : kiln_transpose(ox_graph(im), o->node, t);
}

/* a and b as nodes of one rank in one layout *perm, ready for Kiln's (numpy) broadcasting. */
static bool align2(ox_importer *im, const opnd *a, const opnd *b, kiln_node **na, kiln_node **nb, int *perm) {
    *na = *nb = NULL;
    if (!a->node || !b->node) return false;
    int r = a->shape.rank > b->shape.rank ? a->shape.rank : b->shape.rank;
    const opnd *big = a->shape.rank == r ? a : b;
    if (b->shape.rank == r && a->shape.rank == r && kiln_shape_numel(b->shape) > kiln_shape_numel(a->shape)) big = b;
    memcpy(perm, big->perm, sizeof big->perm);
    const opnd *side[2] = { a, b };
    kiln_node **outs[2] = { na, nb };
    for (int k = 0; k < 2; k++) {
        const opnd *o = side[k];
        if (o->shape.rank == r) { *outs[k] = as_layout(im, o, perm); continue; }
        int ident[KILN_MAX_DIMS];
        ox_perm_ident(ident, o->shape.rank);
        kiln_node *x = as_layout(im, o, ident);
        if (!x) return false;
        kiln_shape s = { .rank = r };
        int lead = r - o->shape.rank;
        for (int i = 0; i < r; i++) s.dim[i] = i < lead ? 1 : o->shape.dim[i - lead];
        x = kiln_reshape(ox_graph(im), x, s);
        opnd wide = opnd_node(x, NULL);
        *outs[k] = x ? as_layout(im, &wide, perm) : NULL;
        if (!*outs[k]) return false;
    }
    return *na && *nb;
}

typedef kiln_node *(*bin_fn)(kiln_graph *, kiln_node *, kiln_node *);

static bool apply2(ox_importer *im, bin_fn f, const opnd *a, const opnd *b, opnd *out) {
    kiln_node *na, *nb;
    int perm[KILN_MAX_DIMS];
    if (!align2(im, a, b, &na, &nb, perm)) return false;
    *out = opnd_node(f(ox_graph(im), na, nb), perm);
    return out->node != NULL;
}

/* ---- binary ---- */
static bin_fn bin_of(const char *t) {
    if (!strcmp(t, "Add") || !strcmp(t, "Sum") || !strcmp(t, "Mean")) return kiln_add;
    if (!strcmp(t, "Sub")) return kiln_sub;
    if (!strcmp(t, "Mul")) return kiln_mul;
    if (!strcmp(t, "Div")) return kiln_div;
    if (!strcmp(t, "Max")) return kiln_maximum;
    if (!strcmp(t, "Min")) return kiln_minimum;
    return NULL;
}

/* Shape arithmetic on known values: numpy broadcasting over doubles (int64 shapes stay exact). */
static kiln_tensor *fold2(ox_importer *im, const char *t, const kiln_tensor *a, const kiln_tensor *b, bool quiet) {
    int r = a->shape.rank > b->shape.rank ? a->shape.rank : b->shape.rank;
    kiln_shape s = { .rank = r }, sa = { .rank = r }, sb = { .rank = r };
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->shape.rank), ib = i - (r - b->shape.rank);
        sa.dim[i] = ia >= 0 ? a->shape.dim[ia] : 1;
        sb.dim[i] = ib >= 0 ? b->shape.dim[ib] : 1;
        if (sa.dim[i] != sb.dim[i] && sa.dim[i] != 1 && sb.dim[i] != 1) return NULL;
        s.dim[i] = sa.dim[i] == 1 ? sb.dim[i] : sa.dim[i];
    }
    kiln_tensor *o = ox_host_new(im, a->dtype, s, quiet);
    if (!o) return NULL;
    int64_t n = kiln_shape_numel(s), idx[KILN_MAX_DIMS] = { 0 };
    bool is_int = !kiln_dtype_is_float(a->dtype);
    for (int64_t k = 0; k < n; k++) {
        int64_t pa = 0, pb = 0;
        for (int i = 0; i < r; i++) {
            pa = pa * sa.dim[i] + (sa.dim[i] == 1 ? 0 : idx[i]);
            pb = pb * sb.dim[i] + (sb.dim[i] == 1 ? 0 : idx[i]);
        }
        double x = kiln_tensor_get(a, pa), y = kiln_tensor_get(b, pb), z;
        switch (t[0]) {
        case 'A': z = x + y; break;
        case 'S': z = x - y; break;
        case 'M': z = t[1] == 'u' ? x * y : t[1] == 'a' ? fmax(x, y) : fmin(x, y); break;
        default: z = is_int ? (y != 0 ? trunc(x / y) : 0) : x / y; break;
        }
        kiln_tensor_set(o, k, z);
        for (int i = r - 1; i >= 0; i--) { if (++idx[i] < s.dim[i]) break; idx[i] = 0; }
    }
    return o;
}

static kiln_status op_binary(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *a = ox_in(im, n, 0), *b = ox_in(im, n, 1);
    if (!a || !b) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs two inputs");
    if (a->dtype != b->dtype)
        return ox_fail(im, KILN_INVALID_ARGUMENT, "inputs '%s' (%s) and '%s' (%s) differ in element type", a->name, kiln_dtype_name(a->dtype), b->name, kiln_dtype_name(b->dtype));
    kiln_shape bs;
    if (!broadcast(im, a->name, a->shape, b->name, b->shape, &bs)) return ox_status(im);
    const kiln_tensor *ha = ox_static(im, a), *hb = ha ? ox_static(im, b) : NULL;
    bool fold = ha && hb && ox_foldable(im, a) && ox_foldable(im, b);
    kiln_tensor *h = ha && hb ? fold2(im, n->op_type, ha, hb, !fold) : NULL;       /* shape arithmetic, known now */
    if (ox_status(im)) return ox_status(im);
    if (h && fold) return ox_set_host(im, n, 0, h);
    if (!strcmp(n->op_type, "Div") && !kiln_dtype_is_float(a->dtype)) {
        kiln_tensor_free(h);
        return ox_fail(im, KILN_UNSUPPORTED, "integer division (%s inputs) is not a Kiln op", kiln_dtype_name(a->dtype));
    }
    opnd x, y, out;
    if (!opnd_of(im, a, &x) || !opnd_of(im, b, &y) || !apply2(im, bin_of(n->op_type), &x, &y, &out)) { kiln_tensor_free(h); return ox_graph_fail(im); }
    return ox_set_folded(im, n, 0, h, false, out.node, out.perm);
}

/* Sum, Mean, Max, Min over 1 or more inputs. */
static kiln_status op_variadic(ox_importer *im, const Onnx__NodeProto *n) {
    int k = ox_n_in(n);
    if (k < 1) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs at least one input");
    opnd acc, next;
    ox_val *first = ox_in(im, n, 0);
    kiln_shape s = first->shape;
    for (int i = 1; i < k; i++) {
        ox_val *v = ox_in(im, n, i);
        if (!v) return ox_fail(im, KILN_INVALID_ARGUMENT, "input %d is missing", i);
        if (!broadcast(im, i == 1 ? first->name : "the inputs before it", s, v->name, v->shape, &s)) return ox_status(im);
    }
    if (!opnd_of(im, first, &acc)) return ox_graph_fail(im);
    for (int i = 1; i < k; i++) {
        ox_val *v = ox_in(im, n, i);
        if (v->dtype != first->dtype) return ox_fail(im, KILN_INVALID_ARGUMENT, "inputs differ in element type (%s vs %s)", kiln_dtype_name(first->dtype), kiln_dtype_name(v->dtype));
        if (!opnd_of(im, v, &next) || !apply2(im, bin_of(n->op_type), &acc, &next, &acc)) return ox_graph_fail(im);
    }
    if (!strcmp(n->op_type, "Mean") && k > 1) {
        if (!kiln_dtype_is_float(first->dtype)) return ox_fail(im, KILN_UNSUPPORTED, "Mean of integer tensors");
        acc.node = kiln_div(ox_graph(im), acc.node, ox_scalar(im, first->dtype, k));
    }
    if (k == 1) return ox_alias(im, n, 0, first);
    return ox_set(im, n, 0, acc.node, acc.perm);
}

/* ---- unary ---- */
static kiln_node *sc(ox_importer *im, kiln_node *like, double v) { return ox_scalar(im, kiln_node_dtype(like), v); }

static kiln_node *unary_of(ox_importer *im, const Onnx__NodeProto *n, kiln_node *x) {
    kiln_graph *g = ox_graph(im);
    const char *t = n->op_type;
    if (!strcmp(t, "Relu")) return kiln_relu(g, x);
    if (!strcmp(t, "Sigmoid")) return kiln_sigmoid(g, x);
    if (!strcmp(t, "Tanh")) return kiln_tanh(g, x);
    if (!strcmp(t, "Exp")) return kiln_exp(g, x);
    if (!strcmp(t, "Log")) return kiln_log(g, x);
    if (!strcmp(t, "Sqrt")) return kiln_sqrt(g, x);
    if (!strcmp(t, "Neg")) return kiln_neg(g, x);
    if (!strcmp(t, "Abs")) return kiln_abs(g, x);
    if (!strcmp(t, "Erf")) return kiln_erf(g, x);
    if (!strcmp(t, "Softplus")) return kiln_softplus(g, x);
    if (!strcmp(t, "Reciprocal")) return kiln_div(g, sc(im, x, 1), x);
    if (!strcmp(t, "Softsign")) return kiln_div(g, x, kiln_add(g, sc(im, x, 1), kiln_abs(g, x)));
    if (!strcmp(t, "Elu")) return kiln_elu(g, x, ox_attr_float(n, "alpha", 1.0));
    if (!strcmp(t, "LeakyRelu")) return kiln_leaky_relu(g, x, ox_attr_float(n, "alpha", 0.01));
    if (!strcmp(t, "Selu"))
        return kiln_mul(g, kiln_elu(g, x, ox_attr_float(n, "alpha", 1.67326319217681884765625)),
                        sc(im, x, ox_attr_float(n, "gamma", 1.05070102214813232421875)));
    if (!strcmp(t, "Celu")) {        /* max(0, x) + min(0, a (exp(x / a) - 1)) = a elu(x / a) */
        double a = ox_attr_float(n, "alpha", 1.0);
        return kiln_mul(g, kiln_elu(g, kiln_div(g, x, sc(im, x, a)), 1.0), sc(im, x, a));
    }
    if (!strcmp(t, "HardSigmoid") || !strcmp(t, "HardSwish")) {
        bool swish = t[4] == 'S' && t[5] == 'w';
        double a = swish ? 1.0 / 6 : ox_attr_float(n, "alpha", 0.2), b = swish ? 0.5 : ox_attr_float(n, "beta", 0.5);
        kiln_node *h = kiln_maximum(g, kiln_minimum(g, kiln_add(g, kiln_mul(g, x, sc(im, x, a)), sc(im, x, b)), sc(im, x, 1)), sc(im, x, 0));
        return swish ? kiln_mul(g, x, h) : h;
    }
    if (!strcmp(t, "Sign")) return kiln_node_new(g, KILN_OP_SIGN, &x, 1, NULL);      /* no public builder: no gradient */
    return NULL;
}

static kiln_status op_unary(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *v = ox_in(im, n, 0);
    if (!v) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs an input");
    const kiln_tensor *hv = !strcmp(n->op_type, "Neg") || !strcmp(n->op_type, "Abs") ? ox_static(im, v) : NULL;
    bool fold = hv && ox_foldable(im, v);
    kiln_tensor *h = hv ? ox_host_new(im, hv->dtype, hv->shape, !fold) : NULL;       /* shape arithmetic */
    if (ox_status(im)) return ox_status(im);
    for (int64_t i = 0; h && i < kiln_shape_numel(h->shape); i++)
        kiln_tensor_set(h, i, n->op_type[0] == 'N' ? -kiln_tensor_get(hv, i) : fabs(kiln_tensor_get(hv, i)));
    if (h && fold) return ox_set_host(im, n, 0, h);
    int perm[KILN_MAX_DIMS];
    kiln_node *x = ox_node_any(im, v, perm);
    if (!x) { kiln_tensor_free(h); return ox_graph_fail(im); }
    return ox_set_folded(im, n, 0, h, false, unary_of(im, n, x), perm);
}

static kiln_status op_prelu(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *a = ox_in(im, n, 0), *s = ox_in(im, n, 1);
    if (!a || !s) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs X and slope");
    /* opset 6 and before: a slope of C values is per channel (axis 1), not numpy-broadcast
     * (PyTorch's exported nn.PReLU(num_parameters=C)) */
    bool per_channel = ox_opset(im) < 7 && s->shape.rank == 1 && s->shape.dim[0] > 1 && a->shape.rank >= 2 && s->shape.dim[0] == a->shape.dim[1];
    kiln_shape ss = s->shape;
    if (per_channel) {
        ss = (kiln_shape){ a->shape.rank - 1, { s->shape.dim[0] } };
        for (int i = 1; i < ss.rank; i++) ss.dim[i] = 1;
    }
    kiln_shape bs;
    if (!broadcast(im, a->name, a->shape, s->name, ss, &bs)) return ox_status(im);
    if (!kiln_shape_equal(bs, a->shape)) {
        char x1[96], x2[96];
        return ox_fail(im, KILN_SHAPE_MISMATCH, "slope '%s' %s does not broadcast to X '%s' %s", s->name, kiln_shape_str(s->shape, x1, sizeof x1),
                       a->name, kiln_shape_str(a->shape, x2, sizeof x2));
    }
    opnd x, sl;
    kiln_node *nx, *ns;
    int perm[KILN_MAX_DIMS];
    if (!opnd_of(im, a, &x) || !opnd_of(im, s, &sl)) return ox_graph_fail(im);
    if (per_channel) {
        int ident[KILN_MAX_DIMS];
        ox_perm_ident(ident, ss.rank);
        sl = opnd_node(kiln_reshape(ox_graph(im), sl.node, ss), ident);
        sl.shape = ss;
        sl.dtype = s->dtype;
    }
    if (!align2(im, &x, &sl, &nx, &ns, perm)) return ox_graph_fail(im);
    kiln_graph *g = ox_graph(im);      /* relu(x) - slope relu(-x) */
    return ox_set(im, n, 0, kiln_sub(g, kiln_relu(g, nx), kiln_mul(g, ns, kiln_relu(g, kiln_neg(g, nx)))), perm);
}

/* ---- Clip, Pow ---- */
/* Input i of n as one number applied to every element of x: known while building, all its values
 * equal, and broadcasting it leaves x's shape as it is (else ONNX's result would have another). */
static kiln_status scalar_input(ox_importer *im, const Onnx__NodeProto *n, const ox_val *x, int i, const char *what, bool *given, double *out) {
    ox_val *v = ox_in(im, n, i);
    *given = v != NULL;
    if (!v) return KILN_OK;
    kiln_shape bs;
    if (!broadcast(im, x->name, x->shape, v->name, v->shape, &bs)) return ox_status(im);
    if (!kiln_shape_equal(bs, x->shape)) {
        char a[96], b[96], c[96];
        return ox_fail(im, KILN_UNSUPPORTED, "%s '%s' %s would broadcast '%s' %s to %s; Kiln's %s takes one number for the whole tensor", what, v->name,
                       kiln_shape_str(v->shape, a, sizeof a), x->name, kiln_shape_str(x->shape, b, sizeof b), kiln_shape_str(bs, c, sizeof c), n->op_type);
    }
    const kiln_tensor *t = ox_static(im, v);
    if (!t) return ox_need_static(im, v, what);
    int64_t k = kiln_shape_numel(t->shape);
    if (k < 1) return ox_fail(im, KILN_INVALID_ARGUMENT, "%s '%s' is empty", what, v->name);
    *out = kiln_tensor_get(t, 0);
    for (int64_t j = 1; j < k; j++)
        if (kiln_tensor_get(t, j) != *out) return ox_fail(im, KILN_UNSUPPORTED, "%s '%s' has several different values; Kiln takes one number", what, v->name);
    return KILN_OK;
}

static kiln_status op_clip(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *v = ox_in(im, n, 0);
    bool has_lo = false, has_hi = false;
    double lo = -INFINITY, hi = INFINITY;
    if (ox_opset(im) < 11) {
        has_lo = ox_attr(n, "min") != NULL;
        has_hi = ox_attr(n, "max") != NULL;
        lo = ox_attr_float(n, "min", lo);
        hi = ox_attr_float(n, "max", hi);
    } else if (scalar_input(im, n, v, 1, "min", &has_lo, &lo) || scalar_input(im, n, v, 2, "max", &has_hi, &hi)) return ox_status(im);
    int perm[KILN_MAX_DIMS];
    kiln_node *x = ox_node_any(im, v, perm);
    kiln_graph *g = ox_graph(im);
    if (x && has_lo) x = kiln_maximum(g, x, sc(im, x, lo));
    if (x && has_hi) x = kiln_minimum(g, x, sc(im, x, hi));
    return ox_set(im, n, 0, x, perm);
}

static kiln_status op_pow(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *v = ox_in(im, n, 0);
    bool given;
    double e = 1;
    if (!ox_in(im, n, 1)) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs an exponent");
    if (scalar_input(im, n, v, 1, "exponent", &given, &e)) return ox_status(im);
    int perm[KILN_MAX_DIMS];
    kiln_node *x = ox_node_any(im, v, perm);
    return ox_set(im, n, 0, x ? kiln_pow(ox_graph(im), x, e) : NULL, perm);
}

/* ---- Cast, CastLike, Equal ---- */
static kiln_status cast_to(ox_importer *im, const Onnx__NodeProto *n, ox_val *v, int32_t to) {
    kiln_dtype dt;
    if (!ox_dtype_of(to, &dt)) return ox_fail(im, KILN_UNSUPPORTED, "casting to %s: an element type Kiln lacks", ox_type_name(to));
    if (dt == v->dtype) return ox_alias(im, n, 0, v);
    const kiln_tensor *hv = ox_static(im, v);
    bool fold = hv && ox_foldable(im, v);
    kiln_tensor *h = hv ? ox_host_new(im, dt, hv->shape, !fold) : NULL;
    if (ox_status(im)) return ox_status(im);
    for (int64_t i = 0; h && i < kiln_shape_numel(hv->shape); i++) kiln_tensor_set(h, i, kiln_tensor_get(hv, i));
    if (h && fold) return ox_set_host(im, n, 0, h);
    int perm[KILN_MAX_DIMS];
    kiln_node *x = ox_node_any(im, v, perm);
    return ox_set_folded(im, n, 0, h, false, x ? kiln_cast(ox_graph(im), x, dt) : NULL, perm);
}

static kiln_status op_cast(ox_importer *im, const Onnx__NodeProto *n) {
    if (!ox_attr(n, "to")) return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'to' is missing");
    if (ox_attr_int(n, "saturate", 1) != 1) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'saturate' = 0");
    int64_t to;
    if (!ox_attr_int_in(im, n, "to", 0, 0, INT32_MAX, &to)) return ox_status(im);
    return cast_to(im, n, ox_in(im, n, 0), (int32_t)to);
}

static kiln_status op_cast_like(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *like = ox_in(im, n, 1);
    if (!like) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs target_type");
    return cast_to(im, n, ox_in(im, n, 0), ox_onnx_type(like->dtype));
}

static kiln_status op_equal(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *a = ox_in(im, n, 0), *b = ox_in(im, n, 1);
    if (!a || !b) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs two inputs");
    kiln_shape bs;
    if (!broadcast(im, a->name, a->shape, b->name, b->shape, &bs)) return ox_status(im);
    opnd x, y, out;
    if (!opnd_of(im, a, &x) || !opnd_of(im, b, &y) || !apply2(im, kiln_equal, &x, &y, &out)) return ox_graph_fail(im);
    return ox_set(im, n, 0, out.node, out.perm);
}

const ox_op ox_ops_elementwise[] = {
    { "Add", op_binary, "", 0 }, { "Sub", op_binary, "", 0 }, { "Mul", op_binary, "", 0 }, { "Div", op_binary, "", 0 },
    { "Sum", op_variadic, "", 0 }, { "Mean", op_variadic, "", 0 }, { "Max", op_variadic, "", 0 }, { "Min", op_variadic, "", 0 },
    { "Relu", op_unary, "", OX_FLOAT }, { "Sigmoid", op_unary, "", OX_FLOAT }, { "Tanh", op_unary, "", OX_FLOAT },
    { "Exp", op_unary, "", OX_FLOAT }, { "Log", op_unary, "", OX_FLOAT }, { "Sqrt", op_unary, "", OX_FLOAT },
    { "Neg", op_unary, "", 0 }, { "Abs", op_unary, "", 0 }, { "Sign", op_unary, "", 0 }, { "Erf", op_unary, "", OX_FLOAT },
    { "Softplus", op_unary, "", OX_FLOAT }, { "Softsign", op_unary, "", OX_FLOAT }, { "Reciprocal", op_unary, "", OX_FLOAT },
    { "Elu", op_unary, "alpha", OX_FLOAT }, { "LeakyRelu", op_unary, "alpha", OX_FLOAT }, { "Selu", op_unary, "alpha,gamma", OX_FLOAT },
    { "Celu", op_unary, "alpha", OX_FLOAT }, { "HardSigmoid", op_unary, "alpha,beta", OX_FLOAT }, { "HardSwish", op_unary, "", OX_FLOAT },
    { "PRelu", op_prelu, "", OX_FLOAT },
    { "Clip", op_clip, "min,max", 0 },
    { "Pow", op_pow, "", OX_FLOAT },
    { "Cast", op_cast, "to,saturate", OX_ANY }, { "CastLike", op_cast_like, "saturate", OX_ANY },
    { "Equal", op_equal, "", OX_ANY },
    { NULL },
};
