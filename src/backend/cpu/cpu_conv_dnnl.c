/* Conv2D and its two gradients through oneDNN when the build found it (KILN_HAVE_DNNL), else
 * cpu_conv.c's im2col + sgemm. oneDNN picks its own (blocked) layouts (format "any") for its
 * direct AVX-512/AVX2 kernels, which beat im2col + sgemm on these shapes (bench: see README);
 * Kiln's NHWC activations and HWIO weights are reordered into them and the result back, all in
 * the planned workspace (oneDNN's scratchpad too: user mode), so a step allocates nothing of
 * Kiln's. Primitives are built once per shape and cached (a mutex guards the cache; execution is
 * thread-safe). Cross-correlation, any stride, dilation, groups and asymmetric padding. */
#include "backend/cpu/cpu_internal.h"

#ifdef KILN_HAVE_DNNL
#include <pthread.h>
#include <stdlib.h>
#include <dnnl.h>

typedef struct dconv_key {
    int op, G;
    int epi;                           /* forward only: EPI_BIAS | EPI_RELU fused as oneDNN bias + post-op */
    int dt[3];                         /* oneDNN data type of operands 0, 1, 2 (f32; bf16 inputs when mixed) */
    int up16;                          /* bit i: operand i is f16 in Kiln, widened to f32 for oneDNN (mixed f16) */
    int upbf;                          /* bit i: operand i is bf16, widened to f32: shapes with no bf16 kernel */
    int dnbf;                          /* the output is bf16 in Kiln, computed f32 and rounded (with upbf) */
    int bdt;                           /* oneDNN data type of the fused bias (the output's) */
    int64_t N, H, W, C, OH, OW, CO;
    int kh, kw, sh, sw, dh, dw, pt, pb, pl, pr;
} dconv_key;

enum { EPI_BIAS = 1, EPI_RELU = 2 };

/* One cached convolution: the primitive, and per operand the user (Kiln) and oneDNN layouts with
 * the reorder between them (NULL when they match). Operands: 0 x / dx, 1 w / dw, 2 y / dy. */
typedef struct dconv {
    dconv_key k;
    bool ok;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t user[3], inner[3], scratch, bias;
    dnnl_primitive_t reorder[3];       /* user -> inner for inputs, inner -> user for the output */
    size_t off[3], scratch_off, ws;    /* workspace layout: inner buffers, then the scratchpad, */
    size_t up_off[3];                  /* then the f32 copies of widened operands (key.up16 | key.upbf) */
} dconv;

/* Grows with the model: a network like inception has ~70 convolution shapes, each with a forward,
 * its fused variant and two gradients (a fixed 128 sent the rest to slower kernels). */
static dconv **cache;
static int n_cache, cap_cache;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;

