/* ONNX shape and data-movement ops: Identity, Flatten, Reshape, Squeeze, Unsqueeze, Transpose
 * (a change of layout, no op), Concat, Split, Slice, Pad, Expand, Tile, Gather, DepthToSpace,
 * SpaceToDepth; values known while building: Shape, Size, Constant, ConstantOfShape, Range (and
 * Reshape, Concat, Gather, Slice... of such values, folded on the host so shape arithmetic never
 * becomes ops); reductions and ArgMax / ArgMin over any layout. */
#include <math.h>
#include <string.h>
#include "onnx/onnx_ops.h"
#include "ops/op.h"

/* t's values in shape s (same count); quiet: only a copy known alongside a graph value. */
static kiln_tensor *host_copy(ox_importer *im, const kiln_tensor *t, kiln_shape s, bool quiet) {
    kiln_tensor *o = ox_host_new(im, t->dtype, s, quiet);
    if (o && kiln_tensor_nbytes(o)) memcpy(o->data, t->data, kiln_tensor_nbytes(o));
    return o;
}

/* v's values in a new shape (same count): a host copy when foldable, else a reshape. */
static kiln_status reshaped(ox_importer *im, const Onnx__NodeProto *n, ox_val *v, kiln_shape s) {
    if (kiln_shape_numel(s) != kiln_shape_numel(v->shape)) {
        char a[96], b[96];
        return ox_fail(im, KILN_SHAPE_MISMATCH, "cannot reshape '%s' %s to %s", v->name, kiln_shape_str(v->shape, a, sizeof a), kiln_shape_str(s, b, sizeof b));
    }
    const kiln_tensor *hv = ox_static(im, v);
    bool fold = hv && ox_foldable(im, v);
    kiln_tensor *h = hv ? host_copy(im, hv, s, !fold) : NULL;
    if (ox_status(im)) return ox_status(im);
    if (h && fold) return ox_set_host(im, n, 0, h);
    kiln_node *x = ox_node(im, v);
    return ox_set_folded(im, n, 0, h, false, x ? kiln_reshape(ox_graph(im), x, s) : NULL, NULL);
}

static kiln_status op_identity(ox_importer *im, const Onnx__NodeProto *n) { return ox_alias(im, n, 0, ox_in(im, n, 0)); }

static kiln_status op_flatten(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank;
    int64_t axis = ox_attr_int(n, "axis", 1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r) return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'axis' %lld is out of range for rank %d", (long long)ox_attr_int(n, "axis", 1), r);
    int64_t a = 1, b = 1;
    for (int i = 0; i < r; i++) *(i < axis ? &a : &b) *= x->shape.dim[i];
    return reshaped(im, n, x, KILN_SHAPE(a, b));
}

static kiln_status op_reshape(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *sv = ox_in(im, n, 1);
    int64_t t[KILN_MAX_DIMS + 1];
    int k;
    if (ox_opset(im) < 5) k = ox_attr_ints_in(im, n, "shape", t, KILN_MAX_DIMS + 1, INT64_MIN, INT64_MAX);
    else if (!sv) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs input 'shape'");
    else k = ox_static_ints(im, n, sv, "shape", t, KILN_MAX_DIMS + 1);
    if (k < 0) return k == -2 || !ox_status(im) ? ox_fail(im, KILN_UNSUPPORTED, "shape has more than %d dimensions", KILN_MAX_DIMS) : ox_status(im);
    if (k > KILN_MAX_DIMS) return ox_fail(im, KILN_UNSUPPORTED, "shape has %d dimensions, more than Kiln's %d", k, KILN_MAX_DIMS);
    bool allowzero = ox_attr_int(n, "allowzero", 0) != 0;
    kiln_shape s = { .rank = k };
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < k; i++) {
        if (t[i] == 0 && !allowzero) {
            if (i >= x->shape.rank) return ox_fail(im, KILN_INVALID_ARGUMENT, "shape[%d] = 0 copies a dimension '%s' does not have", i, x->name);
            s.dim[i] = x->shape.dim[i];
        } else if (t[i] == -1) {
            if (infer >= 0) return ox_fail(im, KILN_INVALID_ARGUMENT, "shape has two -1 dimensions");
            infer = i;
            continue;
        } else if (t[i] < 0) return ox_fail(im, KILN_INVALID_ARGUMENT, "shape[%d] = %lld", i, (long long)t[i]);
        else s.dim[i] = t[i];
        if (__builtin_mul_overflow(known, s.dim[i], &known)) return ox_fail(im, KILN_INVALID_ARGUMENT, "the size of shape overflows");
    }
    if (infer >= 0) s.dim[infer] = known ? kiln_shape_numel(x->shape) / known : 0;
    return reshaped(im, n, x, s);
}

/* The axes of Squeeze / Unsqueeze: an attribute before opset 13, an input since. */
static int axes_of(ox_importer *im, const Onnx__NodeProto *n, int64_t *ax) {
    if (ox_opset(im) < 13) return ox_attr_ints_in(im, n, "axes", ax, KILN_MAX_DIMS, INT64_MIN, INT64_MAX);
    ox_val *a = ox_in(im, n, 1);
    return a ? ox_static_ints(im, n, a, "axes", ax, KILN_MAX_DIMS) : -1;
}

static kiln_status op_squeeze(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int64_t ax[KILN_MAX_DIMS];
    int k = axes_of(im, n, ax), r = x->shape.rank;
    if (ox_status(im)) return ox_status(im);
    bool drop[KILN_MAX_DIMS] = { false };
    for (int i = 0; i < k; i++) {
        int a = ox_axis(im, ax[i], r, "axis");
        if (a < 0) return ox_status(im);
        if (x->shape.dim[a] != 1) return ox_fail(im, KILN_INVALID_ARGUMENT, "axis %d of '%s' has size %lld, not 1", a, x->name, (long long)x->shape.dim[a]);
        drop[a] = true;
    }
    kiln_shape s = { 0 };
    for (int i = 0; i < r; i++)
        if (!(k < 0 ? x->shape.dim[i] == 1 : drop[i])) s.dim[s.rank++] = x->shape.dim[i];
    return reshaped(im, n, x, s);
}

