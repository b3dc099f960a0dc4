/* Callbacks: user functions at batch/epoch end, ModelCheckpoint, EarlyStopping, CSV logger, LR
 * scheduler and TensorBoard (its files: callback_tensorboard.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <fcntl.h>
#include "io/atomic_file.h"
#include "io/history_csv.h"
#include "io/path_guard.h"
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
kiln_callback kiln_callback_tensorboard(const char *log_dir, int update_freq) {
    return (kiln_callback){ .kind = KILN_CB_TENSORBOARD, .path = log_dir, .update_freq = update_freq };
}

static const char *monitor_of(const kiln_callback *c) { return c->monitor && *c->monitor ? c->monitor : "val_loss"; }
/* Keras' mode "auto": accuracies, auc, precision and recall grow; losses, mae, mse, rmse fall */
static bool maximize(const char *mon) {
    return strstr(mon, "acc") || strstr(mon, "top") || strstr(mon, "auc") || strstr(mon, "precision") || strstr(mon, "recall");
}

static kiln_status monitor_value(const kiln_model *m, const kiln_callback *c, const kiln_logs *l, double *v) {
    const char *mon = monitor_of(c);
    bool val = !strncmp(mon, "val_", 4);
    const char *base = val ? mon + 4 : mon;
    if (val && !l->has_val)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "callback monitors '%s' but fit has no validation data: pass .validation, .validation_data or .validation_split, or monitor 'loss'", mon);
    if (!strcmp(base, "loss")) *v = val ? l->val_loss : l->loss;
    else if (!strcmp(base, "accuracy") || !strcmp(base, "acc")) *v = val ? l->val_accuracy : l->accuracy;
    else if (!strncmp(base, "top", 3)) *v = val ? l->val_top_k : l->top_k;
    else {
        for (int i = 0; i < l->n_metrics; i++)       /* compile's metric_list by its names */
            if (!strcmp(base, kiln_model_metric_name(m, i))) { *v = val ? l->val_metrics[i] : l->metrics[i]; return KILN_OK; }
        return kiln_set_error(KILN_INVALID_ARGUMENT, "callback monitor '%s' unknown: use loss, accuracy, top_k, a metric of the metric_list or their val_ forms", mon);
    }
    return KILN_OK;
}

/* The first file a checkpoint callback will write must be writable now: a missing directory, a
 * directory given as the path or an unwritable place fails before training, not after epoch 1. */
static kiln_status check_checkpoint_path(const kiln_callback *c, const kiln_fit_opts *o) {
    kiln_logs l = { .epoch = o->initial_epoch + 1, .has_val = o->validation || o->validation_data || o->validation_split > 0 };
    char *path = NULL;
    kiln_status s = kiln_checkpoint_path(c->path, &l, &path);
    if (!s && (s = kiln_atomic_check(path))) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        kiln_set_error(s, "ModelCheckpoint: %s", msg);
    }
    free(path);
    return s;
}

/* Resuming at initial_epoch: the history must be this logger's (its header, the same columns)
 * and rows of later epochs (written before a checkpoint that a kill then lost) are dropped, so
 * the history has each epoch once; so is a last row that a kill cut short. Parsed by the parser
 * kiln plot uses (io/history_csv.h). Leaves f at the end. */
static kiln_status resume_history(FILE *f, const char *path, int initial_epoch, const char *header) {
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) return KILN_OK;    /* /dev/full, a FIFO: nothing to read back */
    if ((uint64_t)sb.st_size > KILN_HISTORY_MAX_BYTES)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "CSV logger: '%s' holds %lld bytes, more than a history (%zu MiB at most): is it "
                              "another file? Give a new history file", path, (long long)sb.st_size, KILN_HISTORY_MAX_BYTES >> 20);
    size_t n = (size_t)sb.st_size, cut = 0;
    char *text = kiln_malloc(n + 1), joined[2048];
    if (!text) return kiln_set_error(KILN_OUT_OF_MEMORY, "CSV logger: out of host memory reading '%s'", path);
    kiln_status st = KILN_OK;
    errno = 0;
    if (fread(text, 1, n, f) != n) st = kiln_set_error(KILN_IO_ERROR, "CSV logger: cannot read '%s' back: %s", path, strerror(errno ? errno : EIO));
    size_t whole = n;                     /* up to the last complete line */
    while (whole > 0 && text[whole - 1] != '\n') whole--;
    if (!st && whole == 0 && n > 0 && n <= strlen(header) && !memcmp(text, header, n)) whole = 0;  /* a header cut short: rewritten */
    else if (!st && whole == 0) whole = n;
    kiln_history_csv h = { 0 };
    if (!st && (st = kiln_history_csv_parse(path, text, whole, &h))) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        st = kiln_set_error(st, "CSV logger: cannot resume the history: %s; give a new history file", msg);
    }
    if (!st && h.n_cols > 0) {
        size_t k = 0;
        joined[0] = 0;
        for (int i = 0; i < h.n_cols && k < sizeof joined; i++)
            k += (size_t)snprintf(joined + k, sizeof joined - k, "%s%s", i ? "," : "", h.names[i]);
        if (!h.has_header || strcmp(joined, header))
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "CSV logger: cannot resume into '%s': its header is '%.300s' but this run writes "
                                "'%s' (other columns); appending would mix the two. Give a new history file, or the one the "
                                "resumed run wrote", path, h.has_header ? joined : "(none: the first line is numbers)", header);
        cut = whole;
        for (int r = 0; !st && r < h.n_rows; r++)
            if (h.values[(size_t)r * (size_t)h.n_cols] > initial_epoch) { cut = h.row_start[r]; break; }
    }
    kiln_history_csv_free(&h);
    kiln_free(text);
    if (st) return st;
    if (cut < n && (fflush(f) != 0 || ftruncate(fileno(f), (off_t)cut) != 0))
        return kiln_set_error(KILN_IO_ERROR, "CSV logger: cannot drop the rows after epoch %d from '%s': %s", initial_epoch, path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0)
        return kiln_set_error(KILN_IO_ERROR, "CSV logger: cannot append to '%s': %s", path, strerror(errno));
    return KILN_OK;
}

