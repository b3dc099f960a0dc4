/* Winograd convolution for stride-1 3x3 and 5x5 layers: F(m x m, r x r) on 8x8 tiles (m = 6 for
 * 3x3, 4 for 5x5), its input gradient (the same algorithm on the flipped filter) and its filter
 * gradient (F(r x r, m x m): the output gradient's m x m tile is the "filter"). A 5x5 layer then
 * takes 64 products per 16 outputs instead of 400; oneDNN 2.6 has no Winograd kernel on this CPU,
 * and its direct ones already run near the FMA peak, so this is the only way left to make these
 * layers (cifar_cnn's second convolution: three quarters of its step) much faster.
 *
 * Everything is f32: the transforms, the 64 products per tile block (an AVX-512 FMA kernel) and
 * the sums; bf16 inputs widen exactly and a bf16 output is rounded once at the end. The f32
 * Winograd error (points 0, +-1, +-2, +-1/2, inf) is ~1e-6 of the output, far below bf16's
 * rounding (~2e-3), so under mixed_bfloat16 this is as accurate as the direct bf16 kernels while
 * computing in f32; in float32 it is within a few f32 roundings of the direct sum.
 *
 * Layouts: NHWC activations, HWIO filters (Kiln's). Each thread takes blocks of tiles: transforms
 * them into [tile][64][C] (one tile's 64 x C contiguous: the transforms write and read whole
 * lines), runs the 64 products of the block (each filter matrix reused over the block's tiles:
 * plan_of) and transforms the results back.
 * KILN_CPU_WINOGRAD=0 turns it off (A/B, tests); =1 uses it for every eligible shape. */
#include "backend/cpu/cpu_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>

#pragma GCC push_options
#pragma GCC target("avx512f")

#define WA 8                 /* tile side (alpha) */
#define WA2 64               /* transformed elements per tile */
#define TB 48                /* most tiles per block (forward, input gradient): a multiple of the kernel's 6 rows */
#define TBW 48               /* most tiles per block (filter gradient) */
#define WMAX_FILTER_BYTES (16.0 * 1024 * 1024)   /* C x K <= 65536 (256 x 256) */

/* The matrices for tile side 8 with points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity: y = AT [(G g
 * G^T) . (BT d BT^T)] AT^T with AT = V_m^T, G = V_r (V_n: the 8 x n evaluation matrix of these
 * points) and BT = inverse(V_8)^T. BT's rows are scaled by D and G's by 1/D (U . V unchanged),
 * which gives BT the small coefficients of the classic F(6,3) input transform. The transforms below
 * use the points' +-p pairs (even and odd parts); make_mats derives the matrices from the points
 * and checks every 1-D transform against them, and the kernels stay off if one disagrees. */
static const double pts[WA - 1] = { 0, 1, -1, 2, -2, 0.5, -0.5 };
static const double dsc[WA] = { 1, -4.5, -4.5, 90, 90, 45.0 / 32, 45.0 / 32, 1 };

typedef struct wmats {
    bool ok;
    float bt[WA][WA];        /* D BT (checked against in1d) */
    float vc[3][6];          /* V rows of the pairs (p = 1, 2, 1/2): p^j / D, used by vand1d */
} wmats;

static wmats M;
static pthread_once_t mats_once = PTHREAD_ONCE_INIT;

static double vand(int i, int j, int n) {   /* row i (point, or infinity), column j of V_n */
    if (i == WA - 1) return j == n - 1 ? 1.0 : 0.0;
    double v = 1.0;
    for (int k = 0; k < j; k++) v *= pts[i];
    return v;
}

/* 1-D input transform: t = (D BT) d */
static inline __attribute__((always_inline)) void in1d(const __m512 *d, __m512 *t) {
    const __m512 c525 = _mm512_set1_ps(5.25f), c425 = _mm512_set1_ps(4.25f);
    t[0] = _mm512_fmadd_ps(c525, _mm512_sub_ps(d[4], d[2]), _mm512_sub_ps(d[0], d[6]));
    t[7] = _mm512_fmadd_ps(c525, _mm512_sub_ps(d[3], d[5]), _mm512_sub_ps(d[7], d[1]));
    __m512 e = _mm512_fnmadd_ps(c425, d[4], _mm512_add_ps(d[2], d[6]));
    __m512 o = _mm512_fnmadd_ps(c425, d[3], _mm512_add_ps(d[1], d[5]));
    t[1] = _mm512_add_ps(e, o); t[2] = _mm512_sub_ps(e, o);
    e = _mm512_fmadd_ps(_mm512_set1_ps(-1.25f), d[4], _mm512_fmadd_ps(_mm512_set1_ps(0.25f), d[2], d[6]));
    o = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), d[5], _mm512_fmadd_ps(_mm512_set1_ps(-2.5f), d[3], _mm512_mul_ps(_mm512_set1_ps(0.5f), d[1])));
    t[3] = _mm512_add_ps(e, o); t[4] = _mm512_sub_ps(e, o);
    e = _mm512_fmadd_ps(_mm512_set1_ps(-5.0f), d[4], _mm512_fmadd_ps(_mm512_set1_ps(4.0f), d[2], d[6]));
    o = _mm512_fmadd_ps(_mm512_set1_ps(0.5f), d[5], _mm512_fmadd_ps(_mm512_set1_ps(-2.5f), d[3], _mm512_mul_ps(_mm512_set1_ps(2.0f), d[1])));
    t[5] = _mm512_add_ps(e, o); t[6] = _mm512_sub_ps(e, o);
}

