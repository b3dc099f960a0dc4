/* Mixed precision on the CPU: Cast between f32 and bf16/f16 (OpenMP loops, the same rounding as
 * src/core/dtype.c: round to nearest even, NaN kept quiet), and MatMul with bf16 operands, f32
 * accumulation and an f32 output (acc_f32, made by the precision policy) through oneDNN's matmul.
 * bf16 products run here only when the CPU has AVX512-BF16 or AMX-BF16 (cpu_has_bf16): elsewhere
 * oneDNN would emulate them slower than f32, so the policy keeps f32 (src/nn/precision.c) and a
 * hand-built bf16 graph runs on ref. f16 products (mixed_float16) are widened to f32 and run on
 * the f32 kernels (exact: an f16 x f16 product fits f32), as no f16 arithmetic is assumed. */
#include <stdlib.h>
#include <pthread.h>
#include "backend/cpu/cpu_internal.h"
#include "core/core.h"
#include "kiln/device.h"

bool cpu_has_bf16(void) {
    static int has = -1;
    if (has < 0) {
        const char *v = getenv("KILN_CPU_BF16");   /* 0: behave as a CPU without bf16 (tests) */
        has = v && *v == '0' ? 0 : (__builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16"));
    }
    return has == 1;
}

bool kiln_cpu_has_bf16(void) { return cpu_has_bf16(); }

static kiln_status k_f32_to_bf16(const kiln_kctx *c) {
    const float *x = c->in[0].data;
    uint16_t *y = c->out.data;
    int64_t n = c->out.numel;
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) y[i] = cpu_to_bf16(x[i]);
    return KILN_OK;
}

static kiln_status k_bf16_to_f32(const kiln_kctx *c) {
    const uint16_t *x = c->in[0].data;
    uint32_t *y = c->out.data;
    int64_t n = c->out.numel;
    #pragma omp parallel for simd schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) y[i] = (uint32_t)x[i] << 16;
    return KILN_OK;
}

/* f16 conversions: the compiler's _Float16 (F16C instructions with -march=native, libgcc's
 * correctly rounded routines otherwise) where it has one, else src/core/dtype.c's */
#ifdef __FLT16_MAX__
static inline uint16_t to_f16(float f) { _Float16 h = (_Float16)f; uint16_t u; memcpy(&u, &h, 2); return u; }
static inline float from_f16(uint16_t u) { _Float16 h; memcpy(&h, &u, 2); return (float)h; }
#else
static inline uint16_t to_f16(float f) { return kiln_f32_to_f16(f); }
static inline float from_f16(uint16_t u) { return kiln_f16_to_f32(u); }
#endif

static kiln_status k_f32_to_f16(const kiln_kctx *c) {
    const float *x = c->in[0].data;
    uint16_t *y = c->out.data;
    int64_t n = c->out.numel;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) y[i] = to_f16(x[i]);
    return KILN_OK;
}

static kiln_status k_f16_to_f32(const kiln_kctx *c) {
    const uint16_t *x = c->in[0].data;
    float *y = c->out.data;
    int64_t n = c->out.numel;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) y[i] = from_f16(x[i]);
    return KILN_OK;
}

kiln_kernel_fn cpu_cast_kernel(const kiln_node *n) {
    kiln_dtype from = n->in[0]->dtype, to = n->dtype;
    if (from == KILN_F32 && to == KILN_BF16) return k_f32_to_bf16;
    if (from == KILN_BF16 && to == KILN_F32) return k_bf16_to_f32;
    if (from == KILN_F32 && to == KILN_F16) return k_f32_to_f16;
    if (from == KILN_F16 && to == KILN_F32) return k_f16_to_f32;
    return NULL;
}

/* MatMul acc_f32 on f16 operands (mixed_float16): no f16 arithmetic on this CPU generation, so
 * both operands are widened to f32 in the workspace (exact) and multiplied by sgemm: the same
 * numbers as f16 products with f32 accumulation. */
