/* The max-pool gradient (NHWC), written once for every element type: cpu_pool.c includes it for
 * f32 and cpu_bf16_act.c for bf16, each after cpu_pool_shape.h and after defining
 *   MPG_T        the element type of x, y, dy and dx
 *   MPG_LD(v)    an element as float (exact)
 *   MPG_ST(f)    a float as an element (exact for dy and 0; the f32 sums of MPG_WIDE are
 *                rounded once, as ref)
 *   MPG_NAN_ROW  POOL9_MAXC NaN elements (cells outside a window never equal its max)
 *   MPG_WIDE     1: overlapping windows add up in an f32 image per thread in the workspace, each
 *                row rounded to dx when complete (dx narrower than f32); 0: they add up in dx
 * It defines the static kernel k_max_pool_grad. The rule (ref's): each window's dy goes to the
 * first cell (row-major) equal to the window's max y, the window's other cells get 0. Images are
 * independent, so threads split the batch. No include guard: one inclusion per element type. */

/* 2x2 windows tiling x (pool_2x2): the four cells in registers; dy is selected, never rounded. */
static void max_pool_grad_2x2(const pool_p *p, const MPG_T *x, const MPG_T *y, const MPG_T *dy, MPG_T *dx, int nt) {
    const int64_t C = p->C, row = p->W * C;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++) {
                int64_t i = ((n * p->H + 2 * oh) * p->W + 2 * ow) * C, o = ((n * p->OH + oh) * p->OW + ow) * C;
                const MPG_T *restrict a = x + i, *restrict b = a + C, *restrict e = a + row, *restrict f = e + C;
                MPG_T *restrict da = dx + i, *restrict db = da + C, *restrict de = da + row, *restrict df = de + C;
                const MPG_T *restrict ym = y + o, *restrict g = dy + o;
                #pragma omp simd
                for (int64_t k = 0; k < C; k++) {
                    float m = MPG_LD(ym[k]);
                    MPG_T r = g[k], z = 0;
                    bool h = MPG_LD(a[k]) == m;
                    da[k] = h ? r : z; r = h ? z : r;
                    h = MPG_LD(b[k]) == m;
                    db[k] = h ? r : z; r = h ? z : r;
                    h = MPG_LD(e[k]) == m;
                    de[k] = h ? r : z; r = h ? z : r;
                    df[k] = MPG_LD(f[k]) == m ? r : z;
                }
            }
}

/* One overlapping window of up to 3x3 cells (pool_9) added into f32 rows d: r (the dy not yet
 * given) held in registers across the nine cells. Cells outside the window read NaN and write a
 * scratch row. */