/* 1-D evaluation at the points: t = (D^-1 V_n) d for n inputs (the filter's G, the filter
 * gradient's G'); t+- = E +- O over the pairs. */
static inline __attribute__((always_inline)) void vand1d(const __m512 *d, int n, __m512 *t) {
    t[0] = _mm512_mul_ps(d[0], _mm512_set1_ps(1.0f / (float)dsc[0]));
    t[7] = _mm512_mul_ps(d[n - 1], _mm512_set1_ps(1.0f / (float)dsc[7]));
    for (int q = 0; q < 3; q++) {
        __m512 e = _mm512_mul_ps(d[0], _mm512_set1_ps(M.vc[q][0])), o = _mm512_mul_ps(d[1], _mm512_set1_ps(M.vc[q][1]));
        for (int j = 2; j < n; j += 2) e = _mm512_fmadd_ps(d[j], _mm512_set1_ps(M.vc[q][j]), e);
        for (int j = 3; j < n; j += 2) o = _mm512_fmadd_ps(d[j], _mm512_set1_ps(M.vc[q][j]), o);
        t[1 + 2 * q] = _mm512_add_ps(e, o);
        t[2 + 2 * q] = _mm512_sub_ps(e, o);
    }
}

/* 1-D output transform: y = V_n^T v for n outputs (n <= 6). */
static inline __attribute__((always_inline)) void out1d(const __m512 *v, int n, __m512 *y) {
    __m512 s1 = _mm512_add_ps(v[1], v[2]), d1 = _mm512_sub_ps(v[1], v[2]);
    __m512 s2 = _mm512_add_ps(v[3], v[4]), d2 = _mm512_sub_ps(v[3], v[4]);
    __m512 s3 = _mm512_add_ps(v[5], v[6]), d3 = _mm512_sub_ps(v[5], v[6]);
    float p2 = 1.0f, ph = 1.0f;
    for (int j = 0; j < n; j++) {
        __m512 r = j & 1 ? _mm512_fmadd_ps(_mm512_set1_ps(ph), d3, _mm512_fmadd_ps(_mm512_set1_ps(p2), d2, d1))
                         : _mm512_fmadd_ps(_mm512_set1_ps(ph), s3, _mm512_fmadd_ps(_mm512_set1_ps(p2), s2, s1));
        if (j == 0) r = _mm512_add_ps(r, v[0]);
        if (j == n - 1) r = _mm512_add_ps(r, v[7]);
        y[j] = r;
        p2 *= 2.0f; ph *= 0.5f;
    }
}

static bool near(float a, double b) { return fabs((double)a - b) <= 1e-5 * (1.0 + fabs(b)); }

static void make_mats(void) {
    /* BT = inverse(V_8)^T by Gauss-Jordan with partial pivoting in double, rows scaled by D */
    double a[WA][2 * WA];
    for (int i = 0; i < WA; i++)
        for (int j = 0; j < 2 * WA; j++) a[i][j] = j < WA ? vand(i, j, WA) : (j - WA == i);
    for (int col = 0; col < WA; col++) {
        int p = col;
        for (int i = col + 1; i < WA; i++) if (fabs(a[i][col]) > fabs(a[p][col])) p = i;
        for (int j = 0; j < 2 * WA; j++) { double t = a[col][j]; a[col][j] = a[p][j]; a[p][j] = t; }
        double d = a[col][col];
        for (int j = 0; j < 2 * WA; j++) a[col][j] /= d;
        for (int i = 0; i < WA; i++)
            if (i != col && a[i][col] != 0.0) {
                double f = a[i][col];
                for (int j = 0; j < 2 * WA; j++) a[i][j] -= f * a[col][j];
            }
    }
    for (int i = 0; i < WA; i++)
        for (int j = 0; j < WA; j++) M.bt[i][j] = (float)(dsc[i] * a[j][WA + i]);
    for (int q = 0; q < 3; q++)
        for (int j = 0; j < 6; j++) M.vc[q][j] = (float)(vand(1 + 2 * q, j, 6) / dsc[1 + 2 * q]);
    /* each 1-D transform on unit vectors against the matrices */
    bool ok = true;
    for (int j = 0; j < WA; j++) {
        __m512 e[WA], t[WA];
        for (int i = 0; i < WA; i++) e[i] = _mm512_set1_ps(i == j ? 1.0f : 0.0f);
        in1d(e, t);
        for (int i = 0; i < WA; i++) ok = ok && near(_mm512_cvtss_f32(t[i]), M.bt[i][j]);
        for (int n = 2; n <= 6; n++) {
            out1d(e, n, t);      /* column j of V_n^T */
            for (int i = 0; i < n; i++) ok = ok && near(_mm512_cvtss_f32(t[i]), vand(j, i, n));
            if (j < n) {
                vand1d(e, n, t);   /* column j of D^-1 V_n */
                for (int i = 0; i < WA; i++) ok = ok && near(_mm512_cvtss_f32(t[i]), vand(i, j, n) / dsc[i]);
            }
        }
    }
    M.ok = ok;
}

