/* Conv2D and its two gradients as im2col + sgemm (NHWC activations, HWIO weights).
 * With NHWC, im2col rows [N*OH*OW, kh*kw*Cg] times W [kh*kw*Cg, Cout] is one plain GEMM per group.
 * The (n, oh, ow) rows are cut into chunks whose column buffer fits in cache; each OpenMP thread
 * takes whole chunks with its own buffer and runs a single-threaded sgemm, so im2col/col2im and
 * the GEMM are parallel together and the buffer stays hot between the two. */
#include "backend/cpu/cpu_internal.h"

/* Target column-buffer bytes per chunk (per thread): about the per-core L2. */
#define CONV_CHUNK_BYTES ((size_t)1 << 20)

typedef struct conv_p {
    int64_t N, H, W, C, OH, OW, CO;
    int kh, kw, sh, sw, dh, dw, pt, pl, G;
    int64_t Cg, COg, K;      /* per group: in channels, out channels, im2col row length */
    bool direct;             /* 1x1, stride 1, no padding: x itself is the column matrix */
} conv_p;

/* Fills p from the node: x/dy shapes depend on which of the three ops it is. */
static bool conv_params(const kiln_node *n, conv_p *p) {
    const kiln_attrs *a = &n->attrs;
    kiln_shape xs, ys, ws;
    if (!kiln_conv_shapes(n, &xs, &ws, &ys)) return false;
    int G = a->groups > 0 ? a->groups : 1;
    *p = (conv_p){ xs.dim[0], xs.dim[1], xs.dim[2], xs.dim[3], ys.dim[1], ys.dim[2], ys.dim[3],
                   a->kh, a->kw, a->sh, a->sw, a->dh > 0 ? a->dh : 1, a->dw > 0 ? a->dw : 1, a->pt, a->pl, G,
                   0, 0, 0, false };
    if (p->kh <= 0 || p->kw <= 0 || p->sh <= 0 || p->sw <= 0 || p->C % G || p->CO % G) return false;
    if (ws.dim[0] != p->kh || ws.dim[1] != p->kw || ws.dim[2] != p->C / G || ws.dim[3] != p->CO) return false;
    if (ys.dim[0] != p->N) return false;
    p->Cg = p->C / G; p->COg = p->CO / G; p->K = (int64_t)p->kh * p->kw * p->Cg;
    p->direct = p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && p->pt == 0 && p->pl == 0 &&
                p->OH == p->H && p->OW == p->W;
    return true;
}

/* Chunk plan: rows per chunk and how many threads (each with its own buffers) fit. */
typedef struct conv_plan { int64_t rows, chunk, n_chunks; int team; size_t per_thread, extra; } conv_plan;

static conv_plan conv_make_plan(const kiln_node *n, const conv_p *p, int nt) {
    conv_plan pl = { 0 };
    pl.rows = p->N * p->OH * p->OW;
    int64_t per_img = p->OH * p->OW;
    int64_t chunk = (int64_t)(CONV_CHUNK_BYTES / ((size_t)p->K * sizeof(float)));
    if (chunk < 16) chunk = 16;
    if (n->op == KILN_OP_CONV2D_BWD_INPUT && nt > 1) {
        /* col2im of neighbouring rows overlaps in dx: parallel chunks must be whole images */
        chunk = (chunk / per_img) * per_img;
        if (chunk == 0) chunk = per_img;
    }
    /* enough chunks to keep every thread busy */
    int64_t even = (pl.rows + nt - 1) / nt;
    if (n->op == KILN_OP_CONV2D_BWD_INPUT && nt > 1) even = ((p->N + nt - 1) / nt) * per_img;
    if (chunk > even) chunk = even;
    if (chunk < 1) chunk = 1;
    pl.chunk = chunk;
    pl.n_chunks = (pl.rows + chunk - 1) / chunk;
    pl.team = nt;
    if (pl.team > pl.n_chunks) pl.team = (int)(pl.n_chunks > 0 ? pl.n_chunks : 1);
    pl.per_thread = p->direct ? 0 : (size_t)chunk * (size_t)p->K * sizeof(float);
    /* bwd filter: every thread but the first accumulates into a private dW */
    pl.extra = n->op == KILN_OP_CONV2D_BWD_FILTER ? (size_t)p->K * (size_t)p->CO * sizeof(float) : 0;
    return pl;
}

