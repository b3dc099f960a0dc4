/* Op conformance: every op in the op table, for every dtype its cases list, on every backend
 * against ref (random inputs, NaN/Inf parity, guard bytes around outputs, a per-op error bound),
 * and every gradient against central finite differences.
 * KILN_TEST_SEED=<n> reproduces a run; the seed is printed. KILN_TEST_HALF=1 also runs every case
 * that lists f32 in f16 and bf16 (the CUDA simulator's test_ops_half_cudasim). KILN_TEST_ONLY=<text>
 * runs only the cases whose label contains it (while working on an op). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "op_case.h"
#include "runtime/session_internal.h"
#include "kiln/device.h"

static int n_ran, n_skipped, n_failed;
static uint64_t seed;
static double family_err[KILN_OP_COUNT];   /* largest cpu-vs-ref error per op */

#define FAIL(...) do { n_failed++; fprintf(stderr, "FAIL "); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)

typedef struct { const op_case *cases; const int *n; } case_table;
static const case_table tables[] = {
    { cases_elementwise, &n_cases_elementwise }, { cases_reduce_shape, &n_cases_reduce_shape },
    { cases_matmul_conv_pool, &n_cases_matmul_conv_pool }, { cases_norm_loss_optim, &n_cases_norm_loss_optim },
    { cases_data, &n_cases_data }, { cases_mixed, &n_cases_mixed }, { cases_transformer, &n_cases_transformer },
};
#define N_TABLES (int)(sizeof tables / sizeof tables[0])

static double default_tol(kiln_dtype t) {
    switch (t) { case KILN_F64: return 1e-9; case KILN_F16: return 2e-2; case KILN_BF16: return 1e-1; default: return 1e-4; }
}

static kiln_dtype resolve(kiln_dtype d, kiln_dtype ft) { return d == CASE_FLOAT ? ft : d; }

static kiln_rng rng;
static void fill_random(kiln_tensor *t, double lo, double hi) {
    int64_t n = kiln_shape_numel(t->shape);
    for (int64_t i = 0; i < n; i++) {
        double u = lo + (hi - lo) * kiln_rng_uniform(&rng);
        kiln_tensor_set(t, i, kiln_dtype_is_float(t->dtype) ? u : floor(u));
    }
}

typedef struct built {
    kiln_graph *g;
    kiln_node *x[CASE_MAX_IN], *out, *extra[CASE_MAX_EXTRA];
    int n_extra;
} built;

static bool build_case(const op_case *c, kiln_dtype ft, built *b) {
    memset(b, 0, sizeof *b);
    b->g = kiln_graph_new();
    for (int i = 0; i < c->n_in; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        b->x[i] = kiln_placeholder(b->g, nm, resolve(c->in_dtype[i], ft), c->in_shape[i]);
    }
    b->out = c->build(b->g, b->x, b->extra, &b->n_extra);
    if (!b->out || kiln_graph_status(b->g) != KILN_OK) {
        FAIL("%s [%s]: build failed: %s", c->label, kiln_dtype_name(ft), kiln_graph_error(b->g));
        kiln_graph_free(b->g);
        b->g = NULL;
        return false;
    }
    return true;
}

/* Runs out + extras on a backend; returns new tensors in res (n_extra + 1). */
static kiln_status run_on(built *b, kiln_backend_kind be, kiln_tensor **in, int n_in, kiln_tensor **res) {
    kiln_session *s = kiln_session_new(b->g, &(kiln_session_opts){ .backend = be, .seed = 7 });
    if (!s) return KILN_INTERNAL;
    kiln_session_set_guard(s, 64);
    kiln_feed feeds[CASE_MAX_IN];
    for (int i = 0; i < n_in; i++) feeds[i] = (kiln_feed){ b->x[i], in[i] };
    kiln_node *f[CASE_MAX_EXTRA + 1] = { b->out };
    for (int i = 0; i < b->n_extra; i++) f[i + 1] = b->extra[i];
    for (int i = 0; i <= b->n_extra; i++) res[i] = NULL;
    kiln_session_set_step(s, 3);
    kiln_status st = kiln_session_run(s, feeds, n_in, f, res, b->n_extra + 1, NULL, 0);
    kiln_session_free(s);
    return st;
}

