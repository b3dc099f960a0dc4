/* The bottom of src/nn: the model and layer structs every file shares, and the model's sticky
 * error (nn_base.c). Includes nothing else of src/nn but the layer table's enum. */
#ifndef KILN_NN_TYPES_H
#define KILN_NN_TYPES_H
#include <string.h>
#include "kiln/nn.h"
#include "core/core.h"
#include "io/name_index.h"

typedef enum nn_kind {
#define NN_LAYER(e, def) NN_##e,
#include "nn/layers.def"
#undef NN_LAYER
    NN_KIND_COUNT
} nn_kind;

#define NN_MAX_MERGE 8
#define NN_NAME 96

typedef struct nn_var {
    char name[NN_NAME + 160];     /* "<layer>/<suffix>"; an imported graph's suffixes are ONNX initializer names */
    kiln_shape shape;
    kiln_init init;
    bool trainable;
    double l2;
    kiln_node *node;        /* in the current graph */
} nn_var;

struct nn_layer_def;
struct nn_layer_cfg;
struct kiln_layer {
    kiln_model *model;
    int index;
    nn_kind kind;
    const struct nn_layer_def *def;   /* its row of the layer table (nn_layers.h) */
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
    int input_dim;            /* Embedding: vocabulary size; PositionEmbedding: sequence_length */
    int heads, key_dim;       /* MultiHeadAttention */
    bool center, scale;       /* LayerNormalization: beta, gamma */
    bool causal;              /* MultiHeadAttention: use_causal_mask */
    /* recurrent layers (layers_rnn.c) */
    kiln_activation rec_act;
    bool return_sequences, go_backwards, reset_after;
    int cell;                 /* NN_RNN_SIMPLE, NN_RNN_LSTM, NN_RNN_GRU */
    int merge_mode;           /* Bidirectional: NN_MERGE_CONCAT, _SUM, _MUL, _AVE */
    bool approximate;         /* GPTBlock: tanh GELU */
    struct nn_layer_cfg *cfg; /* the options it was made with, name cleared (the architecture a checkpoint stores) */
    nn_var *vars;             /* grown by nn_layer_add_var (an imported graph has hundreds) */
    int n_vars, cap_vars;
    kiln_node *node;          /* output in the forward being built */
    /* ImportedGraph layers (layers_imported.c): ops supplied by a translator (ONNX import) */
    const struct nn_layer_ext *ext;
    void *ext_data;           /* owned: ext->free releases it with the layer */
};