/* ---- geometry ---- */

typedef struct wgeom {
    int64_t N, H, W, C;      /* the transformed input: x (forward, filter gradient) or dy (input gradient) */
    int64_t OH, OW, K;       /* the tiled output: y, dx, or dy (filter gradient) */
    int R, m, pt, pl;        /* filter side, tile output side, padding of the input in front of tile 0 */
    int64_t th, tw, tiles;
} wgeom;

static bool conv_attrs_ok(const kiln_node *n, int *R) {
    const kiln_attrs *a = &n->attrs;
    kiln_shape xs, ws, ys;
    if (!kiln_conv_shapes(n, &xs, &ws, &ys)) return false;
    if ((a->groups > 1) || a->sh != 1 || a->sw != 1 || (a->dh > 1) || (a->dw > 1)) return false;
    if (ws.dim[0] != ws.dim[1] || (ws.dim[0] != 3 && ws.dim[0] != 5)) return false;
    if (xs.dim[3] % 16 || ys.dim[3] % 16 || ws.dim[2] != xs.dim[3] || ws.dim[3] != ys.dim[3]) return false;
    if (a->pt < 0 || a->pl < 0 || a->pt >= ws.dim[0] || a->pl >= ws.dim[0] || a->pb < 0 || a->pr < 0 ||
        a->pb >= ws.dim[0] || a->pr >= ws.dim[0]) return false;
    *R = (int)ws.dim[0];
    return true;
}

/* The geometry of the tiled pass for node n (input gradient: dy is the input, pads flipped). */
static wgeom geom_of(const kiln_node *n) {
    const kiln_attrs *a = &n->attrs;
    kiln_shape xs = { 0 }, ws = { 0 }, ys = { 0 };
    kiln_conv_shapes(n, &xs, &ws, &ys);
    wgeom g;
    g.R = (int)ws.dim[0];
    g.m = WA - g.R + 1;
    if (n->op == KILN_OP_CONV2D_BWD_INPUT) {
        g.N = ys.dim[0]; g.H = ys.dim[1]; g.W = ys.dim[2]; g.C = ys.dim[3];
        g.OH = xs.dim[1]; g.OW = xs.dim[2]; g.K = xs.dim[3];
        g.pt = g.R - 1 - a->pt; g.pl = g.R - 1 - a->pl;
    } else {
        g.N = xs.dim[0]; g.H = xs.dim[1]; g.W = xs.dim[2]; g.C = xs.dim[3];
        g.OH = ys.dim[1]; g.OW = ys.dim[2]; g.K = ys.dim[3];
        g.pt = a->pt; g.pl = a->pl;
    }
    g.th = (g.OH + g.m - 1) / g.m;
    g.tw = (g.OW + g.m - 1) / g.m;
    g.tiles = g.N * g.th * g.tw;
    return g;
}

/* Worth it: the direct products over the tiled ones (8x8 per tile, partial tiles counted whole),
 * against what the direct kernels reach (bench_cpu_kernels, 2 threads): oneDNN's f32 convolutions
 * ~550 GFLOP/s, so f32 gains from a ratio of ~2.5 (fashion_cnn's 14x14 3x3: 3.1, 1.6x faster);
 * its bf16 ones twice that, so bf16 needs ~4.5 (cifar_cnn's 16x16 5x5: 6.25, 1.9x; the 14x14 3x3
 * at 3.1 was even), except the filter gradient, where oneDNN's bf16 kernel is slower: 3.5
 * (resnet20's 16x16 3x3 stage, 4.0: 920-929 vs 693-740 GFLOP/s; its forward was even). Thin
 * layers (16 channels: resnet20's first stage) spend their time in the transforms, not the
 * products, and stay direct. */
