/* Ref kernels: Reshape/Identity, Transpose, ConcatV2, Slice, Pad, Cast, BiasAdd.
 * Data movement copies element bytes (exact for every dtype); Cast and BiasAdd compute. */
#include <math.h>
#include <string.h>
#include "ops/ref_kernels.h"
#include "backend/broadcast.h"

#define AT(p, i, es) ((char *)(p) + (size_t)(i) * (es))
#define CAT(p, i, es) ((const char *)(p) + (size_t)(i) * (es))

/* The executor normally aliases the output to the input (ALIAS0); this covers runs without. */
kiln_status kiln_ref_copy(const kiln_kctx *c) {
    if (c->out.data != c->in[0].data)
        memmove(c->out.data, c->in[0].data, (size_t)c->out.numel * kiln_dtype_size(c->out.dtype));
    return KILN_OK;
}

kiln_status kiln_ref_transpose(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    const int *perm = c->node->attrs.perm;
    int r = c->out.shape.rank;
    int64_t xst[KILN_MAX_DIMS], st[KILN_MAX_DIMS];
    size_t es = kiln_dtype_size(x->dtype);
    kiln_row_strides(x->shape, xst);
    for (int d = 0; d < r; d++) st[d] = xst[perm[d]];   /* out dim d walks x dim perm[d] */
    for (int64_t o = 0; o < c->out.numel; o++)
        memcpy(AT(c->out.data, o, es), CAT(x->data, kiln_offset_of(o, c->out.shape.dim, st, r), es), es);
    return KILN_OK;
}

kiln_status kiln_ref_concat(const kiln_kctx *c) {
    int axis = c->node->attrs.axis;
    kiln_shape os = c->out.shape;
    size_t es = kiln_dtype_size(c->out.dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= os.dim[d];
    for (int d = axis + 1; d < os.rank; d++) inner *= os.dim[d];
    char *dst = c->out.data;
    /* Each outer row of the output is the inputs' rows laid end to end. */
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < c->n_in; i++) {
            size_t chunk = (size_t)(c->in[i].shape.dim[axis] * inner) * es;
            memcpy(dst, (const char *)c->in[i].data + (size_t)o * chunk, chunk);
            dst += chunk;
        }
    return KILN_OK;
}

kiln_status kiln_ref_slice(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    const int64_t *begin = c->node->attrs.begin;
    kiln_shape os = c->out.shape;
    int r = os.rank;
    size_t es = kiln_dtype_size(x->dtype);
    int64_t xst[KILN_MAX_DIMS], start = 0;
    kiln_row_strides(x->shape, xst);
    for (int d = 0; d < r; d++) start += begin[d] * xst[d];
    if (r == 0) { memcpy(c->out.data, x->data, es); return KILN_OK; }
    /* Copy contiguous runs along the last dim. */
    int64_t run = os.dim[r - 1];
    if (run == 0) return KILN_OK;
    int64_t rows = c->out.numel / run;
    for (int64_t i = 0; i < rows; i++)
        memcpy(AT(c->out.data, i * run, es), CAT(x->data, start + kiln_offset_of(i, os.dim, xst, r - 1), es),
               (size_t)run * es);
    return KILN_OK;
}

kiln_status kiln_ref_pad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    const int64_t *before = c->node->attrs.begin;
    kiln_shape os = c->out.shape;
    int r = os.rank;
    size_t es = kiln_dtype_size(x->dtype);
    unsigned char fill[8];
    kiln_store(fill, c->out.dtype, 0, c->node->attrs.alpha);
    int64_t xst[KILN_MAX_DIMS];
    kiln_row_strides(x->shape, xst);
    for (int64_t o = 0; o < c->out.numel; o++) {
        int64_t i = o, off = 0;
        bool inside = true;
        for (int d = r - 1; d >= 0; d--) {
            int64_t k = i % os.dim[d] - before[d];
            i /= os.dim[d];
            if (k < 0 || k >= x->shape.dim[d]) { inside = false; break; }
            off += k * xst[d];
        }
        memcpy(AT(c->out.data, o, es), inside ? CAT(x->data, off, es) : (const char *)fill, es);
    }
    return KILN_OK;
}

static bool is_int(kiln_dtype t) { return t == KILN_I32 || t == KILN_I64 || t == KILN_U8 || t == KILN_BOOL; }

static int64_t load_i64(const void *p, kiln_dtype t, int64_t i) {
    switch (t) {
    case KILN_I32: return ((const int32_t *)p)[i];
    case KILN_I64: return ((const int64_t *)p)[i];
    case KILN_U8: return ((const uint8_t *)p)[i];
    default: return ((const uint8_t *)p)[i] != 0;   /* bool */
    }
}

static void store_i64(void *p, kiln_dtype t, int64_t i, int64_t v) {
    switch (t) {
    case KILN_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case KILN_I64: ((int64_t *)p)[i] = v; break;
    case KILN_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    default: ((uint8_t *)p)[i] = v != 0; break;
    }
}

/* Float -> integer saturates (NaN -> 0): a plain C conversion of an out-of-range value is undefined. */
static double clamp_for(kiln_dtype to, double v) {
    double lo, hi;
    switch (to) {
    case KILN_I32: lo = -2147483648.0; hi = 2147483647.0; break;
    case KILN_I64: lo = -9223372036854775808.0; hi = 9223372036854774784.0; break;   /* largest double < 2^63 */
    case KILN_U8: lo = 0; hi = 255; break;
    default: return v;
    }
    return isnan(v) ? 0.0 : v < lo ? lo : v > hi ? hi : v;
}

kiln_status kiln_ref_cast(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    kiln_dtype from = x->dtype, to = c->out.dtype;
    if (from == to) return kiln_ref_copy(c);
    if (is_int(from) && is_int(to)) {        /* via int64, so i64 values above 2^53 survive */
        for (int64_t i = 0; i < c->out.numel; i++) store_i64(c->out.data, to, i, load_i64(x->data, from, i));
        return KILN_OK;
    }
    for (int64_t i = 0; i < c->out.numel; i++) kiln_store(c->out.data, to, i, clamp_for(to, kiln_load(x->data, from, i)));
    return KILN_OK;
}

kiln_status kiln_ref_bias_add(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0], *b = &c->in[1];
    int64_t C = b->numel;
    if (C == 0) return KILN_OK;
    for (int64_t i = 0; i < c->out.numel; i++)   /* reads x[i] before writing out[i]: in-place safe */
        kiln_store(c->out.data, c->out.dtype, i,
                   kiln_load(x->data, x->dtype, i) + kiln_load(b->data, b->dtype, i % C));
    return KILN_OK;
}