static bool mm_f16_dims(const kiln_node *n, int64_t *M, int64_t *N, int64_t *K) {
    if (n->op != KILN_OP_MATMUL || !n->attrs.acc_f32 || n->dtype != KILN_F32 || n->in[0]->dtype != KILN_F16 ||
        n->in[1]->dtype != KILN_F16 || n->in[0]->shape.rank != 2 || n->in[1]->shape.rank != 2)
        return false;
    *M = n->shape.dim[0]; *N = n->shape.dim[1];
    *K = n->attrs.trans_a ? n->in[0]->shape.dim[0] : n->in[0]->shape.dim[1];
    return true;
}

static void widen(const kiln_kctx *c, const uint16_t *h, float *f, int64_t n) {
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) f[i] = from_f16(h[i]);
}

static kiln_status k_matmul_f16(const kiln_kctx *c) {
    int64_t M = 0, N = 0, K = 0;
    mm_f16_dims(c->node, &M, &N, &K);
    float *a = (float *)(((uintptr_t)c->workspace + 63) & ~(uintptr_t)63), *b = a + ((M * K + 15) & ~(int64_t)15);
    widen(c, c->in[0].data, a, M * K);
    widen(c, c->in[1].data, b, K * N);
    bool ta = c->node->attrs.trans_a, tb = c->node->attrs.trans_b;
    cpu_sgemm(ta, tb, M, N, K, 1.0f, a, ta ? M : K, b, tb ? K : N, 0.0f, c->out.data, N, cpu_threads(c));
    if (c->epi_bias || c->epi_relu) cpu_epilogue(c, c->out.data, M, N);
    return KILN_OK;
}

static size_t matmul_f16_workspace(const kiln_node *n) {
    int64_t M, N, K;
    if (!mm_f16_dims(n, &M, &N, &K)) return 0;
    return (size_t)(((M * K + 15) & ~(int64_t)15) + K * N) * 4 + 64;
}

#ifdef KILN_HAVE_DNNL
#include <dnnl.h>

/* One cached matmul primitive per (M, N, K, transposes); operands in Kiln's row-major layout
 * (a transpose is a stride), so no reorders are needed. */
typedef struct dmm_key { int64_t M, N, K; int ta, tb, adt, cdt; } dmm_key;   /* adt, cdt: the operands' and the output's oneDNN dtypes */
typedef struct dmm { dmm_key k; bool ok; dnnl_primitive_t prim; dnnl_memory_desc_t a, b, c, scratch; size_t ws; } dmm;

/* Grows with the model (each dense layer has a forward and two gradient shapes per batch size):
 * a full cache would send the rest to ref. */
static dmm **mm_cache;
static int n_mm, cap_mm;
static pthread_mutex_t mm_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t mm_engine;

static bool key_of(const kiln_node *n, dmm_key *k) {
    kiln_shape a = n->in[0]->shape, b = n->in[1]->shape;
    if (n->op != KILN_OP_MATMUL || a.rank != 2 || b.rank != 2) return false;
    memset(k, 0, sizeof *k);
    k->ta = n->attrs.trans_a; k->tb = n->attrs.trans_b;
    k->M = n->shape.dim[0]; k->N = n->shape.dim[1];
    k->K = k->ta ? a.dim[0] : a.dim[1];
    k->cdt = n->dtype == KILN_BF16 ? dnnl_bf16 : dnnl_f32;
    k->adt = n->in[0]->dtype == KILN_BF16 ? dnnl_bf16 : dnnl_f32;
    return k->M > 0 && k->N > 0 && k->K > 0;
}