size_t cpu_conv_workspace(const kiln_node *n) {
    conv_p p;
    if (!conv_params(n, &p)) return 0;
    conv_plan pl = conv_make_plan(n, &p, cpu_plan_threads());
    return (size_t)pl.team * pl.per_thread + (size_t)(pl.team - 1) * pl.extra + 64 * (size_t)pl.team;
}

/* Columns for rows [r0, r1) of group g: cols[(r - r0) * K + (i*kw + j)*Cg + c]. */
static void im2col(const conv_p *p, const float *x, int64_t r0, int64_t r1, int g, float *cols) {
    int64_t ow = r0 % p->OW, oh = (r0 / p->OW) % p->OH, n = r0 / (p->OW * p->OH);
    const int64_t Cg = p->Cg;
    for (int64_t r = r0; r < r1; r++) {
        float *row = cols + (r - r0) * p->K;
        const float *xn = x + n * p->H * p->W * p->C + (int64_t)g * Cg;
        for (int i = 0; i < p->kh; i++) {
            int64_t ih = oh * p->sh - p->pt + (int64_t)i * p->dh;
            float *dst = row + (int64_t)i * p->kw * Cg;
            if (ih < 0 || ih >= p->H) { memset(dst, 0, sizeof(float) * (size_t)(p->kw * Cg)); continue; }
            for (int j = 0; j < p->kw; j++) {
                int64_t iw = ow * p->sw - p->pl + (int64_t)j * p->dw;
                float *d = dst + (int64_t)j * Cg;
                if (iw < 0 || iw >= p->W) { for (int64_t c = 0; c < Cg; c++) d[c] = 0.0f; continue; }
                const float *s = xn + (ih * p->W + iw) * p->C;
                for (int64_t c = 0; c < Cg; c++) d[c] = s[c];
            }
        }
        if (++ow == p->OW) { ow = 0; if (++oh == p->OH) { oh = 0; n++; } }
    }
}

/* Adjoint of im2col: dx += scatter(cols). */
static void col2im(const conv_p *p, const float *cols, int64_t r0, int64_t r1, int g, float *dx) {
    int64_t ow = r0 % p->OW, oh = (r0 / p->OW) % p->OH, n = r0 / (p->OW * p->OH);
    const int64_t Cg = p->Cg;
    for (int64_t r = r0; r < r1; r++) {
        const float *row = cols + (r - r0) * p->K;
        float *xn = dx + n * p->H * p->W * p->C + (int64_t)g * Cg;
        for (int i = 0; i < p->kh; i++) {
            int64_t ih = oh * p->sh - p->pt + (int64_t)i * p->dh;
            if (ih < 0 || ih >= p->H) continue;
            const float *src = row + (int64_t)i * p->kw * Cg;
            for (int j = 0; j < p->kw; j++) {
                int64_t iw = ow * p->sw - p->pl + (int64_t)j * p->dw;
                if (iw < 0 || iw >= p->W) continue;
                const float *s = src + (int64_t)j * Cg;
                float *d = xn + (ih * p->W + iw) * p->C;
                for (int64_t c = 0; c < Cg; c++) d[c] += s[c];
            }
        }
        if (++ow == p->OW) { ow = 0; if (++oh == p->OH) { oh = 0; n++; } }
    }
}

