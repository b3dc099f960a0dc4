/* The training and evaluation loops, over input pipelines (include/kiln/pipeline.h). kiln_fit and
 * kiln_evaluate (fit.c) wrap their in-memory datasets in pipelines and come here too: there is one
 * training loop: take a batch, run the step, report, callbacks. The kind of step and where the
 * batches come from are fit_step.c's, chosen once per fit. The step allocates nothing: batches come
 * from the pipeline's own buffers (fed to the session as they are), fetch outputs are allocated
 * once per forward. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_fit.h"
#include "data/pipeline_internal.h"

kiln_status nn_check_examples(const kiln_model *m, kiln_shape es, bool labelled, int nc, const char *what, const char *noun) {
    kiln_shape is = m->input->out;
    char a[96], b[96];
    if (!kiln_shape_equal(es, is))
        return kiln_set_error(KILN_SHAPE_MISMATCH, "%s: %s's examples are %s but model '%s' takes %s (batch excluded)",
                              what, noun, kiln_shape_str(es, a, sizeof a), m->name, kiln_shape_str(is, b, sizeof b));
    if (!labelled) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: %s has no labels", what, noun);
    int64_t units = m->output->out.dim[m->output->out.rank - 1];
    if (m->copts.loss == KILN_LOSS_BINARY_CROSSENTROPY && nc > 2)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: binary_crossentropy takes labels 0 and 1 but %s has class ids up to %d; for %d "
                              "classes use sparse_categorical_crossentropy and a Dense(%d) output", what, noun, nc - 1, nc, nc);
    if (units > 1 && nc > units && m->output->out.rank >= 2)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "%s: %s has a vocabulary of %d (ids 0..%d) but model '%s' has one of %lld (%s gives %lld "
                              "scores per position): build the model for a vocabulary of %d (--model gpt_char takes it from the data)",
                              what, noun, nc, nc - 1, m->name, (long long)units, m->output->name, (long long)units, nc);
    if (units > 1 && nc > units)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "%s: %s has %d classes but model '%s' outputs %lld values (%s); give the last Dense %d units",
                              what, noun, nc, m->name, (long long)units, m->output->name, nc);
    return KILN_OK;
}

kiln_status nn_check_labels(const kiln_model *m, kiln_shape ls, const char *what, const char *noun) {
    kiln_shape want = nn_label_shape(m);
    if (kiln_shape_equal(ls, want)) return KILN_OK;
    char a[96], b[96], c[96];
    kiln_shape_str(m->output->out, c, sizeof c);
    if (want.rank == 0)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "%s: %s has labels of shape %s per example but model '%s' outputs %s: one label per example",
                              what, noun, kiln_shape_str(ls, a, sizeof a), m->name, c);
    return kiln_set_error(KILN_SHAPE_MISMATCH, "%s: %s has %s per example but model '%s' outputs %s, so it takes labels %s per example "
                          "(one per position)", what, noun, ls.rank ? kiln_shape_str(ls, a, sizeof a) : "one label", m->name, c,
                          kiln_shape_str(want, b, sizeof b));
}

kiln_status nn_check_pipeline(kiln_model *m, const kiln_data *d, const char *what, bool train) {
    if (!d) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: NULL pipeline", what);
    int nc = kiln_data_num_classes(d);
    bool f32 = kiln_data_label_dtype(d) == KILN_F32;
    kiln_status st = nn_check_examples(m, kiln_data_example_shape(d), nc > 0 || f32, nc, what, "the data");
    if (st || (st = nn_check_labels(m, kiln_data_label_shape(d), what, "the data"))) return st;
    int64_t units = m->output->out.dim[m->output->out.rank - 1];
    kiln_loss_kind loss = m->copts.loss;
    bool value_loss = loss != KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY && loss != KILN_LOSS_CATEGORICAL_CROSSENTROPY;
    if (f32 && (!value_loss || units != 1))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: the data's labels are values, not class ids (not all whole numbers >= 0): "
                              "train them with mse, mae, huber, ... (regression) or binary_crossentropy (targets in [0, 1]) and a model with one "
                              "output unit (model '%s' outputs %lld, loss %s)", what, m->name, (long long)units, kiln_loss_name(loss));
    if (kiln_data_cardinality(d) < 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: the pipeline is infinite (kiln_data_repeat(-1)); one pass is one epoch, so bound it with kiln_data_take", what);
    if (kiln_data_cardinality(d) == 0) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: the pipeline yields nothing (no examples)", what);
    if (train && !d->batched)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: the training pipeline is not batched: add kiln_data_batch(d, batch_size, true) before fitting", what);
    return KILN_OK;
}

/* Full batches per pass (a kept remainder of the batch node not counted); an estimate when
 * repeat/take/skip sit above the batch node (fit corrects it after the first epoch). */
