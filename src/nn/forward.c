/* One forward pass of a model in its graph, for one batch size: the input (host-fed or gathered
 * from resident data), the layers, the loss, and for training the L2 penalties, gradients and
 * optimizer update. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_step.h"

static kiln_shape batched(kiln_shape s, int64_t n) {
    kiln_shape b = { .rank = s.rank + 1 };
    b.dim[0] = n;
    for (int i = 0; i < s.rank; i++) b.dim[i + 1] = s.dim[i];
    return b;
}

kiln_shape nn_label_shape(const kiln_model *m) {
    kiln_shape s = m->output->out;
    if (s.rank <= 1) return (kiln_shape){ 0, { 0 } };
    s.rank--;
    return s;
}

/* Host-fed batches: placeholders for the examples and their labels. */
static void fed_input(kiln_model *m, nn_forward *f) {
    char nm[64];
    const char *phase = f->training ? "train" : "infer";
    snprintf(nm, sizeof nm, "%s_x_%d", phase, f->batch);
    f->x = kiln_placeholder(m->g, nm, KILN_F32, batched(m->input->out, f->batch));
    snprintf(nm, sizeof nm, "%s_y%s_%d", phase, m->float_labels ? "f" : "", f->batch);
    f->y = kiln_placeholder(m->g, nm, m->float_labels ? KILN_F32 : KILN_I32, batched(nn_label_shape(m), f->batch));
    f->float_labels = m->float_labels;
    f->w = NULL;
    if (f->training && m->weighted) {
        snprintf(nm, sizeof nm, "train_w_%d", f->batch);
        f->w = kiln_placeholder(m->g, nm, KILN_F32, KILN_SHAPE(f->batch));
    }
}

/* Resident data (training only): the batch is gathered (and augmented) by index from the data
 * variables; only the indices (and augmentation keys) are fed. */
static void resident_input(kiln_model *m, nn_forward *f) {
    kiln_graph *g = m->g;
    char nm[64];
    kiln_node *X = kiln_variable_trainable(g, NN_DATA_PREFIX "x", KILN_F32, batched(m->input->out, m->res.n), kiln_init_zeros(), false);
    kiln_node *Y = kiln_variable_trainable(g, NN_DATA_PREFIX "y", KILN_I32, KILN_SHAPE(m->res.n), kiln_init_zeros(), false);
    snprintf(nm, sizeof nm, "train_idx_%d", f->batch);
    f->idx = kiln_placeholder(g, nm, KILN_I32, KILN_SHAPE(f->batch));
    f->x = kiln_gather_rows(g, X, f->idx);
    if (m->res.pad > 0 || m->res.flip) {
        snprintf(nm, sizeof nm, "train_keys_%d", f->batch);
        f->keys = kiln_placeholder(g, nm, KILN_I64, KILN_SHAPE(f->batch));
        f->x = kiln_random_crop_flip(g, f->x, f->keys, m->res.pad, m->res.flip, true);
    }
    f->y = kiln_gather_rows(g, Y, f->idx);
    f->resident_n = m->res.n;
    f->resident_pad = m->res.pad;
    f->resident_flip = m->res.flip;
}

/* The layers from the input to the model output, in the order they were added. */
static kiln_status build_layers(kiln_model *m, nn_forward *f) {
    nn_fwd c = { .m = m, .g = m->g, .batch = f->batch, .training = f->training, .dtype = f->dtype };
    for (int i = 0; i < m->n_layers; i++) m->layers[i]->node = NULL;
    m->input->node = f->x;
    kiln_dtype ct = nn_precision_compute_dtype(m);
    kiln_graph_set_autocast(m->g, ct);   /* the layers only: losses stay f32 */
    /* mixed_bfloat16 keeps the activations bf16 (Keras' policy); mixed_float16 keeps them f32:
     * the CPU has no f16 arithmetic for the ops between the convolutions */
    if (ct == KILN_BF16 && !getenv("KILN_BF16_F32_ACTIVATIONS")) kiln_graph_set_autocast_activations(m->g, true);
    for (int i = 0; i < m->n_layers; i++) {
        kiln_layer *l = m->layers[i];
        if (l->kind == NN_INPUT) continue;
        if (!nn_layer_forward(&c, l)) { kiln_graph_set_autocast(m->g, KILN_F32); return m->status; }
        if (l == m->output) break;
    }
    kiln_graph_set_autocast(m->g, KILN_F32);
    f->out = m->output->node;
    if (f->out && kiln_node_dtype(f->out) != KILN_F32 && kiln_dtype_is_float(kiln_node_dtype(f->out)) &&
        !(f->out = kiln_cast(m->g, f->out, KILN_F32)))   /* the model's output is f32 */
        return nn_fail(m, kiln_graph_status(m->g), "model '%s': %s", m->name, kiln_last_error());
    return KILN_OK;
}

/* The trainable variables in layer order; *vars is allocated (the caller frees it). */
static kiln_status trainable_vars(kiln_model *m, kiln_node ***vars, int *n) {
    int k = 0;
    for (int i = 0; i < m->n_layers; i++)
        for (int j = 0; j < m->layers[i]->n_vars; j++) k += m->layers[i]->vars[j].trainable;
    *n = 0;
    if (!(*vars = kiln_calloc((size_t)(k > 0 ? k : 1), sizeof **vars)))
        return nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory for %d trainable variables", m->name, k);
    for (int i = 0; i < m->n_layers; i++)
        for (int j = 0; j < m->layers[i]->n_vars; j++)
            if (m->layers[i]->vars[j].trainable) (*vars)[(*n)++] = m->layers[i]->vars[j].node;
    return KILN_OK;
}

