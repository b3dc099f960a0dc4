/* Keras-style layers: option resolution, shape inference at add time, variables, and the ops each
 * layer emits when a forward pass is built. */
#include <stdio.h>
#include <string.h>
#include "nn/nn_internal.h"

static const char *const kind_type[NN_KIND_COUNT] = {
    "InputLayer", "Dense", "Conv2D", "DepthwiseConv2D", "MaxPooling2D", "AveragePooling2D",
    "GlobalAveragePooling2D", "Flatten", "Reshape", "Dropout", "BatchNormalization", "Activation",
    "Concatenate", "Add",
};
static const char *const kind_base[NN_KIND_COUNT] = {
    "input", "dense", "conv2d", "depthwise_conv2d", "max_pooling2d", "average_pooling2d",
    "global_average_pooling2d", "flatten", "reshape", "dropout", "batch_normalization", "activation",
    "concatenate", "add",
};

const char *nn_kind_type(nn_kind k) { return (unsigned)k < NN_KIND_COUNT ? kind_type[k] : "?"; }

/* "(None, 28, 28, 1)" */
static char *batched_str(kiln_shape s, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "(None");
    for (int i = 0; i < s.rank && k < n; i++) k += (size_t)snprintf(buf + k, n - k, ", %lld", (long long)s.dim[i]);
    if (k < n) snprintf(buf + k, n - k, ")");
    return buf;
}

static void add_var(kiln_layer *l, const char *suffix, kiln_shape shape, kiln_init init, bool trainable, double l2) {
    nn_var *v = &l->vars[l->n_vars++];
    snprintf(v->name, sizeof v->name, "%s/%s", l->name, suffix);
    v->shape = shape;
    v->init = init;
    v->trainable = trainable;
    v->l2 = l2;
    v->node = NULL;
}

static bool layer_name_taken(const kiln_model *m, const char *name) {
    for (int i = 0; i < m->n_layers; i++)
        if (!strcmp(m->layers[i]->name, name)) return true;
    return false;
}

kiln_layer *nn_layer_new(kiln_model *m, nn_kind kind, const char *name, kiln_layer *const *in, int n_in) {
    if (!m) { kiln_set_error(KILN_INVALID_ARGUMENT, "layer: NULL model"); return NULL; }
    if (m->status != KILN_OK) { nn_check(m); return NULL; }
    if (m->g)
        { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: model '%s' is already built (fit/evaluate/load ran); add every layer before that", kind_base[kind], m->name); return NULL; }
    if (m->finalized && m->functional)
        { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: model '%s' already has its outputs declared (kiln_model_functional); add layers before", kind_base[kind], m->name); return NULL; }
    if (n_in > NN_MAX_MERGE) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: at most %d inputs, got %d", kind_base[kind], NN_MAX_MERGE, n_in); return NULL; }
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: input %d is NULL", name ? name : kind_base[kind], i); return NULL; }
        if (in[i]->model != m) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: input %d (%s) belongs to another model", name ? name : kind_base[kind], i, in[i]->name); return NULL; }
    }
    if (m->n_layers == m->cap) {
        int cap = m->cap ? m->cap * 2 : 16;
        kiln_layer **nl = kiln_realloc(m->layers, (size_t)cap * sizeof *nl);
        if (!nl) { nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name); return NULL; }
        m->layers = nl;
        m->cap = cap;
    }
    kiln_layer *l = kiln_calloc(1, sizeof *l);
    if (!l) { nn_fail(m, KILN_OUT_OF_MEMORY, "model '%s': out of host memory", m->name); return NULL; }
    l->model = m;
    l->kind = kind;
    l->index = m->n_layers;
    for (int i = 0; i < n_in; i++) l->in[i] = in[i];
    l->n_in = n_in;
    if (name && *name) {
        if (layer_name_taken(m, name)) {
            kiln_free(l);
            nn_fail(m, KILN_INVALID_ARGUMENT, "layer name '%s' is used twice in model '%s'; names must be unique (they name the checkpoint tensors)", name, m->name);
            return NULL;
        }
        snprintf(l->name, sizeof l->name, "%s", name);
    } else {
        for (;;) {     /* Keras: dense, dense_1, ...; input_1, input_2, ... */
            int c = m->name_counts[kind]++;
            if (kind == NN_INPUT) snprintf(l->name, sizeof l->name, "input_%d", c + 1);
            else if (c == 0) snprintf(l->name, sizeof l->name, "%s", kind_base[kind]);
            else snprintf(l->name, sizeof l->name, "%s_%d", kind_base[kind], c);
            if (!layer_name_taken(m, l->name)) break;
        }
    }
    return l;
}