static bool key_of(const kiln_node *n, dconv_key *k) {
    const kiln_attrs *a = &n->attrs;
    kiln_shape xs, ys, ws;
    if (!kiln_conv_shapes(n, &xs, &ws, &ys)) return false;
    memset(k, 0, sizeof *k);
    k->op = n->op;
    k->G = a->groups > 0 ? a->groups : 1;
    k->N = xs.dim[0]; k->H = xs.dim[1]; k->W = xs.dim[2]; k->C = xs.dim[3];
    k->OH = ys.dim[1]; k->OW = ys.dim[2]; k->CO = ys.dim[3];
    k->kh = (int)ws.dim[0]; k->kw = (int)ws.dim[1];
    k->sh = a->sh; k->sw = a->sw; k->dh = a->dh > 0 ? a->dh : 1; k->dw = a->dw > 0 ? a->dw : 1;
    k->pt = a->pt; k->pb = a->pb; k->pl = a->pl; k->pr = a->pr;
    /* operand dtypes: the output is the node's, the inputs their own (mixed: bf16 in, f32 out) */
    kiln_dtype d0 = n->op == KILN_OP_CONV2D_BWD_INPUT ? n->dtype : n->in[0]->dtype;
    kiln_dtype d1 = n->op == KILN_OP_CONV2D_BWD_FILTER ? n->dtype : n->op == KILN_OP_CONV2D ? n->in[1]->dtype : n->in[0]->dtype;
    kiln_dtype d2 = n->op == KILN_OP_CONV2D ? n->dtype : n->in[1]->dtype;
    kiln_dtype d[3] = { d0, d1, d2 };
    for (int i = 0; i < 3; i++) {
        /* f16 operands (mixed_float16; no CPU f16 arithmetic here) are widened to f32 exactly:
         * an f16 x f16 product is exact in f32, so this is f16 with f32 accumulation */
        if (d[i] == KILN_F16 && n->attrs.acc_f32 && n->dtype == KILN_F32) { k->up16 |= 1 << i; d[i] = KILN_F32; }
        if (d[i] != KILN_F32 && d[i] != KILN_BF16) return false;
        k->dt[i] = d[i] == KILN_F32 ? dnnl_f32 : dnnl_bf16;
    }
    k->bdt = k->dt[2];
    return k->C % k->G == 0 && k->CO % k->G == 0 && ws.dim[2] == k->C / k->G && ws.dim[3] == k->CO && ys.dim[0] == k->N &&
           k->sh > 0 && k->sw > 0;
}

/* Mixed precision (acc_f32): bf16 inputs natively when the CPU has bf16; f16 inputs widened to f32. */
static bool cpu_conv_is_mixed(const kiln_node *n) {
    if (!n->attrs.acc_f32 || n->dtype != KILN_F32 || n->in[1]->dtype != n->in[0]->dtype) return false;
    return n->in[0]->dtype == KILN_F16 || (n->in[0]->dtype == KILN_BF16 && cpu_has_bf16());
}

/* bf16 activations (mixed_bfloat16): every operand bf16; the products accumulate in f32 inside oneDNN. */
static bool cpu_conv_is_bf16(const kiln_node *n) {
    return n->dtype == KILN_BF16 && n->in[0]->dtype == KILN_BF16 && n->in[1]->dtype == KILN_BF16 && cpu_has_bf16();
}

/* Kiln's layouts as oneDNN memory descriptors: NHWC activations (logical dims N, C, H, W) and
 * HWIO weights (logical O, I, H, W, or G, O/G, I/G, H, W with groups). */
static bool user_descs(const dconv_key *k, dnnl_memory_desc_t *x, dnnl_memory_desc_t *w, dnnl_memory_desc_t *y) {
    dnnl_dims_t xd = { k->N, k->C, k->H, k->W }, yd = { k->N, k->CO, k->OH, k->OW };
    if (dnnl_memory_desc_init_by_tag(x, 4, xd, (dnnl_data_type_t)k->dt[0], dnnl_nhwc) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(y, 4, yd, (dnnl_data_type_t)k->dt[2], dnnl_nhwc) != dnnl_success)
        return false;
    int64_t Cg = k->C / k->G, COg = k->CO / k->G;
    if (k->G == 1) {
        dnnl_dims_t wd = { k->CO, k->C, k->kh, k->kw };
        return dnnl_memory_desc_init_by_tag(w, 4, wd, (dnnl_data_type_t)k->dt[1], dnnl_hwio) == dnnl_success;
    }
    /* [kh, kw, Cg, G*COg]: g stride COg, o stride 1, i stride CO, h stride kw*Cg*CO, w stride Cg*CO */
    dnnl_dims_t wd = { k->G, COg, Cg, k->kh, k->kw }, st = { COg, 1, k->CO, (int64_t)k->kw * Cg * k->CO, Cg * k->CO };
    return dnnl_memory_desc_init_by_strides(w, 5, wd, (dnnl_data_type_t)k->dt[1], st) == dnnl_success;
}