static bool worth_it(const wgeom *g, bool bf16, bool filter_grad) {
    /* the transformed filter (and each thread's filter-gradient sum) holds 64 x C x K floats: wide
     * layers (512 x 512: 64 MiB) would trade far more memory than their activations for speed */
    if ((double)g->C * (double)g->K * WA2 * sizeof(float) > WMAX_FILTER_BYTES) return false;
    const char *v = getenv("KILN_CPU_WINOGRAD");
    if (v && *v == '0') return false;
    if (v && *v == '1') return true;
    if (g->C < 32 || g->K < 32) return false;
    double direct = (double)g->OH * g->OW * g->R * g->R, tiled = (double)g->th * g->tw * WA2;
    return direct >= (!bf16 ? 2.5 : filter_grad ? 3.5 : 4.5) * tiled;
}

/* ---- loads and stores of 16 channels ---- */

static inline __m512 ld16(const void *p, bool bf, int64_t i) {
    if (!bf) return _mm512_loadu_ps((const float *)p + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* f32 -> bf16 rounded to nearest even, NaN kept quiet (cpu_to_bf16, 16 lanes) */
static inline void st16(void *p, bool bf, int64_t i, __m512 v) {
    if (!bf) { _mm512_storeu_ps((float *)p + i, v); return; }
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    _mm256_storeu_si256((__m256i *)((uint16_t *)p + i), _mm512_cvtepi32_epi16(r));
}

/* ---- transforms (16 channels at a time; out[(xi*8 + nu) * stride]) ---- */

/* V = (D BT) d (D BT)^T for the 8x8 patch of channels [c, c+16) at rows ih0.., cols iw0.. of image
 * n of x (zero outside), stored at out[(xi*8 + nu) * stride]. */
static inline void input_tile(const wgeom *g, const void *x, bool bf, int64_t n, int64_t ih0, int64_t iw0, int64_t c,
                              float *out, int64_t stride) {
    __m512 t[WA][WA];
    int b0 = iw0 < 0 ? (int)-iw0 : 0, b1 = g->W - iw0 < WA ? (int)(g->W - iw0) : WA;
    for (int a = 0; a < WA; a++) {
        int64_t ih = ih0 + a;
        if (ih < 0 || ih >= g->H) { for (int nu = 0; nu < WA; nu++) t[a][nu] = _mm512_setzero_ps(); continue; }
        int64_t base = ((n * g->H + ih) * g->W + iw0) * g->C + c;
        __m512 d[WA];
        for (int b = 0; b < WA; b++) d[b] = b >= b0 && b < b1 ? ld16(x, bf, base + b * g->C) : _mm512_setzero_ps();
        in1d(d, t[a]);
    }
    for (int nu = 0; nu < WA; nu++) {
        __m512 col[WA], v[WA];
        for (int a = 0; a < WA; a++) col[a] = t[a][nu];
        in1d(col, v);
        for (int xi = 0; xi < WA; xi++) _mm512_storeu_ps(out + (xi * WA + nu) * stride, v[xi]);
    }
}

/* The filter gradient's "filter": (D^-1 V_m) dy_t (D^-1 V_m)^T for the m x m tile of dy at
 * (oh0, ow0), channels [k, k+16) (zero past the edge). */
static inline void grad_tile(const wgeom *g, const void *dy, bool bf, int64_t n, int64_t oh0, int64_t ow0, int64_t k,
                             float *out, int64_t stride) {
    const int m = g->m;
    __m512 t[6][WA];
    for (int a = 0; a < m; a++) {
        int64_t oh = oh0 + a;
        __m512 d[6] = { 0 };   /* (m >= 2 entries set; zeros keep the compiler sure) */
        for (int b = 0; b < m; b++) {
            int64_t ow = ow0 + b;
            d[b] = oh < g->OH && ow < g->OW ? ld16(dy, bf, ((n * g->OH + oh) * g->OW + ow) * g->K + k) : _mm512_setzero_ps();
        }
        vand1d(d, m, t[a]);
    }
    for (int nu = 0; nu < WA; nu++) {
        __m512 col[6] = { 0 }, v[WA];
        for (int a = 0; a < m; a++) col[a] = t[a][nu];
        vand1d(col, m, v);
        for (int xi = 0; xi < WA; xi++) _mm512_storeu_ps(out + (xi * WA + nu) * stride, v[xi]);
    }
}

/* y tile (m x m at oh0, ow0, channels [k, k+16)) = V_m^T Mt V_m, + bias, relu, clipped to the output. */
static inline void output_tile(const wgeom *g, const float *mt, int64_t stride, void *y, bool bf, int64_t n, int64_t oh0,
                               int64_t ow0, int64_t k, const void *bias, bool bias_bf, bool relu) {
    const int m = g->m;
    __m512 t[WA][6];
    for (int xi = 0; xi < WA; xi++) {
        __m512 v[WA];
        for (int nu = 0; nu < WA; nu++) v[nu] = _mm512_loadu_ps(mt + (xi * WA + nu) * stride);
        out1d(v, m, t[xi]);
    }
    __m512 b = bias ? ld16(bias, bias_bf, k) : _mm512_setzero_ps();
    for (int j = 0; j < m && ow0 + j < g->OW; j++) {
        __m512 col[WA], r[6];
        for (int xi = 0; xi < WA; xi++) col[xi] = t[xi][j];
        out1d(col, m, r);
        for (int i = 0; i < m && oh0 + i < g->OH; i++) {
            __m512 s = r[i];
            if (bias) s = _mm512_add_ps(s, b);
            if (relu) s = _mm512_mask_mov_ps(s, _mm512_cmp_ps_mask(s, _mm512_setzero_ps(), _CMP_LE_OQ), _mm512_setzero_ps());
            st16(y, bf, ((n * g->OH + oh0 + i) * g->OW + ow0 + j) * g->K + k, s);
        }
    }
}

/* ---- the products: C[i][0..16*NZ) (+)= sum_l A[i*ars + l*als] * B[l*ldb + ...] for i < MR ---- */

static inline __attribute__((always_inline)) void ukernel(const int MR, const int NZ, int64_t L, const float *A, int64_t ars,
                                                          int64_t als, const float *B, int64_t ldb, float *C, int64_t ldc,
                                                          bool acc) {
    __m512 c[6][4];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NZ; j++) c[i][j] = acc ? _mm512_loadu_ps(C + i * ldc + 16 * j) : _mm512_setzero_ps();
    for (int64_t l = 0; l < L; l++) {
        __m512 b[4];
        for (int j = 0; j < NZ; j++) b[j] = _mm512_loadu_ps(B + l * ldb + 16 * j);
        const float *a = A + l * als;
        for (int i = 0; i < MR; i++) {
            __m512 ai = _mm512_set1_ps(a[i * ars]);
            for (int j = 0; j < NZ; j++) c[i][j] = _mm512_fmadd_ps(ai, b[j], c[i][j]);
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NZ; j++) _mm512_storeu_ps(C + i * ldc + 16 * j, c[i][j]);
}

#define UK(mr, nz) ukernel(mr, nz, ll, A + r * ars + l0 * als, ars, als, B + l0 * ldb + 16 * j, ldb, C + r * ldc + 16 * j, ldc, a)
#define UK_NZ(mr) switch (nz) { case 4: UK(mr, 4); break; case 3: UK(mr, 3); break; case 2: UK(mr, 2); break; default: UK(mr, 1); }
#define LC 32                /* reduction steps per pass over the row blocks: their A and B lines stay in L1 */

/* C[rows][cols] (+)= A . B, cols a multiple of 16, in 6-row x 64-column register tiles. The
 * filter gradient's A and B rows lie one tile (16 KB) apart, so the reduction is cut into LC
 * steps that every row block reuses from L1 before the next. */
static void gemm(int64_t rows, int64_t cols, int64_t L, const float *A, int64_t ars, int64_t als, const float *B, int64_t ldb,
                 float *C, int64_t ldc, bool acc) {
    for (int64_t j = 0; j < cols / 16; j += 4) {
        int nz = cols / 16 - j < 4 ? (int)(cols / 16 - j) : 4;
        for (int64_t l0 = 0; l0 < L; l0 += LC) {
            int64_t ll = L - l0 < LC ? L - l0 : LC;
            bool a = acc || l0 > 0;
            for (int64_t r = 0; r < rows; r += 6) {
                switch (rows - r < 6 ? rows - r : 6) {
                case 6: UK_NZ(6) break;
                case 5: UK_NZ(5) break;
                case 4: UK_NZ(4) break;
                case 3: UK_NZ(3) break;
                case 2: UK_NZ(2) break;
                default: UK_NZ(1) break;
                }
            }
        }
    }
}

/* ---- filter transforms ---- */

/* U[xn][c][k] = G w[:, :, c, k] G^T for w HWIO [R, R, C, K]; flip: the input gradient's filter,
 * U[xn][k][c] from w[R-1-a][R-1-b][c][k]. */
static void filter_transform(const wgeom *g, const void *w, bool bf, int64_t C, int64_t K, bool flip, float *U,
                             float *scratch, int nt) {
    const int R = g->R;
    float *dst = flip ? scratch : U;     /* flip: [xn][c][k] first, transposed after */
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t c = 0; c < C; c++)
        for (int64_t k = 0; k < K; k += 16) {
            __m512 t[6][WA];
            for (int a = 0; a < R; a++) {
                __m512 d[6] = { 0 };
                for (int b = 0; b < R; b++) {
                    int ha = flip ? R - 1 - a : a, hb = flip ? R - 1 - b : b;
                    d[b] = ld16(w, bf, ((int64_t)(ha * R + hb) * C + c) * K + k);
                }
                vand1d(d, R, t[a]);
            }
            for (int nu = 0; nu < WA; nu++) {
                __m512 col[6] = { 0 }, v[WA];
                for (int a = 0; a < R; a++) col[a] = t[a][nu];
                vand1d(col, R, v);
                for (int xi = 0; xi < WA; xi++) _mm512_storeu_ps(dst + ((int64_t)(xi * WA + nu) * C + c) * K + k, v[xi]);
            }
        }
    if (!flip) return;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int xn = 0; xn < WA2; xn++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t c = 0; c < C; c++) U[((int64_t)xn * K + k) * C + c] = scratch[((int64_t)xn * C + c) * K + k];
}