/* Registers a layer whose options and shape checked out. */
static kiln_layer *commit(kiln_model *m, kiln_layer *l) {
    m->layers[m->n_layers++] = l;
    if (!m->functional) m->output = l;
    return l;
}

static kiln_layer *reject(kiln_model *m, kiln_layer *l, kiln_status s, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static kiln_layer *reject(kiln_model *m, kiln_layer *l, kiln_status s, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nn_fail(m, s, "%s (%s): %s", l->name, kind_type[l->kind], msg);
    kiln_free(l);
    return NULL;
}

/* The implicit input: the previous layer of a sequential model. */
static kiln_layer *single(kiln_model *m, nn_kind kind, const char *name, kiln_layer *input) {
    if (!m) { kiln_set_error(KILN_INVALID_ARGUMENT, "%s: NULL model", kind_base[kind]); return NULL; }
    if (m->status != KILN_OK) { nn_check(m); return NULL; }
    if (!input) input = m->output;
    if (!input) {
        nn_fail(m, KILN_INVALID_ARGUMENT, "%s: no input: this functional model has no layer yet; pass .input (from kiln_input())", name ? name : kind_base[kind]);
        return NULL;
    }
    return nn_layer_new(m, kind, name, &input, 1);
}

kiln_layer *kiln_input(kiln_model *m, kiln_shape shape) {
    if (!m) { kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_input: NULL model"); return NULL; }
    if (!m->functional) { nn_fail(m, KILN_INVALID_ARGUMENT, "kiln_input: model '%s' is sequential (its input comes from kiln_sequential)", m->name); return NULL; }
    kiln_layer *l = nn_layer_new(m, NN_INPUT, NULL, NULL, 0);
    if (!l) return NULL;
    char b[96];
    if (shape.rank < 1 || shape.rank > KILN_MAX_DIMS - 1) return reject(m, l, KILN_INVALID_ARGUMENT, "input shape %s must have 1..%d dims (batch excluded)", kiln_shape_str(shape, b, sizeof b), KILN_MAX_DIMS - 1);
    for (int i = 0; i < shape.rank; i++)
        if (shape.dim[i] <= 0) return reject(m, l, KILN_INVALID_ARGUMENT, "input shape %s has a dimension <= 0", kiln_shape_str(shape, b, sizeof b));
    l->out = shape;
    m->layers[m->n_layers++] = l;
    if (!m->input) m->input = l;
    return l;
}

static kiln_init default_init(const kiln_init *given, kiln_init dflt) { return given ? *given : dflt; }

/* Output size of a window op along one axis; -1 when the window does not fit. */
static int64_t out_dim(int64_t in, int k, int s, int d, kiln_padding p) {
    if (p == KILN_SAME) return (in + s - 1) / s;
    int64_t eff = (int64_t)(k - 1) * d + 1;
    if (in < eff) return -1;
    return (in - eff) / s + 1;
}

static kiln_layer *conv_common(kiln_model *m, const kiln_conv2d_opts *o, nn_kind kind) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: options are required (.filters, .kernel)", kind_base[kind]); return NULL; }
    kiln_layer *l = single(m, kind, o->name, o->input);
    if (!l) return NULL;
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (s.rank != 3) return reject(m, l, KILN_SHAPE_MISMATCH, "input %s must be an image batch (None, height, width, channels); add kiln_layer_reshape() before it", batched_str(s, b, sizeof b));
    l->kh = o->kernel_h ? o->kernel_h : o->kernel;
    l->kw = o->kernel_w ? o->kernel_w : o->kernel;
    l->sh = o->stride_h ? o->stride_h : (o->strides ? o->strides : 1);
    l->sw = o->stride_w ? o->stride_w : (o->strides ? o->strides : 1);
    l->dil = o->dilation ? o->dilation : 1;
    l->padding = o->padding;
    l->act = o->activation;
    l->use_bias = !o->no_bias;
    if (l->kh <= 0 || l->kw <= 0) return reject(m, l, KILN_INVALID_ARGUMENT, "set .kernel (e.g. 3) or .kernel_h/.kernel_w (got %dx%d)", l->kh, l->kw);
    if (l->sh <= 0 || l->sw <= 0 || l->dil <= 0) return reject(m, l, KILN_INVALID_ARGUMENT, "strides and dilation must be positive");
    if ((unsigned)l->padding > KILN_SAME) return reject(m, l, KILN_INVALID_ARGUMENT, "padding must be KILN_VALID or KILN_SAME");
    if ((unsigned)l->act >= KILN_ACTIVATION_COUNT) return reject(m, l, KILN_INVALID_ARGUMENT, "unknown activation %d", (int)l->act);
    int64_t cin = s.dim[2];
    int64_t cout;
    if (kind == NN_DWCONV2D) {
        int mult = o->depth_multiplier ? o->depth_multiplier : 1;
        if (mult <= 0) return reject(m, l, KILN_INVALID_ARGUMENT, "depth_multiplier must be positive");
        l->groups = (int)cin;
        cout = cin * mult;
        l->filters = (int)cout;
    } else {
        l->groups = o->groups ? o->groups : 1;
        l->filters = o->filters;
        if (o->filters <= 0) return reject(m, l, KILN_INVALID_ARGUMENT, "set .filters to the number of output channels (got %d)", o->filters);
        if (cin % l->groups || o->filters % l->groups)
            return reject(m, l, KILN_SHAPE_MISMATCH, "groups=%d must divide the input channels (%lld) and the filters (%d)", l->groups, (long long)cin, o->filters);
        cout = o->filters;
    }
    int64_t oh = out_dim(s.dim[0], l->kh, l->sh, l->dil, l->padding), ow = out_dim(s.dim[1], l->kw, l->sw, l->dil, l->padding);
    if (oh <= 0 || ow <= 0)
        return reject(m, l, KILN_SHAPE_MISMATCH, "kernel %dx%d (dilation %d) does not fit input %s with padding valid; use .padding = KILN_SAME or a smaller kernel",
                      l->kh, l->kw, l->dil, batched_str(s, b, sizeof b));
    l->out = KILN_SHAPE(oh, ow, cout);
    add_var(l, kind == NN_DWCONV2D ? "depthwise_kernel" : "kernel", KILN_SHAPE(l->kh, l->kw, cin / l->groups, cout),
            default_init(o->kernel_initializer, kiln_init_glorot_uniform(0)), true, o->l2);
    if (l->use_bias) add_var(l, "bias", KILN_SHAPE(cout), default_init(o->bias_initializer, kiln_init_zeros()), true, 0);
    return commit(m, l);
}

kiln_layer *kiln_layer_conv2d(kiln_model *m, const kiln_conv2d_opts *o) { return conv_common(m, o, NN_CONV2D); }
kiln_layer *kiln_layer_depthwise_conv2d(kiln_model *m, const kiln_conv2d_opts *o) { return conv_common(m, o, NN_DWCONV2D); }

kiln_layer *kiln_layer_dense(kiln_model *m, const kiln_dense_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "dense: options are required (.units)"); return NULL; }
    kiln_layer *l = single(m, NN_DENSE, o->name, o->input);
    if (!l) return NULL;
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (s.rank != 1)
        return reject(m, l, KILN_SHAPE_MISMATCH, "input %s has %d dims; Dense needs flat input (None, features): add kiln_layer_flatten() before it",
                      batched_str(s, b, sizeof b), s.rank + 1);
    if (o->units <= 0) return reject(m, l, KILN_INVALID_ARGUMENT, "set .units to the number of outputs (got %d)", o->units);
    if ((unsigned)o->activation >= KILN_ACTIVATION_COUNT) return reject(m, l, KILN_INVALID_ARGUMENT, "unknown activation %d", (int)o->activation);
    l->units = o->units;
    l->act = o->activation;
    l->use_bias = !o->no_bias;
    l->out = KILN_SHAPE(o->units);
    add_var(l, "kernel", KILN_SHAPE(s.dim[0], o->units), default_init(o->kernel_initializer, kiln_init_glorot_uniform(0)), true, o->l2);
    if (l->use_bias) add_var(l, "bias", KILN_SHAPE(o->units), default_init(o->bias_initializer, kiln_init_zeros()), true, 0);
    return commit(m, l);
}