static kiln_status op_unsqueeze(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int64_t ax[KILN_MAX_DIMS];
    int k = axes_of(im, n, ax);
    if (ox_status(im)) return ox_status(im);
    if (k < 0) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs axes");
    int r = x->shape.rank + k;
    if (r > KILN_MAX_DIMS) return ox_fail(im, KILN_UNSUPPORTED, "the result has rank %d, more than Kiln's %d", r, KILN_MAX_DIMS);
    bool one[KILN_MAX_DIMS] = { false };
    for (int i = 0; i < k; i++) {
        int a = ox_axis(im, ax[i], r, "axis");
        if (a < 0) return ox_status(im);
        if (one[a]) return ox_fail(im, KILN_INVALID_ARGUMENT, "axis %d is given twice", a);
        one[a] = true;
    }
    kiln_shape s = { .rank = r };
    for (int i = 0, j = 0; i < r; i++) s.dim[i] = one[i] ? 1 : x->shape.dim[j++];
    return reshaped(im, n, x, s);
}

static kiln_status op_transpose(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank;
    int64_t tp[KILN_MAX_DIMS];
    int k = ox_attr_ints_in(im, n, "perm", tp, KILN_MAX_DIMS, INT64_MIN, INT64_MAX);
    if (k == -1) { for (int i = 0; i < r; i++) tp[i] = r - 1 - i; k = r; }
    if (k != r) return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'perm' has %d values for rank %d", k, r);
    int inv[KILN_MAX_DIMS], perm[KILN_MAX_DIMS];
    bool seen[KILN_MAX_DIMS] = { false };
    for (int i = 0; i < r; i++) {
        if (tp[i] < 0 || tp[i] >= r || seen[tp[i]]) return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'perm' is not a permutation");
        seen[tp[i]] = true;
        inv[tp[i]] = i;
        perm[i] = (int)tp[i];
    }
    const kiln_tensor *hv = ox_static(im, x);
    bool fold = hv && ox_foldable(im, x);
    kiln_tensor *h = hv ? ox_host_new(im, hv->dtype, ox_permuted_shape(hv->shape, perm), !fold) : NULL;
    if (ox_status(im)) return ox_status(im);
    if (h) ox_permute_into(hv, perm, h);
    if (h && fold) return ox_set_host(im, n, 0, h);
    int p[KILN_MAX_DIMS], q[KILN_MAX_DIMS];
    kiln_node *xn = ox_node_any(im, x, p);
    for (int j = 0; j < r; j++) q[j] = inv[p[j]];        /* no op: the node's axis j holds output axis inv[p[j]] */
    return ox_set_folded(im, n, 0, h, false, xn, q);
}

/* ---- Concat ---- */
/* The inputs (their shapes checked equal but on axis, s their concatenation). */
static kiln_tensor *host_concat(ox_importer *im, const kiln_tensor *const *ts, int k, int axis, kiln_shape s, bool quiet) {
    kiln_tensor *o = ox_host_new(im, ts[0]->dtype, s, quiet);
    if (!o) return NULL;
    int64_t outer = 1, es = (int64_t)kiln_dtype_size(o->dtype);
    for (int d = 0; d < axis; d++) outer *= s.dim[d];
    char *dst = o->data;
    for (int64_t q = 0; q < outer; q++)
        for (int i = 0; i < k; i++) {
            int64_t chunk = kiln_shape_numel(ts[i]->shape) / (outer ? outer : 1) * es;
            if (chunk > 0) memcpy(dst, (const char *)ts[i]->data + q * chunk, (size_t)chunk);
            dst += chunk;
        }
    return o;
}

static kiln_status op_concat(ox_importer *im, const Onnx__NodeProto *n) {
    int k = ox_n_in(n);
    ox_val *first = ox_in(im, n, 0);
    if (k < 1 || !first) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs inputs");
    int r = first->shape.rank;
    int a = ox_axis(im, ox_attr_int(n, "axis", 0), r, "attribute 'axis'");
    if (a < 0) return ox_status(im);
    const kiln_tensor *hs[64];
    bool known = k <= 64, fold = true;
    kiln_shape s = first->shape;       /* the result */
    for (int i = 0; i < k; i++) {
        ox_val *v = ox_in(im, n, i);
        if (!v || v->shape.rank != r || v->dtype != first->dtype) return ox_fail(im, KILN_INVALID_ARGUMENT, "input %d differs in rank or element type", i);
        for (int d = 0; d < r; d++) {
            char b0[96], bi[96];
            if (d != a && v->shape.dim[d] != first->shape.dim[d])
                return ox_fail(im, KILN_SHAPE_MISMATCH, "input %d '%s' %s and input 0 '%s' %s differ in dimension %d (only axis %d may differ)", i, v->name,
                               kiln_shape_str(v->shape, bi, sizeof bi), first->name, kiln_shape_str(first->shape, b0, sizeof b0), d, a);
        }
        if (i && __builtin_add_overflow(s.dim[a], v->shape.dim[a], &s.dim[a])) return ox_fail(im, KILN_INVALID_ARGUMENT, "the result's size overflows");
        if (known && !(hs[i] = ox_static(im, v))) known = false;
        fold = fold && ox_foldable(im, v);
    }
    if (k == 1) return ox_alias(im, n, 0, first);
    kiln_tensor *h = known ? host_concat(im, hs, k, a, s, !fold) : NULL;
    if (ox_status(im)) return ox_status(im);
    if (h && fold) return ox_set_host(im, n, 0, h);
    kiln_node **xs = kiln_calloc((size_t)k, sizeof *xs);
    if (!xs) { kiln_tensor_free(h); return ox_fail(im, KILN_OUT_OF_MEMORY, "out of host memory"); }
    int p[KILN_MAX_DIMS];
    ox_perm_ident(p, r);
    for (int i = 0; i < k; i++) if (ox_in(im, n, i)->node) { memcpy(p, ox_in(im, n, i)->perm, sizeof p); break; }
    bool ok = true;
    for (int i = 0; i < k && ok; i++) ok = (xs[i] = ox_node_as(im, ox_in(im, n, i), p, false)) != NULL;
    kiln_node *y = ok ? kiln_concat(ox_graph(im), xs, k, ox_perm_find(p, r, a)) : NULL;
    kiln_free(xs);
    return ox_set_folded(im, n, 0, h, false, y, p);
}

