/* Loss scaling on the GPU (src/ops/loss_scale.c): AllFinite over up to 8 gradients and the
 * single-thread LossScaleUpdate, so a mixed_float16 step stays on the device (and in its CUDA
 * graph) with no host round trip. */
#include "backend/cuda/cuda_internal.cuh"

typedef struct finite_args {
    const void *p[KILN_MAX_INPUTS];
    int dt[KILN_MAX_INPUTS];
    int64_t n[KILN_MAX_INPUTS];
    int count;
} finite_args;

__global__ void finite_init_kernel(float *out) { out[0] = 1.0f; }

/* Every thread that sees a non-finite element stores 0: the same value, so no atomics. */
__global__ void finite_kernel(finite_args a, float *out) {
    for (int k = 0; k < a.count; k++)
        CU_LOOP(i, a.n[k]) {
            double v = cu_ld_any(a.p[k], a.dt[k], i);
            if (isnan(v) || isinf(v)) out[0] = 0.0f;
        }
}

static kiln_status k_all_finite(const kiln_kctx *c) {
    finite_args a;
    memset(&a, 0, sizeof a);
    int64_t most = 1;
    for (int k = 0; k < c->n_in; k++) {
        a.p[k] = c->in[k].data; a.dt[k] = (int)c->in[k].dtype; a.n[k] = c->in[k].numel;
        if (a.n[k] > most) most = a.n[k];
    }
    a.count = c->n_in;
    cudaStream_t s = cu_stream();
    CU_LAUNCH(finite_init_kernel, 1, 1, 0, s)((float *)c->out.data);
    CU_LAUNCH(finite_kernel, cu_blocks(most), CU_THREADS, 0, s)(a, (float *)c->out.data);
    return cu_launch_check(c);
}

__global__ void loss_scale_update_kernel(float *scale, float *good, float *skipped, const float *finite, float interval, float *out) {
    if (finite[0] != 0.0f) {
        good[0] += 1.0f;
        if (good[0] >= interval) {
            float s = scale[0] * 2.0f;
            if (!isinf(s)) scale[0] = s;
            good[0] = 0.0f;
        }
    } else {
        scale[0] = scale[0] * 0.5f >= 1.0f ? scale[0] * 0.5f : 1.0f;
        good[0] = 0.0f;
        skipped[0] += 1.0f;
    }
    out[0] = 0.0f;
}

static kiln_status k_loss_scale_update(const kiln_kctx *c) {
    CU_LAUNCH(loss_scale_update_kernel, 1, 1, 0, cu_stream())((float *)c->in[0].data, (float *)c->in[1].data, (float *)c->in[2].data,
                                                               (const float *)c->in[3].data, (float)c->node->attrs.alpha,
                                                               (float *)c->out.data);
    return cu_launch_check(c);
}

kiln_kernel_fn cu_precision_kernel(const kiln_node *n) {
    switch (n->op) {
    case KILN_OP_ALL_FINITE:
        for (int k = 0; k < n->n_in; k++) if (!cu_is_float(n->in[k]->dtype)) return NULL;
        return k_all_finite;
    case KILN_OP_LOSS_SCALE_UPDATE: return k_loss_scale_update;
    default: return NULL;
    }
}