static inline void grad9(const MPG_T *const s[9], float *const d[9], const MPG_T *restrict ym, const MPG_T *restrict g, int64_t C) {
    const MPG_T *restrict s0 = s[0], *restrict s1 = s[1], *restrict s2 = s[2], *restrict s3 = s[3], *restrict s4 = s[4],
                          *restrict s5 = s[5], *restrict s6 = s[6], *restrict s7 = s[7], *restrict s8 = s[8];
    float *restrict d0 = d[0], *restrict d1 = d[1], *restrict d2 = d[2], *restrict d3 = d[3], *restrict d4 = d[4],
                    *restrict d5 = d[5], *restrict d6 = d[6], *restrict d7 = d[7], *restrict d8 = d[8];
    #pragma omp simd
    for (int64_t k = 0; k < C; k++) {
        float m = MPG_LD(ym[k]), r = MPG_LD(g[k]);
        bool h;
        h = MPG_LD(s0[k]) == m; d0[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = MPG_LD(s1[k]) == m; d1[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = MPG_LD(s2[k]) == m; d2[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = MPG_LD(s3[k]) == m; d3[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = MPG_LD(s4[k]) == m; d4[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = MPG_LD(s5[k]) == m; d5[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = MPG_LD(s6[k]) == m; d6[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = MPG_LD(s7[k]) == m; d7[k] += h ? r : 0.0f; r = h ? 0.0f : r;
        h = MPG_LD(s8[k]) == m; d8[k] += h ? r : 0.0f;
    }
}

/* Image n's windows. Windows that tile x (an NULL) write each cell of dx once; overlapping ones
 * add into the f32 image an, whose rows are zeroed just before the first window reaching them
 * (and, with MPG_WIDE, rounded to dx as soon as no later window reaches them), so a row is hot
 * in cache for all its passes instead of one sweep over the image per pass. */
static void max_pool_grad_image(const pool_p *p, int64_t n, const MPG_T *xn, const MPG_T *y, const MPG_T *dy, MPG_T *dxn,
                                float *an, bool nine) {
    const int64_t C = p->C, row = p->W * C;
    float scratch[nine ? 9 * C : 1];   /* where cells outside a window write (zeros added) */
    if (nine) memset(scratch, 0, sizeof scratch);
    int64_t zeroed = 0;
#if MPG_WIDE
    int64_t flushed = 0;
#endif
    /* rem: the window's dy not yet given to a cell; the first cell equal to the max takes it
     * (rem becomes 0, so later equal cells take 0): all f32 selects, no flags */
    float rem[256];
    for (int64_t oh = 0; oh < p->OH; oh++) {
        if (an) {
            int64_t he = oh * p->sh - p->pt + p->kh;
            for (he = he < p->H ? he : p->H; zeroed < he; zeroed++) memset(an + zeroed * row, 0, sizeof(float) * (size_t)row);
        }
        for (int64_t ow = 0; ow < p->OW; ow++) {
            int64_t o = ((n * p->OH + oh) * p->OW + ow) * C;
            if (nine) {
                int64_t off[9];
                const MPG_T *s[9];
                float *d[9];
                pool9_cells(p, oh, ow, off);
                for (int i = 0; i < 9; i++) {
                    s[i] = off[i] >= 0 ? xn + off[i] : MPG_NAN_ROW;
                    d[i] = off[i] >= 0 ? an + off[i] : scratch + i * C;
                }
                grad9(s, d, y + o, dy + o, C);
                continue;
            }
            int64_t h0, h1, w0, w1;
            window(p, oh, ow, &h0, &h1, &w0, &w1);
            for (int64_t c0 = 0; c0 < C; c0 += 256) {   /* channel blocks keep `rem` on the stack */
                int64_t cn = C - c0 < 256 ? C - c0 : 256;
                const MPG_T *restrict ym = y + o + c0, *restrict g = dy + o + c0;
                for (int64_t k = 0; k < cn; k++) rem[k] = MPG_LD(g[k]);
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) {
                        int64_t off = (ih * p->W + iw) * C + c0;
                        const MPG_T *restrict s = xn + off;
                        if (!an) {
                            MPG_T *restrict d = dxn + off;
                            #pragma omp simd
                            for (int64_t k = 0; k < cn; k++) {
                                bool hit = MPG_LD(s[k]) == MPG_LD(ym[k]);
                                d[k] = MPG_ST(hit ? rem[k] : 0.0f);   /* exact: rem is dy or 0 */
                                rem[k] = hit ? 0.0f : rem[k];
                            }
                        } else {
                            float *restrict d = an + off;
                            #pragma omp simd
                            for (int64_t k = 0; k < cn; k++) {
                                bool hit = MPG_LD(s[k]) == MPG_LD(ym[k]);
                                d[k] += hit ? rem[k] : 0.0f;
                                rem[k] = hit ? 0.0f : rem[k];
                            }
                        }
                    }
            }
        }
#if MPG_WIDE
        if (an) {          /* rows above the next window's first row are complete */
            int64_t done = oh + 1 < p->OH ? (oh + 1) * p->sh - p->pt : p->H;
            for (done = done < p->H ? done : p->H; flushed < done; flushed++) {
                if (flushed >= zeroed) { memset(an + flushed * row, 0, sizeof(float) * (size_t)row); zeroed = flushed + 1; }
                const float *restrict a = an + flushed * row;
                MPG_T *restrict d = dxn + flushed * row;
                #pragma omp simd
                for (int64_t i = 0; i < row; i++) d[i] = MPG_ST(a[i]);
            }
        }
#endif
    }
#if !MPG_WIDE
    if (an)            /* rows no window reaches (MPG_WIDE: the last flush zeroes them) */
        for (; zeroed < p->H; zeroed++) memset(an + zeroed * row, 0, sizeof(float) * (size_t)row);
#endif
}

static kiln_status k_max_pool_grad(const kiln_kctx *c) {
    pool_p p;
    if (!pool_params(c->node, c->in[0].shape, c->in[1].shape, &p)) return kiln_set_error(KILN_INTERNAL, "cpu pool: bad shapes");
    const MPG_T *x = (const MPG_T *)c->in[0].data, *y = (const MPG_T *)c->in[1].data, *dy = (const MPG_T *)c->in[2].data;
    MPG_T *dx = (MPG_T *)c->out.data;
    const int64_t img = p.H * p.W * p.C;
    int nt = cpu_par(c, c->out.numel);
    if (pool_2x2(&p)) { max_pool_grad_2x2(&p, x, y, dy, dx, nt); return KILN_OK; }
    const bool tiles = pool_tiles(&p), nine = !tiles && pool_9(&p);
#if MPG_WIDE
    float *acc = NULL;
    if (!tiles) {      /* one f32 image per thread */
        size_t per = (size_t)img * sizeof(float);
        acc = (float *)(((uintptr_t)c->workspace + 63) & ~(uintptr_t)63);
        int fit = c->workspace && c->ws_bytes > per + 64 ? (int)((c->ws_bytes - 64) / per) : 0;
        if (fit < 1) return kiln_set_error(KILN_INTERNAL, "%s: max-pool gradient workspace %zu bytes, needs %zu", c->node->name, c->ws_bytes, per + 64);
        if (nt > fit) nt = fit;
    }
#endif
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t n = 0; n < p.N; n++) {
#if MPG_WIDE
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        float *an = acc ? acc + (size_t)t * (size_t)img : NULL;
#else
        float *an = tiles ? NULL : dx + n * img;     /* MPG_T is float: dx itself adds up */
#endif
        max_pool_grad_image(&p, n, x + n * img, y, dy, dx + n * img, an, nine);
    }
    return KILN_OK;
}

#undef MPG_T
#undef MPG_LD
#undef MPG_ST
#undef MPG_NAN_ROW
#undef MPG_WIDE
