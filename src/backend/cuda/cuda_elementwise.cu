/* Elementwise kernels: binary ops with numpy broadcasting (strides per input, dims coalesced on
 * the host), unary ops, activation gradients, BiasAdd, Dropout/DropoutGrad. Float dtypes compute
 * in float (f64 in double) with ref's formulas and NaN rules (SEMANTICS.md): Relu/Sign/Maximum/
 * Minimum propagate NaN; activation gradients select, so a NaN dy at a dead unit gives 0.
 * Integer (i32/i64) Add/Sub/Mul/Maximum/Minimum/Neg/Abs/Square/Sign wrap like ref. */
#include <math.h>
#include "backend/cuda/cuda_internal.cuh"

/* ---- scalar math in the compute type ---- */
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_pow(float x, float a) { return powf(x, a); }
__device__ __forceinline__ double m_pow(double x, double a) { return pow(x, a); }
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
__device__ __forceinline__ float m_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double m_expm1(double x) { return expm1(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float m_erf(float x) { return erff(x); }
__device__ __forceinline__ double m_erf(double x) { return erf(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double m_max(double a, double b) { return fmax(a, b); }

template <typename C> __device__ __forceinline__ C m_sigmoid(C x) {
    if (x >= (C)0) return (C)1 / ((C)1 + m_exp(-x));
    C e = m_exp(x);
    return e / ((C)1 + e);
}

#define SELU_A 1.6732632423543772848170429916717
#define SELU_S 1.0507009873554804934193349852946
template <typename C> __device__ __forceinline__ C m_softplus(C x) { return m_max(x, (C)0) + m_log1p(m_exp(-m_abs(x))); }
/* Keras 3: relu6(x + 3) / 6 */
template <typename C> __device__ __forceinline__ C m_hard_sigmoid(C x) {
    return x <= (C)-3 ? (C)0 : x >= (C)3 ? (C)1 : (x + (C)3) / (C)6;
}

template <typename C> __device__ __forceinline__ C unary_op(int op, C x, C alpha) {
    switch (op) {
    case KILN_OP_NEG: return -x;
    case KILN_OP_EXP: return m_exp(x);
    case KILN_OP_LOG: return m_log(x);
    case KILN_OP_SQRT: return m_sqrt(x);
    case KILN_OP_RSQRT: return (C)1 / m_sqrt(x);
    case KILN_OP_SQUARE: return x * x;
    case KILN_OP_POW: return m_pow(x, alpha);
    case KILN_OP_ABS: return m_abs(x);
    case KILN_OP_SIGN: return x > (C)0 ? (C)1 : x < (C)0 ? (C)-1 : x;
    case KILN_OP_RELU: return x <= (C)0 ? (C)0 : x;
    case KILN_OP_LEAKY_RELU: return x > (C)0 ? x : alpha * x;
    case KILN_OP_ELU: return x > (C)0 ? x : alpha * m_expm1(x);
    case KILN_OP_GELU: return (C)0.5 * x * ((C)1 + m_erf(x * (C)0.70710678118654752440));
    case KILN_OP_GELU_TANH: return (C)0.5 * x * ((C)1 + m_tanh((C)0.79788456080286535588 * (x + (C)0.044715 * x * x * x)));
    case KILN_OP_SIGMOID: return m_sigmoid(x);
    case KILN_OP_TANH: return m_tanh(x);
    case KILN_OP_SOFTPLUS: return m_max(x, (C)0) + m_log1p(m_exp(-m_abs(x)));
    case KILN_OP_ERF: return m_erf(x);
    case KILN_OP_SWISH: return x * m_sigmoid(x);
    case KILN_OP_CLIPPED_RELU: return x <= (C)0 ? (C)0 : x >= alpha ? alpha : x;
    case KILN_OP_HARD_SIGMOID: return m_hard_sigmoid(x);
    case KILN_OP_HARD_SWISH: return x * m_hard_sigmoid(x);
    case KILN_OP_SELU: return (C)SELU_S * (x > (C)0 ? x : (C)SELU_A * m_expm1(x));
    case KILN_OP_SOFTSIGN: return x / ((C)1 + m_abs(x));
    case KILN_OP_MISH: return x * m_tanh(m_softplus(x));
    default: return (C)NAN;
    }
}

template <typename C> __device__ __forceinline__ C act_grad_op(int op, C x, C dy, C alpha) {
    switch (op) {
    case KILN_OP_RELU_GRAD: return x > (C)0 ? dy : (C)0;
    case KILN_OP_LEAKY_RELU_GRAD: return x > (C)0 ? dy : alpha * dy;
    case KILN_OP_ELU_GRAD: return x > (C)0 ? dy : dy * alpha * m_exp(x);
    case KILN_OP_GELU_GRAD: {
        C cdf = (C)0.5 * ((C)1 + m_erf(x * (C)0.70710678118654752440));
        C pdf = m_exp((C)-0.5 * x * x) * (C)0.39894228040143267794;
        return dy * (cdf + x * pdf);
    }
    case KILN_OP_GELU_TANH_GRAD: {
        C t = m_tanh((C)0.79788456080286535588 * (x + (C)0.044715 * x * x * x));
        return dy * ((C)0.5 * ((C)1 + t) + (C)0.5 * x * ((C)1 - t * t) * (C)0.79788456080286535588 * ((C)1 + (C)0.134145 * x * x));
    }
    case KILN_OP_SIGMOID_GRAD: return dy * x * ((C)1 - x);
    case KILN_OP_TANH_GRAD: return dy * ((C)1 - x * x);
    case KILN_OP_CLIPPED_RELU_GRAD: return x > (C)0 && x < alpha ? dy : (C)0;   /* x is y */
    case KILN_OP_SWISH_GRAD: { C s = m_sigmoid(x); return dy * s * ((C)1 + x * ((C)1 - s)); }
    case KILN_OP_HARD_SIGMOID_GRAD: return x > (C)-3 && x < (C)3 ? dy / (C)6 : (C)0;
    case KILN_OP_HARD_SWISH_GRAD: return x <= (C)-3 ? (C)0 : x >= (C)3 ? dy : dy * ((C)2 * x + (C)3) / (C)6;
    case KILN_OP_SELU_GRAD: return x > (C)0 ? dy * (C)SELU_S : dy * (C)(SELU_S * SELU_A) * m_exp(x);
    case KILN_OP_SOFTSIGN_GRAD: { C d = (C)1 + m_abs(x); return dy / (d * d); }
    case KILN_OP_MISH_GRAD: { C t = m_tanh(m_softplus(x)); return dy * (t + x * m_sigmoid(x) * ((C)1 - t * t)); }
    default: return (C)NAN;
    }
}

template <typename C> __device__ __forceinline__ C binary_op(int op, C a, C b) {
    switch (op) {
    case KILN_OP_ADD: return a + b;
    case KILN_OP_SUB: return a - b;
    case KILN_OP_MUL: return a * b;
    case KILN_OP_DIV: return a / b;
    case KILN_OP_MAXIMUM: return (a >= b || isnan(a)) ? a : b;
    case KILN_OP_MINIMUM: return (a <= b || isnan(a)) ? a : b;
    default: return (C)NAN;
    }
}

__device__ __forceinline__ long long binary_int(int op, long long a, long long b) {
    unsigned long long ua = (unsigned long long)a, ub = (unsigned long long)b;
    switch (op) {
    case KILN_OP_ADD: return (long long)(ua + ub);
    case KILN_OP_SUB: return (long long)(ua - ub);
    case KILN_OP_MUL: return (long long)(ua * ub);
    case KILN_OP_MAXIMUM: return a >= b ? a : b;
    case KILN_OP_MINIMUM: return a <= b ? a : b;
    default: return 0;
    }
}

__device__ __forceinline__ long long unary_int(int op, long long x) {
    unsigned long long ux = (unsigned long long)x;
    switch (op) {
    case KILN_OP_NEG: return (long long)(0ull - ux);
    case KILN_OP_ABS: return x < 0 ? (long long)(0ull - ux) : x;
    case KILN_OP_SQUARE: return (long long)(ux * ux);
    case KILN_OP_SIGN: return (x > 0) - (x < 0);
    default: return 0;
    }
}

/* ---- broadcasting ---- */
typedef struct bcast {
    int rank;
    int64_t dim[KILN_MAX_DIMS], sa[KILN_MAX_DIMS], sb[KILN_MAX_DIMS];
} bcast;

/* Strides of a and b over out, with adjacent dims merged where both stay affine. */
static bcast make_bcast(kiln_shape out, kiln_shape a, kiln_shape b) {
    int64_t sa[KILN_MAX_DIMS], sb[KILN_MAX_DIMS];
    kiln_bcast_strides(out, a, sa);
    kiln_bcast_strides(out, b, sb);
    bcast r;
    r.rank = 0;
    for (int d = 0; d < out.rank; d++) {
        if (out.dim[d] == 1) continue;      /* size-1 dims carry no index */
        if (r.rank > 0) {
            int p = r.rank - 1;
            if (r.sa[p] == sa[d] * out.dim[d] && r.sb[p] == sb[d] * out.dim[d]) {
                r.dim[p] *= out.dim[d];
                r.sa[p] = sa[d];
                r.sb[p] = sb[d];
                continue;
            }
        }
        r.dim[r.rank] = out.dim[d];
        r.sa[r.rank] = sa[d];
        r.sb[r.rank] = sb[d];
        r.rank++;
    }
    return r;
}

template <typename T>
__global__ void binary_kernel(const T *__restrict__ a, const T *__restrict__ b, T *y, int64_t n, int op, bcast m) {
    typedef typename cu_acc<T>::type C;
    if (m.rank == 1 && m.sa[0] == 1 && m.sb[0] == 1) {          /* same shapes */
        CU_LOOP(i, n) cu_st(y, i, binary_op<C>(op, cu_ld(a, i), cu_ld(b, i)));
        return;
    }
    CU_LOOP(i, n) {
        int64_t ia = 0, ib = 0, k = i;
        for (int d = m.rank - 1; d >= 0; d--) {
            int64_t q = k / m.dim[d], cidx = k - q * m.dim[d];
            ia += cidx * m.sa[d];
            ib += cidx * m.sb[d];
            k = q;
        }
        cu_st(y, i, binary_op<C>(op, cu_ld(a, ia), cu_ld(b, ib)));
    }
}

template <typename I>
__global__ void binary_int_kernel(const I *__restrict__ a, const I *__restrict__ b, I *y, int64_t n, int op, bcast m) {
    CU_LOOP(i, n) {
        int64_t ia = 0, ib = 0, k = i;
        for (int d = m.rank - 1; d >= 0; d--) {
            int64_t q = k / m.dim[d], cidx = k - q * m.dim[d];
            ia += cidx * m.sa[d];
            ib += cidx * m.sb[d];
            k = q;
        }
        y[i] = (I)(unsigned long long)binary_int(op, (long long)a[ia], (long long)b[ib]);
    }
}

static kiln_status k_binary(const kiln_kctx *c) {
    int64_t n = c->out.numel;
    if (n == 0) return KILN_OK;
    bcast m = make_bcast(c->out.shape, c->in[0].shape, c->in[1].shape);
    if (m.rank == 0) { m.rank = 1; m.dim[0] = 1; m.sa[0] = m.sb[0] = 1; }
    int op = (int)c->node->op;
    cudaStream_t s = cu_stream();
    const void *a = c->in[0].data, *b = c->in[1].data;
    void *y = c->out.data;
    if (c->out.dtype == KILN_I32)
        CU_LAUNCH(binary_int_kernel<int32_t>, cu_blocks(n), CU_THREADS, 0, s)((const int32_t *)a, (const int32_t *)b, (int32_t *)y, n, op, m);
    else if (c->out.dtype == KILN_I64)
        CU_LAUNCH(binary_int_kernel<long long>, cu_blocks(n), CU_THREADS, 0, s)((const long long *)a, (const long long *)b, (long long *)y, n, op, m);
    else {
        CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(binary_kernel<T>, cu_blocks(n), CU_THREADS, 0, s)((const T *)a, (const T *)b, (T *)y, n, op, m))
    }
    return cu_launch_check(c);
}

template <typename T>
__global__ void unary_kernel(const T *x, T *y, int64_t n, int op, typename cu_acc<T>::type alpha) {
    typedef typename cu_acc<T>::type C;
    CU_LOOP(i, n) cu_st(y, i, unary_op<C>(op, cu_ld(x, i), alpha));
}

template <typename I>
__global__ void unary_int_kernel(const I *x, I *y, int64_t n, int op) {
    CU_LOOP(i, n) y[i] = (I)(unsigned long long)unary_int(op, (long long)x[i]);
}

static kiln_status k_unary(const kiln_kctx *c) {
    int64_t n = c->out.numel;
    if (n == 0) return KILN_OK;
    int op = (int)c->node->op;
    double alpha = c->node->attrs.alpha;
    cudaStream_t s = cu_stream();
    const void *x = c->in[0].data;
    void *y = c->out.data;
    if (c->out.dtype == KILN_I32)
        CU_LAUNCH(unary_int_kernel<int32_t>, cu_blocks(n), CU_THREADS, 0, s)((const int32_t *)x, (int32_t *)y, n, op);
    else if (c->out.dtype == KILN_I64)
        CU_LAUNCH(unary_int_kernel<long long>, cu_blocks(n), CU_THREADS, 0, s)((const long long *)x, (long long *)y, n, op);
    else {
        CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(unary_kernel<T>, cu_blocks(n), CU_THREADS, 0, s)((const T *)x, (T *)y, n, op, (typename cu_acc<T>::type)alpha))
    }
    return cu_launch_check(c);
}

template <typename T>
__global__ void act_grad_kernel(const T *x, const T *dy, T *y, int64_t n, int op, typename cu_acc<T>::type alpha) {
    typedef typename cu_acc<T>::type C;
    CU_LOOP(i, n) cu_st(y, i, act_grad_op<C>(op, cu_ld(x, i), cu_ld(dy, i), alpha));
}

static kiln_status k_act_grad(const kiln_kctx *c) {
    int64_t n = c->out.numel;
    if (n == 0) return KILN_OK;
    int op = (int)c->node->op;
    double alpha = c->node->attrs.alpha;
    cudaStream_t s = cu_stream();
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(act_grad_kernel<T>, cu_blocks(n), CU_THREADS, 0, s)(
        (const T *)c->in[0].data, (const T *)c->in[1].data, (T *)c->out.data, n, op, (typename cu_acc<T>::type)alpha))
    return cu_launch_check(c);
}

template <typename T>
__global__ void bias_add_kernel(const T *x, const T *b, T *y, int64_t n, int64_t C) {
    CU_LOOP(i, n) cu_st(y, i, cu_ld(x, i) + cu_ld(b, i % C));
}

static kiln_status k_bias_add(const kiln_kctx *c) {
    int64_t n = c->out.numel, C = c->in[1].numel;
    if (n == 0 || C == 0) return KILN_OK;
    cudaStream_t s = cu_stream();
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(bias_add_kernel<T>, cu_blocks(n), CU_THREADS, 0, s)(
        (const T *)c->in[0].data, (const T *)c->in[1].data, (T *)c->out.data, n, C))
    return cu_launch_check(c);
}