/* ---- workspace ---- */

/* Floats per tile in the transformed buffers ([tile][64][channels]): one cache line more than the
 * data, so that the products, which step from tile to tile, do not hit one L1 set with every row. */
static int64_t tstride(int64_t ch) { return WA2 * ch + 16; }

/* U (and the flip's scratch), then per thread: forward / input gradient: V and the products
 * (tb tiles); filter gradient: the transformed x and dy (tb tiles) and a private sum. tb: up to
 * TB / TBW tiles (48: within ~10% of the best block measured, 64-128, at half the memory), fewer
 * when that would leave a thread idle (a small batch: the workspace shrinks with it). */
typedef struct wplan { int nt; int64_t tb; size_t u, scratch, per_thread, total; } wplan;

static wplan plan_of(const kiln_node *n, const wgeom *g, int nt, int64_t tb) {
    wplan p;
    bool bf = n->op == KILN_OP_CONV2D_BWD_FILTER;
    int64_t most = bf ? TBW : TB, even = (g->tiles + nt - 1) / nt;
    if (tb <= 0) tb = even < most ? even : most;
    if (!bf) tb = (tb + 5) / 6 * 6;
    size_t ck = (size_t)g->C * (size_t)g->K * WA2 * sizeof(float);
    if (bf && (double)nt * (double)ck > 4.0 * WMAX_FILTER_BYTES)   /* private sums: at most 64 MiB in all */
        nt = (int)(4.0 * WMAX_FILTER_BYTES / (double)ck) > 1 ? (int)(4.0 * WMAX_FILTER_BYTES / (double)ck) : 1;
    p.nt = nt;
    p.tb = tb;
    p.u = bf ? 0 : cpu_align64(ck);
    p.scratch = n->op == KILN_OP_CONV2D_BWD_INPUT ? cpu_align64(ck) : 0;
    p.per_thread = cpu_align64((size_t)tb * (size_t)(tstride(g->C) + tstride(g->K)) * sizeof(float)) + (bf ? cpu_align64(ck) : 0);
    p.total = p.u + p.scratch + (size_t)nt * p.per_thread + 64;
    return p;
}

