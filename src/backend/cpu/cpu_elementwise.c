/* Elementwise f32 kernels: binary ops (same shape, scalar or last-dim broadcast), unary
 * activations and their gradients, BiasAdd, and sums over leading dims (bias gradients). */
#include <string.h>
#include "backend/cpu/cpu_internal.h"

/* ---- binary ---- */
typedef enum { BC_SAME, BC_SCALAR_B, BC_SCALAR_A, BC_ROW_B, BC_ROW_A, BC_NONE } bcast_mode;

/* True when s is [..1.., C] (leading ones) with C = last dim of `full`. */
static bool is_row_of(kiln_shape s, kiln_shape full) {
    if (full.rank < 1 || s.rank < 1 || s.rank > full.rank) return false;
    for (int i = 0; i < s.rank - 1; i++) if (s.dim[i] != 1) return false;
    return s.dim[s.rank - 1] == full.dim[full.rank - 1];
}

static bcast_mode binary_mode(kiln_shape a, kiln_shape b, kiln_shape out) {
    bool a_full = kiln_shape_equal(a, out), b_full = kiln_shape_equal(b, out);
    if (a_full && b_full) return BC_SAME;
    if (a_full && kiln_shape_numel(b) == 1 && b.rank <= out.rank) return BC_SCALAR_B;
    if (b_full && kiln_shape_numel(a) == 1 && a.rank <= out.rank) return BC_SCALAR_A;
    if (a_full && is_row_of(b, out)) return BC_ROW_B;
    if (b_full && is_row_of(a, out)) return BC_ROW_A;
    return BC_NONE;
}

#define BINARY_KERNEL(name, EXPR)                                                                  \
    static kiln_status name(const kiln_kctx *c) {                                                  \
        const float *A = cpu_f(&c->in[0]), *B = cpu_f(&c->in[1]);                                   \
        float *Y = cpu_f(&c->out);                                                                  \
        int64_t n = c->out.numel;                                                                   \
        int nt = cpu_par(c, n);                                                                     \
        switch (binary_mode(c->in[0].shape, c->in[1].shape, c->out.shape)) {                       \
        case BC_SAME: {                                                                             \
            _Pragma("omp parallel for simd schedule(static) num_threads(nt)")                       \
            for (int64_t i = 0; i < n; i++) { float a = A[i], b = B[i]; Y[i] = (EXPR); }             \
        } break;                                                                                    \
        case BC_SCALAR_B: {                                                                         \
            const float b = B[0];                                                                   \
            _Pragma("omp parallel for simd schedule(static) num_threads(nt)")                       \
            for (int64_t i = 0; i < n; i++) { float a = A[i]; Y[i] = (EXPR); }                       \
        } break;                                                                                    \
        case BC_SCALAR_A: {                                                                         \
            const float a = A[0];                                                                   \
            _Pragma("omp parallel for simd schedule(static) num_threads(nt)")                       \
            for (int64_t i = 0; i < n; i++) { float b = B[i]; Y[i] = (EXPR); }                       \
        } break;                                                                                    \
        case BC_ROW_B: case BC_ROW_A: {                                                             \
            bool rb = binary_mode(c->in[0].shape, c->in[1].shape, c->out.shape) == BC_ROW_B;        \
            int64_t C = c->out.shape.dim[c->out.shape.rank - 1], R = C > 0 ? n / C : 0;             \
            _Pragma("omp parallel for schedule(static) num_threads(nt)")                            \
            for (int64_t r = 0; r < R; r++) {                                                       \
                const float *ar = rb ? A + r * C : A, *br = rb ? B : B + r * C;                     \
                float *yr = Y + r * C;                                                              \
                for (int64_t k = 0; k < C; k++) { float a = ar[k], b = br[k]; yr[k] = (EXPR); }     \
            }                                                                                       \
        } break;                                                                                    \
        default: return kiln_set_error(KILN_INTERNAL, "cpu binary op: unsupported broadcast");       \
        }                                                                                           \
        return KILN_OK;                                                                             \
    }