/* The fused epilogue of a Conv2D / MatMul (the planner folded a following BiasAdd and/or Relu
 * into it): y = relu(y + bias) in place, bias on the last dim; the same arithmetic as the separate
 * BiasAdd and Relu kernels (relu passes NaN), so fusing changes no result. */
template <typename T>
__global__ void epilogue_kernel(T *y, const T *b, int64_t n, int64_t C, int relu) {
    CU_LOOP(i, n) {
        typename cu_acc<T>::type v = cu_ld(y, i);
        if (b) { cu_st(y, i, v + cu_ld(b, i % C)); v = cu_ld(y, i); }   /* rounded like BiasAdd's output */
        if (relu) v = v <= 0 ? 0 : v;
        cu_st(y, i, v);
    }
}

kiln_status cu_epilogue(const kiln_kctx *c) {
    if (!c->epi_bias && !c->epi_relu) return KILN_OK;
    int64_t n = c->out.numel, C = c->epi_bias ? c->epi_bias->numel : 1;
    if (n == 0 || C == 0) return KILN_OK;
    cudaStream_t s = cu_stream();
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(epilogue_kernel<T>, cu_blocks(n), CU_THREADS, 0, s)(
        (T *)c->out.data, c->epi_bias ? (const T *)c->epi_bias->data : (const T *)NULL, n, C, c->epi_relu ? 1 : 0))
    return cu_launch_check(c);
}