/* ---- Split, Slice ---- */
static kiln_status op_split(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank, outs = (int)n->n_output;
    int a = ox_axis(im, ox_attr_int(n, "axis", 0), r, "attribute 'axis'");
    if (a < 0) return ox_status(im);
    int64_t sizes[64];
    int k = -1;
    if (outs > 64) return ox_fail(im, KILN_UNSUPPORTED, "more than 64 outputs");
    if (ox_opset(im) < 13) k = ox_attr_ints_in(im, n, "split", sizes, 64, INT64_MIN, INT64_MAX);
    else if (ox_in(im, n, 1)) k = ox_static_ints(im, n, ox_in(im, n, 1), "split", sizes, 64);
    if (ox_status(im)) return ox_status(im);
    if (outs < 1) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs outputs");
    int64_t dim = x->shape.dim[a], total = 0;
    if (k < 0) {
        if (dim % outs) return ox_fail(im, KILN_UNSUPPORTED, "%lld does not split into %d equal parts", (long long)dim, outs);
        for (int i = 0; i < outs; i++) sizes[i] = dim / outs;
        k = outs;
    }
    if (k != outs) return ox_fail(im, KILN_INVALID_ARGUMENT, "'split' has %d sizes for %d outputs", k, outs);
    for (int i = 0; i < k; i++)
        if (sizes[i] < 0 || __builtin_add_overflow(total, sizes[i], &total))
            return ox_fail(im, KILN_INVALID_ARGUMENT, "split size %d is %lld (negative, or the sizes overflow)", i, (long long)sizes[i]);
    if (total != dim) return ox_fail(im, KILN_INVALID_ARGUMENT, "the split sizes add up to %lld, axis %d has %lld", (long long)total, a, (long long)dim);
    int p[KILN_MAX_DIMS];
    kiln_node *xn = ox_node_any(im, x, p);
    if (!xn) return ox_graph_fail(im);
    int pa = ox_perm_find(p, r, a);
    int64_t off = 0;
    for (int i = 0; i < k; i++) {
        int64_t begin[KILN_MAX_DIMS] = { 0 }, size[KILN_MAX_DIMS];
        kiln_shape ns = kiln_node_shape(xn);
        for (int j = 0; j < r; j++) size[j] = ns.dim[j];
        begin[pa] = off;
        size[pa] = sizes[i];
        off += sizes[i];
        if (!ox_has_out(n, i)) continue;
        kiln_status st = ox_set(im, n, i, kiln_slice(ox_graph(im), xn, begin, size), p);
        if (st) return st;
    }
    return KILN_OK;
}

static kiln_status op_slice(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank;
    int64_t st[KILN_MAX_DIMS], en[KILN_MAX_DIMS], ax[KILN_MAX_DIMS], sp[KILN_MAX_DIMS];
    int ks, ke, ka = -1, kp = -1;
    if (ox_opset(im) < 10) {
        ks = ox_attr_ints_in(im, n, "starts", st, KILN_MAX_DIMS, INT64_MIN, INT64_MAX);
        ke = ox_attr_ints_in(im, n, "ends", en, KILN_MAX_DIMS, INT64_MIN, INT64_MAX);
        ka = ox_attr_ints_in(im, n, "axes", ax, KILN_MAX_DIMS, INT64_MIN, INT64_MAX);
    } else {
        if (!ox_in(im, n, 1) || !ox_in(im, n, 2)) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs starts and ends");
        ks = ox_static_ints(im, n, ox_in(im, n, 1), "starts", st, KILN_MAX_DIMS);
        ke = ox_static_ints(im, n, ox_in(im, n, 2), "ends", en, KILN_MAX_DIMS);
        if (ox_in(im, n, 3)) ka = ox_static_ints(im, n, ox_in(im, n, 3), "axes", ax, KILN_MAX_DIMS);
        if (ox_in(im, n, 4)) kp = ox_static_ints(im, n, ox_in(im, n, 4), "steps", sp, KILN_MAX_DIMS);
    }
    if (ox_status(im)) return ox_status(im);
    if (ks < 0 || ks != ke || (ka >= 0 && ka != ks) || (kp >= 0 && kp != ks)) return ox_fail(im, KILN_INVALID_ARGUMENT, "starts, ends, axes and steps differ in length");
    int64_t begin[KILN_MAX_DIMS] = { 0 }, size[KILN_MAX_DIMS];
    for (int i = 0; i < r; i++) size[i] = x->shape.dim[i];
    for (int i = 0; i < ks; i++) {
        int a = ox_axis(im, ka >= 0 ? ax[i] : i, r, "axis");
        if (a < 0) return ox_status(im);
        if (kp >= 0 && sp[i] != 1) return ox_fail(im, KILN_UNSUPPORTED, "steps other than 1 (Kiln's Slice takes contiguous ranges)");
        int64_t d = x->shape.dim[a], b = st[i], e = en[i];
        if (b < 0) b += d;
        if (e < 0) e += d;
        b = b < 0 ? 0 : b > d ? d : b;
        e = e < 0 ? 0 : e > d ? d : e;
        begin[a] = b;
        size[a] = e > b ? e - b : 0;
    }
    const kiln_tensor *hv = r <= 1 ? ox_static(im, x) : NULL;
    kiln_tensor *h = NULL;
    if (hv) {       /* shape arithmetic */
        bool fold = ox_foldable(im, x) != NULL;
        h = ox_host_new(im, hv->dtype, r ? KILN_SHAPE(size[0]) : KILN_SCALAR, !fold);
        if (ox_status(im)) return ox_status(im);
        for (int64_t i = 0; h && i < (r ? size[0] : 1); i++) kiln_tensor_set(h, i, kiln_tensor_get(hv, begin[0] + i));
        if (h && fold) return ox_set_host(im, n, 0, h);
    }
    int p[KILN_MAX_DIMS];
    kiln_node *xn = ox_node_any(im, x, p);
    if (!xn) { kiln_tensor_free(h); return ox_graph_fail(im); }
    int64_t pb[KILN_MAX_DIMS], ps[KILN_MAX_DIMS];
    for (int j = 0; j < r; j++) { pb[j] = begin[p[j]]; ps[j] = size[p[j]]; }
    return ox_set_folded(im, n, 0, h, false, kiln_slice(ox_graph(im), xn, pb, ps), p);
}