/* Normalised max error; NaN/Inf must sit at the same places with the same sign. */
static double compare(const kiln_tensor *a, const kiln_tensor *r, bool nonfinite_any, const char **why) {
    int64_t n = kiln_shape_numel(r->shape);
    double scale = 1, err = 0;
    *why = NULL;
    for (int64_t i = 0; i < n; i++) { double v = fabs(kiln_tensor_get(r, i)); if (isfinite(v) && v > scale) scale = v; }
    for (int64_t i = 0; i < n; i++) {
        double x = kiln_tensor_get(a, i), y = kiln_tensor_get(r, i);
        if (nonfinite_any && (!isfinite(x) || !isfinite(y))) {
            if (isfinite(x)) { *why = "NaN/Inf lost"; return INFINITY; }
            continue;
        }
        if (isnan(x) || isnan(y)) { if (isnan(x) != isnan(y)) { *why = "NaN parity"; return INFINITY; } continue; }
        if (isinf(x) || isinf(y)) { if (x != y) { *why = "Inf parity"; return INFINITY; } continue; }
        double e = fabs(x - y) / scale;
        if (e > err) err = e;
    }
    return err;
}

static void free_all(kiln_tensor **t, int n) { for (int i = 0; i < n; i++) kiln_tensor_free(t[i]); }

static bool gpu;                            /* run the cuda column (a GPU answered) */
static double gpu_err[KILN_OP_COUNT];

/* Each backend vs ref (cpu; cuda when a GPU is present), plus the same with a NaN and an Inf
 * planted in the first float input. */
static void check_backend(const op_case *c, kiln_dtype ft) {
    built b;
    if (!build_case(c, ft, &b)) return;
    kiln_tensor *in[CASE_MAX_IN] = { 0 };
    for (int i = 0; i < c->n_in; i++) {
        in[i] = kiln_tensor_new(resolve(c->in_dtype[i], ft), c->in_shape[i]);
        fill_random(in[i], c->lo[i], c->hi[i]);
    }
    double tol = c->tol > 0 ? c->tol : default_tol(ft);
    const kiln_backend_kind kinds[2] = { KILN_BACKEND_CPU, KILN_BACKEND_CUDA };
    const char *names[2] = { "cpu", "cuda" };
    double *errs[2] = { family_err, gpu_err };
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {    /* NaN/Inf parity */
            int fi = -1;
            for (int i = 0; i < c->n_in && fi < 0; i++) if (kiln_dtype_is_float(in[i]->dtype)) fi = i;
            if (fi < 0 || c->op == KILN_OP_MAX_POOL_GRAD) break;   /* MaxPoolGrad's x must match y */
            int64_t n = kiln_shape_numel(in[fi]->shape);
            kiln_tensor_set(in[fi], 0, NAN);
            if (n > 2) kiln_tensor_set(in[fi], n - 1, INFINITY);
        }
        kiln_tensor *ref[CASE_MAX_EXTRA + 1], *got[CASE_MAX_EXTRA + 1];
        if (run_on(&b, KILN_BACKEND_REF, in, c->n_in, ref) != KILN_OK) {
            FAIL("%s [%s] ref run: %s", c->label, kiln_dtype_name(ft), kiln_last_error());
            break;
        }
        for (int be = 0; be < 2; be++) {
            if (be == 1 && !gpu) { n_skipped++; continue; }
            n_ran++;
            if (run_on(&b, kinds[be], in, c->n_in, got) != KILN_OK) {
                FAIL("%s [%s] %s run: %s", c->label, kiln_dtype_name(ft), names[be], kiln_last_error());
                continue;
            }
            for (int k = 0; k <= b.n_extra; k++) {
                const char *why;
                /* oneDNN's bf16 convolutions multiply the zero pads of their blocked layouts too,
                 * so an Inf operand may give NaN where ref (which skips pads) is finite */
                bool conv = c->op == KILN_OP_CONV2D || c->op == KILN_OP_CONV2D_BWD_INPUT || c->op == KILN_OP_CONV2D_BWD_FILTER;
                double e = compare(got[k], ref[k], c->nonfinite_any || (conv && ft == KILN_BF16), &why);
                if (pass == 0 && e > errs[be][c->op] && ft == KILN_F32) errs[be][c->op] = e;
                double t = be == 1 && c->gpu_tol > 0 ? c->gpu_tol : tol;
                if (why) FAIL("%s [%s]%s output %d: %s vs ref %s", c->label, kiln_dtype_name(ft), pass ? " (NaN/Inf input)" : "", k, names[be], why);
                else if (pass == 0 && e > t) FAIL("%s [%s] output %d: %s vs ref error %.3g > %.3g", c->label, kiln_dtype_name(ft), k, names[be], e, t);
            }
            free_all(got, b.n_extra + 1);
        }
        free_all(ref, b.n_extra + 1);
    }
    free_all(in, c->n_in);
    kiln_graph_free(b.g);
}

