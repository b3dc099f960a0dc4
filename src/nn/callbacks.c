/* Callbacks: user functions at batch/epoch end, ModelCheckpoint, EarlyStopping, CSV logger and
 * LR scheduler. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_fit.h"

kiln_callback kiln_callback_lambda(kiln_callback_fn on_batch_end, kiln_callback_fn on_epoch_end, void *user) {
    return (kiln_callback){ .kind = KILN_CB_LAMBDA, .on_batch_end = on_batch_end, .on_epoch_end = on_epoch_end, .user = user };
}
kiln_callback kiln_callback_model_checkpoint(const char *path, const char *monitor, bool save_best_only) {
    return (kiln_callback){ .kind = KILN_CB_MODEL_CHECKPOINT, .path = path, .monitor = monitor, .save_best_only = save_best_only, .include_optimizer = true };
}
kiln_callback kiln_callback_early_stopping(const char *monitor, int patience, double min_delta) {
    return (kiln_callback){ .kind = KILN_CB_EARLY_STOPPING, .monitor = monitor, .patience = patience, .min_delta = min_delta };
}
kiln_callback kiln_callback_csv_logger(const char *path) { return (kiln_callback){ .kind = KILN_CB_CSV_LOGGER, .path = path }; }
kiln_callback kiln_callback_lr_scheduler(kiln_lr_fn schedule, void *user) {
    return (kiln_callback){ .kind = KILN_CB_LR_SCHEDULER, .schedule = schedule, .user = user };
}

static const char *monitor_of(const kiln_callback *c) { return c->monitor && *c->monitor ? c->monitor : "val_loss"; }
static bool maximize(const char *mon) { return strstr(mon, "acc") || strstr(mon, "top"); }

static kiln_status monitor_value(const kiln_callback *c, const kiln_logs *l, double *v) {
    const char *mon = monitor_of(c);
    bool val = !strncmp(mon, "val_", 4);
    const char *base = val ? mon + 4 : mon;
    if (val && !l->has_val)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "callback monitors '%s' but fit has no validation data: pass .validation, .validation_data or .validation_split, or monitor 'loss'", mon);
    if (!strcmp(base, "loss")) *v = val ? l->val_loss : l->loss;
    else if (!strcmp(base, "accuracy") || !strcmp(base, "acc")) *v = val ? l->val_accuracy : l->accuracy;
    else if (!strncmp(base, "top", 3)) *v = val ? l->val_top_k : l->top_k;
    else return kiln_set_error(KILN_INVALID_ARGUMENT, "callback monitor '%s' unknown: use loss, accuracy, top_k or their val_ forms", mon);
    return KILN_OK;
}

kiln_status nn_callbacks_begin(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st) {
    for (int i = 0; i < o->n_callbacks; i++) {
        const kiln_callback *c = &o->callbacks[i];
        st[i].have_best = false;
        st[i].wait = 0;
        st[i].best = maximize(monitor_of(c)) ? -INFINITY : INFINITY;
        if ((unsigned)c->kind >= KILN_CB_KIND_COUNT) return kiln_set_error(KILN_INVALID_ARGUMENT, "callback %d: unknown kind %d", i, (int)c->kind);
        if ((c->kind == KILN_CB_MODEL_CHECKPOINT || c->kind == KILN_CB_CSV_LOGGER) && (!c->path || !*c->path))
            return kiln_set_error(KILN_INVALID_ARGUMENT, "callback %d: needs a .path", i);
        if (c->kind == KILN_CB_LR_SCHEDULER && !c->schedule) return kiln_set_error(KILN_INVALID_ARGUMENT, "callback %d: LR scheduler needs .schedule", i);
        if (c->kind == KILN_CB_CSV_LOGGER) {
            bool append = o->initial_epoch > 0;
            st[i].csv = fopen(c->path, append ? "a" : "w");
            if (!st[i].csv) return kiln_set_error(KILN_IO_ERROR, "CSV logger: cannot open '%s' for writing: %s", c->path, strerror(errno));
            if (!append || ftell(st[i].csv) == 0)
                fprintf(st[i].csv, "epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds,images_per_sec\n");
            fflush(st[i].csv);
        }
    }
    (void)m;
    return KILN_OK;
}

kiln_status nn_callbacks_epoch_begin(kiln_model *m, const kiln_fit_opts *o, int epoch) {
    for (int i = 0; i < o->n_callbacks; i++) {
        const kiln_callback *c = &o->callbacks[i];
        if (c->kind != KILN_CB_LR_SCHEDULER) continue;
        double lr = c->schedule(epoch, m->base_lr, c->user);
        if (!(lr > 0) || !isfinite(lr)) return kiln_set_error(KILN_INVALID_ARGUMENT, "LR scheduler returned %g for epoch %d; it must be positive", lr, epoch);
        m->base_lr = lr;
    }
    return KILN_OK;
}

kiln_status nn_callbacks_batch_end(kiln_model *m, const kiln_fit_opts *o, const kiln_logs *logs) {
    for (int i = 0; i < o->n_callbacks; i++) {
        const kiln_callback *c = &o->callbacks[i];
        if (c->kind == KILN_CB_LAMBDA && c->on_batch_end && c->on_batch_end(m, logs, c->user)) m->stop = true;
    }
    return KILN_OK;
}

static void expand_path(const char *pat, int epoch, char *out, size_t n) {
    if (strstr(pat, "%d") || strstr(pat, "%02d") || strstr(pat, "%03d")) {
        const char *p = strchr(pat, '%');
        snprintf(out, n, "%.*s", (int)(p - pat), pat);
        size_t k = strlen(out);
        const char *rest = strchr(p, 'd') + 1;
        int width = p[1] == '0' ? p[2] - '0' : 0;
        snprintf(out + k, n - k, "%0*d%s", width, epoch, rest);
    } else snprintf(out, n, "%s", pat);
}

kiln_status nn_callbacks_epoch_end(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st, const kiln_logs *l) {
    kiln_status s;
    for (int i = 0; i < o->n_callbacks; i++) {
        const kiln_callback *c = &o->callbacks[i];
        double v;
        switch (c->kind) {
        case KILN_CB_LAMBDA:
            if (c->on_epoch_end && c->on_epoch_end(m, l, c->user)) m->stop = true;
            break;
        case KILN_CB_MODEL_CHECKPOINT: {
            if (c->save_best_only) {
                if ((s = monitor_value(c, l, &v))) return s;
                bool better = maximize(monitor_of(c)) ? v > st[i].best : v < st[i].best;
                if (!better) break;
                st[i].best = v;
            }
            char path[1024];
            expand_path(c->path, l->epoch, path, sizeof path);
            if ((s = kiln_model_save(m, path, c->include_optimizer))) return s;
            break;
        }
        case KILN_CB_EARLY_STOPPING: {
            if ((s = monitor_value(c, l, &v))) return s;
            bool max = maximize(monitor_of(c));
            double delta = fabs(c->min_delta);
            bool better = !st[i].have_best || (max ? v > st[i].best + delta : v < st[i].best - delta);
            if (better) { st[i].best = v; st[i].wait = 0; st[i].have_best = true; }
            else if (++st[i].wait >= (c->patience > 0 ? c->patience : 1)) m->stop = true;
            break;
        }
        case KILN_CB_CSV_LOGGER:
            if (!st[i].csv) break;
            if (l->has_val)
                fprintf(st[i].csv, "%d,%.6f,%.6f,%.6f,%.6f,%.8g,%.3f,%.1f\n", l->epoch, l->loss, l->accuracy, l->val_loss, l->val_accuracy, l->lr, l->seconds, l->images_per_sec);
            else
                fprintf(st[i].csv, "%d,%.6f,%.6f,,,%.8g,%.3f,%.1f\n", l->epoch, l->loss, l->accuracy, l->lr, l->seconds, l->images_per_sec);
            if (fflush(st[i].csv) != 0) return kiln_set_error(KILN_IO_ERROR, "CSV logger: cannot write '%s': %s", c->path, strerror(errno));
            break;
        default: break;
        }
    }
    return KILN_OK;
}

void nn_callbacks_end(const kiln_fit_opts *o, nn_cb_state *st) {
    if (!st) return;
    for (int i = 0; i < o->n_callbacks; i++)
        if (st[i].csv) { fclose(st[i].csv); st[i].csv = NULL; }
}
