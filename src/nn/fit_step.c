/* One training step under kiln_fit, its kind chosen once when the fit starts: plain (one run of the
 * step, here), accumulated (N micro-batch runs, fit_accumulate.c) or mirrored (one replica per GPU,
 * fit_mirror.c); across processes (fit_dist.c) every kind's loss and metrics are summed over the
 * ranks after it. The batches come from the pipeline one ahead, so a GPU copies the next while
 * this one trains, or with the data resident as example indices (fit_resident.c). The loop
 * (fit_data.c) sees only nn_stepper_next and nn_step; per step nothing is allocated. */
#include <math.h>
#include <string.h>
#include "nn/nn_fit.h"
#include "data/pipeline_internal.h"

static kiln_status run_plain(nn_stepper *s, kiln_model *m, nn_step_io *io) {
    nn_forward *f = &m->train;
    kiln_status st = kiln_session_run_ahead(m->s, io->feeds, io->n_feeds, s->fetch, s->outs, s->n_fetch, &f->step, 1, io->next, io->n_next);
    if (st) return st;
    io->loss = kiln_tensor_get(f->loss_t, 0);
    nn_batch_metrics(m, f->out_t, io->y, s->batch, &io->correct, &io->topk);
    return KILN_OK;
}

static kiln_status run_accumulated(nn_stepper *s, kiln_model *m, nn_step_io *io) {
    (void)s;
    return nn_accum_run(m, &m->train, io->feeds, io->n_feeds, io->y, io->next, io->n_next, &io->loss, &io->correct, &io->topk);
}

static kiln_status run_mirrored(nn_stepper *s, kiln_model *m, nn_step_io *io) {
    return nn_mirror_step(&s->mir, m, io->x, io->y, &io->loss, &io->correct, &io->topk);
}

/* Sample weights: a plain step over host batches, a weight for every source example. */
static kiln_status sample_weight_check(const nn_stepper *s, kiln_model *m, const kiln_fit_opts *o) {
    m->weighted = o->sample_weight != NULL;
    if (!m->weighted) return KILN_OK;
    const char *no = s->split > 1 ? "several devices" : s->dist.d ? "MPI ranks (dist)" : o->accumulate_steps > 1 ? "accumulate_steps"
                   : m->res.n > 0 ? "data_on_device" : NULL;
    if (no) { m->weighted = false; return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: sample_weight does not go with %s", no); }
    int64_t n = s->train->src->n;
    if (o->n_sample_weight < n) {
        m->weighted = false;
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: %lld sample weights for %lld training examples; give one per example",
                              (long long)o->n_sample_weight, (long long)n);
    }
    for (int64_t i = 0; i < n; i++)
        if (!(o->sample_weight[i] >= 0) || !isfinite(o->sample_weight[i])) {
            m->weighted = false;
            return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: sample weight %lld is %g; weights must be finite and >= 0",
                                  (long long)i, (double)o->sample_weight[i]);
        }
    return KILN_OK;
}

kiln_status nn_stepper_begin(nn_stepper *s, kiln_model *m, kiln_data *train, const kiln_fit_opts *o) {
    memset(s, 0, sizeof *s);
    s->opts = *o;
    s->train = train;
    s->batch = (int)kiln_data_batch_size(train);
    kiln_status st = o->devices && *o->devices ? nn_mirror_begin(&s->mir, &s->opts, &s->batch)
                                               : nn_dist_begin(&s->dist, m, &s->train, &s->batch, &s->opts);
    if (st) return st;
    s->split = s->mir.n > 1 ? s->mir.n : 1;
    s->world = s->split > 1 ? s->split : s->dist.d ? s->dist.world : 1;
    m->float_labels = kiln_data_label_dtype(s->train) == KILN_F32;
    if ((st = sample_weight_check(s, m, o))) return st;
    if ((st = nn_accum_check(m, s->batch, s->opts.accumulate_steps, "kiln_fit")) || (st = nn_ensure_train(m, s->batch)))
        return st;
    if (m->res.n > 0 && (st = nn_resident_load(m, s->batch))) return st;
    if ((st = s->split > 1 ? nn_mirror_session(&s->mir, m, &s->opts) : nn_dist_session(&s->dist, m, &s->opts))) return st;
    nn_forward *f = &m->train;
    s->fetch[0] = f->loss; s->fetch[1] = f->out; s->fetch[2] = f->finite;   /* finite: the step's guard (grad_guard.c) */
    s->outs[0] = f->loss_t; s->outs[1] = f->out_t; s->outs[2] = f->finite_t;
    s->n_fetch = f->finite ? 3 : 2;
    s->run = s->split > 1 ? run_mirrored : f->accumulate > 1 ? run_accumulated : run_plain;
    if (m->weighted && (!(s->wt = kiln_tensor_new(KILN_F32, KILN_SHAPE(s->batch))) || !(s->src = kiln_malloc(sizeof(int64_t) * (size_t)s->batch))))
        return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory");
    s->ahead = f->resident_n == 0;
    return KILN_OK;
}