/* Loss = sum(out * w) with fixed random w; analytic grads vs central differences, on ref. */
static void check_grad(const op_case *c, kiln_dtype ft) {
    built b;
    if (!build_case(c, ft, &b)) return;
    kiln_graph *g = b.g;
    kiln_tensor *wt = kiln_tensor_new(b.out->dtype, b.out->shape);
    fill_random(wt, -1, 1);
    kiln_node *w = kiln_constant(g, wt);
    kiln_node *loss = kiln_reduce_sum(g, kiln_mul(g, b.out, w), NULL, 0, false);
    kiln_node *xs[CASE_MAX_IN], *dx[CASE_MAX_IN];
    int idx[CASE_MAX_IN], nx = 0;
    for (int i = 0; i < c->n_in; i++)
        if (kiln_dtype_is_float(b.x[i]->dtype) && !(c->nograd_inputs & (1u << i))) { idx[nx] = i; xs[nx++] = b.x[i]; }
    n_ran++;
    if (!loss || kiln_gradients(g, loss, xs, nx, dx) != KILN_OK) {
        FAIL("%s [%s] gradient build: %s", c->label, kiln_dtype_name(ft), kiln_graph_error(g));
        goto out;
    }
    kiln_tensor *in[CASE_MAX_IN] = { 0 };
    for (int i = 0; i < c->n_in; i++) {
        in[i] = kiln_tensor_new(resolve(c->in_dtype[i], ft), c->in_shape[i]);
        fill_random(in[i], c->lo[i], c->hi[i]);
    }
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = KILN_BACKEND_REF, .seed = 7 });
    kiln_feed feeds[CASE_MAX_IN];
    for (int i = 0; i < c->n_in; i++) feeds[i] = (kiln_feed){ b.x[i], in[i] };
    kiln_tensor *an[CASE_MAX_IN] = { 0 };
    kiln_session_set_step(s, 3);
    if (kiln_session_run(s, feeds, c->n_in, dx, an, nx, NULL, 0) != KILN_OK) {
        FAIL("%s [%s] gradient run: %s", c->label, kiln_dtype_name(ft), kiln_last_error());
    } else {
        double h = ft == KILN_F64 ? 1e-6 : 1e-2;
        double tol = c->fd_tol > 0 ? c->fd_tol : (ft == KILN_F64 ? 1e-5 : 2e-2);
        kiln_tensor *lv = kiln_tensor_new(loss->dtype, loss->shape);
        double worst = 0;
        for (int j = 0; j < nx; j++) {
            kiln_tensor *t = in[idx[j]];
            int64_t n = kiln_shape_numel(t->shape), stride = n > 40 ? n / 40 + 1 : 1;
            for (int64_t e = 0; e < n; e += stride) {
                double x0 = kiln_tensor_get(t, e), a = kiln_tensor_get(an[j], e), err = INFINITY;
                /* A kink (a max-pool or ReLU near-tie) closer to x0 than the step makes central
                   differences wrong: a failing element is tried again with steps 100x smaller. */
                for (double hs = h; hs > h * 1e-3 && !(err <= tol); hs *= 1e-2) {
                    double lp, lm;
                    kiln_tensor_set(t, e, x0 + hs);
                    kiln_session_set_step(s, 3);
                    kiln_session_run(s, feeds, c->n_in, &loss, &lv, 1, NULL, 0);
                    lp = kiln_tensor_get(lv, 0);
                    kiln_tensor_set(t, e, x0 - hs);
                    kiln_session_set_step(s, 3);
                    kiln_session_run(s, feeds, c->n_in, &loss, &lv, 1, NULL, 0);
                    lm = kiln_tensor_get(lv, 0);
                    kiln_tensor_set(t, e, x0);
                    double num = (lp - lm) / (2 * hs);
                    err = fabs(num - a) / fmax(1.0, fmax(fabs(num), fabs(a)));
                    if (ft != KILN_F64) break;   /* low precision: a smaller step is only noise */
                }
                if (!(err <= worst)) worst = err;
            }
        }
        if (!(worst <= tol)) FAIL("%s [%s] gradient vs finite differences: error %.3g > %.3g", c->label, kiln_dtype_name(ft), worst, tol);
        kiln_tensor_free(lv);
    }
    free_all(an, nx);
    free_all(in, c->n_in);
    kiln_session_free(s);