/* ---- Dropout: kiln_dropout_keep (op.h) bit for bit ---- */
/* step_ptr: when set (graph replay), the step is read from device memory (cu_set_step). */
template <typename T>
__global__ void dropout_kernel(const T *x, T *y, int64_t n, unsigned long long seed, unsigned long long step,
                               const unsigned long long *step_ptr, double rate, double scale) {
    unsigned long long st = step_ptr ? *step_ptr : step;
    unsigned long long key = cu_mix64(seed ^ cu_mix64(st + 0x1234567ull));
    CU_LOOP(i, n) {
        double u = cu_uniform(key, (unsigned long long)i);
        double v = u >= rate ? (double)cu_ld(x, i) * scale : 0.0;
        cu_st(y, i, (typename cu_acc<T>::type)v);
    }
}

static kiln_status k_dropout(const kiln_kctx *c) {
    const kiln_attrs *a = &c->node->attrs;
    int64_t n = c->out.numel;
    if (n == 0) return KILN_OK;
    cudaStream_t s = cu_stream();
    if (!a->training || a->rate <= 0.0) {
        if (c->out.data == c->in[0].data) return KILN_OK;
        return cu_check(cudaMemcpyAsync(c->out.data, c->in[0].data, (size_t)n * kiln_dtype_size_cu(c->out.dtype),
                                        cudaMemcpyDeviceToDevice, s), "Dropout copy");
    }
    cu_device *d = &cu.dev[cu_cur];
    const unsigned long long *sp = d->capturing ? cu_step_ptr() : NULL;
    double scale = 1.0 / (1.0 - a->rate);
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(dropout_kernel<T>, cu_blocks(n), CU_THREADS, 0, s)(
        (const T *)c->in[0].data, (T *)c->out.data, n, (unsigned long long)a->seed, (unsigned long long)c->step, sp, a->rate, scale))
    return cu_launch_check(c);
}