BINARY_KERNEL(k_add, a + b)
BINARY_KERNEL(k_sub, a - b)
BINARY_KERNEL(k_mul, a * b)
BINARY_KERNEL(k_div, a / b)
BINARY_KERNEL(k_maximum, (a >= b || a != a) ? a : b)   /* NaN wins, as ref */
BINARY_KERNEL(k_minimum, (a <= b || a != a) ? a : b)

/* ---- unary: y = f(x), alpha from attrs ---- */
#define UNARY_KERNEL(name, EXPR)                                                                   \
    static kiln_status name(const kiln_kctx *c) {                                                  \
        const float *X = cpu_f(&c->in[0]);                                                          \
        float *Y = cpu_f(&c->out);                                                                  \
        int64_t n = c->out.numel;                                                                   \
        const float alpha = (float)c->node->attrs.alpha;                                            \
        (void)alpha;                                                                                \
        _Pragma("omp parallel for simd schedule(static) num_threads(cpu_par(c, n))")                \
        for (int64_t i = 0; i < n; i++) { float x = X[i]; Y[i] = (EXPR); }                          \
        return KILN_OK;                                                                             \
    }

static inline float sigmoidf(float x) {
    /* stable for large |x|: never exp of a large positive number; no branch around the call, so
       the loop vectorizes */
    float e = expf(-fabsf(x)), r = 1.0f / (1.0f + e);
    return x >= 0 ? r : e * r;
}

UNARY_KERNEL(k_neg, -x)
UNARY_KERNEL(k_exp, expf(x))
UNARY_KERNEL(k_log, logf(x))
UNARY_KERNEL(k_sqrt, sqrtf(x))
UNARY_KERNEL(k_rsqrt, 1.0f / sqrtf(x))
UNARY_KERNEL(k_square, x * x)
UNARY_KERNEL(k_abs, fabsf(x))
UNARY_KERNEL(k_relu, x <= 0.0f ? 0.0f : x)            /* NaN passes through, as ref */
UNARY_KERNEL(k_leaky_relu, x > 0.0f ? x : alpha * x)
UNARY_KERNEL(k_elu, x > 0.0f ? x : alpha * expm1f(x))
UNARY_KERNEL(k_sigmoid, sigmoidf(x))
UNARY_KERNEL(k_tanh, tanhf(x))
UNARY_KERNEL(k_gelu, 0.5f * x * (1.0f + erff(x * 0.70710678f)))
UNARY_KERNEL(k_gelu_tanh, 0.5f * x * (1.0f + tanhf(0.79788456f * (x + 0.044715f * x * x * x))))
UNARY_KERNEL(k_pow, powf(x, alpha))
UNARY_KERNEL(k_sign, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x)   /* keeps NaN and 0 */
UNARY_KERNEL(k_softplus, (x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x))))
UNARY_KERNEL(k_erf, erff(x))
#define SELU_A 1.67326324f
#define SELU_S 1.05070099f
static inline float softplusf(float x) { return (x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x))); }
static inline float hard_sigmoidf(float x) { return x <= -3.0f ? 0.0f : x >= 3.0f ? 1.0f : (x + 3.0f) * (1.0f / 6.0f); }
UNARY_KERNEL(k_swish, x * sigmoidf(x))
UNARY_KERNEL(k_clipped_relu, x <= 0.0f ? 0.0f : x >= alpha ? alpha : x)   /* NaN passes through */
UNARY_KERNEL(k_hard_sigmoid, hard_sigmoidf(x))
UNARY_KERNEL(k_hard_swish, x * hard_sigmoidf(x))
UNARY_KERNEL(k_selu, SELU_S * (x > 0.0f ? x : SELU_A * expm1f(x)))
UNARY_KERNEL(k_softsign, x / (1.0f + fabsf(x)))
UNARY_KERNEL(k_mish, x * tanhf(softplusf(x)))