static kiln_layer *pool_common(kiln_model *m, const kiln_pool_opts *o, nn_kind kind) {
    kiln_pool_opts d = { 0 };
    if (!o) o = &d;
    kiln_layer *l = single(m, kind, o->name, o->input);
    if (!l) return NULL;
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (s.rank != 3) return reject(m, l, KILN_SHAPE_MISMATCH, "input %s must be an image batch (None, height, width, channels)", batched_str(s, b, sizeof b));
    int size = o->size ? o->size : 2;
    l->kh = o->size_h ? o->size_h : size;
    l->kw = o->size_w ? o->size_w : size;
    l->sh = o->stride_h ? o->stride_h : (o->strides ? o->strides : l->kh);
    l->sw = o->stride_w ? o->stride_w : (o->strides ? o->strides : l->kw);
    l->padding = o->padding;
    l->dil = 1;
    if (l->kh <= 0 || l->kw <= 0 || l->sh <= 0 || l->sw <= 0) return reject(m, l, KILN_INVALID_ARGUMENT, "window and strides must be positive");
    if ((unsigned)l->padding > KILN_SAME) return reject(m, l, KILN_INVALID_ARGUMENT, "padding must be KILN_VALID or KILN_SAME");
    int64_t oh = out_dim(s.dim[0], l->kh, l->sh, 1, l->padding), ow = out_dim(s.dim[1], l->kw, l->sw, 1, l->padding);
    if (oh <= 0 || ow <= 0)
        return reject(m, l, KILN_SHAPE_MISMATCH, "window %dx%d does not fit input %s with padding valid; use .padding = KILN_SAME or a smaller window",
                      l->kh, l->kw, batched_str(s, b, sizeof b));
    l->out = KILN_SHAPE(oh, ow, s.dim[2]);
    return commit(m, l);
}