/* The history file, opened without blocking (a FIFO with no reader is an error, not a hang):
 * resuming (append) reads it back and appends, else it is emptied. *append false: a new file. */
static FILE *open_history(const char *path, bool *append) {
    int fd = -1;
    if (*append && (fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0 && errno == ENOENT) *append = false;   /* nothing to keep */
    if (!*append) fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) return NULL;
    FILE *f = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 ? fdopen(fd, *append ? "r+" : "w") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

kiln_status nn_callbacks_begin(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st) {
    for (int i = 0; i < o->n_callbacks; i++) {
        const kiln_callback *c = &o->callbacks[i];
        st[i].have_best = false;
        st[i].wait = 0;
        st[i].best = maximize(monitor_of(c)) ? -INFINITY : INFINITY;
        if ((unsigned)c->kind >= KILN_CB_KIND_COUNT) return kiln_set_error(KILN_INVALID_ARGUMENT, "callback %d: unknown kind %d", i, (int)c->kind);
        if ((c->kind == KILN_CB_MODEL_CHECKPOINT || c->kind == KILN_CB_CSV_LOGGER || c->kind == KILN_CB_TENSORBOARD) && (!c->path || !*c->path))
            return kiln_set_error(KILN_INVALID_ARGUMENT, "callback %d: needs a .path", i);
        if (c->kind == KILN_CB_LR_SCHEDULER && !c->schedule) return kiln_set_error(KILN_INVALID_ARGUMENT, "callback %d: LR scheduler needs .schedule", i);
        kiln_status s;
        if (c->kind == KILN_CB_MODEL_CHECKPOINT && (s = check_checkpoint_path(c, o))) return s;
        /* one writer per checkpoint or history: a second run on the same path is refused now */
        if ((c->kind == KILN_CB_MODEL_CHECKPOINT || c->kind == KILN_CB_CSV_LOGGER) &&
            (s = kiln_path_lock_take(c->path, c->kind == KILN_CB_CSV_LOGGER ? "history" : "checkpoint", &st[i].lock)))
            return s;
        if (c->kind == KILN_CB_TENSORBOARD) {
            if (c->update_freq < 0) return kiln_set_error(KILN_INVALID_ARGUMENT, "callback %d: TensorBoard update_freq %d is negative", i, c->update_freq);
            /* the files exist before the first epoch: an unwritable directory fails now */
            if ((s = nn_tb_open(c->path, o->validation || o->validation_data || o->validation_split > 0, &st[i].tb))) return s;
        }
        if (c->kind == KILN_CB_CSV_LOGGER) {
            bool append = o->initial_epoch > 0;
            char header[512 + KILN_MAX_METRICS * 150];
            snprintf(header, sizeof header, "epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds,images_per_sec%s", nn_precision_csv_header(m));
            for (int k = 0; kiln_model_metric_name(m, k); k++)   /* compile's metric_list: NAME,val_NAME each */
                snprintf(header + strlen(header), sizeof header - strlen(header), ",%s,val_%s", kiln_model_metric_name(m, k), kiln_model_metric_name(m, k));
            st[i].csv = open_history(c->path, &append);
            if (!st[i].csv)
                return kiln_set_error(KILN_IO_ERROR, "CSV logger: cannot open '%s' for writing: %s", c->path,
                                      errno == ENXIO ? "a FIFO that no process reads" : strerror(errno));
            if (append && (s = resume_history(st[i].csv, c->path, o->initial_epoch, header))) return s;
            errno = 0;
            if (ftell(st[i].csv) == 0) fprintf(st[i].csv, "%s\n", header);
            /* a full disk or an unwritable file fails now, before the first epoch, not after it */
            if (fflush(st[i].csv) != 0 || ferror(st[i].csv))
                return kiln_set_error(KILN_IO_ERROR, "CSV logger: cannot write '%s': %s", c->path, strerror(errno ? errno : EIO));
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

kiln_status nn_callbacks_batch_end(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st, const kiln_logs *logs) {
    for (int i = 0; i < o->n_callbacks; i++) {
        const kiln_callback *c = &o->callbacks[i];
        if (c->kind == KILN_CB_LAMBDA && c->on_batch_end && c->on_batch_end(m, logs, c->user)) m->stop = true;
        kiln_status s;
        if (c->kind == KILN_CB_TENSORBOARD && st[i].tb && (s = nn_tb_batch(st[i].tb, m, c->update_freq, logs))) return s;
    }
    return KILN_OK;
}

/* Two passes: the logs (CSV rows, TensorBoard events) first, then everything else. A run killed
 * between a checkpoint's rename and its history row would otherwise lose the row; this way the
 * history may hold one row more than the checkpoint, which resume drops (truncate_after). */
kiln_status nn_callbacks_epoch_end(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st, const kiln_logs *l) {
    kiln_status s;
    for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < o->n_callbacks; i++) {
        const kiln_callback *c = &o->callbacks[i];
        double v;
        if ((pass == 0) != (c->kind == KILN_CB_CSV_LOGGER || c->kind == KILN_CB_TENSORBOARD)) continue;
        switch (c->kind) {
        case KILN_CB_LAMBDA:
            if (c->on_epoch_end && c->on_epoch_end(m, l, c->user)) m->stop = true;
            break;
        case KILN_CB_MODEL_CHECKPOINT: {
            if (c->save_best_only) {
                if ((s = monitor_value(m, c, l, &v))) return s;
                bool better = maximize(monitor_of(c)) ? v > st[i].best : v < st[i].best;
                if (!better) break;
                st[i].best = v;
            }
            char *path = NULL;
            if ((s = kiln_checkpoint_path(c->path, l, &path))) return s;
            s = kiln_model_save(m, path, c->include_optimizer);
            free(path);
            if (s) return s;
            break;
        }
        case KILN_CB_EARLY_STOPPING: {
            if ((s = monitor_value(m, c, l, &v))) return s;
            bool max = maximize(monitor_of(c));
            double delta = fabs(c->min_delta);
            bool better = !st[i].have_best || (max ? v > st[i].best + delta : v < st[i].best - delta);
            if (better) { st[i].best = v; st[i].wait = 0; st[i].have_best = true; }
            else if (++st[i].wait >= (c->patience > 0 ? c->patience : 1)) m->stop = true;
            break;
        }
        case KILN_CB_TENSORBOARD:
            if (st[i].tb && (s = nn_tb_epoch(st[i].tb, m, l))) return s;
            break;
        case KILN_CB_CSV_LOGGER:
            if (!st[i].csv) break;
            char extra[64 + KILN_MAX_METRICS * 48];
            nn_precision_csv_row(m, l, extra, 64);
            for (int k = 0; k < l->n_metrics; k++) {
                size_t e = strlen(extra);
                if (l->has_val) snprintf(extra + e, sizeof extra - e, ",%.6f,%.6f", l->metrics[k], l->val_metrics[k]);
                else snprintf(extra + e, sizeof extra - e, ",%.6f,", l->metrics[k]);
            }
            if (l->has_val)
                fprintf(st[i].csv, "%d,%.6f,%.6f,%.6f,%.6f,%.8g,%.3f,%.1f%s\n", l->epoch, l->loss, l->accuracy, l->val_loss, l->val_accuracy, l->lr, l->seconds, l->images_per_sec, extra);
            else
                fprintf(st[i].csv, "%d,%.6f,%.6f,,,%.8g,%.3f,%.1f%s\n", l->epoch, l->loss, l->accuracy, l->lr, l->seconds, l->images_per_sec, extra);
            if (fflush(st[i].csv) != 0) return kiln_set_error(KILN_IO_ERROR, "CSV logger: cannot write '%s': %s", c->path, strerror(errno));
            break;
        default: break;
        }
    }
    return KILN_OK;
}

void nn_callbacks_end(const kiln_fit_opts *o, nn_cb_state *st) {
    if (!st) return;
    for (int i = 0; i < o->n_callbacks; i++) {
        if (st[i].csv) { fclose(st[i].csv); st[i].csv = NULL; }
        kiln_path_lock_release(st[i].lock);
        st[i].lock = NULL;
        nn_tb_close(st[i].tb);
        st[i].tb = NULL;
    }
}