/* loss + l2 * sum(w^2) for every trainable variable with an L2 factor. */
static kiln_node *add_l2(kiln_model *m, kiln_node *loss) {
    kiln_graph *g = m->g;
    for (int i = 0; i < m->n_layers; i++)
        for (int j = 0; j < m->layers[i]->n_vars; j++) {
            const nn_var *v = &m->layers[i]->vars[j];
            if (!v->trainable || !(v->l2 > 0)) continue;
            kiln_node *pen = kiln_mul(g, kiln_reduce_sum(g, kiln_square(g, v->node), NULL, 0, false), kiln_scalar(g, KILN_F32, v->l2));
            loss = kiln_add(g, loss, pen);
        }
    return loss;
}

/* grads[i] = d loss / d vars[i] (with accumulation: acc + g/N, accumulate.c), clipped by global
 * norm when the optimizer asks. */
static kiln_status build_gradients(kiln_model *m, nn_forward *f, kiln_node *loss, kiln_node *const *vars, int n, kiln_node **grads) {
    kiln_graph *g = m->g;
    if (nn_precision_gradients(m, f, loss, vars, n, grads) != KILN_OK)
        return nn_fail(m, kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL, "model '%s': gradients: %s", m->name, kiln_last_error());
    kiln_status ast = nn_accum_build(m, f, vars, grads, n);
    if (!ast) ast = nn_precision_unscale(m, f, grads, n);    /* after the sum: the scale is fixed within a batch */
    if (ast) return ast;
    if (!(m->copts.optimizer.clip_norm > 0)) return KILN_OK;
    /* a separate output: kiln_clip_by_global_norm clears its output before reading its input */
    kiln_node **clipped = kiln_calloc((size_t)(n > 0 ? n : 1), sizeof *clipped);
    if (!clipped) return nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory for %d gradients", m->name, n);
    kiln_status st = KILN_OK;
    if (kiln_clip_by_global_norm(g, grads, n, m->copts.optimizer.clip_norm, clipped) != KILN_OK)
        st = nn_fail(m, KILN_INTERNAL, "model '%s': gradient clipping: %s", m->name, kiln_last_error());
    else
        memcpy(grads, clipped, (size_t)n * sizeof *grads);
    kiln_free(clipped);
    return st;
}

/* The training step: the loss with its L2 penalties, gradients, the optimizer update (f->step). */
static kiln_status build_step(kiln_model *m, nn_forward *f) {
    kiln_node **vars = NULL, **grads = NULL;
    int n = 0;
    kiln_status st = trainable_vars(m, &vars, &n);
    if (!st && !(grads = kiln_calloc((size_t)(n > 0 ? n : 1), sizeof *grads)))
        st = nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory for %d gradients", m->name, n);
    if (!st) {
        f->loss = add_l2(m, f->loss);
        st = build_gradients(m, f, f->loss, vars, n, grads);
    }
    if (!st) st = nn_guard_build(m, f, grads, n);         /* a non-finite step updates nothing (grad_guard.c) */
    kiln_node *lr = m->lr_var;
    if (f->step_lr) m->lr_var = f->step_lr;          /* lr / finite(grads): a bad step is skipped */
    if (!st && !(f->step = nn_build_optimizer(m, m->g, vars, grads, n)))
        st = m->status ? m->status : nn_fail(m, kiln_graph_status(m->g), "model '%s': optimizer: %s", m->name, kiln_graph_error(m->g));
    m->lr_var = lr;
    if (!st && f->scale_update && !(f->step = kiln_group(m->g, (kiln_node *[]){ f->step, f->scale_update }, 2)))
        st = nn_fail(m, kiln_graph_status(m->g), "model '%s': loss scaling: %s", m->name, kiln_graph_error(m->g));
    kiln_free(vars);
    kiln_free(grads);
    return st;
}

kiln_status nn_build_forward(kiln_model *m, nn_forward *f, int batch, bool training) {
    kiln_graph *g = m->g;
    f->batch = batch;
    f->training = training;
    f->dtype = KILN_F32;
    if (training && m->res.n > 0) resident_input(m, f);
    else fed_input(m, f);
    if (!f->x || !f->y) return nn_fail(m, kiln_graph_status(g), "model '%s': %s", m->name, kiln_graph_error(g));
    kiln_status st = build_layers(m, f);
    if (st) return st;
    if (m->compiled) {
        f->loss = nn_build_loss(m, g, f->out, f->y, f->w, batch);
        if (!f->loss) return m->status ? m->status : nn_fail(m, kiln_graph_status(g), "model '%s': loss: %s", m->name, kiln_graph_error(g));
    }
    if (training && (st = build_step(m, f))) return st;
    if (kiln_graph_status(g) != KILN_OK) return nn_fail(m, kiln_graph_status(g), "model '%s': %s", m->name, kiln_graph_error(g));
    f->out_t = kiln_tensor_new(KILN_F32, kiln_node_shape(f->out));
    f->loss_t = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    if (!f->out_t || !f->loss_t) return kiln_set_error(KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name);
    return KILN_OK;
}