/* ---- Pad, Expand, Tile ---- */
static kiln_status op_pad(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank;
    char mode[32];
    ox_attr_str(n, "mode", mode, sizeof mode);
    if (*mode && strcmp(mode, "constant")) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'mode' = '%s' (Kiln pads with a constant)", mode);
    int64_t pads[2 * KILN_MAX_DIMS];
    double value = 0;
    int k;
    if (ox_opset(im) < 11) {
        k = ox_attr_ints_in(im, n, "pads", pads, 2 * KILN_MAX_DIMS, INT64_MIN, INT64_MAX);
        value = ox_attr_float(n, "value", 0);
    } else {
        if (!ox_in(im, n, 1)) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs pads");
        if (ox_in(im, n, 3)) return ox_fail(im, KILN_UNSUPPORTED, "input 'axes'");
        k = ox_static_ints(im, n, ox_in(im, n, 1), "pads", pads, 2 * KILN_MAX_DIMS);
        ox_val *cv = ox_in(im, n, 2);
        if (cv) {
            const kiln_tensor *t = ox_static(im, cv);
            if (!t) return ox_need_static(im, cv, "constant_value");
            value = kiln_shape_numel(t->shape) ? kiln_tensor_get(t, 0) : 0;
        }
    }
    if (ox_status(im)) return ox_status(im);
    if (k != 2 * r) return ox_fail(im, KILN_INVALID_ARGUMENT, "pads has %d values for rank %d", k, r);
    int p[KILN_MAX_DIMS];
    kiln_node *xn = ox_node_any(im, x, p);
    if (!xn) return ox_graph_fail(im);
    int64_t kp[2 * KILN_MAX_DIMS];
    for (int j = 0; j < r; j++) {
        kp[2 * j] = pads[p[j]];
        kp[2 * j + 1] = pads[p[j] + r];
        if (kp[2 * j] < 0 || kp[2 * j + 1] < 0) return ox_fail(im, KILN_UNSUPPORTED, "negative pads (cropping)");
        int64_t d;
        if (__builtin_add_overflow(x->shape.dim[p[j]], kp[2 * j], &d) || __builtin_add_overflow(d, kp[2 * j + 1], &d))
            return ox_fail(im, KILN_INVALID_ARGUMENT, "pads %lld and %lld overflow the size of axis %d", (long long)kp[2 * j], (long long)kp[2 * j + 1], p[j]);
    }
    return ox_set(im, n, 0, kiln_pad(ox_graph(im), xn, kp, value), p);
}

static kiln_status op_expand(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *sv = ox_in(im, n, 1);
    if (!sv) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs shape");
    int64_t t[KILN_MAX_DIMS];
    int k = ox_static_ints(im, n, sv, "shape", t, KILN_MAX_DIMS);
    if (k < 0) return ox_status(im);
    int r = k > x->shape.rank ? k : x->shape.rank;
    kiln_shape in = { .rank = r }, out = { .rank = r };
    for (int i = 0; i < r; i++) {
        int ix = i - (r - x->shape.rank), it = i - (r - k);
        in.dim[i] = ix >= 0 ? x->shape.dim[ix] : 1;
        int64_t b = it >= 0 ? t[it] : 1;
        if (in.dim[i] != b && in.dim[i] != 1 && b != 1) return ox_fail(im, KILN_SHAPE_MISMATCH, "shape does not broadcast with '%s'", x->name);
        out.dim[i] = in.dim[i] == 1 ? b : in.dim[i];
        if (out.dim[i] < 1) return ox_fail(im, KILN_UNSUPPORTED, "shape[%d] = %lld: Kiln's tensors have at least one element", it, (long long)b);
    }
    if (kiln_shape_numel(out) == INT64_MAX) return ox_fail(im, KILN_INVALID_ARGUMENT, "the size of the result overflows");
    kiln_node *xn = ox_node(im, x);
    if (xn && in.rank != x->shape.rank) xn = kiln_reshape(ox_graph(im), xn, in);
    return ox_set(im, n, 0, xn ? kiln_broadcast_to(ox_graph(im), xn, out) : NULL, NULL);
}

static kiln_status op_tile(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *rv = ox_in(im, n, 1);
    if (!rv) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs repeats");
    int64_t rep[KILN_MAX_DIMS];
    int r = x->shape.rank, k = ox_static_ints(im, n, rv, "repeats", rep, KILN_MAX_DIMS);
    if (k < 0) return ox_status(im);
    if (k != r) return ox_fail(im, KILN_INVALID_ARGUMENT, "repeats has %d values for rank %d", k, r);
    kiln_shape out = x->shape;
    for (int i = 0; i < r; i++) {
        if (rep[i] < 1) return ox_fail(im, KILN_UNSUPPORTED, "repeats[%d] = %lld: below 1", i, (long long)rep[i]);
        if (__builtin_mul_overflow(out.dim[i], rep[i], &out.dim[i]))
            return ox_fail(im, KILN_INVALID_ARGUMENT, "repeats[%d] = %lld overflows the size of axis %d", i, (long long)rep[i], i);
    }
    if (kiln_shape_numel(out) == INT64_MAX) return ox_fail(im, KILN_INVALID_ARGUMENT, "the size of the result overflows");
    int p[KILN_MAX_DIMS];
    kiln_node *y = ox_node_any(im, x, p);
    kiln_graph *g = ox_graph(im);
    for (int j = 0; y && j < r; j++) {          /* node axis j: [before, 1, dim * after] broadcast to [before, c, dim * after] */
        int64_t c = rep[p[j]], before = 1, rest = 1;
        if (c == 1) continue;
        kiln_shape s = kiln_node_shape(y), o = s;
        for (int i = 0; i < r; i++) *(i < j ? &before : &rest) *= s.dim[i];
        y = kiln_reshape(g, y, KILN_SHAPE(before, 1, rest));
        y = kiln_broadcast_to(g, y, KILN_SHAPE(before, c, rest));
        o.dim[j] *= c;
        y = kiln_reshape(g, y, o);
    }
    return ox_set(im, n, 0, y, p);
}