/* The largest plan that fits the workspace the step was given: fewer tiles per block, then fewer
 * threads (the plan was made with the thread count then; it may differ now). */
static wplan plan_fit(const kiln_node *n, const wgeom *g, int nt, size_t ws) {
    wplan p = plan_of(n, g, nt, 0);
    while (p.total > ws && (p.tb > 6 || p.nt > 1))
        p = p.tb > 6 ? plan_of(n, g, p.nt, p.tb / 2) : plan_of(n, g, p.nt - 1, 0);
    return p;
}

/* The plan for this call in the step's workspace (64-byte aligned); false (error set) when even
 * the smallest does not fit. */
static bool fit_workspace(const kiln_kctx *c, const wgeom *g, wplan *p, char **ws) {
    *p = plan_fit(c->node, g, cpu_threads(c), c->ws_bytes);
    if (!c->workspace || p->total > c->ws_bytes) {
        kiln_set_error(KILN_INTERNAL, "%s: Winograd workspace is %zu bytes, needs %zu", c->node->name, c->ws_bytes, p->total);
        return false;
    }
    *ws = (char *)(((uintptr_t)c->workspace + 63) & ~(uintptr_t)63);
    return true;
}

/* ---- the three kernels ---- */

static bool node_bf16_in(const kiln_node *n) { return n->in[0]->dtype == KILN_BF16; }

