/* The memory of the training step, read from its memory plan (kiln_model_memory, kiln summary
 * --batch-size), and the largest batch whose plan fits (kiln_model_max_batch, --batch-size auto). */
#include <stdio.h>
#include <string.h>
#include "nn/nn_fit.h"
#include "runtime/plan_query.h"

/* The training step's plans: [0] the update run, [1] (accumulate > 1) the accumulating runs. */
typedef struct step_plans { kiln_step_memory mem[2]; kiln_plan *plan[2]; int n; } step_plans;

static void plans_free(step_plans *sp) { for (int i = 0; i < 2; i++) kiln_plan_free(sp->plan[i]); memset(sp, 0, sizeof *sp); }

static kiln_status plan_step(kiln_model *m, int batch, int64_t *vb, int64_t *gb, step_plans *out) {
    memset(out, 0, sizeof *out);
    kiln_status st = nn_ensure_train(m, batch);
    if (st) return st;
    nn_forward *f = &m->train;
    kiln_feed feeds[2] = { { f->x, NULL }, { f->y, NULL } };
    int n_feeds = 2;
    if (f->resident_n > 0) { feeds[0].node = f->idx; feeds[1].node = f->keys; n_feeds = f->keys ? 2 : 1; }
    kiln_node *fetch[2] = { f->loss, f->out }, *last[2] = { f->step, f->accum_reset };
    int n_last = f->accumulate > 1 ? 2 : 1;
    st = kiln_session_step_memory(m->s, feeds, n_feeds, fetch, 2, last, n_last, &out->mem[0], vb, gb, &out->plan[0]);
    out->n = 1;
    if (!st && f->accumulate > 1) {
        st = kiln_session_step_memory(m->s, feeds, n_feeds, fetch, 2, &f->accum_step, 1, &out->mem[1], vb, NULL, &out->plan[1]);
        out->n = 2;
    }
    if (st) plans_free(out);
    return st;
}

/* arena bytes of the step's plans if their micro-batch were `micro` (the plans rescaled) */
static size_t arena_at(const step_plans *sp, int64_t micro) {
    size_t a = 0;
    for (int i = 0; i < sp->n; i++) {
        size_t x = kiln_plan_arena_at(sp->plan[i], sp->mem[i].space, micro);
        if (x > a) a = x;
    }
    return a;
}

static size_t arena_of(const step_plans *sp) { return sp->n > 1 && sp->mem[1].arena > sp->mem[0].arena ? sp->mem[1].arena : sp->mem[0].arena; }
static size_t peak_of(const step_plans *sp) { return arena_of(sp) + (sp->mem[0].variables > sp->mem[1].variables ? sp->mem[0].variables : sp->mem[1].variables); }

static bool starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static kiln_status begin(kiln_model *m, int batch, int accumulate, const char *who) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!m->compiled) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: model '%s' is not compiled: call kiln_compile() first (the optimizer's state is part of the step)", who, m->name);
    if (batch < 1) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: batch %d must be at least 1", who, batch);
    return nn_accum_check(m, batch, accumulate, who);
}