static bool make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, dnnl_primitive_t *out) {
    *out = NULL;
    if (dnnl_memory_desc_equal(from, to)) return true;
    dnnl_primitive_desc_t pd;
    if (dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL) != dnnl_success) return false;
    dnnl_status_t s = dnnl_primitive_create(out, pd);
    dnnl_primitive_desc_destroy(pd);
    return s == dnnl_success;
}

/* Activations stay in Kiln's NHWC when both channel counts are whole AVX-512 vectors: oneDNN's
 * NHWC kernels (brgconv forward) then match its blocked ones, and the two reorders of each
 * activation (about a fifth of the convolution time on cifar_cnn) disappear. An RGB-like input
 * (2-15 channels) into a layer of whole vectors stays NHWC too: cifar_cnn's first convolution,
 * bench_cpu_kernels, bf16 forward 694 vs 599 GFLOP/s and filter gradient 697 vs 544, f32 475 vs
 * 310 and 257 vs 233 (the output's reorder gone; the model 3-8% faster in bf16). A grey (1-channel)
 * input lets oneDNN choose: its blocked forward was faster there (bf16 inference of fashion_cnn
 * 60-82k vs 54-55k img/s). A mix with a wide input (NHWC on one side only) has only oneDNN 2.6's
 * reference kernel. KILN_DNNL_LAYOUT=any|nhwc forces one choice (A/B benchmarks). */
static bool nhwc_activations(const dconv_key *k) {
    const char *v = getenv("KILN_DNNL_LAYOUT");
    if (v && !strcmp(v, "any")) return false;
    if (v && !strcmp(v, "nhwc")) return true;
    return k->G == 1 && k->CO % 16 == 0 && (k->C % 16 == 0 || (k->C > 1 && k->C < 16));
}

