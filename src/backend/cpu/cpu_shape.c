/* Data-movement kernels: Transpose, Slice, Pad (constant), Concat. Any dtype of 1/2/4/8 bytes: they copy
 * element bytes, as the ref kernels do. Each op becomes one strided copy: dims of size 1 are
 * dropped and adjacent dims that stay contiguous on both sides merged, so most cases end as
 * memcpy of long inner runs; a transpose that moves the last axis runs as tiled 2-D blocks so
 * both the reads and the writes stay in cache lines. */
#include <stdlib.h>
#include "backend/cpu/cpu_internal.h"
#include "backend/broadcast.h"

/* Below this many elements one thread copies: a copy is memory-bound, so a second thread gains
 * little, while a parallel region on a busy machine waits for a descheduled thread (measured ~7 ms
 * per region under load on 2 cores, against ~0.1 ms for a 200K-element single-threaded copy). */
#define SHAPE_PAR_MIN (1 << 21)
#define TILE 32
#define CONCAT_IN_MAX 64   /* Concat inputs handled here (more: ref) */

typedef struct {
    int m;                                            /* dims after collapsing */
    int64_t d[KILN_MAX_DIMS + 1], os[KILN_MAX_DIMS + 1], is[KILN_MAX_DIMS + 1];   /* size, out / in strides */
} sc_plan;

/* Drop size-1 dims, then merge dim i into i+1 where both strides continue across the pair. */
static void sc_collapse(sc_plan *p, int r, const int64_t *d, const int64_t *os, const int64_t *is) {
    int m = 0;
    for (int i = 0; i < r; i++) {
        if (d[i] == 1) continue;
        if (m > 0 && p->os[m - 1] == d[i] * os[i] && p->is[m - 1] == d[i] * is[i]) {
            p->d[m - 1] *= d[i];
            p->os[m - 1] = os[i];
            p->is[m - 1] = is[i];
            continue;
        }
        p->d[m] = d[i]; p->os[m] = os[i]; p->is[m] = is[i];
        m++;
    }
    p->m = m;
}

/* KILN_CPU_SHAPE_PAR_MIN overrides the threshold (test_ops sets it low so the conformance cases
 * run the threaded path too). */
static int64_t par_min(void) {
    static int64_t v = -1;
    if (v < 0) {
        const char *e = getenv("KILN_CPU_SHAPE_PAR_MIN");
        v = e && *e ? strtoll(e, NULL, 10) : SHAPE_PAR_MIN;
        if (v < 0) v = SHAPE_PAR_MIN;
    }
    return v;
}
static int shape_threads(const kiln_kctx *c, int64_t work) { return work > par_min() ? cpu_threads(c) : 1; }

static void split(int64_t n, int nt, int t, int64_t *lo, int64_t *hi) {
    *lo = n * t / nt;
    *hi = n * (t + 1) / nt;
}

/* Rows [r0, r1) of the outer dims (all but the last, which is contiguous on both sides). */
static void sc_rows(const sc_plan *p, char *dst, const char *src, size_t es, int64_t r0, int64_t r1) {
    int k = p->m - 1;
    int64_t idx[KILN_MAX_DIMS], oo = 0, io = 0, rem = r0;
    for (int d = k - 1; d >= 0; d--) {
        idx[d] = rem % p->d[d];
        rem /= p->d[d];
        oo += idx[d] * p->os[d];
        io += idx[d] * p->is[d];
    }
    size_t run = (size_t)p->d[k] * es;
    for (int64_t r = r0; r < r1; r++) {
        memcpy(dst + (size_t)oo * es, src + (size_t)io * es, run);
        for (int d = k - 1; d >= 0; d--) {   /* odometer step */
            oo += p->os[d]; io += p->is[d];
            if (++idx[d] < p->d[d]) break;
            oo -= idx[d] * p->os[d]; io -= idx[d] * p->is[d];
            idx[d] = 0;
        }
    }
}

/* One TILE x TILE block: dst[a*dsa + b] = src[a + b*ssb]. */
#define TILE_LOOP(T)                                                                           \
    do {                                                                                       \
        T *restrict y = (T *)dst; const T *restrict x = (const T *)src;                        \
        for (int64_t a = 0; a < na; a++)                                                       \
            for (int64_t b = 0; b < nb; b++) y[a * dsa + b] = x[a + b * ssb];                  \
    } while (0)