kiln_status kiln_model_memory(kiln_model *m, int batch, int accumulate, kiln_memory_report *out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_memory: NULL report");
    memset(out, 0, sizeof *out);
    kiln_status st = begin(m, batch, accumulate, "kiln_model_memory");
    if (st) return st;
    if ((st = nn_ensure_train(m, batch))) return st;       /* the graph, so its node count is known */
    int nn = kiln_graph_node_count(m->g);
    int64_t *vb = kiln_calloc((size_t)nn, sizeof *vb), *gb = kiln_calloc((size_t)nn, sizeof *gb);
    out->layers = kiln_calloc((size_t)(m->n_layers > 0 ? m->n_layers : 1), sizeof *out->layers);
    step_plans sp;
    if (!vb || !gb || !out->layers) st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_model_memory: out of host memory");
    else st = plan_step(m, batch, vb, gb, &sp);
    if (st) { kiln_free(vb); kiln_free(gb); kiln_memory_report_free(out); return st; }
    out->batch = batch;
    out->accumulate = nn_accum_n(m);
    out->micro_batch = batch / out->accumulate;
    out->backend = sp.mem[0].backend;
    out->optimizer = kiln_optimizer_name(m->copts.optimizer.kind);
    out->grad_bytes = sp.mem[0].grad_block;
    out->arena_bytes = arena_of(&sp);
    out->variable_bytes = peak_of(&sp) - out->arena_bytes;
    out->peak_bytes = peak_of(&sp);
    out->device_free_bytes = sp.mem[0].avail;
    /* per layer: its variables, their gradients and slots, its forward values in the arena */
    for (int i = 0; i < m->n_layers; i++) {
        kiln_layer *l = m->layers[i];
        if (l->kind == NN_INPUT) continue;
        kiln_layer_memory *lm = &out->layers[out->n_layers++];
        lm->name = l->name;
        lm->type = kiln_layer_type(l);
        char pre[NN_NAME + 2];
        snprintf(pre, sizeof pre, "%s/", l->name);
        for (int j = 0; j < l->n_vars; j++) {
            kiln_node *v = l->vars[j].node;
            if (!v) continue;
            lm->params += kiln_shape_numel(kiln_node_shape(v));
            lm->weight_bytes += (size_t)kiln_shape_numel(kiln_node_shape(v)) * kiln_dtype_size(kiln_node_dtype(v));
            lm->grad_bytes += (size_t)gb[kiln_node_id(v)];
        }
        for (int id = 0; id < nn; id++) {
            kiln_node *n = kiln_graph_node(m->g, id);
            if (!starts(kiln_node_name(n), pre)) continue;
            if (kiln_node_is_variable(n)) {
                bool weight = false;
                for (int j = 0; j < l->n_vars; j++) weight |= l->vars[j].node == n;
                if (!weight) lm->optimizer_bytes += (size_t)kiln_shape_numel(kiln_node_shape(n)) * kiln_dtype_size(kiln_node_dtype(n));
            } else lm->activation_bytes += (size_t)vb[id];
        }
        out->params += lm->params;
        out->weight_bytes += lm->weight_bytes;
        out->optimizer_bytes += lm->optimizer_bytes;
    }
    for (int id = 0; id < nn; id++) {       /* variables of no layer: accumulators, the learning rate */
        kiln_node *n = kiln_graph_node(m->g, id);
        if (!kiln_node_is_variable(n)) continue;
        size_t b = (size_t)kiln_shape_numel(kiln_node_shape(n)) * kiln_dtype_size(kiln_node_dtype(n));
        if (starts(kiln_node_name(n), NN_ACCUM_PREFIX)) out->accumulator_bytes += b;
        else if (n == m->lr_var) out->optimizer_bytes += b;
    }
    plans_free(&sp);
    kiln_free(vb);
    kiln_free(gb);
    return KILN_OK;
}

void kiln_memory_report_free(kiln_memory_report *r) {
    if (!r) return;
    kiln_free(r->layers);
    r->layers = NULL;
    r->n_layers = 0;
}

static const char *human(size_t b, char *buf, size_t n) {
    if (b < 1024) snprintf(buf, n, "%zu B", b);
    else if (b < 1048576) snprintf(buf, n, "%.1f KiB", b / 1024.0);
    else if (b < (size_t)1 << 30) snprintf(buf, n, "%.2f MiB", b / 1048576.0);
    else snprintf(buf, n, "%.2f GiB", b / 1073741824.0);
    return buf;
}