/* One forward pass in the graph for a fixed batch size (nn_step.h builds it). */
typedef struct nn_forward {
    int batch;
    bool training;
    kiln_dtype dtype;         /* compute dtype of the input and layers (KILN_F32; the precision policy's hook) */
    kiln_node *x, *y;         /* placeholders (resident training: gathered from the data variables) */
    kiln_node *idx;           /* resident training: the batch's example indices (placeholder) */
    kiln_node *keys;          /* resident training with crop/flip: their augmentation keys (placeholder) */
    int64_t resident_n;       /* resident training: examples in the data variables (0: not resident) */
    int resident_pad;         /* resident training: the crop/flip built in (a fit asking another rebuilds) */
    bool resident_flip;
    bool float_labels;        /* y is f32 label values (npz / CSV data), else i32 class ids */
    kiln_node *w;             /* training with sample weights: their placeholder [batch] (else NULL) */
    kiln_node *out;           /* model output */
    kiln_node *loss;          /* mean loss (+ L2 when training) */
    kiln_node *step;          /* training: the optimizer update target */
    /* mixed_float16 training (precision.c): the loss-scaling variables, the lr the updates read
     * (lr / finite(grads)) and the scale update; NULL otherwise */
    kiln_node *loss_scale, *skipped_steps, *step_lr, *scale_update;
    int accumulate;           /* training: micro-batches per update (1: none; accumulate.c) */
    kiln_node *accum_step;    /* accumulate > 1: micro-batches 1..N-1's target (acc += g/N) */
    kiln_node *accum_reset;   /* accumulate > 1: zeroes the accumulators (a target with step) */
    kiln_tensor *out_t, *loss_t;   /* pre-allocated fetch outputs */
    /* training (grad_guard.c): 1 when the loss (f32/bf16) and every gradient the updates read are
     * finite, else 0, when the updates (reading lr / finite) leave weights and slots alone; its
     * fetch output; and the loss-scaling good-step counter (mixed_float16) */
    kiln_node *finite, *good_steps;
    kiln_tensor *finite_t;
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
    char **class_names;       /* kiln_model_set_class_names; saved in checkpoints */
    int n_class_names;
    struct kiln_tokenizer *tokenizer;   /* owned: a Hugging Face folder's tokenizer.json (kiln_model_set_tokenizer) */
    char *data_spec;          /* kiln_model_set_data_spec; saved in checkpoints (kiln.data) */
    int name_counts[NN_KIND_COUNT];
    kiln_name_index layer_index;   /* layers by name (layer_table.c): loading a model file stays linear */
    kiln_status status;
    char error[1024];
    /* compile */
    bool compiled;
    kiln_compile_opts copts;
    struct nn_metric_set *mset;   /* copts.metric_list parsed, with its running counts (metrics.c) */
    char device[32];
    kiln_precision precision;  /* the policy in effect (src/nn/precision.c): copts' or FLOAT32 */
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
    int accumulate;           /* gradient accumulation the training step is built for (0, 1: none) */
    /* values to assign after the next build (rebuild / load before build) */
    nn_carry *carry;
    int n_carry;
    uint64_t pending_step;    /* session step from a checkpoint loaded before the build */
    bool has_pending_step;
    /* training */
    int epoch;
    bool float_labels;        /* the data being fed has f32 labels (kiln_data_label_dtype): forwards are built for it */
    bool weighted;            /* the fit has sample weights: the training step is built with f->w */
    double base_lr;           /* lr scheduler callbacks change it */
    kiln_logs *history;
    int n_history, cap_history;
    bool stop;
    /* resident training data (kiln_fit with data_on_device): set for the duration of a fit */
    struct { const kiln_dataset *ds; int64_t n; int pad; bool flip; uint64_t seed; kiln_tensor *idx_t, *keys_t; } res;
};

/* Variables holding resident training data, and gradient accumulators: never checkpointed or
 * carried across rebuilds. */
#define NN_DATA_PREFIX "_data/"
#define NN_ACCUM_PREFIX "_accum/"
static inline bool nn_is_data_var(const char *name) {
    return strncmp(name, NN_DATA_PREFIX, sizeof NN_DATA_PREFIX - 1) == 0 || strncmp(name, NN_ACCUM_PREFIX, sizeof NN_ACCUM_PREFIX - 1) == 0;
}
static inline int nn_accum_n(const kiln_model *m) { return m->accumulate > 1 ? m->accumulate : 1; }

/* nn_base.c: the first error sticks to the model (later calls return it). */
kiln_status nn_fail(kiln_model *m, kiln_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
kiln_status nn_check(const kiln_model *m);     /* re-raises the sticky error as kiln_last_error */
/* precision.c: the policy a compiled model gets on its device (a downgrade to FLOAT32 said once),
 * and the dtype its layers' convolutions and matmuls compute in (KILN_F32: no autocast). */
kiln_precision nn_precision_resolve(const kiln_model *m);
kiln_dtype nn_precision_compute_dtype(const kiln_model *m);
/* grads = d loss / d vars; under mixed_float16 d (loss * scale) / d vars, still scaled (sets f's
 * loss-scale nodes; accumulation sums them as they are), and nn_precision_unscale divides them by
 * the scale (in place in grads). Returns the status of kiln_gradients / the graph. */
kiln_status nn_precision_gradients(kiln_model *m, nn_forward *f, kiln_node *loss, kiln_node *const *vars, int n, kiln_node **grads);
kiln_status nn_precision_unscale(kiln_model *m, nn_forward *f, kiln_node **grads, int n);
/* Loss scaling's figures for the epoch's logs (skipped steps, scale); nothing without it. */
void nn_precision_logs(kiln_model *m, const nn_forward *f, kiln_logs *l);
/* CSV logger columns: ",skipped_steps,loss_scale" under mixed_float16, else "" (and the row's values). */
const char *nn_precision_csv_header(const kiln_model *m);
void nn_precision_csv_row(const kiln_model *m, const kiln_logs *l, char *buf, size_t n);

#endif
