/* The step loop: every run, in every mode, runs its plan's step list (run_plan.steps) here, one
 * switch per step: a kernel (guard bytes, profiling, numerics checks), a copy between memory
 * spaces (or the copy made ahead), a collective or a wait (grad_reduce.c). Mirrored replicas run
 * it in segments between their collective steps (replicas.c). No heap allocation. */
#include <stdio.h>
#include <string.h>
#include "runtime/runtime_internal.h"

#define GUARD_BYTE 0xA5

/* A value into another space: host -> device and device -> host on the device's stream; device ->
 * device (two GPUs) on the destination's stream once the source's work is done. */
static kiln_status run_copy(kiln_session *s, kiln_plan *p, kiln_plan_step *stp) {
    kiln_node *n = stp->node;
    int from = p->home[n->id], to = stp->space;
    void *dst = s->data[to][n->id];
    const void *src = s->data[from][n->id];
    if (to == KILN_SPACE_HOST) {
        const kiln_backend *be = s->be[from];
        kiln_status st = be->copy(be, dst, src, node_bytes(n), KILN_COPY_D2H);
        return st == KILN_OK ? be->sync(be) : st;   /* the host reads it next */
    }
    const kiln_backend *be = s->be[to];
    if (from == KILN_SPACE_HOST) {
        ahead_copy *a = rt_ahead_ready(s, n, to, src);
        if (a) return be->copy(be, dst, a->slot[a->cur], a->bytes, KILN_COPY_D2D);
        return be->copy(be, dst, src, node_bytes(n), KILN_COPY_H2D);
    }
    kiln_status st = s->be[from]->sync(s->be[from]);
    return st == KILN_OK ? be->copy(be, dst, src, node_bytes(n), KILN_COPY_PEER) : st;
}

/* A failed kernel's message names the node (unless it already does). */
static kiln_status kernel_failed(kiln_node *n, kiln_status st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    if (strncmp(msg, n->name, strlen(n->name)) == 0) return kiln_set_error(st, "%s", msg);
    return kiln_set_error(st, "%s (%s): %s", n->name, kiln_op_get(n->op)->name, msg);
}

static kiln_status run_kernel(kiln_session *s, kiln_plan *p, kiln_plan_step *stp) {
    kiln_node *n = stp->node;
    void **data = s->data[stp->space];
    kiln_view *v = &p->views[stp->view_base];
    for (int k = 0; k < n->n_in; k++) {
        kiln_node *in = n->in[k];
        v[k] = (kiln_view){ data[in->id], in->dtype, in->shape, kiln_shape_numel(in->shape) };
    }
    kiln_view bias;
    if (stp->bias_id >= 0) {
        kiln_node *bn = s->g->nodes[stp->bias_id];
        bias = (kiln_view){ data[bn->id], bn->dtype, bn->shape, kiln_shape_numel(bn->shape) };
    }
    kiln_kctx c = {
        .node = n, .n_in = n->n_in, .in = v,
        .out = { data[stp->out_id], n->dtype, n->shape, kiln_shape_numel(n->shape) },
        .epi_bias = stp->bias_id >= 0 ? &bias : NULL, .epi_relu = stp->relu,
        .workspace = stp->ws_offset >= 0 ? (char *)s->arena[stp->space] + stp->ws_offset : NULL,
        /* the session seed reseeds every dropout mask; (seed, step) gives the same masks on every backend */
        .ws_bytes = stp->ws_bytes, .step = s->step ^ kiln_mix64(s->opts.seed), .num_threads = s->num_threads,
    };
    if (p->alias_of[n->id] >= 0 && c.out.data == v[0].data) return KILN_OK;   /* reshape: nothing to do */
    bool guard = p->guard && stp->space == KILN_SPACE_HOST;
    size_t out_bytes = node_bytes(n);   /* fused nodes keep the producer's shape */
    if (guard) {
        memset((char *)c.out.data + out_bytes, GUARD_BYTE, p->guard);
        /* and the output itself poisoned (all-ones bytes: NaN in every float type), so a kernel
           that leaves part of it unwritten shows even where the buffer held the right values
           (conformance tests run the same case on two backends back to back); not where the
           output shares an input's memory (an in-place kernel reads it) */
        bool shared = false;
        for (int i = 0; i < c.n_in; i++) {
            const char *a = v[i].data, *o = c.out.data;
            size_t ib = (size_t)v[i].numel * kiln_dtype_size(v[i].dtype);
            if (a && o < a + ib && a < o + out_bytes) shared = true;
        }
        if (!shared) memset(c.out.data, 0xFF, out_bytes);
    }
    /* profiling a device kernel: wait for it, so the time is the kernel's (plus its launch) */
    const kiln_backend *be = s->be[stp->space];
    bool dev_prof = s->prof && stp->space != KILN_SPACE_HOST;
    kiln_status st = rt_activate(s, stp->space);   /* its kernels launch on its device */
    if (st == KILN_OK && dev_prof) st = be->sync(be);
    if (st != KILN_OK) return st;
    double t0 = s->prof ? kiln_now() : 0;
    st = stp->kernel(&c);
    if (dev_prof && st == KILN_OK) st = be->sync(be);
    if (s->prof) { s->prof[n->op] += kiln_now() - t0; s->prof_n[n->op]++; }
    for (size_t k = 0; guard && k < p->guard && st == KILN_OK; k++)
        if (((unsigned char *)c.out.data)[out_bytes + k] != GUARD_BYTE)
            st = kiln_set_error(KILN_INTERNAL, "%s (%s): the %s kernel wrote past the end of its output (guard byte %zu)", n->name, kiln_op_get(n->op)->name, stp->backend, k);
    if (st == KILN_OK && s->check_numerics) st = rt_check_numerics(s, stp);
    return st == KILN_OK ? KILN_OK : kernel_failed(n, st);
}

kiln_status rt_run_loop(kiln_session *s, run_plan *rp, int from, int to) {
    kiln_plan *p = rp->plan;
    kiln_status st = KILN_OK;
    for (int i = from; i < to && st == KILN_OK; i++) {
        kiln_plan_step *stp = &rp->steps[i];
        switch (stp->kind) {
        case KILN_STEP_KERNEL: st = run_kernel(s, p, stp); break;
        case KILN_STEP_COPY: st = run_copy(s, p, stp); break;
        case KILN_STEP_COLLECTIVE: st = rt_run_collective(s, rp, stp); break;
        case KILN_STEP_WAIT: st = rt_run_wait(s, rp, stp); break;
        }
    }
    if (st != KILN_OK) rt_collectives_abandon(s);
    return st;
}
