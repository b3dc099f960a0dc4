/* Training and evaluation (tier 4 of src/nn, the top, above the models): metrics, progress,
 * callbacks, the one training loop over pipelines (fit_data.c), the step it runs (fit_step.c over
 * fit_accumulate.c, fit_mirror.c, fit_dist.c, fit_resident.c) and the dataset entries (fit.c). */
#ifndef KILN_NN_FIT_H
#define KILN_NN_FIT_H
#include <stdio.h>
#include <string.h>
#include "nn/nn_model.h"

/* metrics.c: host metrics over one batch of outputs: number correct (accuracy) and in top-k.
 * y: the batch's labels (i32 class ids or f32 values). */
void nn_batch_metrics(const kiln_model *m, const kiln_tensor *out, const kiln_tensor *y, int64_t n,
                      double *correct, double *topk);

/* metrics.c: compile's metric_list: parsed at compile; counts reset before an epoch or an
 * evaluation, updated by nn_batch_metrics, read as values */
typedef struct nn_metric_set nn_metric_set;
void nn_metrics_reset(const kiln_model *m);
int nn_metrics_values(const kiln_model *m, double *out);   /* count of values written */

/* progress.c */
typedef struct nn_progress {
    int verbose;              /* 0 none, 1 bar, 2 line per epoch */
    bool tty;
    int epoch, epochs;
    int64_t steps;
    unsigned metrics;
    int top_k;
    const kiln_model *m;      /* the names of compile's metric_list */
    double t0, last_draw;
} nn_progress;
void nn_progress_begin(nn_progress *p, const kiln_model *m, int verbose, int epoch, int epochs, int64_t steps);
void nn_progress_batch(nn_progress *p, int64_t step, const kiln_logs *logs);
void nn_progress_end(nn_progress *p, const kiln_logs *logs);

/* callback_tensorboard.c: the TensorBoard callback's event files */
typedef struct nn_tb nn_tb;
kiln_status nn_tb_open(const char *dir, bool has_val, nn_tb **out);
kiln_status nn_tb_batch(nn_tb *t, const kiln_model *m, int update_freq, const kiln_logs *l);
kiln_status nn_tb_epoch(nn_tb *t, const kiln_model *m, const kiln_logs *l);   /* flushes */
void nn_tb_close(nn_tb *t);

/* callbacks.c */
typedef struct nn_cb_state { double best; int wait; FILE *csv; bool have_best; nn_tb *tb; struct kiln_path_lock *lock; } nn_cb_state;
kiln_status nn_callbacks_begin(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st);
kiln_status nn_callbacks_epoch_begin(kiln_model *m, const kiln_fit_opts *o, int epoch);
kiln_status nn_callbacks_batch_end(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st, const kiln_logs *logs);
kiln_status nn_callbacks_epoch_end(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st, const kiln_logs *logs);
void nn_callbacks_end(const kiln_fit_opts *o, nn_cb_state *st);

/* fit_data.c: the training / evaluation loops over pipelines */
/* kiln_fit's checks of any data (a dataset or a pipeline, called `noun` in messages): examples of
 * the model's input shape, labels, no more classes (nc) than the model's outputs. */
kiln_status nn_check_examples(const kiln_model *m, kiln_shape es, bool labelled, int nc, const char *what, const char *noun);
/* The data's label shape per example (ls) against the model's (nn_label_shape). */
kiln_status nn_check_labels(const kiln_model *m, kiln_shape ls, const char *what, const char *noun);
kiln_status nn_check_pipeline(kiln_model *m, const kiln_data *d, const char *what, bool train);
kiln_status nn_evaluate_pipeline(kiln_model *m, kiln_data *d, kiln_eval_result *r);
kiln_status nn_fit_loop(kiln_model *m, kiln_data *train, kiln_data *val, const kiln_fit_opts *o);

/* Status for a pipeline transform that returned NULL (its message is in kiln_last_error). */
static inline kiln_status nn_data_status(void) {
    return strstr(kiln_last_error(), "out of") ? KILN_OUT_OF_MEMORY : KILN_INVALID_ARGUMENT;
}

/* The files below are the kinds of training step and the resident data; fit_step.c picks among
 * them once per fit, fit_data.c's loop calls only fit_step.c. None calls fit_step.c or above. */

