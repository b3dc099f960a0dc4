/* Internal state of Kiln models (src/nn). */
#ifndef KILN_NN_INTERNAL_H
#define KILN_NN_INTERNAL_H
#include <string.h>
#include "kiln/nn.h"
#include "kiln/io.h"
#include "core/core.h"

typedef enum nn_kind {
    NN_INPUT = 0, NN_DENSE, NN_CONV2D, NN_DWCONV2D, NN_MAXPOOL, NN_AVGPOOL, NN_GAP, NN_FLATTEN,
    NN_RESHAPE, NN_DROPOUT, NN_BN, NN_ACTIVATION, NN_CONCAT, NN_ADD, NN_KIND_COUNT
} nn_kind;

#define NN_MAX_VARS 4
#define NN_MAX_MERGE 8
#define NN_NAME 96

typedef struct nn_var {
    char name[NN_NAME + 24];
    kiln_shape shape;
    kiln_init init;
    bool trainable;
    double l2;
    kiln_node *node;        /* in the current graph */
} nn_var;

struct kiln_layer {
    kiln_model *model;
    int index;
    nn_kind kind;
    char name[NN_NAME];
    kiln_layer *in[NN_MAX_MERGE];
    int n_in;
    kiln_shape out;           /* batch excluded */
    kiln_activation act;
    /* options, resolved */
    int units, filters, kh, kw, sh, sw, dil, groups;
    kiln_padding padding;
    bool use_bias;
    double rate, momentum, epsilon;
    uint64_t seed;
    int axis;                 /* concat, resolved on the batched shape */
    kiln_shape target;        /* reshape (batch excluded, -1 resolved) */
    nn_var vars[NN_MAX_VARS];
    int n_vars;
    kiln_node *node;          /* output in the forward being built */
};

/* One forward pass in the graph for a fixed batch size. */
typedef struct nn_forward {
    int batch;
    bool training;
    kiln_node *x, *y;         /* placeholders (resident training: gathered from the data variables) */
    kiln_node *idx;           /* resident training: the batch's example indices (placeholder) */
    kiln_node *keys;          /* resident training with crop/flip: their augmentation keys (placeholder) */
    int64_t resident_n;       /* resident training: examples in the data variables (0: not resident) */
    int resident_pad;         /* resident training: the crop/flip built in (a fit asking another rebuilds) */
    bool resident_flip;
    kiln_node *out;           /* model output */
    kiln_node *loss;          /* mean loss (+ L2 when training) */
    kiln_node *step;          /* training: the optimizer update target */
    kiln_tensor *out_t, *loss_t;   /* pre-allocated fetch outputs */
} nn_forward;

#define NN_MAX_FORWARDS 8

typedef struct nn_carry { char *name; kiln_tensor *t; } nn_carry;

struct kiln_model {
    char name[NN_NAME];
    uint64_t seed;
    kiln_layer **layers;
    int n_layers, cap;
    kiln_layer *input, *output;
    bool functional, finalized;
    int name_counts[NN_KIND_COUNT];
    kiln_status status;
    char error[1024];
    /* compile */
    bool compiled;
    kiln_compile_opts copts;
    char device[32];
    /* graph and session */
    kiln_graph *g;
    kiln_session *s;
    kiln_node *lr_var;
    kiln_tensor *lr_t;
    double lr_current;
    nn_forward train;         /* train.batch == 0: not built */
    nn_forward infer[NN_MAX_FORWARDS];
    int n_infer;
    int last_fit_batch;
    /* values to assign after the next build (rebuild / load before build) */
    nn_carry *carry;
    int n_carry;
    uint64_t pending_step;    /* session step from a checkpoint loaded before the build */
    bool has_pending_step;
    /* training */
    int epoch;
    double base_lr;           /* lr scheduler callbacks change it */
    kiln_logs *history;
    int n_history, cap_history;
    bool stop;
    /* resident training data (kiln_fit with data_on_device): set for the duration of a fit */
    struct { const kiln_dataset *ds; int64_t n; int pad; bool flip; uint64_t seed; kiln_tensor *idx_t, *keys_t; } res;
};

/* Variables holding resident training data: never checkpointed or carried across rebuilds. */
#define NN_DATA_PREFIX "_data/"
static inline bool nn_is_data_var(const char *name) { return strncmp(name, NN_DATA_PREFIX, sizeof NN_DATA_PREFIX - 1) == 0; }

/* model.c */
kiln_status nn_fail(kiln_model *m, kiln_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
kiln_status nn_check(const kiln_model *m);     /* re-raises the sticky error as kiln_last_error */
kiln_status nn_ensure_session(kiln_model *m, int batch);        /* any graph + session */
kiln_status nn_ensure_train(kiln_model *m, int batch);          /* training step for batch */
kiln_status nn_get_infer(kiln_model *m, int batch, nn_forward **out);
kiln_status nn_set_lr(kiln_model *m, double lr);
bool nn_is_weight_name(const kiln_model *m, const char *name, const nn_var **var);
void nn_carry_clear(kiln_model *m);
kiln_status nn_carry_add(kiln_model *m, const char *name, const kiln_tensor *t);

/* layers.c */
kiln_layer *nn_layer_new(kiln_model *m, nn_kind kind, const char *name, kiln_layer *const *in, int n_in);
kiln_node *nn_layer_forward(kiln_model *m, kiln_layer *l, kiln_graph *g, int batch, bool training);
kiln_status nn_create_variables(kiln_model *m, kiln_graph *g);
const char *nn_kind_type(nn_kind k);
int64_t nn_layer_params(const kiln_layer *l, bool trainable_only);

/* losses (fit.c) */
kiln_node *nn_build_loss(kiln_model *m, kiln_graph *g, kiln_node *out, kiln_node *y, int batch);
/* Host metrics over one batch of outputs: number correct (accuracy) and in top-k. */
void nn_batch_metrics(const kiln_model *m, const kiln_tensor *out, const int32_t *labels, int64_t n,
                      double *correct, double *topk);

/* fit_data.c: the training / evaluation loops over pipelines */
/* kiln_fit's checks of any data (a dataset or a pipeline, called `noun` in messages): examples of
 * the model's input shape, labels, no more classes (nc) than the model's outputs. */
kiln_status nn_check_examples(const kiln_model *m, kiln_shape es, bool labelled, int nc, const char *what, const char *noun);
kiln_status nn_check_pipeline(kiln_model *m, const kiln_data *d, const char *what, bool train);
kiln_status nn_evaluate_pipeline(kiln_model *m, kiln_data *d, kiln_eval_result *r);
kiln_status nn_fit_loop(kiln_model *m, kiln_data *train, kiln_data *val, const kiln_fit_opts *o);
/* Status for a pipeline transform that returned NULL (its message is in kiln_last_error). */
kiln_status nn_data_status(void);

/* optimizers.c */
kiln_node *nn_build_optimizer(kiln_model *m, kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n);

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

/* callbacks.c */
typedef struct nn_cb_state { double best; int wait; FILE *csv; bool have_best; } nn_cb_state;
kiln_status nn_callbacks_begin(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st);
kiln_status nn_callbacks_epoch_begin(kiln_model *m, const kiln_fit_opts *o, int epoch);
kiln_status nn_callbacks_batch_end(kiln_model *m, const kiln_fit_opts *o, const kiln_logs *logs);
kiln_status nn_callbacks_epoch_end(kiln_model *m, const kiln_fit_opts *o, nn_cb_state *st, const kiln_logs *logs);
void nn_callbacks_end(const kiln_fit_opts *o, nn_cb_state *st);

#endif