static bool build(dmm *e) {
    const dmm_key *k = &e->k;
    /* A is [M, K] (stored [K, M] when transposed), B is [K, N] (stored [N, K]) */
    dnnl_dims_t ad = { k->M, k->K }, bd = { k->K, k->N }, cd = { k->M, k->N };
    dnnl_dims_t as = { k->ta ? 1 : k->K, k->ta ? k->M : 1 }, bs = { k->tb ? 1 : k->N, k->tb ? k->K : 1 };
    if (dnnl_memory_desc_init_by_strides(&e->a, 2, ad, (dnnl_data_type_t)k->adt, as) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&e->b, 2, bd, (dnnl_data_type_t)k->adt, bs) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&e->c, 2, cd, (dnnl_data_type_t)k->cdt, dnnl_ab) != dnnl_success)
        return false;
    dnnl_primitive_attr_t attr;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success) return false;
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dnnl_matmul_desc_init(&md, &e->a, &e->b, NULL, &e->c) == dnnl_success &&
              dnnl_primitive_desc_create(&pd, &md, attr, mm_engine, NULL) == dnnl_success;
    dnnl_primitive_attr_destroy(attr);
    if (!ok) { if (pd) dnnl_primitive_desc_destroy(pd); return false; }
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (sp) e->scratch = *sp;
    e->ws = (sp ? dnnl_memory_desc_get_size(sp) : 0) + 64;
    ok = dnnl_primitive_create(&e->prim, pd) == dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* Out of memory answers "no oneDNN matmul" (the node gets the other kernels) and is retried at
 * the next lookup, as in cpu_conv_dnnl.c's cache. */
static dmm *entry_for(const kiln_node *n) {
    dmm_key k;
    if (!key_of(n, &k)) return NULL;
    dmm *e = NULL;
    pthread_mutex_lock(&mm_lock);
    for (int i = 0; i < n_mm && !e; i++)
        if (!memcmp(&mm_cache[i]->k, &k, sizeof k)) e = mm_cache[i];
    if (!e && n_mm == cap_mm) {
        int cap = cap_mm ? 2 * cap_mm : 128;
        dmm **c = kiln_realloc(mm_cache, (size_t)cap * sizeof *c);
        if (c) { mm_cache = c; cap_mm = cap; }
    }
    if (!e && n_mm < cap_mm && (mm_engine || dnnl_engine_create(&mm_engine, dnnl_cpu, 0) == dnnl_success)) {
        e = kiln_calloc(1, sizeof *e);
        if (e) { e->k = k; e->ok = build(e); mm_cache[n_mm++] = e; }
    }
    pthread_mutex_unlock(&mm_lock);
    return e && e->ok ? e : NULL;
}

static kiln_status k_matmul_dnnl(const kiln_kctx *c) {
    dmm *e = entry_for(c->node);
    if (!e) return kiln_set_error(KILN_INTERNAL, "%s: no oneDNN matmul for this shape", c->node->name);
    if (!c->workspace || c->ws_bytes < e->ws)
        return kiln_set_error(KILN_INTERNAL, "%s: oneDNN matmul workspace is %zu bytes, needs %zu", c->node->name, c->ws_bytes, e->ws);
    void *ws = (void *)(((uintptr_t)c->workspace + 63) & ~(uintptr_t)63);
    dnnl_stream_t st = NULL;
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL, ms = NULL;
    bool ok = dnnl_stream_create(&st, mm_engine, dnnl_stream_default_flags) == dnnl_success &&
              dnnl_memory_create(&ma, &e->a, mm_engine, c->in[0].data) == dnnl_success &&
              dnnl_memory_create(&mb, &e->b, mm_engine, c->in[1].data) == dnnl_success &&
              dnnl_memory_create(&mc, &e->c, mm_engine, c->out.data) == dnnl_success;
    if (ok && dnnl_memory_desc_get_size(&e->scratch) > 0)
        ok = dnnl_memory_create(&ms, &e->scratch, mm_engine, ws) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[4] = { { DNNL_ARG_SRC, ma }, { DNNL_ARG_WEIGHTS, mb }, { DNNL_ARG_DST, mc }, { DNNL_ARG_SCRATCHPAD, ms } };
        ok = dnnl_primitive_execute(e->prim, st, ms ? 4 : 3, args) == dnnl_success && dnnl_stream_wait(st) == dnnl_success;
    }
    if (ma) dnnl_memory_destroy(ma);
    if (mb) dnnl_memory_destroy(mb);
    if (mc) dnnl_memory_destroy(mc);
    if (ms) dnnl_memory_destroy(ms);
    if (st) dnnl_stream_destroy(st);
    if (!ok) return kiln_set_error(KILN_INTERNAL, "%s: oneDNN matmul failed", c->node->name);
    if ((c->epi_bias || c->epi_relu) && c->node->dtype == KILN_F32) cpu_epilogue(c, c->out.data, e->k.M, e->k.N);
    return KILN_OK;
}