void kiln_memory_report_print(const kiln_memory_report *r, FILE *f) {
    char a[32], b[32], c[32], d[32];
    fprintf(f, "Training step memory: batch %d", r->batch);
    if (r->accumulate > 1) fprintf(f, " as %d micro-batches of %d", r->accumulate, r->micro_batch);
    fprintf(f, ", %s, on %s (from the step's memory plan)\n", r->optimizer, r->backend);
    fprintf(f, " %-32s %12s %11s %11s %11s %12s\n", "Layer (type)", "Params", "Weights", "Gradients", "Optimizer", "Activations");
    for (int i = 0; i < r->n_layers; i++) {
        const kiln_layer_memory *l = &r->layers[i];
        char nm[64];
        snprintf(nm, sizeof nm, "%s (%s)", l->name, l->type);
        fprintf(f, " %-32s %12lld %11s %11s %11s %12s\n", nm, (long long)l->params, human(l->weight_bytes, a, sizeof a),
                human(l->grad_bytes, b, sizeof b), human(l->optimizer_bytes, c, sizeof c), human(l->activation_bytes, d, sizeof d));
    }
    fprintf(f, " %-32s %12lld %11s %11s %11s\n", "Total", (long long)r->params, human(r->weight_bytes, a, sizeof a),
            human(r->grad_bytes, b, sizeof b), human(r->optimizer_bytes, c, sizeof c));
    fprintf(f, "Activations: a layer's forward values the plan keeps (at the micro-batch); the arena reuses bytes by lifetime\n");
    if (r->accumulator_bytes) fprintf(f, "Gradient accumulators: %s\n", human(r->accumulator_bytes, a, sizeof a));
    fprintf(f, "Arena of the step: %s (activations, their gradients, the weight gradients, kernel workspaces)\n", human(r->arena_bytes, a, sizeof a));
    fprintf(f, "Variables: %s (weights, optimizer state%s, learning rate)\n", human(r->variable_bytes, a, sizeof a), r->accumulator_bytes ? ", accumulators" : "");
    fprintf(f, "Peak of the planned training step: %.2f MiB (%zu bytes) = arena + variables", r->peak_bytes / 1048576.0, r->peak_bytes);
    if (r->device_free_bytes) fprintf(f, "; the GPU can allocate %.2f MiB", r->device_free_bytes / 1048576.0);
    fprintf(f, "\n");
}

kiln_status kiln_model_max_batch(kiln_model *m, size_t limit, int accumulate, int multiple, int max_batch, int *batch, size_t *peak) {
    if (!batch) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_max_batch: NULL batch");
    int n = accumulate > 1 ? accumulate : 1, mult = multiple > 0 ? multiple : 8;
    int step = mult;
    while (step % n) step += mult;                  /* a multiple of both */
    int top = max_batch > 0 && max_batch < (1 << 20) ? max_batch : (1 << 20);
    top -= top % step;
    if (top < step) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_max_batch: no multiple of %d up to %d", step, max_batch);
    kiln_status st = begin(m, step, n, "kiln_model_max_batch");
    step_plans sp;
    if (st || (st = plan_step(m, step, NULL, NULL, &sp))) return st;
    if (!limit) limit = sp.mem[0].avail;
    if (!limit) {
        kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_model_max_batch: on the %s give a memory limit (kiln train --memory-limit MIB)", sp.mem[0].backend);
        plans_free(&sp);
        return KILN_INVALID_ARGUMENT;
    }
    size_t vars = peak_of(&sp) - arena_of(&sp);
    /* the largest multiple of step whose rescaled plan fits: doubling, then bisection */
    int lo = 0, hi;
    if (arena_at(&sp, step / n) + vars <= limit) lo = step;
    for (hi = lo ? 2 * step : step; lo && hi <= top && arena_at(&sp, hi / n) + vars <= limit; hi *= 2) lo = hi;
    if (hi > top + step) hi = top + step;
    while (lo && hi - lo > step) {
        int mid = lo + (hi - lo) / (2 * step) * step;
        if (mid <= lo) mid = lo + step;
        if (arena_at(&sp, mid / n) + vars <= limit) lo = mid; else hi = mid;
    }
    plans_free(&sp);
    /* check by planning it: the rescaled plan is the same plan with bigger buffers, but workspaces
     * do not scale and placement can differ a little */
    for (; lo >= step; lo -= step) {
        if ((st = plan_step(m, lo, NULL, NULL, &sp))) return st;
        size_t p = peak_of(&sp);
        plans_free(&sp);
        if (p <= limit) { *batch = lo; if (peak) *peak = p; return KILN_OK; }
    }
    if ((st = plan_step(m, step, NULL, NULL, &sp))) return st;
    size_t need = peak_of(&sp);
    plans_free(&sp);
    return kiln_set_error(KILN_OUT_OF_MEMORY, "model '%s': even a batch of %d needs %.1f MiB for its training step, more than the %.1f MiB allowed",
                          m->name, step, need / 1048576.0, limit / 1048576.0);
}