static void tile(char *dst, const char *src, size_t es, int64_t na, int64_t nb, int64_t dsa, int64_t ssb) {
    switch (es) {
    case 1: TILE_LOOP(uint8_t); break;
    case 2: TILE_LOOP(uint16_t); break;
    case 4: TILE_LOOP(uint32_t); break;
    default: TILE_LOOP(uint64_t); break;
    }
}

/* The last out dim j reads with stride s; dim k is the one the input walks contiguously. Tasks are
 * (other dims' index, tile of k), so even a single 2-D transpose splits across threads. */
static void sc_tiled(const sc_plan *p, int k, char *dst, const char *src, size_t es, int nt) {
    int j = p->m - 1;
    int64_t od[KILN_MAX_DIMS], oos[KILN_MAX_DIMS], ois[KILN_MAX_DIMS], outer = 1;
    int no = 0;
    for (int d = 0; d < j; d++)
        if (d != k) { od[no] = p->d[d]; oos[no] = p->os[d]; ois[no] = p->is[d]; outer *= od[no++]; }
    int64_t nta = (p->d[k] + TILE - 1) / TILE, tasks = outer * nta;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / nta, a0 = (t % nta) * TILE, oo = 0, io = 0;
        for (int d = no - 1; d >= 0; d--) {
            int64_t i = o % od[d];
            o /= od[d];
            oo += i * oos[d];
            io += i * ois[d];
        }
        int64_t na = p->d[k] - a0 < TILE ? p->d[k] - a0 : TILE;
        oo += a0 * p->os[k];
        io += a0;   /* is[k] == 1 */
        for (int64_t b0 = 0; b0 < p->d[j]; b0 += TILE) {
            int64_t nb = p->d[j] - b0 < TILE ? p->d[j] - b0 : TILE;
            tile(dst + (size_t)(oo + b0) * es, src + (size_t)(io + b0 * p->is[j]) * es, es, na, nb,
                 p->os[k], p->is[j]);
        }
    }
}

/* dst[sum i_d * os[d]] = src[sum i_d * is[d]] over the box d[0..r-1]. */
static void strided_copy(char *dst, const char *src, size_t es, int r, const int64_t *d, const int64_t *os,
                         const int64_t *is, int nt) {
    sc_plan p;
    for (int i = 0; i < r; i++)
        if (d[i] == 0) return;
    sc_collapse(&p, r, d, os, is);
    if (p.m == 0) { memcpy(dst, src, es); return; }
    if (p.os[p.m - 1] == 1 && p.is[p.m - 1] == 1) {
        int64_t rows = 1;
        for (int i = 0; i < p.m - 1; i++) rows *= p.d[i];
        if (rows < nt) nt = rows > 0 ? (int)rows : 1;
        #pragma omp parallel for schedule(static) num_threads(nt)
        for (int t = 0; t < nt; t++) {
            int64_t lo, hi;
            split(rows, nt, t, &lo, &hi);
            sc_rows(&p, dst, src, es, lo, hi);
        }
        return;
    }
    int k = -1;
    for (int i = 0; i < p.m - 1; i++)
        if (p.is[i] == 1) k = i;
    if (k >= 0 && p.os[p.m - 1] == 1) { sc_tiled(&p, k, dst, src, es, nt); return; }
    /* Not reached by these ops (out is contiguous, in has a unit stride); kept general: runs of one. */
    p.d[p.m] = 1; p.os[p.m] = 1; p.is[p.m] = 1;
    p.m++;
    int64_t rows = 1;
    for (int i = 0; i < p.m - 1; i++) rows *= p.d[i];
    sc_rows(&p, dst, src, es, 0, rows);
}

static kiln_status cpu_transpose(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    int r = c->out.shape.rank;
    int64_t xst[KILN_MAX_DIMS], ist[KILN_MAX_DIMS], ost[KILN_MAX_DIMS];
    kiln_row_strides(x->shape, xst);
    kiln_row_strides(c->out.shape, ost);
    for (int d = 0; d < r; d++) ist[d] = xst[c->node->attrs.perm[d]];
    strided_copy(c->out.data, x->data, kiln_dtype_size(x->dtype), r, c->out.shape.dim, ost, ist,
                 shape_threads(c, c->out.numel));
    return KILN_OK;
}