kiln_layer *kiln_layer_max_pool2d(kiln_model *m, const kiln_pool_opts *o) { return pool_common(m, o, NN_MAXPOOL); }
kiln_layer *kiln_layer_avg_pool2d(kiln_model *m, const kiln_pool_opts *o) { return pool_common(m, o, NN_AVGPOOL); }

kiln_layer *kiln_layer_global_avg_pool2d(kiln_model *m, const kiln_layer_opts *o) {
    kiln_layer *l = single(m, NN_GAP, o ? o->name : NULL, o ? o->input : NULL);
    if (!l) return NULL;
    kiln_shape s = l->in[0]->out;
    char b[96];
    if (s.rank != 3) return reject(m, l, KILN_SHAPE_MISMATCH, "input %s must be an image batch (None, height, width, channels)", batched_str(s, b, sizeof b));
    l->out = KILN_SHAPE(s.dim[2]);
    return commit(m, l);
}

kiln_layer *kiln_layer_flatten(kiln_model *m, const kiln_layer_opts *o) {
    kiln_layer *l = single(m, NN_FLATTEN, o ? o->name : NULL, o ? o->input : NULL);
    if (!l) return NULL;
    l->out = KILN_SHAPE(kiln_shape_numel(l->in[0]->out));
    return commit(m, l);
}