/* ---- Resize / Upsample: nearest neighbour by whole factors (each element repeated) ---- */
static kiln_status op_resize(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    bool upsample = !strcmp(n->op_type, "Upsample");
    int r = x->shape.rank;
    char mode[32], ctm[40], nm[40];
    ox_attr_str(n, "mode", mode, sizeof mode);
    ox_attr_str(n, "coordinate_transformation_mode", ctm, sizeof ctm);
    ox_attr_str(n, "nearest_mode", nm, sizeof nm);
    if (*mode && strcmp(mode, "nearest")) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'mode' = '%s' (Kiln resizes by nearest neighbour only)", mode);
    /* which source cell output cell q*f + j reads: q for every j exactly when... */
    bool floor_like = upsample || !strcmp(nm, "floor");
    bool half = !*ctm || !strcmp(ctm, "half_pixel") || !strcmp(ctm, "pytorch_half_pixel");
    if (!upsample && !(half && strcmp(nm, "floor") && strcmp(nm, "ceil")) && !(!strcmp(ctm, "asymmetric") && floor_like))
        return ox_fail(im, KILN_UNSUPPORTED, "coordinate_transformation_mode '%s' with nearest_mode '%s' (Kiln repeats elements: half_pixel "
                       "with rounding, or asymmetric with floor)", *ctm ? ctm : "half_pixel", *nm ? nm : "round_prefer_floor");
    double f[KILN_MAX_DIMS];
    ox_val *sv = ox_in(im, n, upsample ? 1 : 2), *zv = upsample ? NULL : ox_in(im, n, 3);
    if (upsample && ox_opset(im) < 9) {
        const Onnx__AttributeProto *a = ox_attr(n, "scales");
        if (!a || (int)a->n_floats != r) return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'scales' needs %d values", r);
        for (int i = 0; i < r; i++) f[i] = a->floats[i];
    } else if (zv) {
        int64_t sz[KILN_MAX_DIMS];
        if (ox_static_ints(im, n, zv, "sizes", sz, KILN_MAX_DIMS) != r) return ox_status(im) ? ox_status(im) : ox_fail(im, KILN_INVALID_ARGUMENT, "sizes needs %d values", r);
        for (int i = 0; i < r; i++) f[i] = (double)sz[i] / (double)x->shape.dim[i];
    } else if (sv) {
        const kiln_tensor *t = ox_static(im, sv);
        if (!t) return ox_need_static(im, sv, "scales");
        if (kiln_shape_numel(t->shape) != r) return ox_fail(im, KILN_INVALID_ARGUMENT, "scales needs %d values", r);
        for (int i = 0; i < r; i++) f[i] = kiln_tensor_get(t, i);
    } else return ox_fail(im, KILN_INVALID_ARGUMENT, "needs scales or sizes");
    kiln_shape out = x->shape;
    for (int i = 0; i < r; i++) {
        if (!(f[i] >= 1 && f[i] <= INT32_MAX) || f[i] != floor(f[i])) return ox_fail(im, KILN_UNSUPPORTED, "scale %g on axis %d: Kiln resizes by whole factors >= 1", f[i], i);
        if (__builtin_mul_overflow(out.dim[i], (int64_t)f[i], &out.dim[i])) return ox_fail(im, KILN_INVALID_ARGUMENT, "scale %g overflows the size of axis %d", f[i], i);
    }
    if (kiln_shape_numel(out) == INT64_MAX) return ox_fail(im, KILN_INVALID_ARGUMENT, "the size of the result overflows");
    int p[KILN_MAX_DIMS];
    kiln_node *y = ox_node_any(im, x, p);
    kiln_graph *g = ox_graph(im);
    for (int j = 0; y && j < r; j++) {          /* node axis j: [before, 1, after] -> [before, f, after] */
        int64_t fj = (int64_t)f[p[j]];
        if (fj == 1) continue;
        kiln_shape s = kiln_node_shape(y), out = s;
        int64_t before = 1, after = 1;
        for (int i = 0; i < r; i++) *(i <= j ? &before : &after) *= s.dim[i];
        y = kiln_reshape(g, y, KILN_SHAPE(before, 1, after));
        y = kiln_broadcast_to(g, y, KILN_SHAPE(before, fj, after));
        out.dim[j] *= fj;
        y = kiln_reshape(g, y, out);
    }
    return ox_set(im, n, 0, y, p);
}