/* Builds e's primitive, with the activations in NHWC or in the layouts oneDNN picks. */
static bool build_as(dconv *e, bool nhwc) {
    const dconv_key *k = &e->k;
    dnnl_memory_desc_t any[3];
    if (!user_descs(k, &e->user[0], &e->user[1], &e->user[2])) return false;
    for (int i = 0; i < 3; i++) {
        int nd = e->user[i].ndims;
        if (nhwc && i != 1) { any[i] = e->user[i]; continue; }   /* Kiln's own NHWC: no reorder */
        if (dnnl_memory_desc_init_by_tag(&any[i], nd, e->user[i].dims, e->user[i].data_type, dnnl_format_tag_any) != dnnl_success)
            return false;
    }
    /* a backward op's forward hint computes in the inputs' dtype (mixed: bf16 throughout) */
    dnnl_memory_desc_t hint[3];
    dnnl_data_type_t ht = k->op == KILN_OP_CONV2D_BWD_INPUT ? (dnnl_data_type_t)k->dt[1] : (dnnl_data_type_t)k->dt[0];
    for (int i = 0; i < 3; i++) {
        hint[i] = any[i];
        if (k->op != KILN_OP_CONV2D && hint[i].data_type != ht &&
            dnnl_memory_desc_init_by_tag(&hint[i], any[i].ndims, any[i].dims, ht, nhwc && i != 1 ? dnnl_nhwc : dnnl_format_tag_any) !=
                dnnl_success)
            return false;
    }
    dnnl_dims_t strides = { k->sh, k->sw }, dil = { k->dh - 1, k->dw - 1 }, pl = { k->pt, k->pl }, pr = { k->pb, k->pr };
    dnnl_primitive_attr_t attr;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success) return false;
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (k->epi & EPI_RELU) {
        dnnl_post_ops_t po;
        bool po_ok = dnnl_post_ops_create(&po) == dnnl_success;
        po_ok = po_ok && dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) == dnnl_success &&
                dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
        if (po) dnnl_post_ops_destroy(po);
        if (!po_ok) { dnnl_primitive_attr_destroy(attr); return false; }
    }
    dnnl_dims_t bd = { k->CO };
    if ((k->epi & EPI_BIAS) && dnnl_memory_desc_init_by_tag(&e->bias, 1, bd, (dnnl_data_type_t)k->bdt, dnnl_a) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return false;
    }
    dnnl_convolution_desc_t fd, cd;
    dnnl_primitive_desc_t fpd = NULL, pd = NULL;
    bool ok = dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &hint[0], &hint[1],
                                                         (k->epi & EPI_BIAS) ? &e->bias : NULL, &hint[2], strides, dil, pl,
                                                         pr) == dnnl_success &&
              dnnl_primitive_desc_create(&fpd, &fd, attr, engine, NULL) == dnnl_success;
    if (ok && k->op == KILN_OP_CONV2D) { pd = fpd; fpd = NULL; }
    else if (ok && k->op == KILN_OP_CONV2D_BWD_INPUT)
        ok = dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &any[0], &any[1], &any[2], strides, dil,
                                                              pl, pr) == dnnl_success &&
             dnnl_primitive_desc_create(&pd, &cd, attr, engine, fpd) == dnnl_success;
    else if (ok)
        ok = dnnl_dilated_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &any[0], &any[1], NULL, &any[2],
                                                                 strides, dil, pl, pr) == dnnl_success &&
             dnnl_primitive_desc_create(&pd, &cd, attr, engine, fpd) == dnnl_success;
    dnnl_primitive_attr_destroy(attr);
    if (fpd) dnnl_primitive_desc_destroy(fpd);
    const char *impl = NULL;
    bool bf16 = k->dt[0] == dnnl_bf16 || k->dt[1] == dnnl_bf16 || k->dt[2] == dnnl_bf16;
    if (ok && (nhwc || bf16) && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
        !strncmp(impl, "ref", 3))
        ok = false;     /* oneDNN's reference kernel: far slower than reordering into blocked layouts */
    if (!ok) { if (pd) dnnl_primitive_desc_destroy(pd); return false; }
    /* the layouts oneDNN chose; which operand is the output depends on the op */
    dnnl_query_t q[3] = { dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md };
    if (k->op == KILN_OP_CONV2D_BWD_INPUT) { q[0] = dnnl_query_diff_src_md; q[2] = dnnl_query_diff_dst_md; }
    if (k->op == KILN_OP_CONV2D_BWD_FILTER) { q[1] = dnnl_query_diff_weights_md; q[2] = dnnl_query_diff_dst_md; }
    int out = k->op == KILN_OP_CONV2D ? 2 : k->op == KILN_OP_CONV2D_BWD_INPUT ? 0 : 1;
    size_t at = 0;
    for (int i = 0; i < 3 && ok; i++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, q[i], 0);
        if (!md) { ok = false; break; }
        e->inner[i] = *md;
        ok = i == out ? make_reorder(&e->inner[i], &e->user[i], &e->reorder[i]) : make_reorder(&e->user[i], &e->inner[i], &e->reorder[i]);
        e->off[i] = at;
        if (e->reorder[i]) at += cpu_align64(dnnl_memory_desc_get_size(&e->inner[i]));
    }
    const dnnl_memory_desc_t *sp = ok ? dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0) : NULL;
    if (sp) e->scratch = *sp;
    e->scratch_off = at;
    at += sp ? cpu_align64(dnnl_memory_desc_get_size(sp)) : 0;
    for (int i = 0; i < 3; i++)
        if (((k->up16 | k->upbf) & (1 << i)) || (k->dnbf && i == out)) { e->up_off[i] = at; at += cpu_align64(dnnl_memory_desc_get_size(&e->user[i])); }
    e->ws = at + 64;
    ok = ok && dnnl_primitive_create(&e->prim, pd) == dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

static bool build(dconv *e) {
    if (nhwc_activations(&e->k)) {
        if (build_as(e, true)) return true;
        for (int i = 0; i < 3; i++) if (e->reorder[i]) { dnnl_primitive_destroy(e->reorder[i]); e->reorder[i] = NULL; }
        if (e->prim) { dnnl_primitive_destroy(e->prim); e->prim = NULL; }
    }
    return build_as(e, false);
}