kiln_layer *kiln_layer_reshape(kiln_model *m, const kiln_reshape_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "reshape: options are required (.shape)"); return NULL; }
    kiln_layer *l = single(m, NN_RESHAPE, o->name, o->input);
    if (!l) return NULL;
    kiln_shape t = o->shape, s = l->in[0]->out;
    char b[96], c[96];
    if (t.rank < 1 || t.rank > KILN_MAX_DIMS - 1) return reject(m, l, KILN_INVALID_ARGUMENT, "target shape must have 1..%d dims (batch excluded)", KILN_MAX_DIMS - 1);
    int64_t known = 1; int infer = -1;
    for (int i = 0; i < t.rank; i++) {
        if (t.dim[i] == -1 && infer < 0) infer = i;
        else if (t.dim[i] <= 0) return reject(m, l, KILN_INVALID_ARGUMENT, "target shape %s: dims must be positive (one may be -1)", kiln_shape_str(t, b, sizeof b));
        else known *= t.dim[i];
    }
    int64_t n = kiln_shape_numel(s);
    if (infer >= 0) {
        if (n % known) return reject(m, l, KILN_SHAPE_MISMATCH, "cannot reshape input %s (%lld values) to %s", batched_str(s, b, sizeof b), (long long)n, kiln_shape_str(t, c, sizeof c));
        t.dim[infer] = n / known;
    } else if (known != n)
        return reject(m, l, KILN_SHAPE_MISMATCH, "cannot reshape input %s (%lld values) to %s (%lld values)", batched_str(s, b, sizeof b), (long long)n, kiln_shape_str(t, c, sizeof c), (long long)known);
    l->target = t;
    l->out = t;
    return commit(m, l);
}

kiln_layer *kiln_layer_dropout(kiln_model *m, const kiln_dropout_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "dropout: options are required (.rate)"); return NULL; }
    kiln_layer *l = single(m, NN_DROPOUT, o->name, o->input);
    if (!l) return NULL;
    if (!(o->rate >= 0 && o->rate < 1)) return reject(m, l, KILN_INVALID_ARGUMENT, "rate %g must be in [0, 1)", o->rate);
    l->rate = o->rate;
    l->seed = o->seed;
    l->out = l->in[0]->out;
    return commit(m, l);
}

kiln_layer *kiln_layer_batch_norm(kiln_model *m, const kiln_batch_norm_opts *o) {
    kiln_batch_norm_opts d = { 0 };
    if (!o) o = &d;
    kiln_layer *l = single(m, NN_BN, o->name, o->input);
    if (!l) return NULL;
    kiln_shape s = l->in[0]->out;
    l->momentum = o->momentum ? o->momentum : 0.99;
    l->epsilon = o->epsilon ? o->epsilon : 1e-3;
    if (!(l->momentum > 0 && l->momentum < 1) || !(l->epsilon > 0)) return reject(m, l, KILN_INVALID_ARGUMENT, "momentum must be in (0, 1) and epsilon > 0");
    int64_t c = s.dim[s.rank - 1];
    l->out = s;
    add_var(l, "gamma", KILN_SHAPE(c), kiln_init_ones(), true, 0);
    add_var(l, "beta", KILN_SHAPE(c), kiln_init_zeros(), true, 0);
    add_var(l, "moving_mean", KILN_SHAPE(c), kiln_init_zeros(), false, 0);
    add_var(l, "moving_variance", KILN_SHAPE(c), kiln_init_ones(), false, 0);
    return commit(m, l);
}

kiln_layer *kiln_layer_activation(kiln_model *m, const kiln_activation_opts *o) {
    if (!o) { nn_fail(m, KILN_INVALID_ARGUMENT, "activation: options are required (.activation)"); return NULL; }
    kiln_layer *l = single(m, NN_ACTIVATION, o->name, o->input);
    if (!l) return NULL;
    if ((unsigned)o->activation >= KILN_ACTIVATION_COUNT) return reject(m, l, KILN_INVALID_ARGUMENT, "unknown activation %d", (int)o->activation);
    l->act = o->activation;
    l->out = l->in[0]->out;
    return commit(m, l);
}