static kiln_status cpu_slice(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    int r = c->out.shape.rank;
    size_t es = kiln_dtype_size(x->dtype);
    int64_t xst[KILN_MAX_DIMS], ost[KILN_MAX_DIMS], start = 0;
    kiln_row_strides(x->shape, xst);
    kiln_row_strides(c->out.shape, ost);
    for (int d = 0; d < r; d++) start += c->node->attrs.begin[d] * xst[d];
    strided_copy(c->out.data, (const char *)x->data + (size_t)start * es, es, r, c->out.shape.dim, ost, xst,
                 shape_threads(c, c->out.numel));
    return KILN_OK;
}

/* Fill the whole output with the pad value, then copy x into its interior box. */
static kiln_status cpu_pad(const kiln_kctx *c) {
    const kiln_view *x = &c->in[0];
    int r = c->out.shape.rank;
    size_t es = kiln_dtype_size(x->dtype);
    int64_t n = c->out.numel, xst[KILN_MAX_DIMS], ost[KILN_MAX_DIMS], start = 0;
    int nt = shape_threads(c, n);
    unsigned char fill[8] = { 0 };
    kiln_store(fill, c->out.dtype, 0, c->node->attrs.alpha);
    bool zero = true;
    for (size_t b = 0; b < es; b++) zero = zero && fill[b] == 0;
    char *y = c->out.data;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int t = 0; t < nt; t++) {
        int64_t lo, hi;
        split(n, nt, t, &lo, &hi);
        if (zero) { memset(y + (size_t)lo * es, 0, (size_t)(hi - lo) * es); continue; }
        for (int64_t i = lo; i < hi; i++) memcpy(y + (size_t)i * es, fill, es);
    }
    kiln_row_strides(x->shape, xst);
    kiln_row_strides(c->out.shape, ost);
    for (int d = 0; d < r; d++) start += c->node->attrs.begin[d] * ost[d];
    strided_copy(y + (size_t)start * es, x->data, es, r, x->shape.dim, ost, xst, shape_threads(c, x->numel));
    return KILN_OK;
}

/* Each output row (outer index) is the inputs' rows end to end: one task per (row, input). */
static kiln_status cpu_concat(const kiln_kctx *c) {
    int axis = c->node->attrs.axis, ni = c->n_in;
    kiln_shape os = c->out.shape;
    size_t es = kiln_dtype_size(c->out.dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= os.dim[d];
    for (int d = axis + 1; d < os.rank; d++) inner *= os.dim[d];
    size_t chunk[CONCAT_IN_MAX], off[CONCAT_IN_MAX], row = 0;
    for (int i = 0; i < ni; i++) {
        chunk[i] = (size_t)(c->in[i].shape.dim[axis] * inner) * es;
        off[i] = row;
        row += chunk[i];
    }
    int64_t tasks = outer * ni;
    char *y = c->out.data;
    #pragma omp parallel for schedule(static) num_threads(shape_threads(c, c->out.numel))
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / ni;
        int i = (int)(t % ni);
        if (chunk[i]) memcpy(y + (size_t)o * row + off[i], (const char *)c->in[i].data + (size_t)o * chunk[i], chunk[i]);
    }
    return KILN_OK;
}

kiln_kernel_fn cpu_shape_kernel(const kiln_node *n) {
    size_t es = kiln_dtype_size(n->dtype);
    if (n->n_in < 1 || (n->n_in != 1 && n->op != KILN_OP_CONCAT) || n->n_in > CONCAT_IN_MAX) return NULL;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i]->dtype != n->dtype) return NULL;
    if (es != 1 && es != 2 && es != 4 && es != 8) return NULL;
    switch (n->op) {
    case KILN_OP_CONCAT: return cpu_concat;
    case KILN_OP_TRANSPOSE: return cpu_transpose;
    case KILN_OP_SLICE: return cpu_slice;
    case KILN_OP_PAD: return cpu_pad;
    default: return NULL;
    }
}
