/* Variable initializers, seeded, with Keras' fan-in/fan-out rules. */
#include <math.h>
#include "core/core.h"
#include "core/load_store.h"
#include "kiln/graph.h"

double kiln_rng_normal(kiln_rng *r) {
    double u1 = kiln_rng_uniform(r), u2 = kiln_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

kiln_init kiln_init_zeros(void) { return (kiln_init){ .kind = KILN_INIT_ZEROS }; }
kiln_init kiln_init_ones(void) { return (kiln_init){ .kind = KILN_INIT_ONES }; }
kiln_init kiln_init_constant(double v) { return (kiln_init){ .kind = KILN_INIT_CONSTANT, .a = v }; }
kiln_init kiln_init_uniform(double lo, double hi, uint64_t seed) { return (kiln_init){ KILN_INIT_UNIFORM, lo, hi, seed }; }
kiln_init kiln_init_normal(double m, double sd, uint64_t seed) { return (kiln_init){ KILN_INIT_NORMAL, m, sd, seed }; }
kiln_init kiln_init_truncated_normal(double m, double sd, uint64_t seed) { return (kiln_init){ KILN_INIT_TRUNCATED_NORMAL, m, sd, seed }; }
kiln_init kiln_init_glorot_uniform(uint64_t seed) { return (kiln_init){ .kind = KILN_INIT_GLOROT_UNIFORM, .seed = seed }; }
kiln_init kiln_init_glorot_normal(uint64_t seed) { return (kiln_init){ .kind = KILN_INIT_GLOROT_NORMAL, .seed = seed }; }
kiln_init kiln_init_he_uniform(uint64_t seed) { return (kiln_init){ .kind = KILN_INIT_HE_UNIFORM, .seed = seed }; }
kiln_init kiln_init_he_normal(uint64_t seed) { return (kiln_init){ .kind = KILN_INIT_HE_NORMAL, .seed = seed }; }

/* Keras: dense [in, out]; conv [kh, kw, in, out] -> receptive field * in / * out. */
static void fans(kiln_shape s, double *fan_in, double *fan_out) {
    if (s.rank == 0) { *fan_in = *fan_out = 1; return; }
    if (s.rank == 1) { *fan_in = *fan_out = (double)s.dim[0]; return; }
    double rf = 1;
    for (int i = 0; i < s.rank - 2; i++) rf *= (double)s.dim[i];
    *fan_in = rf * (double)s.dim[s.rank - 2];
    *fan_out = rf * (double)s.dim[s.rank - 1];
}

static double trunc_normal(kiln_rng *r, double mean, double sd) {
    for (;;) {
        double z = kiln_rng_normal(r);
        if (fabs(z) <= 2.0) return mean + sd * z;
    }
}

/* Keras's Orthogonal: a normal [rows, cols] matrix (rows = all dims but the last) made
 * orthonormal along its shorter side, as QR with R's diagonal made positive (= Gram-Schmidt). */
static kiln_status orthogonal(kiln_init init, kiln_tensor *t) {
    int64_t n = kiln_shape_numel(t->shape), cols = t->shape.rank ? t->shape.dim[t->shape.rank - 1] : 1, rows = cols ? n / cols : 0;
    bool tr = rows < cols;                 /* orthonormal columns of the taller orientation */
    int64_t R = tr ? cols : rows, C = tr ? rows : cols;
    double *a = kiln_malloc((size_t)(n ? n : 1) * sizeof *a);
    if (!a) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_init_fill: out of host memory for an orthogonal %lld x %lld matrix", (long long)rows, (long long)cols);
    kiln_rng r = kiln_rng_new(init.seed);
    for (int64_t i = 0; i < n; i++) a[i] = kiln_rng_normal(&r);       /* a[i * C + j]: R x C */
    for (int64_t j = 0; j < C; j++) {
        for (int64_t k = 0; k < j; k++) {
            double d = 0;
            for (int64_t i = 0; i < R; i++) d += a[i * C + j] * a[i * C + k];
            for (int64_t i = 0; i < R; i++) a[i * C + j] -= d * a[i * C + k];
        }
        double nn = 0;
        for (int64_t i = 0; i < R; i++) nn += a[i * C + j] * a[i * C + j];
        nn = nn > 0 ? 1 / sqrt(nn) : 0;
        for (int64_t i = 0; i < R; i++) a[i * C + j] *= nn;
    }
    double gain = init.a ? init.a : 1;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) kiln_store(t->data, t->dtype, i * cols + j, gain * (tr ? a[j * C + i] : a[i * C + j]));
    kiln_free(a);
    return KILN_OK;
}

kiln_status kiln_init_fill(kiln_init init, kiln_tensor *t) {
    if (!t) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_init_fill: NULL tensor");
    if ((unsigned)init.kind >= KILN_INIT_COUNT)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_init_fill: unknown initializer %d", (int)init.kind);
    if (init.kind == KILN_INIT_ORTHOGONAL) return orthogonal(init, t);
    int64_t n = kiln_shape_numel(t->shape);
    double fi, fo;
    fans(t->shape, &fi, &fo);
    kiln_rng r = kiln_rng_new(init.seed);
    double lim;
    for (int64_t i = 0; i < n; i++) {
        double v = 0;
        switch (init.kind) {
        case KILN_INIT_ZEROS: v = 0; break;
        case KILN_INIT_ONES: v = 1; break;
        case KILN_INIT_CONSTANT: v = init.a; break;
        case KILN_INIT_UNIFORM: v = init.a + (init.b - init.a) * kiln_rng_uniform(&r); break;
        case KILN_INIT_NORMAL: v = init.a + init.b * kiln_rng_normal(&r); break;
        case KILN_INIT_TRUNCATED_NORMAL: v = trunc_normal(&r, init.a, init.b); break;
        case KILN_INIT_GLOROT_UNIFORM: lim = sqrt(6.0 / (fi + fo)); v = -lim + 2 * lim * kiln_rng_uniform(&r); break;
        /* Keras draws a truncated normal with stddev scaled by 1/0.8796 to keep the variance */
        case KILN_INIT_GLOROT_NORMAL: v = trunc_normal(&r, 0, sqrt(2.0 / (fi + fo)) / 0.87962566103423978); break;
        case KILN_INIT_HE_UNIFORM: lim = sqrt(6.0 / fi); v = -lim + 2 * lim * kiln_rng_uniform(&r); break;
        case KILN_INIT_HE_NORMAL: v = trunc_normal(&r, 0, sqrt(2.0 / fi) / 0.87962566103423978); break;
        case KILN_INIT_VARIANCE_SCALING: {
            double fan = init.mode == KILN_FAN_IN ? fi : init.mode == KILN_FAN_OUT ? fo : (fi + fo) / 2;
            double sc = init.a / (fan > 1 ? fan : 1);
            if (init.distribution == KILN_VS_UNIFORM) { lim = sqrt(3 * sc); v = -lim + 2 * lim * kiln_rng_uniform(&r); }
            else if (init.distribution == KILN_VS_UNTRUNCATED_NORMAL) v = sqrt(sc) * kiln_rng_normal(&r);
            else v = trunc_normal(&r, 0, sqrt(sc) / 0.87962566103423978);
            break;
        }
        default: break;
        }
        kiln_store(t->data, t->dtype, i, v);
    }
    return KILN_OK;
}