static int64_t full_steps(const kiln_data *d) {
    int64_t card = kiln_data_cardinality(d);
    const kiln_data *b = d;
    bool only_prefetch_above = true;
    while (b && b->kind != KILN_DN_BATCH) {
        if (b->kind != KILN_DN_PREFETCH) only_prefetch_above = false;
        b = b->input;
    }
    if (b && only_prefetch_above && !b->drop_remainder && b->input->card >= 0 && b->input->card % b->n) card--;
    return card;
}

kiln_status nn_evaluate_pipeline(kiln_model *m, kiln_data *d, kiln_eval_result *r) {
    double loss = 0, hit = 0, top = 0, t0 = kiln_now();
    int64_t count = 0;
    kiln_data_iter *it = NULL;
    kiln_tensor *nx = NULL, *ny = NULL;   /* one batch ahead, copied to the GPU while this one runs */
    m->float_labels = kiln_data_label_dtype(d) == KILN_F32;    /* the forwards feed this data's labels */
    nn_metrics_reset(m);
    kiln_status st = kiln_data_iter_new(d, 0, &it);
    if (!st && !(st = kiln_data_iter_hold(it, 2))) st = kiln_data_iter_next(it, &nx, &ny);
    while (!st) {
        kiln_tensor *x = nx, *y = ny;
        if (!x || (st = kiln_data_iter_next(it, &nx, &ny))) break;
        int64_t n = x->shape.dim[0];
        nn_forward *f;
        if ((st = nn_get_infer(m, (int)n, &f))) break;
        kiln_feed feeds[2] = { { f->x, x }, { f->y, y } }, next[2] = { { f->x, nx }, { f->y, ny } };
        kiln_node *fetch[2] = { f->out, f->loss };
        kiln_tensor *outs[2] = { f->out_t, f->loss_t };
        int n_next = nx && nx->shape.dim[0] == n ? 2 : 0;   /* a smaller last batch has its own forward */
        if ((st = kiln_session_run_ahead(m->s, feeds, 2, fetch, outs, 2, NULL, 0, next, n_next))) break;
        double c, k;
        nn_batch_metrics(m, f->out_t, y, n, &c, &k);
        loss += kiln_tensor_get(f->loss_t, 0) * (double)n;
        hit += c;
        top += k;
        count += n;
    }
    kiln_data_iter_free(it);
    if (st) return st;
    r->count = count;
    r->loss = count ? loss / (double)count : 0;
    r->accuracy = count ? hit / (double)count : 0;
    r->top_k = count ? top / (double)count : 0;
    r->n_metrics = nn_metrics_values(m, r->metrics);
    r->seconds = kiln_now() - t0;
    if (!isfinite(r->loss))
        return kiln_set_error(KILN_NUMERIC_ERROR, "model '%s': the evaluation loss is %g (NaN/Inf): the weights diverged; train with a lower learning rate", m->name, r->loss);
    return KILN_OK;
}

kiln_status kiln_evaluate_data(kiln_model *m, kiln_data *d, const kiln_eval_opts *o, kiln_eval_result *out) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_evaluate: NULL result");
    if (!m->compiled) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_evaluate: model '%s' is not compiled: call kiln_compile() to choose the loss", m->name);
    if ((st = nn_check_pipeline(m, d, "kiln_evaluate", false))) return st;
    if ((st = nn_ensure_session(m, (int)kiln_data_batch_size(d)))) return st;
    if ((st = nn_evaluate_pipeline(m, d, out))) return st;
    if (o && o->verbose)
        printf("%lld/%lld examples - %.1fs - loss: %.4f - accuracy: %.4f\n", (long long)out->count, (long long)out->count, out->seconds, out->loss, out->accuracy);
    return KILN_OK;
}