/* ---- activation gradients: (x or y, dy) -> dx ---- */
#define GRAD_KERNEL(name, EXPR)                                                                    \
    static kiln_status name(const kiln_kctx *c) {                                                  \
        const float *X = cpu_f(&c->in[0]), *G = cpu_f(&c->in[1]);                                   \
        float *Y = cpu_f(&c->out);                                                                  \
        int64_t n = c->out.numel;                                                                   \
        const float alpha = (float)c->node->attrs.alpha;                                            \
        (void)alpha;                                                                                \
        _Pragma("omp parallel for simd schedule(static) num_threads(cpu_par(c, n))")                \
        for (int64_t i = 0; i < n; i++) { float x = X[i], g = G[i]; Y[i] = (EXPR); }               \
        return KILN_OK;                                                                             \
    }

GRAD_KERNEL(k_relu_grad, x > 0.0f ? g : 0.0f)
GRAD_KERNEL(k_leaky_relu_grad, x > 0.0f ? g : alpha * g)
GRAD_KERNEL(k_elu_grad, x > 0.0f ? g : g * alpha * expf(x))
GRAD_KERNEL(k_gelu_grad, g * (0.5f * (1.0f + erff(x * 0.70710678f)) + x * expf(-0.5f * x * x) * 0.39894228f))
static inline float gelu_tanh_dx(float x) {
    float t = tanhf(0.79788456f * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.79788456f * (1.0f + 0.134145f * x * x);
}
GRAD_KERNEL(k_gelu_tanh_grad, g * gelu_tanh_dx(x))
GRAD_KERNEL(k_sigmoid_grad, g * x * (1.0f - x))      /* x is y = sigmoid(input) */
GRAD_KERNEL(k_tanh_grad, g * (1.0f - x * x))         /* x is y = tanh(input) */
GRAD_KERNEL(k_clipped_relu_grad, x > 0.0f && x < alpha ? g : 0.0f)   /* x is y */
GRAD_KERNEL(k_swish_grad, g * sigmoidf(x) * (1.0f + x * (1.0f - sigmoidf(x))))
GRAD_KERNEL(k_hard_sigmoid_grad, x > -3.0f && x < 3.0f ? g * (1.0f / 6.0f) : 0.0f)
GRAD_KERNEL(k_hard_swish_grad, x <= -3.0f ? 0.0f : x >= 3.0f ? g : g * (2.0f * x + 3.0f) * (1.0f / 6.0f))
GRAD_KERNEL(k_selu_grad, x > 0.0f ? g * SELU_S : g * (SELU_S * SELU_A) * expf(x))
GRAD_KERNEL(k_softsign_grad, g / ((1.0f + fabsf(x)) * (1.0f + fabsf(x))))
GRAD_KERNEL(k_mish_grad, g * (tanhf(softplusf(x)) + x * sigmoidf(x) * (1.0f - tanhf(softplusf(x)) * tanhf(softplusf(x)))))

/* ---- BiasAdd: x [..., C] + b [C] ---- */
static kiln_status k_bias_add(const kiln_kctx *c) {
    const float *X = cpu_f(&c->in[0]), *B = cpu_f(&c->in[1]);
    float *Y = cpu_f(&c->out);
    int64_t n = c->out.numel, C = c->in[1].numel, R = C > 0 ? n / C : 0;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, n))
    for (int64_t r = 0; r < R; r++) {
        const float *x = X + r * C;
        float *y = Y + r * C;
        for (int64_t k = 0; k < C; k++) y[k] = x[k] + B[k];
    }
    return KILN_OK;
}

/* ---- sums over leading dims: x viewed as [R, C] -> [C] (SumTo, Sum, Mean) ----
 * Threads split the columns so each column is summed in a fixed order (deterministic for any
 * thread count); accumulation in double keeps long sums (conv bias: N*H*W rows) accurate. */