kiln_kernel_fn cpu_bf16_matmul_kernel(const kiln_node *n) {
    int64_t M, N, K;
    if (mm_f16_dims(n, &M, &N, &K)) return k_matmul_f16;
    /* acc_f32 (f32 output), or bf16 activations (bf16 output, f32 sums inside oneDNN) */
    bool out_ok = n->attrs.acc_f32 ? n->dtype == KILN_F32 : n->dtype == KILN_BF16;
    if (n->op != KILN_OP_MATMUL || !out_ok || n->in[0]->dtype != KILN_BF16 || n->in[1]->dtype != KILN_BF16 || !cpu_has_bf16())
        return NULL;
    return entry_for(n) ? k_matmul_dnnl : NULL;
}

/* f32 MatMul through oneDNN's matmul (brgemm kernels) rather than OpenBLAS: about twice the rate
 * on cifar_cnn's dense layers here (bench: see README). KILN_CPU_DNNL_MATMUL=0: OpenBLAS (A/B). */
kiln_kernel_fn cpu_dnnl_matmul_kernel(const kiln_node *n) {
    static int off = -1;
    if (off < 0) { const char *v = getenv("KILN_CPU_DNNL_MATMUL"); off = v && *v == '0'; }
    if (off || n->op != KILN_OP_MATMUL || n->n_in != 2 || n->dtype != KILN_F32 || n->in[0]->dtype != KILN_F32 ||
        n->in[1]->dtype != KILN_F32 || n->in[0]->shape.rank != 2 || n->in[1]->shape.rank != 2)
        return NULL;
    return entry_for(n) ? k_matmul_dnnl : NULL;
}

size_t cpu_bf16_matmul_workspace(const kiln_node *n) {
    size_t f16 = matmul_f16_workspace(n);
    if (f16) return f16;
    dmm *e = cpu_bf16_matmul_kernel(n) || cpu_dnnl_matmul_kernel(n) ? entry_for(n) : NULL;
    return e ? e->ws : 0;
}

#else

kiln_kernel_fn cpu_bf16_matmul_kernel(const kiln_node *n) {
    int64_t M, N, K;
    return mm_f16_dims(n, &M, &N, &K) ? k_matmul_f16 : NULL;
}
kiln_kernel_fn cpu_dnnl_matmul_kernel(const kiln_node *n) { (void)n; return NULL; }
size_t cpu_bf16_matmul_workspace(const kiln_node *n) { return matmul_f16_workspace(n); }

#endif

/* AllFinite over f32 gradients (loss scaling): one pass, OpenMP over elements. */
static kiln_status k_all_finite(const kiln_kctx *c) {
    int bad = 0;
    for (int k = 0; k < c->n_in && !bad; k++) {
        const uint32_t *x = c->in[k].data;    /* exponent bits all ones: Inf or NaN */
        int64_t n = c->in[k].numel;
        #pragma omp parallel for reduction(|:bad) schedule(static) num_threads(cpu_par(c, n))
        for (int64_t i = 0; i < n; i++) bad |= (x[i] & 0x7f800000u) == 0x7f800000u;
    }
    ((float *)c->out.data)[0] = bad ? 0.0f : 1.0f;
    return KILN_OK;
}

kiln_kernel_fn cpu_all_finite_kernel(const kiln_node *n) {
    for (int k = 0; k < n->n_in; k++) if (n->in[k]->dtype != KILN_F32) return NULL;
    return k_all_finite;
}