static kiln_status history_add(kiln_model *m, const kiln_logs *l) {
    if (m->n_history == m->cap_history) {
        int cap = m->cap_history ? m->cap_history * 2 : 16;
        kiln_logs *h = kiln_realloc(m->history, (size_t)cap * sizeof *h);
        if (!h) return kiln_set_error(KILN_OUT_OF_MEMORY, "history: out of host memory");
        m->history = h;
        m->cap_history = cap;
    }
    m->history[m->n_history++] = *l;
    return KILN_OK;
}

/* One fit: the options this process runs with, its step, where the epochs stand. */
typedef struct fit_run {
    kiln_model *m;
    const kiln_fit_opts *o;   /* the stepper's: this process's */
    nn_stepper step;
    nn_cb_state *cbs;
    int epochs;
    int64_t steps;            /* per epoch: the estimate, corrected after the first */
} fit_run;

/* An epoch's steps: take a batch, set the learning rate, run the step, report, callbacks.
 * logs->batch: the steps run. */
static kiln_status fit_batches(fit_run *r, int epoch, nn_progress *prog, kiln_logs *logs) {
    kiln_model *m = r->m;
    nn_stepper *sp = &r->step;
    double sum_loss = 0, sum_hit = 0, sum_top = 0, t0 = kiln_now();
    int64_t s = 0;
    nn_step_io io;
    kiln_status st;
    nn_metrics_reset(m);
    while (!(st = nn_stepper_next(sp, m, &io)) && io.x) {
        kiln_lr_schedule sch = m->copts.schedule;
        if (sch.warmup_steps > 0 && r->steps > 0) sch.warmup_epochs = sch.warmup_steps / (double)r->steps;   /* steps -> epochs */
        double lr = kiln_lr_at(&sch, m->base_lr, (double)(epoch - 1) + (double)s / (double)r->steps, (double)r->epochs);
        if ((st = nn_set_lr(m, lr))) break;
        if ((st = nn_step(sp, m, &io, epoch, s + 1, lr))) {
            if (prog->verbose) fputc('\n', stdout);
            break;
        }
        if (io.skipped) continue;
        s++;
        sum_loss += io.loss; sum_hit += io.correct; sum_top += io.topk;
        logs->batch = s;
        logs->loss = sum_loss / (double)s;
        logs->accuracy = sum_hit / (double)(s * sp->batch * sp->world);
        logs->top_k = sum_top / (double)(s * sp->batch * sp->world);
        logs->n_metrics = nn_metrics_values(m, logs->metrics);
        logs->lr = lr;
        logs->seconds = kiln_now() - t0;
        nn_progress_batch(prog, s, logs);
        if ((st = nn_callbacks_batch_end(m, r->o, r->cbs, logs))) break;
        if (m->stop || (r->o->steps_per_epoch > 0 && s >= r->o->steps_per_epoch)) break;
    }
    logs->seconds = kiln_now() - t0;
    return st;
}

/* One epoch: its steps, then validation, history, the epoch's report and callbacks. */
static kiln_status fit_epoch(fit_run *r, kiln_data *val, int epoch) {
    kiln_model *m = r->m;
    kiln_status st;
    if ((st = nn_callbacks_epoch_begin(m, r->o, epoch)) || (st = nn_stepper_epoch(&r->step, epoch))) return st;
    nn_progress prog;
    nn_progress_begin(&prog, m, r->o->verbose, epoch, r->epochs, r->steps);
    kiln_logs logs = { .epoch = epoch, .steps = r->steps };
    st = fit_batches(r, epoch, &prog, &logs);
    nn_stepper_epoch_end(&r->step);
    if (st) return st;
    int64_t s = logs.batch;
    if (s == 0) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: epoch %d had no full batch of %d examples", epoch, r->step.batch);
    if (m->stop || s != r->steps) { logs.steps = s; prog.steps = s; }
    if (!m->stop) r->steps = s;                /* the estimate, corrected */
    logs.images_per_sec = logs.seconds > 0 ? (double)(s * r->step.batch * r->step.world) / logs.seconds : 0;
    nn_precision_logs(m, &m->train, &logs);
    if (val) {
        kiln_eval_result e;
        if ((st = nn_evaluate_pipeline(m, val, &e))) return st;
        logs.has_val = true;
        logs.val_loss = e.loss;
        logs.val_accuracy = e.accuracy;
        logs.val_top_k = e.top_k;
        memcpy(logs.val_metrics, e.metrics, sizeof e.metrics);
    }
    m->epoch = epoch;
    if ((st = history_add(m, &logs))) return st;
    nn_progress_end(&prog, &logs);
    return nn_callbacks_epoch_end(m, r->o, r->cbs, &logs);
}