/* fit_accumulate.c: gradient accumulation's checks (sets m->accumulate) and one step of
 * f->accumulate micro-batches over a whole batch's feeds ([B, ...] each; y: its labels, for the
 * metrics; next: the next batch's feeds or n_next 0). *loss: the batch's mean loss. */
#define NN_ACCUM_FEEDS 4
kiln_status nn_accum_check(kiln_model *m, int batch, int accumulate_steps, const char *who);
kiln_status nn_accum_run(kiln_model *m, nn_forward *f, const kiln_feed *feeds, int n_feeds, const kiln_tensor *y,
                         const kiln_feed *next, int n_next, double *loss, double *correct, double *topk);
/* Micro-batch i (rows i*b ..) of a [B, ...] tensor, a view; the accumulators zeroed from the host. */
kiln_tensor nn_accum_slice(const kiln_tensor *t, int64_t b, int i);
kiln_status nn_accum_zero(kiln_model *m);

/* fit_mirror.c: one process, several GPUs (kiln_fit_opts.devices, MirroredStrategy) */
typedef struct nn_mirror {
    int n;                    /* replicas, one per GPU (0: none; devices naming one GPU: none) */
    int gpus[16];
    struct kiln_replicas *rep;
    kiln_tensor *outs[32];    /* replicas 1..: their loss and output */
    kiln_tensor *finite[16];  /* replicas 1..: their step's finiteness flag (grad_guard.c) */
    double lr_synced;
} nn_mirror;
/* o->devices parsed; with two or more GPUs, *batch (the global batch) becomes each replica's. */
kiln_status nn_mirror_begin(nn_mirror *r, const kiln_fit_opts *o, int *batch);
kiln_status nn_mirror_session(nn_mirror *r, kiln_model *m, const kiln_fit_opts *o);   /* after the training step exists */
/* One mirrored step: replica k trains on rows [k * batch, (k + 1) * batch) of x, y; the mean loss
 * and the summed metrics of every replica; m->train.finite_t gets 0 when any replica's guard found
 * a non-finite loss or gradient (each skipped its update). */
kiln_status nn_mirror_step(nn_mirror *r, kiln_model *m, const kiln_tensor *x, const kiln_tensor *y, double *loss,
                           double *correct, double *topk);
void nn_mirror_end(nn_mirror *r);

/* fit_dist.c: data parallelism across processes (kiln_fit_opts.dist, MPI) */
typedef struct nn_dist_fit {
    struct kiln_dist *d;      /* NULL: one process */
    int rank, world;
    kiln_data *shard;         /* this rank's part of the training pipeline */
    kiln_callback *cbs;       /* rank > 0: the callbacks that write no file */
} nn_dist_fit;
/* Shards *train (the global batch *batch becomes this rank's); on ranks > 0 turns o's progress
 * and file-writing callbacks off (o: this rank's copy of the options). */
kiln_status nn_dist_begin(nn_dist_fit *df, kiln_model *m, kiln_data **train, int *batch, kiln_fit_opts *o);
kiln_status nn_dist_session(nn_dist_fit *df, kiln_model *m, const kiln_fit_opts *o);   /* after the training step exists */
kiln_status nn_dist_step(nn_dist_fit *df, double *loss, double *correct, double *topk);   /* sums over the ranks */
void nn_dist_end(nn_dist_fit *df, kiln_model *m);

/* fit_resident.c: the training set resident in the session (kiln_fit_opts.data_on_device) */
/* Points m->res at the first n examples of set (the fit's step is then built over them: GatherRows
 * [-> RandomCropFlip(pad, flip)]) and makes the index dataset ([n, 1] f32 example numbers and
 * the labels) that the loop iterates instead; nn_resident_end undoes it. */
kiln_status nn_resident_begin(kiln_model *m, const kiln_dataset *set, int64_t n, int pad, bool flip, uint64_t seed,
                              kiln_dataset **index_ds);
/* Once the step is built for batch: the set into the session's data variables. */
kiln_status nn_resident_load(kiln_model *m, int batch);
/* An index batch x of epoch as the step's feeds (idx, and keys with crop/flip); their count. */
int nn_resident_feeds(kiln_model *m, const nn_forward *f, const kiln_tensor *x, int batch, int epoch, kiln_feed *feeds);
void nn_resident_end(kiln_model *m);
/* kiln_fit_data with data_on_device: the pipeline's examples in memory (set), the index pipeline
 * with the pipeline's shuffle and batch (index), crop/flip from its augment node; m->res begun. */