/* Resolves the plan against the threads and workspace actually given. */
static bool conv_setup(const kiln_kctx *c, conv_p *p, conv_plan *pl) {
    if (!conv_params(c->node, p)) return false;
    *pl = conv_make_plan(c->node, p, cpu_threads(c));
    size_t need1 = pl->per_thread + 64;
    while (pl->team > 1 && (size_t)pl->team * need1 + (size_t)(pl->team - 1) * pl->extra > c->ws_bytes)
        pl->team--;
    if (pl->team == 1 && pl->per_thread > 0 && need1 > c->ws_bytes) {
        /* planned for fewer threads than we have: redo single-threaded (chunks may be larger) */
        *pl = conv_make_plan(c->node, p, 1);
        if (pl->per_thread + 64 > c->ws_bytes) return false;
    }
    return true;
}

static float *thread_cols(const kiln_kctx *c, const conv_plan *pl, int t) {
    size_t stride = (pl->per_thread + 63) & ~(size_t)63;
    return (float *)((char *)c->workspace + (size_t)t * stride);
}

static kiln_status k_conv2d(const kiln_kctx *c) {
    conv_p p; conv_plan pl;
    if (!conv_setup(c, &p, &pl)) return kiln_set_error(KILN_INTERNAL, "conv2d: workspace too small");
    const float *x = cpu_f(&c->in[0]), *w = cpu_f(&c->in[1]);
    float *y = cpu_f(&c->out);
    if (pl.team > 1) cpu_sgemm1_begin();
    int bt = pl.team > 1 ? 1 : cpu_threads(c);
    #pragma omp parallel for schedule(static) num_threads(pl.team) if (pl.team > 1)
    for (int64_t ch = 0; ch < pl.n_chunks; ch++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        int64_t r0 = ch * pl.chunk, r1 = r0 + pl.chunk < pl.rows ? r0 + pl.chunk : pl.rows;
        float *cols = thread_cols(c, &pl, tid);
        for (int g = 0; g < p.G; g++) {
            const float *A = cols; int64_t lda = p.K;
            if (p.direct) { A = x + r0 * p.C + (int64_t)g * p.Cg; lda = p.C; }
            else im2col(&p, x, r0, r1, g, cols);
            cpu_sgemm(false, false, r1 - r0, p.COg, p.K, 1.0f, A, lda, w + (int64_t)g * p.COg, p.CO, 0.0f,
                      y + r0 * p.CO + (int64_t)g * p.COg, p.CO, bt);
        }
        cpu_epilogue(c, y + r0 * p.CO, r1 - r0, p.CO);   /* bias + relu while the rows are in cache */
    }
    return KILN_OK;
}

static kiln_status k_conv2d_bwd_input(const kiln_kctx *c) {
    conv_p p; conv_plan pl;
    if (!conv_setup(c, &p, &pl)) return kiln_set_error(KILN_INTERNAL, "conv2d_bwd_input: workspace too small");
    const float *w = cpu_f(&c->in[0]), *dy = cpu_f(&c->in[1]);
    float *dx = cpu_f(&c->out);
    int nt = cpu_threads(c);
    if (!p.direct) {
        int64_t total = c->out.numel;
        #pragma omp parallel for schedule(static) num_threads(nt) if (total >= CPU_PAR_MIN && nt > 1)
        for (int64_t i = 0; i < total; i++) dx[i] = 0.0f;
    }
    if (pl.team > 1) cpu_sgemm1_begin();
    int bt = pl.team > 1 ? 1 : nt;
    #pragma omp parallel for schedule(static) num_threads(pl.team) if (pl.team > 1)
    for (int64_t ch = 0; ch < pl.n_chunks; ch++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        int64_t r0 = ch * pl.chunk, r1 = r0 + pl.chunk < pl.rows ? r0 + pl.chunk : pl.rows;
        float *cols = thread_cols(c, &pl, tid);
        for (int g = 0; g < p.G; g++) {
            const float *B = w + (int64_t)g * p.COg, *A = dy + r0 * p.CO + (int64_t)g * p.COg;
            if (p.direct) {
                cpu_sgemm(false, true, r1 - r0, p.K, p.COg, 1.0f, A, p.CO, B, p.CO, 0.0f,
                          dx + r0 * p.C + (int64_t)g * p.Cg, p.C, bt);
            } else {
                cpu_sgemm(false, true, r1 - r0, p.K, p.COg, 1.0f, A, p.CO, B, p.CO, 0.0f, cols, p.K, bt);
                col2im(&p, cols, r0, r1, g, dx);
            }
        }
    }
    return KILN_OK;
}