static void sum_rows(const kiln_kctx *c, int64_t R, int64_t C, float scale) {
    const float *X = cpu_f(&c->in[0]);
    float *Y = cpu_f(&c->out);
    int nt = cpu_par(c, R * C);
    int64_t blk = 64;                                   /* columns per task: a few cache lines */
    if (C < (int64_t)nt * blk) blk = (C + nt - 1) / nt;
    if (blk < 16) blk = 16;
    int64_t nblk = (C + blk - 1) / blk;
    if (nblk < nt && R >= 4096 && C <= 64) {
        /* few columns, many rows (scalar sums, small bias vectors): split rows, combine in order */
        double part[64][64];
        int team = nt > 64 ? 64 : nt;
        #pragma omp parallel num_threads(team)
        {
            int t = 0, m = 1;
#ifdef _OPENMP
            t = omp_get_thread_num(); m = omp_get_num_threads();
#endif
            int64_t per = (R + m - 1) / m, r0 = t * per, r1 = r0 + per < R ? r0 + per : R;
            double *acc = part[t];
            for (int64_t k = 0; k < C; k++) acc[k] = 0.0;
            for (int64_t r = r0; r < r1; r++) {
                const float *x = X + r * C;
                for (int64_t k = 0; k < C; k++) acc[k] += x[k];
            }
            #pragma omp barrier
            #pragma omp single
            for (int64_t k = 0; k < C; k++) {
                double s = 0.0;
                for (int i = 0; i < m; i++) s += part[i][k];
                Y[k] = (float)(s * scale);
            }
        }
        return;
    }
    #pragma omp parallel for schedule(static) num_threads(nt < nblk ? nt : (int)nblk)
    for (int64_t b = 0; b < nblk; b++) {
        int64_t k0 = b * blk, k1 = k0 + blk < C ? k0 + blk : C;
        double acc[64 + 16];
        for (int64_t kb = k0; kb < k1; kb += 64) {
            int64_t ke = kb + 64 < k1 ? kb + 64 : k1;
            for (int64_t k = kb; k < ke; k++) acc[k - kb] = 0.0;
            for (int64_t r = 0; r < R; r++) {
                const float *x = X + r * C;
                for (int64_t k = kb; k < ke; k++) acc[k - kb] += x[k];
            }
            for (int64_t k = kb; k < ke; k++) Y[k] = (float)(acc[k - kb] * scale);
        }
    }
}

/* x's trailing dims equal `to` (leading ones stripped): returns C, else -1. */
static int64_t leading_sum_cols(kiln_shape x, kiln_shape to) {
    int s = 0;
    while (s < to.rank && to.dim[s] == 1) s++;
    int tr = to.rank - s;
    if (tr > x.rank) return -1;
    int64_t C = 1;
    for (int i = 0; i < tr; i++) {
        if (to.dim[s + i] != x.dim[x.rank - tr + i]) return -1;
        C *= to.dim[s + i];
    }
    return C;
}

static kiln_status k_sum_leading(const kiln_kctx *c) {
    int64_t C = c->out.numel, R = C > 0 ? c->in[0].numel / C : 0;
    float scale = 1.0f;
    if (c->node->op == KILN_OP_REDUCE_MEAN) scale = R > 0 ? 1.0f / (float)R : NAN;
    if (C == 0) return KILN_OK;
    sum_rows(c, R, C, scale);
    return KILN_OK;
}

/* Reduction axes are exactly 0..k-1 (so x is [R, C] with C the output's numel). */
static bool axes_leading(const kiln_node *n) {
    const kiln_attrs *a = &n->attrs;
    int xr = n->in[0]->shape.rank;
    if (a->n_axes == 0) return true;   /* all axes */
    for (int i = 0; i < a->n_axes; i++) if (a->axes[i] != i) return false;
    return a->n_axes <= xr;
}