/* ---- Gather ---- */
static kiln_status op_gather(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0), *iv = ox_in(im, n, 1);
    if (!iv) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs indices");
    int r = x->shape.rank;
    int a = ox_axis(im, ox_attr_int(n, "axis", 0), r, "attribute 'axis'");
    if (a < 0) return ox_status(im);
    if (iv->dtype != KILN_I64 && iv->dtype != KILN_I32) return ox_fail(im, KILN_INVALID_ARGUMENT, "indices must be int32 or int64");
    int64_t d = x->shape.dim[a];
    const kiln_tensor *hi = ox_static(im, iv);
    kiln_tensor *idx = NULL;
    if (hi) {                          /* negative indices count from the end */
        idx = ox_host_new(im, KILN_I64, hi->shape, false);
        if (!idx) return ox_status(im);
        for (int64_t i = 0; idx && i < kiln_shape_numel(hi->shape); i++) {
            int64_t v = (int64_t)kiln_tensor_get(hi, i);
            if (v < -d || v >= d) { kiln_tensor_free(idx); return ox_fail(im, KILN_INVALID_ARGUMENT, "index %lld is out of range for size %lld", (long long)v, (long long)d); }
            ((int64_t *)idx->data)[i] = v < 0 ? v + d : v;
        }
        if (!idx) return ox_fail(im, KILN_OUT_OF_MEMORY, "out of host memory");
    }
    int q = iv->shape.rank, orank = r - 1 + q;
    if (orank > KILN_MAX_DIMS) { kiln_tensor_free(idx); return ox_fail(im, KILN_UNSUPPORTED, "the result has rank %d", orank); }
    kiln_shape os = { .rank = orank };
    for (int i = 0, k = 0; i < r; i++) {
        if (i == a) for (int j = 0; j < q; j++) os.dim[k++] = iv->shape.dim[j];
        else os.dim[k++] = x->shape.dim[i];
    }
    const kiln_tensor *hx = idx ? ox_static(im, x) : NULL;
    kiln_tensor *known = NULL;
    if (hx) {                          /* shape arithmetic: gather on the host */
        bool fold = ox_foldable(im, x) != NULL;
        kiln_tensor *o = ox_host_new(im, hx->dtype, os, !fold);
        if (ox_status(im)) { kiln_tensor_free(idx); return ox_status(im); }
        int64_t outer = 1, inner = 1, nidx = kiln_shape_numel(idx->shape), es = (int64_t)kiln_dtype_size(hx->dtype);
        for (int i = 0; i < a; i++) outer *= x->shape.dim[i];
        for (int i = a + 1; i < r; i++) inner *= x->shape.dim[i];
        for (int64_t o1 = 0; o && o1 < outer; o1++)
            for (int64_t j = 0; j < nidx; j++)
                memcpy((char *)o->data + ((o1 * nidx + j) * inner) * es,
                       (const char *)hx->data + ((o1 * d + ((int64_t *)idx->data)[j]) * inner) * es, (size_t)(inner * es));
        if (o && fold) { kiln_tensor_free(idx); return ox_set_host(im, n, 0, o); }
        known = o;
    }
    kiln_graph *g = ox_graph(im);
    kiln_node *in = idx ? kiln_constant(g, idx) : ox_node(im, iv);
    kiln_tensor_free(idx);
    /* axis a first, the rest flattened: rows gathered, then the index dims put back at a */
    int t[KILN_MAX_DIMS], k = 0;
    t[k++] = a;
    for (int i = 0; i < r; i++) if (i != a) t[k++] = i;
    kiln_node *xn = ox_node(im, x);
    if (!xn || !in) { kiln_tensor_free(known); return ox_graph_fail(im); }
    kiln_node *y = kiln_transpose(g, xn, t);
    int64_t rest = kiln_shape_numel(x->shape) / (d ? d : 1), nidx = kiln_shape_numel(iv->shape);
    y = kiln_reshape(g, y, KILN_SHAPE(d, rest));
    y = kiln_gather_rows(g, y, kiln_reshape(g, in, KILN_SHAPE(nidx)));
    kiln_shape ys = { .rank = orank };          /* [idx dims, other dims of x in order] */
    for (int j = 0; j < q; j++) ys.dim[j] = iv->shape.dim[j];
    for (int i = 0, m = q; i < r; i++) if (i != a) ys.dim[m++] = x->shape.dim[i];
    y = kiln_reshape(g, y, ys);
    int back[KILN_MAX_DIMS];                    /* out axis o: before a -> q + o; index dims; after -> same */
    for (int o = 0; o < orank; o++) back[o] = o < a ? q + o : o < a + q ? o - a : o;
    return ox_set_folded(im, n, 0, known, false, kiln_transpose(g, y, back), NULL);
}

/* ---- DepthToSpace, SpaceToDepth ---- */
static kiln_status op_depth_space(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    if (x->shape.rank != 4) return ox_fail(im, KILN_INVALID_ARGUMENT, "input must be [N, C, H, W]");
    int64_t b, N = x->shape.dim[0], C = x->shape.dim[1], H = x->shape.dim[2], W = x->shape.dim[3];
    char mode[8];
    ox_attr_str(n, "mode", mode, sizeof mode);
    if (!ox_attr_int_in(im, n, "blocksize", 0, 1, INT32_MAX, &b)) return ox_status(im);
    kiln_graph *g = ox_graph(im);
    kiln_node *y = ox_node(im, x);
    if (!y) return ox_graph_fail(im);
    if (!strcmp(n->op_type, "DepthToSpace")) {
        if (C % (b * b)) return ox_fail(im, KILN_SHAPE_MISMATCH, "channels %lld are not a multiple of blocksize^2", (long long)C);
        bool crd = !strcmp(mode, "CRD");
        if (*mode && !crd && strcmp(mode, "DCR")) return ox_fail(im, KILN_INVALID_ARGUMENT, "attribute 'mode' = '%s'", mode);
        kiln_shape s6 = crd ? (kiln_shape){ 6, { N, C / (b * b), b, b, H, W } } : (kiln_shape){ 6, { N, b, b, C / (b * b), H, W } };
        y = kiln_reshape(g, y, s6);
        y = kiln_transpose(g, y, crd ? (const int[]){ 0, 1, 4, 2, 5, 3 } : (const int[]){ 0, 3, 4, 1, 5, 2 });
        y = kiln_reshape(g, y, KILN_SHAPE(N, C / (b * b), H * b, W * b));
    } else {
        if (H % b || W % b) return ox_fail(im, KILN_SHAPE_MISMATCH, "height and width must be multiples of blocksize");
        y = kiln_reshape(g, y, (kiln_shape){ 6, { N, C, H / b, b, W / b, b } });
        y = kiln_transpose(g, y, (const int[]){ 0, 3, 5, 1, 2, 4 });
        y = kiln_reshape(g, y, KILN_SHAPE(N, C * b * b, H / b, W / b));
    }
    return ox_set(im, n, 0, y, NULL);
}

