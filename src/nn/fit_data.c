/* The training and evaluation loops, over input pipelines (include/kiln/pipeline.h). kiln_fit and
 * kiln_evaluate (fit.c) wrap their in-memory datasets in pipelines and come here too: there is one
 * training loop. The step allocates nothing: batches come from the pipeline's own buffers (fed to
 * the session as they are), fetch outputs are allocated once per forward. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_fit.h"
#include "data/pipeline_internal.h"

kiln_status nn_data_status(void) {
    const char *e = kiln_last_error();
    return strstr(e, "out of") ? KILN_OUT_OF_MEMORY : KILN_INVALID_ARGUMENT;
}

kiln_status nn_check_examples(const kiln_model *m, kiln_shape es, bool labelled, int nc, const char *what, const char *noun) {
    kiln_shape is = m->input->out;
    char a[96], b[96];
    if (!kiln_shape_equal(es, is))
        return kiln_set_error(KILN_SHAPE_MISMATCH, "%s: %s's examples are %s but model '%s' takes %s (batch excluded)",
                              what, noun, kiln_shape_str(es, a, sizeof a), m->name, kiln_shape_str(is, b, sizeof b));
    if (!labelled) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: %s has no labels", what, noun);
    int64_t units = m->output->out.dim[0];
    if (m->copts.loss == KILN_LOSS_BINARY_CROSSENTROPY && nc > 2)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: binary_crossentropy takes labels 0 and 1 but %s has class ids up to %d; for %d "
                              "classes use sparse_categorical_crossentropy and a Dense(%d) output", what, noun, nc - 1, nc, nc);
    if (units > 1 && nc > units)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "%s: %s has %d classes but model '%s' outputs %lld values (%s); give the last Dense %d units",
                              what, noun, nc, m->name, (long long)units, m->output->name, nc);
    return KILN_OK;
}

kiln_status nn_check_pipeline(kiln_model *m, const kiln_data *d, const char *what, bool train) {
    if (!d) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: NULL pipeline", what);
    int nc = kiln_data_num_classes(d);
    bool f32 = kiln_data_label_dtype(d) == KILN_F32;
    kiln_status st = nn_check_examples(m, kiln_data_example_shape(d), nc > 0 || f32, nc, what, "the data");
    if (st) return st;
    int64_t units = m->output->out.dim[0];
    kiln_loss_kind loss = m->copts.loss;
    if (f32 && ((loss != KILN_LOSS_MSE && loss != KILN_LOSS_BINARY_CROSSENTROPY) || units != 1))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: the data's labels are values, not class ids (not all whole numbers >= 0): "
                              "train them with mse (regression) or binary_crossentropy (targets in [0, 1]) and a model with one "
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

/* The training loop. train: batched, checked; val: NULL or checked. */
kiln_status nn_fit_loop(kiln_model *m, kiln_data *train, kiln_data *val, const kiln_fit_opts *o) {
    int batch = (int)kiln_data_batch_size(train);
    int epochs = o->epochs > 0 ? o->epochs : 1;
    int64_t steps = full_steps(train);
    if (steps <= 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: the training pipeline yields no full batch of %d examples; use a smaller batch size", batch);
    if (o->steps_per_epoch < 0) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: steps_per_epoch %d is negative", o->steps_per_epoch);
    if (o->steps_per_epoch > 0 && o->steps_per_epoch < steps) steps = o->steps_per_epoch;
    kiln_status st;
    nn_dist_fit df;           /* o->dist / o->devices: this rank's or replica's part of each global batch (fit_dist.c) */
    nn_cb_state *cbs = NULL;
    kiln_data_iter *it = NULL;
    if ((st = nn_dist_begin(&df, m, &train, &batch, &o))) goto done;
    m->float_labels = kiln_data_label_dtype(train) == KILN_F32;
    if ((st = nn_accum_check(m, batch, o->accumulate_steps, "kiln_fit")) || (st = nn_ensure_train(m, batch)) ||
        (st = nn_dist_session(&df, m)))
        goto done;
    m->last_fit_batch = batch;
    kiln_session_set_check_numerics(m->s, o->debug_numerics);
    cbs = o->n_callbacks > 0 ? kiln_calloc((size_t)o->n_callbacks, sizeof *cbs) : NULL;
    if (o->n_callbacks > 0 && !cbs) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: out of host memory"); goto done; }
    if ((st = nn_callbacks_begin(m, o, cbs))) goto done;
    m->stop = false;
    nn_forward *f = &m->train;
    kiln_node *fetch[3] = { f->loss, f->out, f->finite };          /* finite: the step's guard (grad_guard.c) */
    kiln_tensor *outs[3] = { f->loss_t, f->out_t, f->finite_t };
    int n_fetch = f->finite ? 3 : 2;
    for (int epoch = o->initial_epoch + 1; epoch <= epochs && !m->stop; epoch++) {
        if ((st = nn_callbacks_epoch_begin(m, o, epoch))) break;
        if ((st = kiln_data_iter_new(train, (uint64_t)epoch, &it))) break;
        nn_progress prog;
        nn_progress_begin(&prog, m, o->verbose, epoch, epochs, steps);
        kiln_logs logs = { .epoch = epoch, .steps = steps };
        double sum_loss = 0, sum_hit = 0, sum_top = 0, t0 = kiln_now();
        int64_t s = 0;
        /* Host batches: look one batch ahead, so the session copies it to the GPU (if any) while
         * this one trains; the iterator keeps both valid. Resident data feeds only indices. */
        bool ahead = f->resident_n == 0;
        kiln_tensor *nx = NULL, *ny = NULL;
        if (ahead && ((st = kiln_data_iter_hold(it, 2)) || (st = kiln_data_iter_next(it, &nx, &ny)))) goto done;
        for (;;) {
            kiln_tensor *x, *y;
            if (ahead) {
                x = nx;
                y = ny;
                if (x && (st = kiln_data_iter_next(it, &nx, &ny))) goto done;
            } else if ((st = kiln_data_iter_next(it, &x, &y))) goto done;
            if (!x) break;
            if (x->shape.dim[0] != batch * df.split) continue;   /* a kept remainder: skipped, like kiln_fit */
            double lr = kiln_lr_at(&m->copts.schedule, m->base_lr, (double)(epoch - 1) + (double)s / (double)steps, (double)epochs);
            if ((st = nn_set_lr(m, lr))) goto done;
            kiln_feed feeds[2] = { { f->x, x }, { f->y, y } };
            int n_feeds = 2;
            if (f->resident_n > 0) {     /* resident data: x holds the batch's example indices */
                int32_t *ix = m->res.idx_t->data;
                int64_t *keys = m->res.keys_t->data;
                const float *xf = x->data;
                for (int b = 0; b < batch; b++) {
                    ix[b] = (int32_t)xf[b];
                    /* the key the host augment gives this example this epoch: same crop and flip */
                    keys[b] = (int64_t)kiln_data_example_key(m->res.seed, (uint64_t)epoch, ix[b]);
                }
                feeds[0] = (kiln_feed){ f->idx, m->res.idx_t };
                feeds[1] = (kiln_feed){ f->keys, m->res.keys_t };
                n_feeds = f->keys ? 2 : 1;
            }
            kiln_feed next[2] = { { f->x, nx }, { f->y, ny } };
            int n_next = ahead && nx && nx->shape.dim[0] == batch ? 2 : 0;
            double l = 0, c = 0, k = 0;
            if (df.split > 1)               /* mirrored replicas on several GPUs (fit_dist.c) */
                st = nn_mirror_step(&df, m, x, y, &l, &c, &k);
            else if (f->accumulate > 1)     /* N micro-batches, one update (fit_accumulate.c) */
                st = nn_accum_run(m, f, feeds, n_feeds, y, next, n_next, &l, &c, &k);
            else if (!(st = kiln_session_run_ahead(m->s, feeds, n_feeds, fetch, outs, n_fetch, &f->step, 1, next, n_next))) {
                l = kiln_tensor_get(f->loss_t, 0);
                nn_batch_metrics(m, f->out_t, y, batch, &c, &k);
            }
            if (st == KILN_NUMERIC_ERROR && o->debug_numerics) st = nn_numerics_step(m, epoch, s + 1);   /* numerics.c */
            if (!st && df.split <= 1) st = nn_dist_step(&df, &l, &c, &k);   /* over every rank's rows (MPI) */
            if (st) { if (prog.verbose) fputc('\n', stdout); goto done; }
            if (!isfinite(l) && f->loss_scale) continue;     /* mixed_float16: the step was skipped (counted in the graph) */
            if (nn_numerics_tripped(f, l)) {   /* the update was skipped (every replica's, mirrored): stop, naming where (numerics.c) */
                if (prog.verbose) fputc('\n', stdout);
                st = nn_numerics_bad_step(m, f, epoch, s + 1, lr, l, feeds, n_feeds, f->resident_n ? NULL : x, df.split <= 1);
                goto done;
            }
            s++;
            sum_loss += l; sum_hit += c; sum_top += k;
            logs.batch = s;
            logs.loss = sum_loss / (double)s;
            logs.accuracy = sum_hit / (double)(s * batch * df.world);
            logs.top_k = sum_top / (double)(s * batch * df.world);
            logs.lr = lr;
            logs.seconds = kiln_now() - t0;
            nn_progress_batch(&prog, s, &logs);
            if ((st = nn_callbacks_batch_end(m, o, cbs, &logs))) goto done;
            if (m->stop || (o->steps_per_epoch > 0 && s >= o->steps_per_epoch)) break;
        }
        logs.seconds = kiln_now() - t0;
        kiln_data_iter_free(it);                /* stops prefetch workers mid-epoch too */
        it = NULL;
        if (s == 0) { st = kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: epoch %d had no full batch of %d examples", epoch, batch); goto done; }
        if (m->stop || s != steps) { logs.steps = s; prog.steps = s; }
        if (!m->stop) steps = s;                /* the estimate, corrected */
        logs.images_per_sec = logs.seconds > 0 ? (double)(logs.batch * batch * df.world) / logs.seconds : 0;
        nn_precision_logs(m, f, &logs);
        if (val) {
            kiln_eval_result r;
            if ((st = nn_evaluate_pipeline(m, val, &r))) goto done;
            logs.has_val = true;
            logs.val_loss = r.loss;
            logs.val_accuracy = r.accuracy;
            logs.val_top_k = r.top_k;
        }
        m->epoch = epoch;
        if ((st = history_add(m, &logs))) goto done;
        nn_progress_end(&prog, &logs);
        if ((st = nn_callbacks_epoch_end(m, o, cbs, &logs))) goto done;
    }
done:
    if (st == KILN_OUT_OF_MEMORY && df.split <= 1) nn_oom_precision_advice(m, batch);   /* oom_precision.c */
    if (m->s) kiln_session_set_check_numerics(m->s, false);
    kiln_data_iter_free(it);
    if (cbs) nn_callbacks_end(o, cbs);
    kiln_free(cbs);
    nn_dist_end(&df, m);
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
    st = nn_fit_loop(m, train, val, o);
    kiln_data_free(owned);
    return st;
}