/* ---- RandomNormal: kiln_normal_draw (op.h) on the device ---- */
template <typename T>
__global__ void random_normal_kernel(T *y, int64_t n, unsigned long long seed, unsigned long long step,
                                     const unsigned long long *step_ptr) {
    unsigned long long st = step_ptr ? *step_ptr : step;
    unsigned long long key = cu_mix64(seed ^ cu_mix64(st + 0x7654321ull));
    CU_LOOP(i, n) {
        double u1 = cu_uniform(key, 2ull * (unsigned long long)i), u2 = cu_uniform(key, 2ull * (unsigned long long)i + 1ull);
        cu_st(y, i, (typename cu_acc<T>::type)(sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2)));
    }
}

static kiln_status k_random_normal(const kiln_kctx *c) {
    int64_t n = c->out.numel;
    if (n == 0) return KILN_OK;
    const unsigned long long *sp = cu.dev[cu_cur].capturing ? cu_step_ptr() : NULL;
    CU_FLOAT_SWITCH(c->out.dtype, T, CU_LAUNCH(random_normal_kernel<T>, cu_blocks(n), CU_THREADS, 0, cu_stream())(
        (T *)c->out.data, n, (unsigned long long)c->node->attrs.seed, (unsigned long long)c->step, sp))
    return cu_launch_check(c);
}

