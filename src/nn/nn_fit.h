/* Training and evaluation (tier 4 of src/nn, the top, above the models): metrics, progress,
 * callbacks, the one training loop over pipelines (fit_data.c) and the dataset entries (fit.c). */
#ifndef KILN_NN_FIT_H
#define KILN_NN_FIT_H
#include <stdio.h>
#include "nn/nn_model.h"

/* metrics.c: host metrics over one batch of outputs: number correct (accuracy) and in top-k.
 * y: the batch's labels (i32 class ids or f32 values). */
void nn_batch_metrics(const kiln_model *m, const kiln_tensor *out, const kiln_tensor *y, int64_t n,
                      double *correct, double *topk);

/* progress.c */
typedef struct nn_progress {
    int verbose;              /* 0 none, 1 bar, 2 line per epoch */
    bool tty;
    int epoch, epochs;
    int64_t steps;
    unsigned metrics;
    int top_k;
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
kiln_status nn_check_pipeline(kiln_model *m, const kiln_data *d, const char *what, bool train);
kiln_status nn_evaluate_pipeline(kiln_model *m, kiln_data *d, kiln_eval_result *r);
kiln_status nn_fit_loop(kiln_model *m, kiln_data *train, kiln_data *val, const kiln_fit_opts *o);
/* fit_dist.c: data parallelism across processes (kiln_fit_opts.dist) in the training loop */
typedef struct nn_dist_fit {
    struct kiln_dist *d;      /* NULL: one process */
    int rank, world;
    kiln_data *shard;         /* this rank's part of the training pipeline */
    kiln_fit_opts opts;       /* the options this rank runs with */
    kiln_callback *cbs;
    int split;                /* o->devices: replicas in this process (1: none); each gets batch rows */
    int gpus[16];
    struct kiln_replicas *rep;
    kiln_tensor *rep_outs[32];  /* replicas 1..: their loss and output */
    kiln_tensor *rep_finite[16];  /* replicas 1..: their step's finiteness flag (grad_guard.c) */
    double lr_synced;
} nn_dist_fit;
/* One mirrored step (o->devices): replica k trains on rows [k * batch, (k + 1) * batch) of x, y;
 * the mean loss and the summed metrics of every replica; m->train.finite_t gets 0 when any
 * replica's guard found a non-finite loss or gradient (each skipped its update). */
kiln_status nn_mirror_step(nn_dist_fit *df, kiln_model *m, const kiln_tensor *x, const kiln_tensor *y, double *loss,
                           double *correct, double *topk);
/* Shards *train (the global batch *batch becomes this rank's), points *o at this rank's options. */
kiln_status nn_dist_begin(nn_dist_fit *df, kiln_model *m, kiln_data **train, int *batch, const kiln_fit_opts **o);
kiln_status nn_dist_session(nn_dist_fit *df, kiln_model *m);     /* after the training step exists */
kiln_status nn_dist_step(nn_dist_fit *df, double *loss, double *correct, double *topk);
void nn_dist_end(nn_dist_fit *df, kiln_model *m);
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
/* Status for a pipeline transform that returned NULL (its message is in kiln_last_error). */
kiln_status nn_data_status(void);

#endif