typedef struct nn_resident_data { kiln_dataset *set, *index_ds; kiln_data *index; } nn_resident_data;
kiln_status nn_resident_from_pipeline(kiln_model *m, const kiln_data *train, const kiln_fit_opts *o, nn_resident_data *r);
void nn_resident_data_free(kiln_model *m, nn_resident_data *r);   /* and nn_resident_end */

/* fit_step.c: one training step, its kind chosen once when the fit starts */
typedef struct nn_step_io {
    const kiln_tensor *x, *y;     /* the batch (NULL x: the epoch's end); resident: x holds example indices */
    kiln_feed feeds[3], next[2];  /* the step's feeds (x, y [, sample weights]); the next batch's, copied ahead to a device */
    int n_feeds, n_next;          /* n_next 0: no copy ahead */
    double loss, correct, topk;   /* the step's mean loss and summed metrics (over every rank) */
    bool skipped;                 /* mixed_float16 skipped the update (a non-finite scaled step) */
} nn_step_io;
typedef struct nn_stepper nn_stepper;
struct nn_stepper {
    /* plain, accumulated or mirrored: runs io's batch, fills its loss and metrics */
    kiln_status (*run)(nn_stepper *s, kiln_model *m, nn_step_io *io);
    kiln_fit_opts opts;       /* the options this process runs with (ranks > 0: no progress, no files) */
    kiln_data *train;         /* the pipeline this process reads (its shard under MPI) */
    int batch;                /* rows one replica or rank trains on per step */
    int split;                /* mirrored replicas in this process (1: none): a batch has batch * split rows */
    int world;                /* replicas or ranks in all: batch * world examples per step */
    nn_mirror mir;
    nn_dist_fit dist;
    kiln_node *fetch[3];      /* the plain step's: loss, output, the guard's flag (grad_guard.c) */
    kiln_tensor *outs[3];
    int n_fetch;
    /* the epoch's batches: host batches one ahead (ahead), or resident example indices */
    kiln_data_iter *it;
    kiln_tensor *nx, *ny;
    bool ahead, primed;
    kiln_tensor *wt;          /* sample weights: the batch's [batch], gathered by source example number */
    int64_t *src;
    int epoch;
};
/* Shards the data, builds the step for this process's batch, starts the replicas' or ranks'
 * sessions; o: the caller's options (s->opts: this process's). nn_stepper_end after any result. */
kiln_status nn_stepper_begin(nn_stepper *s, kiln_model *m, kiln_data *train, const kiln_fit_opts *o);
kiln_status nn_stepper_epoch(nn_stepper *s, int epoch);
/* The epoch's next full batch as io's feeds (a kept smaller last batch skipped); io->x NULL at its end. */
kiln_status nn_stepper_next(nn_stepper *s, kiln_model *m, nn_step_io *io);
/* The step: run, the loss and metrics over the ranks, the numerics errors (numerics.c). */
kiln_status nn_step(nn_stepper *s, kiln_model *m, nn_step_io *io, int epoch, int64_t step, double lr);
void nn_stepper_epoch_end(nn_stepper *s);
void nn_stepper_end(nn_stepper *s, kiln_model *m);

/* numerics.c: whether the step just run went non-finite outside loss scaling (its loss, or the
 * guard's flag, which every kind of step fetches: its update was skipped); the error for it at (epoch, step): the batch's feeds are
 * run once more with every op checked (rerun; the weights are still the good ones) to name the
 * first layer whose output or gradient went non-finite; x: the batch's input (NULL: resident);
 * the error for a step stopped by the session's numeric checks (debug_numerics). */
bool nn_numerics_tripped(const nn_forward *f, double loss);
kiln_status nn_numerics_bad_step(kiln_model *m, nn_forward *f, int epoch, int64_t step, double lr, double loss,
                                 const kiln_feed *feeds, int n_feeds, const kiln_tensor *x, bool rerun);
kiln_status nn_numerics_step(kiln_model *m, int epoch, int64_t step);
/* oom_precision.c: after kiln_fit ran out of device memory at batch (a float32 model), adds to
 * kiln_last_error the figure of the same step planned in mixed_bfloat16 when that plan is smaller. */
void nn_oom_precision_advice(kiln_model *m, int batch);

#endif