kiln_status nn_stepper_epoch(nn_stepper *s, int epoch) {
    s->epoch = epoch;
    s->primed = false;
    s->nx = s->ny = NULL;
    return kiln_data_iter_new(s->train, (uint64_t)epoch, &s->it);
}

/* Host batches: one ahead, so the session copies it to the GPU (if any) while this one trains;
 * the iterator keeps both valid. Resident data: index batches, nothing ahead. */
static kiln_status next_rows(nn_stepper *s, kiln_tensor **x, kiln_tensor **y) {
    kiln_status st;
    if (!s->ahead) return kiln_data_iter_next(s->it, x, y);
    if (!s->primed) {
        s->primed = true;
        if ((st = kiln_data_iter_hold(s->it, 2)) || (st = kiln_data_iter_next(s->it, &s->nx, &s->ny))) return st;
    }
    *x = s->nx;
    *y = s->ny;
    return *x ? kiln_data_iter_next(s->it, &s->nx, &s->ny) : KILN_OK;
}

kiln_status nn_stepper_next(nn_stepper *s, kiln_model *m, nn_step_io *io) {
    nn_forward *f = &m->train;
    kiln_tensor *x, *y;
    kiln_status st;
    do {      /* a kept remainder (a smaller last batch): skipped, like kiln_fit */
        if ((st = next_rows(s, &x, &y))) return st;
    } while (x && x->shape.dim[0] != s->batch * s->split);
    io->x = x;
    io->y = y;
    if (!x) return KILN_OK;
    if (f->resident_n > 0) io->n_feeds = nn_resident_feeds(m, f, x, s->batch, s->epoch, io->feeds);
    else {
        io->feeds[0] = (kiln_feed){ f->x, x };
        io->feeds[1] = (kiln_feed){ f->y, y };
        io->n_feeds = 2;
    }
    io->next[0] = (kiln_feed){ f->x, s->nx };
    io->next[1] = (kiln_feed){ f->y, s->ny };
    io->n_next = s->ahead && s->nx && s->nx->shape.dim[0] == s->batch ? 2 : 0;
    if (f->w) {                        /* the rows' weights by their source example numbers; nothing copied ahead */
        if (kiln_data_iter_sources(s->it, x, s->src, s->batch) != s->batch)
            return kiln_set_error(KILN_INTERNAL, "kiln_fit: the batch's example numbers are not known (sample weights)");
        float *w = s->wt->data;
        for (int i = 0; i < s->batch; i++) w[i] = s->opts.sample_weight[s->src[i]];
        io->feeds[io->n_feeds++] = (kiln_feed){ f->w, s->wt };
        io->n_next = 0;
    }
    return KILN_OK;
}

kiln_status nn_step(nn_stepper *s, kiln_model *m, nn_step_io *io, int epoch, int64_t step, double lr) {
    nn_forward *f = &m->train;
    io->loss = io->correct = io->topk = 0;
    io->skipped = false;
    kiln_status st = s->run(s, m, io);
    if (st == KILN_NUMERIC_ERROR && s->opts.debug_numerics) st = nn_numerics_step(m, epoch, step);   /* numerics.c */
    if (!st && s->split <= 1) st = nn_dist_step(&s->dist, &io->loss, &io->correct, &io->topk);   /* over every rank's rows (MPI) */
    if (st) return st;
    if (!isfinite(io->loss) && f->loss_scale) {     /* mixed_float16: the step was skipped (counted in the graph) */
        io->skipped = true;
        return KILN_OK;
    }
    if (nn_numerics_tripped(f, io->loss))   /* the update was skipped (every replica's, mirrored): stop, naming where */
        return nn_numerics_bad_step(m, f, epoch, step, lr, io->loss, io->feeds, io->n_feeds, f->resident_n ? NULL : io->x, s->split <= 1);
    return KILN_OK;
}

void nn_stepper_epoch_end(nn_stepper *s) {
    kiln_data_iter_free(s->it);      /* stops prefetch workers mid-epoch too */
    s->it = NULL;
}

void nn_stepper_end(nn_stepper *s, kiln_model *m) {
    nn_stepper_epoch_end(s);
    kiln_tensor_free(s->wt);
    kiln_free(s->src);
    s->wt = NULL;
    s->src = NULL;
    nn_mirror_end(&s->mir);
    nn_dist_end(&s->dist, m);
}