/* Forward and input gradient: tiles of the output, in blocks of TB per thread. */
static kiln_status k_winograd_fwd(const kiln_kctx *c) {
    pthread_once(&mats_once, make_mats);
    const kiln_node *n = c->node;
    wgeom g = geom_of(n);
    bool bwd = n->op == KILN_OP_CONV2D_BWD_INPUT;
    wplan p;
    char *ws;
    if (!fit_workspace(c, &g, &p, &ws)) return KILN_INTERNAL;
    int nt = p.nt;
    float *U = (float *)ws;
    const void *x = bwd ? c->in[1].data : c->in[0].data, *w = bwd ? c->in[0].data : c->in[1].data;
    bool xbf = bwd ? n->in[1]->dtype == KILN_BF16 : node_bf16_in(n);
    bool wbf = bwd ? node_bf16_in(n) : n->in[1]->dtype == KILN_BF16;
    bool ybf = n->dtype == KILN_BF16;
    const int64_t sc = tstride(g.C), sk = tstride(g.K);
    filter_transform(&g, w, wbf, bwd ? g.K : g.C, bwd ? g.C : g.K, bwd, U, (float *)(ws + p.u), nt);
    const void *bias = !bwd && c->epi_bias ? c->epi_bias->data : NULL;
    bool bias_bf = bias && c->epi_bias->dtype == KILN_BF16, relu = !bwd && c->epi_relu;
    const int64_t tb = p.tb;
    int64_t blocks = (g.tiles + tb - 1) / tb;
    #pragma omp parallel num_threads(nt)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        float *V = (float *)(ws + p.u + p.scratch + (size_t)tid * p.per_thread);
        float *Mt = V + (size_t)tb * sc;
        #pragma omp for schedule(static)
        for (int64_t blk = 0; blk < blocks; blk++) {
            int64_t t0 = blk * tb, nb = g.tiles - t0 < tb ? g.tiles - t0 : tb;
            for (int64_t t = 0; t < tb; t++) {
                if (t >= nb) {       /* rows past the last tile: zero, their products are not read */
                    memset(V + (size_t)t * sc, 0, (size_t)WA2 * g.C * sizeof(float));
                    continue;
                }
                int64_t tt = t0 + t, img = tt / (g.th * g.tw), r = tt % (g.th * g.tw);
                int64_t oh0 = (r / g.tw) * g.m, ow0 = (r % g.tw) * g.m;
                for (int64_t ch = 0; ch < g.C; ch += 16)
                    input_tile(&g, x, xbf, img, oh0 - g.pt, ow0 - g.pl, ch, V + t * sc + ch, g.C);
            }
            for (int xn = 0; xn < WA2; xn++)
                gemm(tb, g.K, g.C, V + (size_t)xn * g.C, sc, 1, U + (size_t)xn * g.C * g.K, g.K, Mt + (size_t)xn * g.K, sk, false);
            for (int64_t t = 0; t < nb; t++) {
                int64_t tt = t0 + t, img = tt / (g.th * g.tw), r = tt % (g.th * g.tw);
                int64_t oh0 = (r / g.tw) * g.m, ow0 = (r % g.tw) * g.m;
                for (int64_t k = 0; k < g.K; k += 16)
                    output_tile(&g, Mt + t * sk + k, g.K, c->out.data, ybf, img, oh0, ow0, k, bias, bias_bf, relu);
            }
        }
    }
    return KILN_OK;
}

/* Filter gradient: dW = AT' [sum over tiles (G' dy_t G'^T) . (BT x_t BT^T)] AT'^T, each thread
 * summing its blocks' products into a private [64][C][K], then added up and transformed. */