static kiln_status k_conv2d_bwd_filter(const kiln_kctx *c) {
    conv_p p; conv_plan pl;
    if (!conv_setup(c, &p, &pl)) return kiln_set_error(KILN_INTERNAL, "conv2d_bwd_filter: workspace too small");
    const float *x = cpu_f(&c->in[0]), *dy = cpu_f(&c->in[1]);
    float *dw = cpu_f(&c->out);
    int64_t wn = p.K * p.CO;
    if (pl.team > 64) pl.team = 64;
    size_t stride = (pl.per_thread + 63) & ~(size_t)63;
    float *priv = (float *)((char *)c->workspace + (size_t)pl.team * stride);
    int used[64] = { 0 };
    if (pl.team > 1) cpu_sgemm1_begin();
    int bt = pl.team > 1 ? 1 : cpu_threads(c);
    /* Each thread owns a contiguous range of chunks, so its partial dW is deterministic. */
    #pragma omp parallel num_threads(pl.team) if (pl.team > 1)
    {
        int tid = 0, nth = 1;
#ifdef _OPENMP
        tid = omp_get_thread_num(); nth = omp_get_num_threads();
#endif
        int64_t per = (pl.n_chunks + nth - 1) / nth;
        int64_t c0 = tid * per, c1 = c0 + per < pl.n_chunks ? c0 + per : pl.n_chunks;
        float *acc = tid == 0 ? dw : priv + (size_t)(tid - 1) * (size_t)wn;
        float *cols = thread_cols(c, &pl, tid);
        for (int64_t ch = c0; ch < c1; ch++) {
            int64_t r0 = ch * pl.chunk, r1 = r0 + pl.chunk < pl.rows ? r0 + pl.chunk : pl.rows;
            float beta = ch == c0 ? 0.0f : 1.0f;
            for (int g = 0; g < p.G; g++) {
                const float *A = cols; int64_t lda = p.K;
                if (p.direct) { A = x + r0 * p.C + (int64_t)g * p.Cg; lda = p.C; }
                else im2col(&p, x, r0, r1, g, cols);
                cpu_sgemm(true, false, p.K, p.COg, r1 - r0, 1.0f, A, lda, dy + r0 * p.CO + (int64_t)g * p.COg,
                          p.CO, beta, acc + (int64_t)g * p.COg, p.CO, bt);
            }
        }
        used[tid] = c1 > c0;
    }
    if (!used[0]) memset(dw, 0, sizeof(float) * (size_t)wn);
    for (int t = 1; t < pl.team; t++) {
        if (!used[t]) continue;
        const float *src = priv + (size_t)(t - 1) * (size_t)wn;
        for (int64_t i = 0; i < wn; i++) dw[i] += src[i];
    }
    return KILN_OK;
}

kiln_kernel_fn cpu_conv_kernel(const kiln_node *n) {
    conv_p p;
    if (!cpu_is_f32(n) || n->n_in != 2 || !conv_params(n, &p)) return NULL;
    switch (n->op) {
    case KILN_OP_CONV2D: return k_conv2d;
    case KILN_OP_CONV2D_BWD_INPUT: return k_conv2d_bwd_input;
    case KILN_OP_CONV2D_BWD_FILTER: return k_conv2d_bwd_filter;
    default: return NULL;
    }
}