/* The training loop. train: batched, checked; val: NULL or checked. */
kiln_status nn_fit_loop(kiln_model *m, kiln_data *train, kiln_data *val, const kiln_fit_opts *o) {
    fit_run r = { .m = m, .o = o, .epochs = o->epochs > 0 ? o->epochs : 1, .steps = full_steps(train) };
    if (r.steps <= 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: the training pipeline yields no full batch of %d examples; use a "
                              "smaller batch size", (int)kiln_data_batch_size(train));
    if (o->steps_per_epoch < 0) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: steps_per_epoch %d is negative", o->steps_per_epoch);
    if (o->steps_per_epoch > 0 && o->steps_per_epoch < r.steps) r.steps = o->steps_per_epoch;
    /* the kind of step (plain, accumulated, mirrored; across ranks), chosen once (fit_step.c) */
    kiln_status st = nn_stepper_begin(&r.step, m, train, o);
    r.o = &r.step.opts;
    if (!st) {
        m->last_fit_batch = r.step.batch;
        kiln_session_set_check_numerics(m->s, r.o->debug_numerics);
        r.cbs = r.o->n_callbacks > 0 ? kiln_calloc((size_t)r.o->n_callbacks, sizeof *r.cbs) : NULL;
        if (r.o->n_callbacks > 0 && !r.cbs) st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory");
        else if (!(st = nn_callbacks_begin(m, r.o, r.cbs))) m->stop = false;
    }
    for (int epoch = r.o->initial_epoch + 1; !st && epoch <= r.epochs && !m->stop; epoch++) st = fit_epoch(&r, val, epoch);
    if (st == KILN_OUT_OF_MEMORY && r.step.split <= 1) nn_oom_precision_advice(m, r.step.batch);   /* oom_precision.c */
    if (m->s) kiln_session_set_check_numerics(m->s, false);
    if (r.cbs) nn_callbacks_end(r.o, r.cbs);
    kiln_free(r.cbs);
    nn_stepper_end(&r.step, m);
    return st;
}

kiln_status kiln_fit_data(kiln_model *m, kiln_data *train, const kiln_fit_opts *o) {
    kiln_status st = nn_check(m);
    if (st) return st;
    kiln_fit_opts dflt = { 0 };
    if (!o) o = &dflt;
    if (!m->compiled) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: model '%s' is not compiled: call kiln_compile() first", m->name);
    if ((st = nn_check_pipeline(m, train, "kiln_fit", true))) return st;
    if (o->validation_split != 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit_data: validation_split needs an in-memory dataset (kiln_fit); with a pipeline pass .validation_data (e.g. from kiln_data_split_source)");
    if (o->validation && o->validation_data)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: give .validation (a dataset) or .validation_data (a pipeline), not both");
    kiln_data *val = o->validation_data, *owned = NULL;
    if (o->validation) {
        int64_t eb = kiln_data_batch_size(train);     /* in micro-batches with accumulation */
        if (o->accumulate_steps > 1 && eb % o->accumulate_steps == 0) eb /= o->accumulate_steps;
        owned = kiln_data_batch(kiln_data_from_dataset(o->validation, false), eb, false);
        if (!owned) return nn_data_status();
        val = owned;
    }
    if (val && (st = nn_check_pipeline(m, val, "kiln_fit (validation)", false))) { kiln_data_free(owned); return st; }
    /* data_on_device: the examples in the session's memory, the loop over their numbers (fit_resident.c) */
    nn_resident_data res = { 0 };
    if (!o->data_on_device || !(st = nn_resident_from_pipeline(m, train, o, &res)))
        st = nn_fit_loop(m, res.index ? res.index : train, val, o);
    if (o->data_on_device) nn_resident_data_free(m, &res);
    kiln_data_free(owned);
    return st;
}