out:
    kiln_tensor_free(wt);
    kiln_graph_free(g);
}

int main(void) {
    setenv("KILN_CPU_SHAPE_PAR_MIN", "4096", 0);   /* the large shape cases take cpu_shape.c's threaded path */
    const char *env = getenv("KILN_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("test_ops: seed %llu (KILN_TEST_SEED=%llu reproduces)\n", (unsigned long long)seed, (unsigned long long)seed);
    rng = kiln_rng_new(seed);
    /* exact f32 on the GPU unless asked (no TF32 tensor cores, no FFT/Winograd convolutions): the
     * tolerances are f32's, and NaN/Inf parity needs direct or GEMM convolution */
    setenv("KILN_CUDA_TF32", "0", 0);
    setenv("KILN_CUDNN_EXACT", "1", 0);
    gpu = kiln_gpu_available();
    /* every op needs a ref kernel, a case, and a gradient check unless it is NO_GRAD */
    for (int op = 0; op < KILN_OP_COUNT; op++) {
        const kiln_op_def *d = kiln_op_get((kiln_op)op);
        if (d->flags & KILN_OPF_SOURCE) continue;
        bool has_case = false, has_grad = false;
        for (int t = 0; t < N_TABLES; t++)
            for (int i = 0; i < *tables[t].n; i++)
                if (tables[t].cases[i].op == (kiln_op)op) { has_case = true; has_grad |= tables[t].cases[i].grad; }
        if (!d->ref) FAIL("op %s has no ref kernel", d->name);
        if (!has_case) FAIL("op %s has no conformance case in tests/ops/cases_*.c", d->name);
        if (!(d->flags & KILN_OPF_NO_GRAD) && !has_grad) FAIL("op %s is differentiable but no case checks its gradient", d->name);
    }
    for (int t = 0; t < N_TABLES; t++)
        for (int i = 0; i < *tables[t].n; i++) {
            const op_case *c = &tables[t].cases[i];
            if (!kiln_op_get(c->op)->ref) continue;
            if (getenv("KILN_TEST_ONLY") && !strstr(c->label, getenv("KILN_TEST_ONLY"))) continue;
            for (int dt = 0; dt < KILN_DTYPE_COUNT; dt++) {
                unsigned dts = c->dtypes | (getenv("KILN_TEST_HALF") && (c->dtypes & DT_F32) ? DT_F16 | DT_BF16 : 0);
                if (!(dts & (1u << dt))) continue;
                check_backend(c, (kiln_dtype)dt);
                bool fd_dtype = (c->dtypes & DT_F64) ? dt == KILN_F64 : dt == KILN_F32;
                if (c->grad && fd_dtype) check_grad(c, (kiln_dtype)dt);
            }
        }
    printf("largest error vs ref (f32, normalised) per op:%s\n", gpu ? "  cpu / cuda" : "  cpu");
    for (int op = 0; op < KILN_OP_COUNT; op++)
        if (family_err[op] > 0 || gpu_err[op] > 0) {
            if (gpu) printf("  %-32s %.2e / %.2e\n", kiln_op_get((kiln_op)op)->name, family_err[op], gpu_err[op]);
            else printf("  %-32s %.2e\n", kiln_op_get((kiln_op)op)->name, family_err[op]);
        }
    if (gpu) printf("test_ops: %d op/dtype/backend cases ran (cpu and cuda), %d failed\n", n_ran, n_failed);
    else printf("test_ops: %d op/dtype/backend cases ran, %d skipped (cuda: no GPU: %s), %d failed\n", n_ran, n_skipped,
                kiln_gpu_unavailable_reason(), n_failed);
    int n_cases = 0;
    for (int t = 0; t < N_TABLES; t++) n_cases += *tables[t].n;
    printf("test_ops: %d cases covering %d ops (every op of the table but the 3 sources)\n", n_cases, KILN_OP_COUNT - 3);
    printf("%d passed, %d failed\n", n_ran - n_failed, n_failed);
    return n_failed ? 1 : 0;
}