/* Out of memory (kiln_realloc / kiln_calloc, which the allocation sweep reaches) answers "no
 * oneDNN convolution" as for a shape oneDNN refuses: the node gets the other kernels, nothing is
 * cached, and the next lookup tries again. The cache lives as long as the process. */
static dconv *lookup_or_build(const dconv_key *k) {
    dconv *e = NULL;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < n_cache && !e; i++)
        if (!memcmp(&cache[i]->k, k, sizeof *k)) e = cache[i];
    if (!e && n_cache == cap_cache) {
        int cap = cap_cache ? 2 * cap_cache : 128;
        dconv **c = kiln_realloc(cache, (size_t)cap * sizeof *c);
        if (c) { cache = c; cap_cache = cap; }
    }
    if (!e && n_cache < cap_cache && (engine || dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success)) {
        e = kiln_calloc(1, sizeof *e);
        if (e) {
            e->k = *k;
            e->ok = build(e);
            cache[n_cache++] = e;    /* kept when unsupported too: the answer is not recomputed */
        }
    }
    pthread_mutex_unlock(&cache_lock);
    return e && e->ok ? e : NULL;
}

/* A mixed node whose shape has no bf16 kernel (or only oneDNN's reference one): its bf16 inputs
 * widened to f32 (exact), so the f32 kernels compute the same products with f32 sums; a bf16
 * output is computed f32 and rounded (its epilogue applied then: no fused variant). */
static bool widen_bf16(dconv_key *k) {
    int out = k->op == KILN_OP_CONV2D ? 2 : k->op == KILN_OP_CONV2D_BWD_INPUT ? 0 : 1;
    bool any = false;
    for (int i = 0; i < 3; i++)
        if (i != out && k->dt[i] == dnnl_bf16) { k->upbf |= 1 << i; k->dt[i] = dnnl_f32; any = true; }
    if (any && k->dt[out] == dnnl_bf16) {
        if (k->epi) return false;
        k->dnbf = 1;
        k->dt[out] = k->bdt = dnnl_f32;
    }
    return any;
}

/* The cached convolution for n (with the fused epilogue epi, forward only), built on first sight;
 * NULL when oneDNN cannot run it. */
static dconv *entry_for(const kiln_node *n, int epi) {
    dconv_key k;
    if (!key_of(n, &k)) return NULL;
    k.epi = n->op == KILN_OP_CONV2D ? epi : 0;
    dconv *e = lookup_or_build(&k);
    if (!e && widen_bf16(&k)) e = lookup_or_build(&k);
    return e;
}

/* Room for the plain convolution and its bias + relu variant (the common fused epilogue): the
 * plan does not know yet which epilogue the step will fuse. */
size_t cpu_dnnl_conv_workspace(const kiln_node *n) {
    dconv *e = entry_for(n, 0), *f = n->op == KILN_OP_CONV2D ? entry_for(n, EPI_BIAS | EPI_RELU) : NULL;
    size_t ws = e ? e->ws : 0;
    return f && f->ws > ws ? f->ws : ws;
}

static bool run(dnnl_primitive_t p, dnnl_stream_t s, int nargs, const dnnl_exec_arg_t *args) {
    return dnnl_primitive_execute(p, s, nargs, args) == dnnl_success;
}

/* A bf16 output: from the f32 result f (NULL: in place on y), with the step's bias + relu
 * epilogue (forward; C channels innermost), rounded once. */
static void bf16_epilogue(const kiln_kctx *c, const float *f, uint16_t *y, int64_t n, int64_t C) {
    const uint16_t *b = c->node->op == KILN_OP_CONV2D && c->epi_bias ? (const uint16_t *)c->epi_bias->data : NULL;
    bool relu = c->node->op == KILN_OP_CONV2D && c->epi_relu;
    #pragma omp parallel for schedule(static) num_threads(cpu_par(c, n))
    for (int64_t i = 0; i < n; i++) {
        float v = f ? f[i] : cpu_from_bf16(y[i]);
        if (b) v += cpu_from_bf16(b[i % C]);
        if (relu) v = v <= 0.0f ? 0.0f : v;
        y[i] = cpu_to_bf16(v);
    }
}