static kiln_status k_winograd_bwd_filter(const kiln_kctx *c) {
    pthread_once(&mats_once, make_mats);
    const kiln_node *n = c->node;
    wgeom g = geom_of(n);
    wplan p;
    char *ws;
    if (!fit_workspace(c, &g, &p, &ws)) return KILN_INTERNAL;
    int nt = p.nt;
    const void *x = c->in[0].data, *dy = c->in[1].data;
    bool xbf = n->in[0]->dtype == KILN_BF16, dbf = n->in[1]->dtype == KILN_BF16;
    size_t ck = (size_t)g.C * g.K;
    const int64_t sc = tstride(g.C), sk = tstride(g.K);
    const int64_t tb = p.tb;
    int64_t blocks = (g.tiles + tb - 1) / tb;
    int team = 1;            /* the threads that ran (and zeroed their sums): OpenMP may give fewer */
    #pragma omp parallel num_threads(nt)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
        #pragma omp single
        team = omp_get_num_threads();
#endif
        float *Xh = (float *)(ws + (size_t)tid * p.per_thread);
        float *Dh = Xh + (size_t)tb * sc;
        float *Acc = (float *)((char *)Xh + cpu_align64((size_t)tb * (size_t)(sc + sk) * sizeof(float)));
        memset(Acc, 0, WA2 * ck * sizeof(float));
        #pragma omp for schedule(static)
        for (int64_t blk = 0; blk < blocks; blk++) {
            int64_t t0 = blk * tb, nb = g.tiles - t0 < tb ? g.tiles - t0 : tb;
            for (int64_t t = 0; t < nb; t++) {
                int64_t tt = t0 + t, img = tt / (g.th * g.tw), r = tt % (g.th * g.tw);
                int64_t oh0 = (r / g.tw) * g.m, ow0 = (r % g.tw) * g.m;
                for (int64_t ch = 0; ch < g.C; ch += 16)
                    input_tile(&g, x, xbf, img, oh0 - g.pt, ow0 - g.pl, ch, Xh + t * sc + ch, g.C);
                for (int64_t k = 0; k < g.K; k += 16)
                    grad_tile(&g, dy, dbf, img, oh0, ow0, k, Dh + t * sk + k, g.K);
            }
            for (int xn = 0; xn < WA2; xn++)
                gemm(g.C, g.K, nb, Xh + (size_t)xn * g.C, 1, sc, Dh + (size_t)xn * g.K, sk, Acc + (size_t)xn * ck, g.K, true);
        }
    }
    /* add the threads' sums into thread 0's, then dW[a][b][c][k] = sum AT'[a][xi] AT'[b][nu] Acc[xi nu][c][k] */
    float *A0 = (float *)(ws + cpu_align64((size_t)tb * (size_t)(sc + sk) * sizeof(float)));
    const int R = g.R;
    float *dw = c->out.data;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t ch = 0; ch < g.C; ch++)
        for (int64_t k = 0; k < g.K; k += 16) {
            __m512 t[WA][6];
            for (int xi = 0; xi < WA; xi++) {
                __m512 v[WA];
                for (int nu = 0; nu < WA; nu++) {
                    size_t off = (size_t)(xi * WA + nu) * ck + (size_t)ch * g.K + k;
                    __m512 s = _mm512_loadu_ps(A0 + off);
                    for (int th = 1; th < team; th++)
                        s = _mm512_add_ps(s, _mm512_loadu_ps((const float *)((const char *)A0 + (size_t)th * p.per_thread) + off));
                    v[nu] = s;
                }
                out1d(v, R, t[xi]);
            }
            for (int b = 0; b < R; b++) {
                __m512 col[WA], r[6];
                for (int xi = 0; xi < WA; xi++) col[xi] = t[xi][b];
                out1d(col, R, r);
                for (int a = 0; a < R; a++) _mm512_storeu_ps(dw + ((int64_t)(a * R + b) * g.C + ch) * g.K + k, r[a]);
            }
        }
    return KILN_OK;
}

#pragma GCC pop_options

/* The node's operands: f32 or bf16 inputs (mixed: bf16 with an f32 output, or bf16 throughout
 * under bf16 activations); the filter gradient is f32. */
static bool dtypes_ok(const kiln_node *n) {
    kiln_dtype a = n->in[0]->dtype, b = n->in[1]->dtype;
    if (a != b || (a != KILN_F32 && a != KILN_BF16)) return false;
    if (a == KILN_BF16 && !cpu_has_bf16()) return false;    /* the policy keeps f32 there; not this kernel's call */
    if (n->op == KILN_OP_CONV2D_BWD_FILTER) return n->dtype == KILN_F32;
    return n->dtype == KILN_F32 || n->dtype == KILN_BF16;
}

static bool eligible(const kiln_node *n) {
    int R;
    if (!n || (n->op != KILN_OP_CONV2D && n->op != KILN_OP_CONV2D_BWD_INPUT && n->op != KILN_OP_CONV2D_BWD_FILTER))
        return false;
    if (n->n_in < 2 || !dtypes_ok(n) || !conv_attrs_ok(n, &R) || !__builtin_cpu_supports("avx512f")) return false;
    pthread_once(&mats_once, make_mats);
    if (!M.ok) return false;
    wgeom g = geom_of(n);
    return g.tiles > 0 && worth_it(&g, n->in[0]->dtype == KILN_BF16, n->op == KILN_OP_CONV2D_BWD_FILTER);
}

kiln_kernel_fn cpu_winograd_kernel(const kiln_node *n) {
    if (!eligible(n)) return NULL;
    return n->op == KILN_OP_CONV2D_BWD_FILTER ? k_winograd_bwd_filter : k_winograd_fwd;
}

size_t cpu_winograd_workspace(const kiln_node *n) {
    if (!eligible(n)) return 0;
    wgeom g = geom_of(n);
    return plan_of(n, &g, cpu_plan_threads(), 0).total;
}

#else   /* not x86-64: no AVX-512 kernel */

kiln_kernel_fn cpu_winograd_kernel(const kiln_node *n) { (void)n; return NULL; }
size_t cpu_winograd_workspace(const kiln_node *n) { (void)n; return 0; }

#endif