static bool int_ok(kiln_op op, bool binary) {
    if (binary) return op == KILN_OP_ADD || op == KILN_OP_SUB || op == KILN_OP_MUL || op == KILN_OP_MAXIMUM || op == KILN_OP_MINIMUM;
    return op == KILN_OP_NEG || op == KILN_OP_ABS || op == KILN_OP_SQUARE || op == KILN_OP_SIGN;
}

kiln_kernel_fn cu_elementwise_kernel(const kiln_node *n) {
    bool fl = cu_is_float(n->dtype) && cu_all_dtype(n, n->dtype);
    bool in = (n->dtype == KILN_I32 || n->dtype == KILN_I64) && cu_all_dtype(n, n->dtype);
    switch (n->op) {
    case KILN_OP_ADD: case KILN_OP_SUB: case KILN_OP_MUL: case KILN_OP_DIV: case KILN_OP_MAXIMUM: case KILN_OP_MINIMUM:
        return fl || (in && int_ok(n->op, true)) ? k_binary : NULL;
    case KILN_OP_NEG: case KILN_OP_EXP: case KILN_OP_LOG: case KILN_OP_SQRT: case KILN_OP_RSQRT: case KILN_OP_SQUARE:
    case KILN_OP_POW: case KILN_OP_ABS: case KILN_OP_SIGN: case KILN_OP_RELU: case KILN_OP_LEAKY_RELU: case KILN_OP_ELU:
    case KILN_OP_GELU: case KILN_OP_SIGMOID: case KILN_OP_TANH: case KILN_OP_SOFTPLUS: case KILN_OP_ERF:
    case KILN_OP_SWISH: case KILN_OP_CLIPPED_RELU: case KILN_OP_HARD_SIGMOID: case KILN_OP_HARD_SWISH: case KILN_OP_SELU:
    case KILN_OP_SOFTSIGN: case KILN_OP_MISH: case KILN_OP_GELU_TANH:
        return fl || (in && int_ok(n->op, false)) ? k_unary : NULL;
    case KILN_OP_RELU_GRAD: case KILN_OP_LEAKY_RELU_GRAD: case KILN_OP_ELU_GRAD: case KILN_OP_GELU_GRAD:
    case KILN_OP_SIGMOID_GRAD: case KILN_OP_TANH_GRAD: case KILN_OP_CLIPPED_RELU_GRAD: case KILN_OP_SWISH_GRAD:
    case KILN_OP_HARD_SIGMOID_GRAD: case KILN_OP_HARD_SWISH_GRAD: case KILN_OP_SELU_GRAD: case KILN_OP_SOFTSIGN_GRAD:
    case KILN_OP_MISH_GRAD: case KILN_OP_GELU_TANH_GRAD:
        return fl ? k_act_grad : NULL;
    case KILN_OP_BIAS_ADD:
        return fl ? k_bias_add : NULL;
    case KILN_OP_DROPOUT: case KILN_OP_DROPOUT_GRAD:
        return fl ? k_dropout : NULL;
    case KILN_OP_RANDOM_NORMAL:
        return cu_is_float(n->dtype) ? k_random_normal : NULL;
    default:
        return NULL;
    }
}