bool cpu_sums_leading(const kiln_node *n) {
    if (n->n_in != 1) return false;
    if (n->op == KILN_OP_SUM_TO) return leading_sum_cols(n->in[0]->shape, n->attrs.shape) == kiln_shape_numel(n->shape);
    return (n->op == KILN_OP_REDUCE_SUM || n->op == KILN_OP_REDUCE_MEAN) && axes_leading(n);
}

/* RandomNormal (f32): kiln_normal_draw, as ref, over threads. */
static kiln_status k_random_normal(const kiln_kctx *c) {
    float *y = cpu_f(&c->out);
    uint64_t seed = c->node->attrs.seed, step = c->step;
    int64_t n = c->out.numel;
    #pragma omp parallel for num_threads(cpu_par(c, n * 16))
    for (int64_t i = 0; i < n; i++) y[i] = (float)kiln_normal_draw(seed, step, i);
    return KILN_OK;
}

/* Dropout / DropoutGrad (f32): ref's mask (kiln_dropout_keep), its key mixed once per call instead
 * of per element, and the product in double as ref rounds it, over threads. */
static kiln_status k_dropout(const kiln_kctx *c) {
    const float *x = cpu_f(&c->in[0]);
    float *y = cpu_f(&c->out);
    const kiln_attrs *a = &c->node->attrs;
    int64_t n = c->out.numel;
    if (!a->training || a->rate <= 0.0) {
        if (y != x) memcpy(y, x, (size_t)n * sizeof *y);
        return KILN_OK;
    }
    double rate = a->rate, scale = 1.0 / (1.0 - rate);
    uint64_t key = kiln_dropout_key(a->seed, c->step);
    /* kiln_dropout_keep_key's test u >= rate, u = k / 2^53 with the integer k = mix >> 11, is
       k >= ceil(rate 2^53) exactly (2^53 scales without rounding): integers only, so the loop
       vectorizes (AVX-512's 64-bit products) */
    uint64_t thr = (uint64_t)ceil(rate * 9007199254740992.0);
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n * 8))
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = kiln_mix64(key ^ kiln_mix64((uint64_t)i)) >> 11;
        float v = (float)((double)x[i] * scale);
        y[i] = k >= thr ? v : 0.0f;
    }
    return KILN_OK;
}