/* ---- values known while building ---- */
static kiln_status op_shape(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank;
    int64_t s = ox_attr_int(n, "start", 0), e = ox_attr_int(n, "end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    kiln_tensor *t = ox_host_new(im, KILN_I64, KILN_SHAPE(e > s ? e - s : 0), false);
    for (int64_t i = s; t && i < e; i++) ((int64_t *)t->data)[i - s] = x->shape.dim[i];
    return ox_set_host(im, n, 0, t);
}

static kiln_status op_size(ox_importer *im, const Onnx__NodeProto *n) {
    kiln_tensor *t = ox_host_new(im, KILN_I64, KILN_SCALAR, false);
    if (t) *(int64_t *)t->data = kiln_shape_numel(ox_in(im, n, 0)->shape);
    return ox_set_host(im, n, 0, t);
}

static kiln_status op_constant(ox_importer *im, const Onnx__NodeProto *n) {
    const Onnx__AttributeProto *a;
    kiln_tensor *t = NULL;
    if ((a = ox_attr(n, "value")) && a->t) {
        kiln_status st = ox_tensor_read(a->t, "attribute 'value'", &t);
        if (st) return ox_fail(im, st, "%s", kiln_last_error());
    } else if ((a = ox_attr(n, "value_float"))) {
        t = ox_host_new(im, KILN_F32, KILN_SCALAR, false);
        if (t) *(float *)t->data = a->f;
    } else if ((a = ox_attr(n, "value_int"))) {
        t = ox_host_new(im, KILN_I64, KILN_SCALAR, false);
        if (t) *(int64_t *)t->data = a->i;
    } else if ((a = ox_attr(n, "value_floats"))) {
        t = ox_host_new(im, KILN_F32, KILN_SHAPE((int64_t)a->n_floats), false);
        if (t && a->n_floats) memcpy(t->data, a->floats, a->n_floats * sizeof(float));
    } else if ((a = ox_attr(n, "value_ints"))) {
        t = ox_host_new(im, KILN_I64, KILN_SHAPE((int64_t)a->n_ints), false);
        if (t && a->n_ints) memcpy(t->data, a->ints, a->n_ints * sizeof(int64_t));
    } else return ox_fail(im, KILN_UNSUPPORTED, "a Constant without a tensor, float or int value (sparse or string values)");
    return ox_set_host(im, n, 0, t);
}

static kiln_status op_constant_of_shape(ox_importer *im, const Onnx__NodeProto *n) {
    int64_t dims[KILN_MAX_DIMS];
    int k = ox_static_ints(im, n, ox_in(im, n, 0), "input", dims, KILN_MAX_DIMS);
    if (k < 0) return ox_status(im);
    kiln_tensor *v = NULL;
    const Onnx__AttributeProto *a = ox_attr(n, "value");
    kiln_status st = a && a->t ? ox_tensor_read(a->t, "attribute 'value'", &v) : KILN_OK;
    if (st) return ox_fail(im, st, "%s", kiln_last_error());
    kiln_tensor *t = ox_host_new(im, v ? v->dtype : KILN_F32, kiln_shape_make(dims, k), false);
    double fill = v && kiln_shape_numel(v->shape) ? kiln_tensor_get(v, 0) : 0;
    for (int64_t i = 0; t && i < kiln_shape_numel(t->shape); i++) kiln_tensor_set(t, i, fill);
    kiln_tensor_free(v);
    return ox_set_host(im, n, 0, t);
}

static kiln_status op_range(ox_importer *im, const Onnx__NodeProto *n) {
    const kiln_tensor *s[3];
    for (int i = 0; i < 3; i++) {
        ox_val *v = ox_in(im, n, i);
        if (!v) return ox_fail(im, KILN_INVALID_ARGUMENT, "needs start, limit and delta");
        if (!(s[i] = ox_static(im, v))) return ox_need_static(im, v, "input");
        if (kiln_shape_numel(s[i]->shape) != 1) return ox_fail(im, KILN_INVALID_ARGUMENT, "input %d '%s' must be a scalar", i, v->name);
    }
    double a = kiln_tensor_get(s[0], 0), l = kiln_tensor_get(s[1], 0), d = kiln_tensor_get(s[2], 0);
    if (d == 0) return ox_fail(im, KILN_INVALID_ARGUMENT, "delta is 0");
    double cnt = ceil((l - a) / d);
    if (!(cnt <= (double)OX_MAX_FOLDED_BYTES))     /* also NaN and infinities; ox_host_new then caps the bytes */
        return ox_fail(im, KILN_UNSUPPORTED, "start %g, limit %g and delta %g give %g values, more than Kiln folds while building the graph", a, l, d, cnt);
    int64_t k = cnt > 0 ? (int64_t)cnt : 0;
    kiln_tensor *t = ox_host_new(im, s[0]->dtype, KILN_SHAPE(k), false);
    for (int64_t i = 0; t && i < k; i++) kiln_tensor_set(t, i, a + (double)i * d);
    return ox_set_host(im, n, 0, t);
}

/* ---- reductions ---- */
/* The node's output layout after reducing logical axes red[] of layout p (rank r) without keepdims. */
static void reduced_perm(const int *p, int r, const bool *red, int *q) {
    int newidx[KILN_MAX_DIMS];
    for (int i = 0, k = 0; i < r; i++) newidx[i] = red[i] ? -1 : k++;
    for (int j = 0, k = 0; j < r; j++) if (!red[p[j]]) q[k++] = newidx[p[j]];
}

static kiln_status op_reduce(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    const char *t = n->op_type + 6;      /* after "Reduce" */
    int r = x->shape.rank;
    int64_t ax[KILN_MAX_DIMS];
    int k;
    bool axes_input = !strcmp(t, "Sum") ? ox_opset(im) >= 13 : ox_opset(im) >= 18;
    if (axes_input) k = ox_in(im, n, 1) ? ox_static_ints(im, n, ox_in(im, n, 1), "axes", ax, KILN_MAX_DIMS) : -1;
    else k = ox_attr_ints_in(im, n, "axes", ax, KILN_MAX_DIMS, INT64_MIN, INT64_MAX);
    if (ox_status(im)) return ox_status(im);
    bool keep = ox_attr_int(n, "keepdims", 1) != 0;
    if (k <= 0 && ox_attr_int(n, "noop_with_empty_axes", 0)) return ox_alias(im, n, 0, x);
    bool red[KILN_MAX_DIMS] = { false };
    if (k <= 0) { for (int i = 0; i < r; i++) red[i] = true; }
    for (int i = 0; i < k; i++) {
        int a = ox_axis(im, ax[i], r, "axis");
        if (a < 0) return ox_status(im);
        red[a] = true;
    }
    int p[KILN_MAX_DIMS], pa[KILN_MAX_DIMS], na = 0;
    kiln_node *xn = ox_node_any(im, x, p);
    if (!xn) return ox_graph_fail(im);
    for (int j = 0; j < r; j++) if (red[p[j]]) pa[na++] = j;
    kiln_graph *g = ox_graph(im);
    kiln_node *y;
    if (!strcmp(t, "Sum")) y = kiln_reduce_sum(g, xn, pa, na, keep);
    else if (!strcmp(t, "Mean")) y = kiln_reduce_mean(g, xn, pa, na, keep);
    else if (!strcmp(t, "Max")) y = kiln_reduce_max(g, xn, pa, na, keep);
    else if (!strcmp(t, "Min")) y = kiln_neg(g, kiln_reduce_max(g, kiln_neg(g, xn), pa, na, keep));
    else if (!strcmp(t, "L1")) y = kiln_reduce_sum(g, kiln_abs(g, xn), pa, na, keep);
    else if (!strcmp(t, "L2")) y = kiln_sqrt(g, kiln_reduce_sum(g, kiln_square(g, xn), pa, na, keep));
    else if (!strcmp(t, "SumSquare")) y = kiln_reduce_sum(g, kiln_square(g, xn), pa, na, keep);
    else if (!strcmp(t, "LogSum")) y = kiln_log(g, kiln_reduce_sum(g, xn, pa, na, keep));
    else {                               /* LogSumExp, shifted by the max for large values */
        if (!kiln_dtype_is_float(x->dtype)) return ox_fail(im, KILN_UNSUPPORTED, "ReduceLogSumExp of %s", kiln_dtype_name(x->dtype));
        kiln_node *m = kiln_reduce_max(g, xn, pa, na, true);
        y = kiln_add(g, kiln_log(g, kiln_reduce_sum(g, kiln_exp(g, kiln_sub(g, xn, m)), pa, na, true)), m);
        if (y && !keep) {
            kiln_shape s = kiln_node_shape(y), o = { 0 };
            for (int j = 0; j < r; j++) if (!red[p[j]]) o.dim[o.rank++] = s.dim[j];
            y = kiln_reshape(g, y, o);
        }
    }
    if (keep) return ox_set(im, n, 0, y, p);
    int q[KILN_MAX_DIMS];
    reduced_perm(p, r, red, q);
    return ox_set(im, n, 0, y, q);
}

static kiln_status op_argmax(ox_importer *im, const Onnx__NodeProto *n) {
    ox_val *x = ox_in(im, n, 0);
    int r = x->shape.rank;
    if (ox_attr_int(n, "select_last_index", 0)) return ox_fail(im, KILN_UNSUPPORTED, "attribute 'select_last_index' = 1 (Kiln's ArgMax takes the first)");
    int a = ox_axis(im, ox_attr_int(n, "axis", 0), r, "attribute 'axis'");
    if (a < 0) return ox_status(im);
    bool keep = ox_attr_int(n, "keepdims", 1) != 0;
    int p[KILN_MAX_DIMS];
    kiln_node *xn = ox_node_any(im, x, p);
    if (!xn) return ox_graph_fail(im);
    kiln_graph *g = ox_graph(im);
    if (!strcmp(n->op_type, "ArgMin")) xn = kiln_neg(g, xn);    /* the first min is the first max of -x */
    int pa = ox_perm_find(p, r, a);
    kiln_node *y = kiln_argmax(g, xn, pa);
    if (keep) {
        kiln_shape s = kiln_node_shape(xn);
        s.dim[pa] = 1;
        return ox_set(im, n, 0, y ? kiln_reshape(g, y, s) : NULL, p);
    }
    bool red[KILN_MAX_DIMS] = { false };
    red[a] = true;
    int q[KILN_MAX_DIMS];
    reduced_perm(p, r, red, q);
    return ox_set(im, n, 0, y, q);
}

#define REDUCE_ATTRS "axes,keepdims,noop_with_empty_axes"
const ox_op ox_ops_shape[] = {
    { "Identity", op_identity, "", OX_ANY }, { "Flatten", op_flatten, "axis", OX_ANY }, { "Reshape", op_reshape, "allowzero,shape", OX_ANY },
    { "Squeeze", op_squeeze, "axes", OX_ANY }, { "Unsqueeze", op_unsqueeze, "axes", OX_ANY }, { "Transpose", op_transpose, "perm", OX_ANY },
    { "Concat", op_concat, "axis", OX_ANY }, { "Split", op_split, "axis,split", OX_ANY }, { "Slice", op_slice, "starts,ends,axes", OX_ANY },
    { "Pad", op_pad, "mode,pads,value", OX_ANY }, { "Expand", op_expand, "", OX_ANY }, { "Tile", op_tile, "", OX_ANY },
    { "Gather", op_gather, "axis", OX_ANY },
    { "Resize", op_resize, "mode,coordinate_transformation_mode,nearest_mode", OX_FLOAT }, { "Upsample", op_resize, "mode,scales", OX_FLOAT },
    { "DepthToSpace", op_depth_space, "blocksize,mode", OX_ANY }, { "SpaceToDepth", op_depth_space, "blocksize", OX_ANY },
    { "Shape", op_shape, "start,end", OX_ANY }, { "Size", op_size, "", OX_ANY },
    { "Constant", op_constant, "value,value_float,value_floats,value_int,value_ints", OX_ANY },
    { "ConstantOfShape", op_constant_of_shape, "value", OX_ANY }, { "Range", op_range, "", OX_ANY },
    { "ReduceSum", op_reduce, REDUCE_ATTRS, 0 }, { "ReduceMean", op_reduce, REDUCE_ATTRS, 0 }, { "ReduceMax", op_reduce, REDUCE_ATTRS, 0 },
    { "ReduceMin", op_reduce, REDUCE_ATTRS, 0 }, { "ReduceL1", op_reduce, REDUCE_ATTRS, 0 }, { "ReduceL2", op_reduce, REDUCE_ATTRS, OX_FLOAT },
    { "ReduceSumSquare", op_reduce, REDUCE_ATTRS, 0 }, { "ReduceLogSum", op_reduce, REDUCE_ATTRS, OX_FLOAT },
    { "ReduceLogSumExp", op_reduce, REDUCE_ATTRS, OX_FLOAT },
    { "ArgMax", op_argmax, "axis,keepdims,select_last_index", 0 }, { "ArgMin", op_argmax, "axis,keepdims,select_last_index", 0 },
    { NULL },
};