static kiln_layer *merge_common(kiln_model *m, const kiln_merge_opts *o, nn_kind kind) {
    if (!m) { kiln_set_error(KILN_INVALID_ARGUMENT, "%s: NULL model", kind_base[kind]); return NULL; }
    if (m->status != KILN_OK) { nn_check(m); return NULL; }
    if (!o || !o->inputs || o->n_inputs < 2) { nn_fail(m, KILN_INVALID_ARGUMENT, "%s: needs .inputs with at least 2 layer outputs", kind_base[kind]); return NULL; }
    kiln_layer *l = nn_layer_new(m, kind, o->name, o->inputs, o->n_inputs);
    if (!l) return NULL;
    kiln_shape s0 = l->in[0]->out;
    char b[96], c[96];
    if (kind == NN_ADD) {
        for (int i = 1; i < l->n_in; i++)
            if (!kiln_shape_equal(l->in[i]->out, s0))
                return reject(m, l, KILN_SHAPE_MISMATCH, "inputs must have the same shape: %s (%s) vs %s (%s)",
                              batched_str(s0, b, sizeof b), l->in[0]->name, batched_str(l->in[i]->out, c, sizeof c), l->in[i]->name);
        l->out = s0;
    } else {
        int rank_b = s0.rank + 1;
        int axis = o->axis ? o->axis : -1;
        if (axis < 0) axis += rank_b;
        if (axis <= 0 || axis >= rank_b) return reject(m, l, KILN_INVALID_ARGUMENT, "axis %d out of range for inputs of rank %d (the batch axis 0 cannot be concatenated)", o->axis, rank_b);
        l->axis = axis;
        kiln_shape out = s0;
        for (int i = 1; i < l->n_in; i++) {
            kiln_shape si = l->in[i]->out;
            bool ok = si.rank == s0.rank;
            for (int d = 0; ok && d < s0.rank; d++) if (d != axis - 1 && si.dim[d] != s0.dim[d]) ok = false;
            if (!ok) return reject(m, l, KILN_SHAPE_MISMATCH, "inputs must match except on axis %d: %s (%s) vs %s (%s)", axis,
                                   batched_str(s0, b, sizeof b), l->in[0]->name, batched_str(si, c, sizeof c), l->in[i]->name);
            out.dim[axis - 1] += si.dim[axis - 1];
        }
        l->out = out;
    }
    return commit(m, l);
}

kiln_layer *kiln_layer_concatenate(kiln_model *m, const kiln_merge_opts *o) { return merge_common(m, o, NN_CONCAT); }
kiln_layer *kiln_layer_add(kiln_model *m, const kiln_merge_opts *o) { return merge_common(m, o, NN_ADD); }

int64_t nn_layer_params(const kiln_layer *l, bool trainable_only) {
    int64_t n = 0;
    for (int i = 0; i < l->n_vars; i++)
        if (!trainable_only || l->vars[i].trainable) n += kiln_shape_numel(l->vars[i].shape);
    return n;
}

/* Seeds of random initializers left at 0 come from the model seed, the layer and the variable. */
kiln_status nn_create_variables(kiln_model *m, kiln_graph *g) {
    for (int i = 0; i < m->n_layers; i++) {
        kiln_layer *l = m->layers[i];
        for (int j = 0; j < l->n_vars; j++) {
            nn_var *v = &l->vars[j];
            kiln_init init = v->init;
            if (init.seed == 0) init.seed = kiln_mix64(m->seed * 0x100000001B3ull + (uint64_t)i * 16 + (uint64_t)j + 1);
            v->node = kiln_variable_trainable(g, v->name, KILN_F32, v->shape, init, v->trainable);
            if (!v->node) return nn_fail(m, kiln_graph_status(g), "%s: cannot create variable %s: %s", l->name, v->name, kiln_graph_error(g));
            if (strcmp(kiln_node_name(v->node), v->name))
                return nn_fail(m, KILN_INTERNAL, "%s: variable %s was named %s in the graph (name clash)", l->name, v->name, kiln_node_name(v->node));
        }
    }
    return KILN_OK;
}

static kiln_node *activate(kiln_graph *g, kiln_node *x, kiln_activation a) {
    switch (a) {
    case KILN_RELU: return kiln_relu(g, x);
    case KILN_SIGMOID: return kiln_sigmoid(g, x);
    case KILN_TANH: return kiln_tanh(g, x);
    case KILN_SOFTMAX: return kiln_softmax(g, x, -1);
    case KILN_GELU: return kiln_gelu(g, x);
    case KILN_ELU: return kiln_elu(g, x, 1.0);
    case KILN_LEAKY_RELU: return kiln_leaky_relu(g, x, 0.2);   /* Keras LeakyReLU default (TF2.x: 0.3) */
    case KILN_SOFTPLUS: return kiln_softplus(g, x);
    default: return x;
    }
}