kiln_kernel_fn cpu_elementwise_kernel(const kiln_node *n) {
    if (!cpu_is_f32(n)) return NULL;
    if (n->op == KILN_OP_RANDOM_NORMAL) return k_random_normal;
    if ((n->op == KILN_OP_DROPOUT || n->op == KILN_OP_DROPOUT_GRAD) && n->n_in >= 1 && n->in[0]->dtype == KILN_F32 &&
        kiln_shape_equal(n->in[0]->shape, n->shape))
        return k_dropout;
    if (n->n_in == 2) {
        kiln_shape a = n->in[0]->shape, b = n->in[1]->shape;
        switch (n->op) {
        case KILN_OP_ADD: case KILN_OP_SUB: case KILN_OP_MUL: case KILN_OP_DIV:
        case KILN_OP_MAXIMUM: case KILN_OP_MINIMUM:
            if (binary_mode(a, b, n->shape) == BC_NONE) return NULL;
            switch (n->op) {
            case KILN_OP_ADD: return k_add;
            case KILN_OP_SUB: return k_sub;
            case KILN_OP_MUL: return k_mul;
            case KILN_OP_DIV: return k_div;
            case KILN_OP_MAXIMUM: return k_maximum;
            default: return k_minimum;
            }
        case KILN_OP_BIAS_ADD:
            return kiln_shape_equal(a, n->shape) && b.rank == 1 && a.rank >= 1 && b.dim[0] == a.dim[a.rank - 1]
                   ? k_bias_add : NULL;
        case KILN_OP_RELU_GRAD: case KILN_OP_LEAKY_RELU_GRAD: case KILN_OP_ELU_GRAD: case KILN_OP_GELU_GRAD:
        case KILN_OP_SIGMOID_GRAD: case KILN_OP_TANH_GRAD: case KILN_OP_CLIPPED_RELU_GRAD: case KILN_OP_SWISH_GRAD:
        case KILN_OP_HARD_SIGMOID_GRAD: case KILN_OP_HARD_SWISH_GRAD: case KILN_OP_SELU_GRAD: case KILN_OP_SOFTSIGN_GRAD:
        case KILN_OP_MISH_GRAD:
        case KILN_OP_GELU_TANH_GRAD:
            if (!kiln_shape_equal(a, n->shape) || !kiln_shape_equal(b, n->shape)) return NULL;
            switch (n->op) {
            case KILN_OP_CLIPPED_RELU_GRAD: return k_clipped_relu_grad;
            case KILN_OP_SWISH_GRAD: return k_swish_grad;
            case KILN_OP_HARD_SIGMOID_GRAD: return k_hard_sigmoid_grad;
            case KILN_OP_HARD_SWISH_GRAD: return k_hard_swish_grad;
            case KILN_OP_SELU_GRAD: return k_selu_grad;
            case KILN_OP_SOFTSIGN_GRAD: return k_softsign_grad;
            case KILN_OP_MISH_GRAD: return k_mish_grad;
            case KILN_OP_RELU_GRAD: return k_relu_grad;
            case KILN_OP_LEAKY_RELU_GRAD: return k_leaky_relu_grad;
            case KILN_OP_ELU_GRAD: return k_elu_grad;
            case KILN_OP_GELU_GRAD: return k_gelu_grad;
            case KILN_OP_GELU_TANH_GRAD: return k_gelu_tanh_grad;
            case KILN_OP_SIGMOID_GRAD: return k_sigmoid_grad;
            default: return k_tanh_grad;
            }
        default: return NULL;
        }
    }
    if (n->n_in != 1) return NULL;
    switch (n->op) {
    case KILN_OP_SUM_TO: case KILN_OP_REDUCE_SUM: case KILN_OP_REDUCE_MEAN:
        return cpu_sums_leading(n) ? k_sum_leading : NULL;
    default: break;
    }
    if (!kiln_shape_equal(n->in[0]->shape, n->shape)) return NULL;
    switch (n->op) {
    case KILN_OP_NEG: return k_neg;
    case KILN_OP_EXP: return k_exp;
    case KILN_OP_LOG: return k_log;
    case KILN_OP_SQRT: return k_sqrt;
    case KILN_OP_RSQRT: return k_rsqrt;
    case KILN_OP_SQUARE: return k_square;
    case KILN_OP_ABS: return k_abs;
    case KILN_OP_RELU: return k_relu;
    case KILN_OP_LEAKY_RELU: return k_leaky_relu;
    case KILN_OP_ELU: return k_elu;
    case KILN_OP_SIGMOID: return k_sigmoid;
    case KILN_OP_TANH: return k_tanh;
    case KILN_OP_SOFTPLUS: return k_softplus;
    case KILN_OP_ERF: return k_erf;
    case KILN_OP_GELU: return k_gelu;
    case KILN_OP_GELU_TANH: return k_gelu_tanh;
    case KILN_OP_POW: return k_pow;
    case KILN_OP_SIGN: return k_sign;
    case KILN_OP_SWISH: return k_swish;
    case KILN_OP_CLIPPED_RELU: return k_clipped_relu;
    case KILN_OP_HARD_SIGMOID: return k_hard_sigmoid;
    case KILN_OP_HARD_SWISH: return k_hard_swish;
    case KILN_OP_SELU: return k_selu;
    case KILN_OP_SOFTSIGN: return k_softsign;
    case KILN_OP_MISH: return k_mish;
    default: return NULL;
    }
}