static kiln_status k_dnnl_conv(const kiln_kctx *c) {
    /* The planned workspace is the plain convolution's; the fused variant is used when it fits
     * in it (it does unless oneDNN picks a kernel with a larger scratchpad), else the epilogue
     * runs as a pass of its own. */
    int epi = (c->epi_bias ? EPI_BIAS : 0) | (c->epi_relu ? EPI_RELU : 0);
    dconv *e = epi ? entry_for(c->node, epi) : NULL;
    if (!e || !c->workspace || c->ws_bytes < e->ws) { e = entry_for(c->node, 0); epi = 0; }
    if (!e) return kiln_set_error(KILN_INTERNAL, "%s: no oneDNN convolution for this shape", c->node->name);
    if (!c->workspace || c->ws_bytes < e->ws)
        return kiln_set_error(KILN_INTERNAL, "%s: oneDNN convolution workspace is %zu bytes, needs %zu", c->node->name, c->ws_bytes, e->ws);
    const dconv_key *k = &e->k;
    char *ws = (char *)(((uintptr_t)c->workspace + 63) & ~(uintptr_t)63);
    /* Kiln's buffers for operands 0 (x/dx), 1 (w/dw), 2 (y/dy) */
    void *user[3];
    if (k->op == KILN_OP_CONV2D) { user[0] = c->in[0].data; user[1] = c->in[1].data; user[2] = c->out.data; }
    else if (k->op == KILN_OP_CONV2D_BWD_INPUT) { user[0] = c->out.data; user[1] = c->in[0].data; user[2] = c->in[1].data; }
    else { user[0] = c->in[0].data; user[1] = c->out.data; user[2] = c->in[1].data; }
    int out = k->op == KILN_OP_CONV2D ? 2 : k->op == KILN_OP_CONV2D_BWD_INPUT ? 0 : 1;
    uint16_t *out_bf16 = NULL;
    if (k->dnbf) { out_bf16 = user[out]; user[out] = ws + e->up_off[out]; }
    for (int i = 0; i < 3; i++)           /* f16 (and kernel-less bf16) inputs widened to f32 */
        if ((k->up16 | k->upbf) & (1 << i)) {
            float *w32 = (float *)(ws + e->up_off[i]);
            const uint16_t *h = user[i];
            bool f16 = k->up16 & (1 << i);
            int64_t n = (int64_t)(dnnl_memory_desc_get_size(&e->user[i]) / 4);
            #pragma omp parallel for schedule(static) num_threads(cpu_par(c, n))
            for (int64_t j = 0; j < n; j++) {
                uint32_t u = (uint32_t)h[j] << 16;
                if (f16) w32[j] = kiln_f16_to_f32(h[j]); else memcpy(&w32[j], &u, 4);
            }
            user[i] = w32;
        }
    dnnl_stream_t st = NULL;
    dnnl_memory_t um[3] = { 0 }, im[3] = { 0 }, sm = NULL, bm = NULL;
    bool ok = dnnl_stream_create(&st, engine, dnnl_stream_default_flags) == dnnl_success;
    for (int i = 0; i < 3 && ok; i++) {
        ok = dnnl_memory_create(&um[i], &e->user[i], engine, user[i]) == dnnl_success;
        if (ok && e->reorder[i]) ok = dnnl_memory_create(&im[i], &e->inner[i], engine, ws + e->off[i]) == dnnl_success;
    }
    if (ok && (epi & EPI_BIAS)) ok = dnnl_memory_create(&bm, &e->bias, engine, c->epi_bias->data) == dnnl_success;
    if (ok && dnnl_memory_desc_get_size(&e->scratch) > 0)
        ok = dnnl_memory_create(&sm, &e->scratch, engine, ws + e->scratch_off) == dnnl_success;
    dnnl_memory_t m[3];
    for (int i = 0; i < 3; i++) m[i] = im[i] ? im[i] : um[i];
    for (int i = 0; i < 3 && ok; i++)     /* inputs into oneDNN's layouts */
        if (i != out && e->reorder[i])
            ok = run(e->reorder[i], st, 2, (dnnl_exec_arg_t[]){ { DNNL_ARG_FROM, um[i] }, { DNNL_ARG_TO, im[i] } });
    if (ok) {
        int a0 = k->op == KILN_OP_CONV2D_BWD_INPUT ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
        int a1 = k->op == KILN_OP_CONV2D_BWD_FILTER ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
        int a2 = k->op == KILN_OP_CONV2D ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
        dnnl_exec_arg_t args[5] = { { a0, m[0] }, { a1, m[1] }, { a2, m[2] } };
        int na = 3;
        if (sm) args[na++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, sm };
        if (bm) args[na++] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, bm };
        ok = run(e->prim, st, na, args);
    }
    if (ok && e->reorder[out])            /* the result back into Kiln's layout */
        ok = run(e->reorder[out], st, 2, (dnnl_exec_arg_t[]){ { DNNL_ARG_FROM, im[out] }, { DNNL_ARG_TO, um[out] } });
    if (ok) ok = dnnl_stream_wait(st) == dnnl_success;
    for (int i = 0; i < 3; i++) { if (um[i]) dnnl_memory_destroy(um[i]); if (im[i]) dnnl_memory_destroy(im[i]); }
    if (sm) dnnl_memory_destroy(sm);
    if (bm) dnnl_memory_destroy(bm);
    if (st) dnnl_stream_destroy(st);
    if (!ok) return kiln_set_error(KILN_INTERNAL, "%s: oneDNN convolution failed", c->node->name);
    if (out_bf16 || c->node->dtype == KILN_BF16) {     /* bf16 output: rounded here, or epilogue on bf16 */
        if (!out_bf16 && (epi || (!c->epi_bias && !c->epi_relu))) return KILN_OK;
        bf16_epilogue(c, out_bf16 ? user[out] : NULL, out_bf16 ? out_bf16 : c->out.data,
                      (int64_t)(dnnl_memory_desc_get_size(&e->user[out]) / (out_bf16 ? 4 : 2)), k->op == KILN_OP_CONV2D ? k->CO : 1);
        return KILN_OK;
    }
    if (k->op == KILN_OP_CONV2D && !epi && (c->epi_bias || c->epi_relu)) {   /* unfused bias + relu, rows split over the threads */
        int64_t rows = k->N * k->OH * k->OW, per = (rows + 63) / 64;
        float *y = (float *)c->out.data;
        #pragma omp parallel for schedule(static) num_threads(cpu_par(c, rows * k->CO))
        for (int64_t b = 0; b < 64; b++) {
            int64_t r0 = b * per, r1 = r0 + per < rows ? r0 + per : rows;
            if (r0 < r1) cpu_epilogue(c, y + r0 * k->CO, r1 - r0, k->CO);
        }
    }
    return KILN_OK;
}

kiln_kernel_fn cpu_dnnl_conv_kernel(const kiln_node *n) {
    const char *v = getenv("KILN_CPU_DNNL");    /* 0: im2col + sgemm (A/B, tests) */
    if (v && *v == '0') return NULL;
    return (cpu_is_f32(n) || cpu_conv_is_mixed(n) || cpu_conv_is_bf16(n)) && entry_for(n, 0) ? k_dnnl_conv : NULL;
}

#else   /* no oneDNN in this build */

kiln_kernel_fn cpu_dnnl_conv_kernel(const kiln_node *n) { (void)n; return NULL; }
size_t cpu_dnnl_conv_workspace(const kiln_node *n) { (void)n; return 0; }

#endif