static kiln_node *var_node(const kiln_layer *l, const char *suffix) {
    size_t n = strlen(l->name);
    for (int i = 0; i < l->n_vars; i++)
        if (!strncmp(l->vars[i].name, l->name, n) && l->vars[i].name[n] == '/' && !strcmp(l->vars[i].name + n + 1, suffix))
            return l->vars[i].node;
    return NULL;
}

/* Emits the layer's ops on its inputs' nodes (already built); returns its output node. */
kiln_node *nn_layer_forward(kiln_model *m, kiln_layer *l, kiln_graph *g, int batch, bool training) {
    kiln_node *x = l->n_in ? l->in[0]->node : NULL, *y = NULL;
    kiln_graph_push_scope(g, l->name);
    switch (l->kind) {
    case NN_INPUT: y = l->node; break;
    case NN_DENSE:
        y = kiln_matmul(g, x, var_node(l, "kernel"), false, false);
        if (l->use_bias) y = kiln_bias_add(g, y, var_node(l, "bias"));
        y = activate(g, y, l->act);
        break;
    case NN_CONV2D: case NN_DWCONV2D: {
        kiln_conv_params p = { .stride_h = l->sh, .stride_w = l->sw, .dilation_h = l->dil, .dilation_w = l->dil,
                               .padding = l->padding, .groups = l->groups };
        y = kiln_conv2d(g, x, var_node(l, l->kind == NN_DWCONV2D ? "depthwise_kernel" : "kernel"), &p);
        if (l->use_bias) y = kiln_bias_add(g, y, var_node(l, "bias"));
        y = activate(g, y, l->act);
        break;
    }
    case NN_MAXPOOL: case NN_AVGPOOL: {
        kiln_pool_params p = { .size_h = l->kh, .size_w = l->kw, .stride_h = l->sh, .stride_w = l->sw, .padding = l->padding };
        y = l->kind == NN_MAXPOOL ? kiln_max_pool2d(g, x, &p) : kiln_avg_pool2d(g, x, &p);
        break;
    }
    case NN_GAP: y = kiln_global_avg_pool2d(g, x); break;
    case NN_FLATTEN: y = kiln_reshape(g, x, KILN_SHAPE(batch, l->out.dim[0])); break;
    case NN_RESHAPE: {
        kiln_shape s = { .rank = l->target.rank + 1 };
        s.dim[0] = batch;
        for (int i = 0; i < l->target.rank; i++) s.dim[i + 1] = l->target.dim[i];
        y = kiln_reshape(g, x, s);
        break;
    }
    case NN_DROPOUT:
        if (!training || l->rate == 0) y = x;
        else y = kiln_dropout(g, x, l->rate, l->seed ? l->seed : kiln_mix64(m->seed ^ (0xD0D0ull + (uint64_t)l->index)), true);
        break;
    case NN_BN:
        y = kiln_batch_norm(g, x, var_node(l, "gamma"), var_node(l, "beta"), var_node(l, "moving_mean"),
                            var_node(l, "moving_variance"), l->momentum, l->epsilon, training);
        break;
    case NN_ACTIVATION: y = activate(g, x, l->act); break;
    case NN_CONCAT: {
        kiln_node *xs[NN_MAX_MERGE];
        for (int i = 0; i < l->n_in; i++) xs[i] = l->in[i]->node;
        y = kiln_concat(g, xs, l->n_in, l->axis);
        break;
    }
    case NN_ADD:
        y = x;
        for (int i = 1; i < l->n_in; i++) y = kiln_add(g, y, l->in[i]->node);
        break;
    default: break;
    }
    kiln_graph_pop_scope(g);
    if (!y) {
        char b[96];
        nn_fail(m, kiln_graph_status(g) ? kiln_graph_status(g) : KILN_INTERNAL, "%s (%s), input %s: %s", l->name, kind_type[l->kind],
                batched_str(l->n_in ? l->in[0]->out : l->out, b, sizeof b), kiln_graph_error(g));
    }
    l->node = y;
    return y;
}
