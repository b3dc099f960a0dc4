/* The layer table (src/nn/layers.def) and nn_layer_from_options: every type is in the table under
 * its Keras class name with valid schema defaults; layers built from key/value options equal the
 * typed builders' (summary, parameters, predictions); bad types, keys and values are errors
 * naming the layer and the key. */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/nn.h"
#include "nn/nn_layers.h"

static char *summary_of(const kiln_model *m) {
    FILE *f = tmpfile();
    kiln_model_summary(m, f);
    long n = ftell(f);
    rewind(f);
    char *s = calloc((size_t)n + 1, 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
    fclose(f);
    return s;
}

static void test_table(void) {
    static const char *const keras[] = { "InputLayer", "Dense", "Conv2D", "DepthwiseConv2D", "MaxPooling2D", "AveragePooling2D",
                                         "GlobalAveragePooling2D", "Flatten", "Reshape", "Dropout", "BatchNormalization", "Activation",
                                         "Concatenate", "Add", "ImportedGraph", "ZeroPadding2D", "Cropping2D", "UpSampling2D",
                                         "GlobalMaxPooling2D", "SeparableConv2D", "Rescaling", "Normalization", "LeakyReLU", "ELU",
                                         "Multiply", "Subtract", "Average", "Maximum", "Minimum", "ReLU", "Embedding", "LayerNormalization",
                                         "MultiHeadAttention", "PositionEmbedding", "Conv1D", "MaxPooling1D", "AveragePooling1D",
                                         "GlobalAveragePooling1D", "GlobalMaxPooling1D", "UpSampling1D", "Conv2DTranspose", "SpatialDropout2D",
                                         "SimpleRNN", "LSTM", "GRU", "Bidirectional", "PReLU", "LayerScale",
                                         "GPTBlock", "TiedOutput", "GaussianNoise", "GaussianDropout" };
    CHECK(NN_KIND_COUNT == (int)(sizeof keras / sizeof *keras));
    for (int i = 0; i < (int)(sizeof keras / sizeof *keras); i++) {
        nn_kind k;
        CHECK_MSG(nn_layer_kind_named(keras[i], &k), "%s not in the layer table", keras[i]);
        const nn_layer_def *d = nn_layer_kind_named(keras[i], &k) ? nn_layer_def_of(k) : NULL;
        CHECK(d && !strcmp(d->type, keras[i]) && d->opts && d->shape && d->forward && d->base && *d->base);
        for (int j = 0; d && d->opts[j].key; j++) CHECK_MSG(j < 64, "%s: more schema entries than nn_layer_from_options tracks", keras[i]);
    }
    nn_kind k;
    CHECK(!nn_layer_kind_named("Conv3D", &k) && !nn_layer_kind_named(NULL, &k));
}

/* A fresh model holding inputs suited to type t: an image (6, 6, 4), or its flat version for
 * Dense; two images for merges. Returns the inputs in in[], their count in *n_in. */
static kiln_model *model_for(nn_kind t, kiln_layer **in, int *n_in) {
    kiln_model *m = kiln_model_new("t");
    kiln_layer *x = kiln_input(m, KILN_SHAPE(6, 6, 4));
    *n_in = 1;
    in[0] = x;
    if (t == NN_INPUT) *n_in = 0;
    if (t == NN_DENSE) in[0] = kiln_layer_flatten(m, &(kiln_layer_opts){ .input = x });
    if (t == NN_MHA || t == NN_POS_EMBEDDING || t == NN_CONV1D || t == NN_MAXPOOL1D || t == NN_AVGPOOL1D || t == NN_GAP1D || t == NN_GMP1D || t == NN_UPSAMPLE1D ||
        t == NN_SIMPLE_RNN || t == NN_LSTM || t == NN_GRU || t == NN_BIDIRECTIONAL || t == NN_GPT_BLOCK) in[0] = kiln_layer_reshape(m, &(kiln_reshape_opts){ .input = x, .shape = KILN_SHAPE(36, 4) });
    if (t == NN_TIED_OUTPUT) {    /* the hidden sequence (36, 4) and an Embedding of width 4 */
        in[0] = kiln_layer_reshape(m, &(kiln_reshape_opts){ .input = x, .shape = KILN_SHAPE(36, 4) });
        in[1] = kiln_layer_embedding(m, &(kiln_embedding_opts){ .input = kiln_layer_reshape(m, &(kiln_reshape_opts){ .input = x, .shape = KILN_SHAPE(144) }),
                                                                 .input_dim = 10, .output_dim = 4 });
        *n_in = 2;
    }
    if (t == NN_CONCAT || t == NN_ADD || t == NN_MULTIPLY || t == NN_SUBTRACT || t == NN_AVERAGE || t == NN_MAXIMUM || t == NN_MINIMUM) { in[1] = kiln_layer_activation(m, &(kiln_activation_opts){ .input = x, .activation = KILN_RELU }); *n_in = 2; }
    return m;
}

/* The required options of each type, with values that fit model_for's inputs. */
static int required_opts(nn_kind t, nn_opt *o) {
    switch (t) {
    case NN_INPUT: o[0] = NN_INTS("shape", 3, 2); return 1;
    case NN_DENSE: o[0] = NN_INT("units", 3); return 1;
    case NN_CONV2D: o[0] = NN_INT("filters", 2); o[1] = NN_INT("kernel_size", 3); return 2;
    case NN_DWCONV2D: o[0] = NN_INTS("kernel_size", 3, 3); return 1;
    case NN_RESHAPE: o[0] = NN_INTS("target_shape", 36, -1); return 1;
    case NN_DROPOUT: o[0] = NN_FLOAT("rate", 0.25); return 1;
    case NN_ACTIVATION: o[0] = NN_STR("activation", "tanh"); return 1;
    case NN_SEPCONV2D: o[0] = NN_INT("filters", 2); o[1] = NN_INT("kernel_size", 3); return 2;
    case NN_RESCALING: o[0] = NN_FLOAT("scale", 0.5); return 1;
    case NN_EMBEDDING: o[0] = NN_INT("input_dim", 10); o[1] = NN_INT("output_dim", 3); return 2;
    case NN_MHA: o[0] = NN_INT("num_heads", 2); o[1] = NN_INT("key_dim", 3); return 2;
    case NN_POS_EMBEDDING: o[0] = NN_INT("sequence_length", 40); return 1;
    case NN_CONV1D: o[0] = NN_INT("filters", 2); o[1] = NN_INTS("kernel_size", 3); return 2;
    case NN_CONV2D_TRANSPOSE: o[0] = NN_INT("filters", 2); o[1] = NN_INT("kernel_size", 3); return 2;
    case NN_SPATIAL_DROPOUT2D: o[0] = NN_FLOAT("rate", 0.25); return 1;
    case NN_SIMPLE_RNN: case NN_LSTM: case NN_GRU: o[0] = NN_INT("units", 3); return 1;
    case NN_BIDIRECTIONAL: o[0] = NN_STR("layer", "GRU"); o[1] = NN_INT("units", 3); return 2;
    case NN_LAYER_SCALE: o[0] = NN_FLOAT("init_values", 0.5); o[1] = NN_INT("projection_dim", 4); return 2;
    case NN_GPT_BLOCK: o[0] = NN_INT("num_heads", 2); return 1;
    case NN_GAUSSIAN_NOISE: o[0] = NN_FLOAT("stddev", 0.1); return 1;
    case NN_GAUSSIAN_DROPOUT: o[0] = NN_FLOAT("rate", 0.1); return 1;
    default: return 0;
    }
}

/* Every type builds from its required options alone, and with each schema default given
 * explicitly (so the defaults are values the schema accepts); leaving out a required option is
 * an error naming it. */
static void test_defaults_valid(void) {
    for (int t = 0; t < NN_KIND_COUNT; t++) {
        const nn_layer_def *d = nn_layer_def_of((nn_kind)t);
        if (t == NN_IMPORTED) {     /* its ops come from a file (ONNX), not from options: an error saying so */
            kiln_layer *in[2];
            int n_in;
            kiln_model *m = model_for((nn_kind)t, in, &n_in);
            CHECK(nn_layer_from_options(m, d->type, in, n_in, NULL, 0) == NULL);
            CHECK_MSG(strstr(kiln_model_error(m), "kiln_model_from_onnx"), "%s", kiln_model_error(m));
            kiln_model_free(m);
            continue;
        }
        kiln_layer *in[2];
        int n_in;
        nn_opt o[40];
        int n = required_opts((nn_kind)t, o), req = 0;
        for (int j = 0; d->opts[j].key; j++) req += d->opts[j].dflt.kind == NN_V_NONE;
        CHECK_MSG(req == n, "%s: %d required options in the schema, %d in this test", d->type, req, n);
        kiln_model *m = model_for((nn_kind)t, in, &n_in);
        CHECK_MSG(nn_layer_from_options(m, d->type, in, n_in, o, n) != NULL, "%s: %s", d->type, kiln_model_error(m));
        kiln_model_free(m);
        int k = n;
        for (int j = 0; d->opts[j].key; j++)
            if (d->opts[j].dflt.kind >= NN_V_INT) o[k++] = (nn_opt){ .key = d->opts[j].key, .val = d->opts[j].dflt };
        m = model_for((nn_kind)t, in, &n_in);
        CHECK_MSG(nn_layer_from_options(m, d->type, in, n_in, o, k) != NULL, "%s with its defaults: %s", d->type, kiln_model_error(m));
        kiln_model_free(m);
        for (int r = 0; r < n; r++) {          /* each required option left out */
            nn_opt less[4];
            int nl = 0;
            for (int i = 0; i < n; i++) if (i != r) less[nl++] = o[i];
            m = model_for((nn_kind)t, in, &n_in);
            CHECK(nn_layer_from_options(m, d->type, in, n_in, less, nl) == NULL);
            CHECK_MSG(strstr(kiln_model_error(m), o[r].key) && strstr(kiln_model_error(m), "missing"), "%s", kiln_model_error(m));
            kiln_model_free(m);
        }
    }
}

/* Same summary, parameter count and (bit for bit) predictions. */
static void check_same(kiln_model *a, kiln_model *b, const char *what) {
    CHECK_MSG(kiln_model_status(a) == KILN_OK, "%s typed: %s", what, kiln_model_error(a));
    CHECK_MSG(kiln_model_status(b) == KILN_OK, "%s options: %s", what, kiln_model_error(b));
    char *sa = summary_of(a), *sb = summary_of(b);
    CHECK_MSG(!strcmp(sa, sb), "%s:\n%s\nvs\n%s", what, sa, sb);
    CHECK(kiln_model_param_count(a, false) == kiln_model_param_count(b, false) && kiln_model_param_count(a, false) > 0);
    CHECK(kiln_model_param_count(a, true) == kiln_model_param_count(b, true));
    free(sa);
    free(sb);
    kiln_shape is = kiln_model_input_shape(a), xs = { .rank = is.rank + 1 };
    xs.dim[0] = 3;
    for (int i = 0; i < is.rank; i++) xs.dim[i + 1] = is.dim[i];
    kiln_tensor *x = kiln_tensor_new(KILN_F32, xs), *ya = NULL, *yb = NULL;
    for (int64_t i = 0; i < kiln_shape_numel(x->shape); i++) kiln_tensor_set(x, i, (double)((i * 37) % 11) / 5.0 - 1.0);
    kiln_model_set_seed(a, 7);
    kiln_model_set_seed(b, 7);
    CHECK_OK(kiln_predict(a, x, &(kiln_eval_opts){ .batch_size = 3 }, &ya));
    CHECK_OK(kiln_predict(b, x, &(kiln_eval_opts){ .batch_size = 3 }, &yb));
    CHECK_MSG(ya && yb && kiln_tensor_nbytes(ya) == kiln_tensor_nbytes(yb) && !memcmp(ya->data, yb->data, kiln_tensor_nbytes(ya)), "%s: predictions differ", what);
    bool varied = false;
    for (int64_t i = 1; ya && i < kiln_shape_numel(ya->shape); i++) varied |= kiln_tensor_get(ya, i) != kiln_tensor_get(ya, 0);
    CHECK_MSG(varied, "%s: constant predictions compare nothing", what);
    kiln_tensor_free(x);
    kiln_tensor_free(ya);
    kiln_tensor_free(yb);
    kiln_model_free(a);
    kiln_model_free(b);
}

#define ADD(m, type, ...) nn_layer_from_options(m, type, NULL, 0, (nn_opt[]){ __VA_ARGS__ }, (int)(sizeof((nn_opt[]){ __VA_ARGS__ }) / sizeof(nn_opt)))

static void test_sequential_same(void) {
    kiln_model *a = kiln_sequential("cnn", KILN_SHAPE(9, 9, 3));
    kiln_layer_conv2d(a, &(kiln_conv2d_opts){ .filters = 6, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_depthwise_conv2d(a, &(kiln_conv2d_opts){ .kernel_h = 3, .kernel_w = 1, .depth_multiplier = 2, .no_bias = true, .stride_w = 2 });
    kiln_layer_batch_norm(a, &(kiln_batch_norm_opts){ .momentum = 0.9 });
    kiln_layer_conv2d(a, &(kiln_conv2d_opts){ .name = "grouped", .filters = 4, .kernel = 1, .groups = 2, .dilation = 1, .activation = KILN_TANH, .l2 = 1e-3 });
    kiln_layer_max_pool2d(a, &(kiln_pool_opts){ .size = 2, .padding = KILN_SAME });
    kiln_layer_avg_pool2d(a, &(kiln_pool_opts){ .size_h = 2, .size_w = 1, .strides = 1 });
    kiln_layer_flatten(a, NULL);
    kiln_layer_dense(a, &(kiln_dense_opts){ .units = 7, .activation = KILN_ELU, .kernel_initializer = &(kiln_init){ .kind = KILN_INIT_HE_NORMAL } });
    kiln_layer_dropout(a, &(kiln_dropout_opts){ .rate = 0.3 });
    kiln_layer_dense(a, &(kiln_dense_opts){ .units = 3, .activation = KILN_SOFTMAX });

    kiln_model *b = kiln_sequential("cnn", KILN_SHAPE(9, 9, 3));
    ADD(b, "Conv2D", NN_INT("filters", 6), NN_INT("kernel_size", 3), NN_STR("padding", "same"), NN_STR("activation", "relu"));
    ADD(b, "DepthwiseConv2D", NN_INTS("kernel_size", 3, 1), NN_INT("depth_multiplier", 2), NN_BOOL("use_bias", false), NN_INTS("strides", 1, 2));
    ADD(b, "BatchNormalization", NN_FLOAT("momentum", 0.9));
    ADD(b, "Conv2D", NN_STR("name", "grouped"), NN_INT("filters", 4), NN_INTS("kernel_size", 1), NN_INT("groups", 2), NN_INTS("dilation_rate", 1, 1),
        NN_STR("activation", "tanh"), NN_FLOAT("kernel_regularizer", 1e-3));
    ADD(b, "MaxPooling2D", NN_INT("pool_size", 2), NN_STR("padding", "SAME"));
    ADD(b, "AveragePooling2D", NN_INTS("pool_size", 2, 1), NN_INT("strides", 1));
    nn_layer_from_options(b, "Flatten", NULL, 0, NULL, 0);
    ADD(b, "Dense", NN_INT("units", 7), NN_STR("activation", "elu"), NN_INIT("kernel_initializer", ((kiln_init){ .kind = KILN_INIT_HE_NORMAL })));
    ADD(b, "Dropout", NN_FLOAT("rate", 0.3), NN_NULL("seed"));
    ADD(b, "Dense", NN_INT("units", 3), NN_STR("activation", "softmax"));
    check_same(a, b, "sequential");
}

static void test_functional_same(void) {
    kiln_model *a = kiln_model_new("fn");
    kiln_layer *x = kiln_input(a, KILN_SHAPE(5, 5, 2));
    kiln_layer *c1 = kiln_layer_conv2d(a, &(kiln_conv2d_opts){ .input = x, .filters = 3, .kernel = 3, .padding = KILN_SAME });
    kiln_layer *c2 = kiln_layer_conv2d(a, &(kiln_conv2d_opts){ .input = x, .filters = 3, .kernel = 1, .activation = KILN_SIGMOID });
    kiln_layer *s = kiln_layer_add(a, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ c1, c2 }, .n_inputs = 2 });
    kiln_layer *cat = kiln_layer_concatenate(a, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ s, c1, x }, .n_inputs = 3 });
    kiln_layer *g = kiln_layer_global_avg_pool2d(a, &(kiln_layer_opts){ .input = cat });
    kiln_layer *r = kiln_layer_reshape(a, &(kiln_reshape_opts){ .input = g, .shape = KILN_SHAPE(2, -1) });
    kiln_layer *cat2 = kiln_layer_concatenate(a, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ r, r }, .n_inputs = 2, .axis = 1 });
    kiln_layer *f = kiln_layer_flatten(a, &(kiln_layer_opts){ .input = cat2 });
    kiln_layer *act = kiln_layer_activation(a, &(kiln_activation_opts){ .input = f, .activation = KILN_GELU });
    kiln_layer *out = kiln_layer_dense(a, &(kiln_dense_opts){ .input = act, .units = 4, .no_bias = true });
    CHECK_OK(kiln_model_functional(a, &x, 1, &out, 1));

    kiln_model *b = kiln_model_new("fn");
    x = nn_layer_from_options(b, "InputLayer", NULL, 0, (nn_opt[]){ NN_INTS("shape", 5, 5, 2) }, 1);
    c1 = nn_layer_from_options(b, "Conv2D", &x, 1, (nn_opt[]){ NN_INT("filters", 3), NN_INTS("kernel_size", 3, 3), NN_STR("padding", "same") }, 3);
    c2 = nn_layer_from_options(b, "Conv2D", &x, 1, (nn_opt[]){ NN_INT("filters", 3), NN_INT("kernel_size", 1), NN_STR("activation", "sigmoid") }, 3);
    s = nn_layer_from_options(b, "Add", (kiln_layer *[]){ c1, c2 }, 2, NULL, 0);
    cat = nn_layer_from_options(b, "Concatenate", (kiln_layer *[]){ s, c1, x }, 3, NULL, 0);
    g = nn_layer_from_options(b, "GlobalAveragePooling2D", &cat, 1, NULL, 0);
    r = nn_layer_from_options(b, "Reshape", &g, 1, (nn_opt[]){ NN_INTS("target_shape", 2, -1) }, 1);
    cat2 = nn_layer_from_options(b, "Concatenate", (kiln_layer *[]){ r, r }, 2, (nn_opt[]){ NN_INT("axis", 1) }, 1);
    f = nn_layer_from_options(b, "Flatten", &cat2, 1, NULL, 0);
    act = nn_layer_from_options(b, "Activation", &f, 1, (nn_opt[]){ NN_STR("activation", "gelu") }, 1);
    out = nn_layer_from_options(b, "Dense", &act, 1, (nn_opt[]){ NN_INT("units", 4), NN_BOOL("use_bias", false) }, 2);
    CHECK_OK(kiln_model_functional(b, &x, 1, &out, 1));
    check_same(a, b, "functional");
}

/* Issue 29's layers: typed builders and options build the same model (broadcasting merges,
 * keepdims pooling, BatchNormalization without beta / gamma, separable convolutions). */
static void test_keras_apps_layers_same(void) {
    kiln_model *a = kiln_model_new("apps");
    kiln_layer *x = kiln_input(a, KILN_SHAPE(6, 6, 3));
    kiln_layer *r = kiln_layer_rescaling(a, &(kiln_rescaling_opts){ .input = x, .scale = 1.0 / 127.5, .offset = -1 });
    kiln_layer *p = kiln_layer_zero_padding2d(a, &(kiln_pad2d_opts){ .input = r, .top = 0, .bottom = 1, .left = 1, .right = 2 });
    kiln_layer *s = kiln_layer_separable_conv2d(a, &(kiln_conv2d_opts){ .input = p, .filters = 4, .kernel = 3, .strides = 1, .depth_multiplier = 2, .activation = KILN_SILU });
    kiln_layer *bn = kiln_layer_batch_norm(a, &(kiln_batch_norm_opts){ .input = s, .no_scale = true });
    kiln_layer *g = kiln_layer_from_config(a, "GlobalAveragePooling2D", "{\"keepdims\": true}", &bn, 1);
    kiln_layer *h = kiln_layer_activation(a, &(kiln_activation_opts){ .input = g, .activation = KILN_HARD_SIGMOID });
    kiln_layer *mul = kiln_layer_multiply(a, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ h, bn }, .n_inputs = 2 });
    kiln_layer *c = kiln_layer_cropping2d(a, &(kiln_pad2d_opts){ .input = mul, .top = 1, .left = 1 });
    kiln_layer *u = kiln_layer_upsampling2d(a, &(kiln_upsampling2d_opts){ .input = c, .size_h = 2, .size_w = 1 });
    kiln_layer *lr = kiln_layer_leaky_relu(a, &(kiln_alpha_opts){ .input = u, .alpha = 0.1 });
    kiln_layer *e = kiln_layer_elu(a, &(kiln_alpha_opts){ .input = u, .alpha = 0.5 });
    kiln_layer *mx = kiln_layer_maximum(a, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ lr, e }, .n_inputs = 2 });
    kiln_layer *mn = kiln_layer_minimum(a, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ lr, e }, .n_inputs = 2 });
    kiln_layer *sb = kiln_layer_subtract(a, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ mx, mn }, .n_inputs = 2 });
    kiln_layer *av = kiln_layer_average(a, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ sb, mx, u }, .n_inputs = 3 });
    kiln_layer *gm = kiln_layer_global_max_pool2d(a, &(kiln_layer_opts){ .input = av });
    kiln_layer *out = kiln_layer_dense(a, &(kiln_dense_opts){ .input = gm, .units = 3, .activation = KILN_MISH });
    CHECK_OK(kiln_model_functional(a, &x, 1, &out, 1));
    CHECK(kiln_layer_output_shape(p).dim[0] == 7 && kiln_layer_output_shape(p).dim[1] == 9);
    CHECK(kiln_layer_output_shape(c).dim[0] == 4 && kiln_layer_output_shape(u).dim[0] == 8 && kiln_layer_output_shape(u).dim[1] == 6);
    /* depthwise 3*3*3*2 + pointwise 6*4 + bias 4; batch norm without gamma: beta + 2 moving */
    CHECK(kiln_layer_weight_count(s) == 3 && kiln_model_param_count(a, false) == 54 + 24 + 4 + 12 + 4 * 3 + 3);

    kiln_model *b = kiln_model_new("apps");
    x = nn_layer_from_options(b, "InputLayer", NULL, 0, (nn_opt[]){ NN_INTS("shape", 6, 6, 3) }, 1);
    r = nn_layer_from_options(b, "Rescaling", &x, 1, (nn_opt[]){ NN_FLOAT("scale", 1.0 / 127.5), NN_FLOAT("offset", -1) }, 2);
    p = nn_layer_from_options(b, "ZeroPadding2D", &r, 1, (nn_opt[]){ NN_INTS("padding", 0, 1, 1, 2) }, 1);
    s = nn_layer_from_options(b, "SeparableConv2D", &p, 1, (nn_opt[]){ NN_INT("filters", 4), NN_INT("kernel_size", 3), NN_INT("depth_multiplier", 2),
                                                                     NN_STR("activation", "swish") }, 4);
    bn = nn_layer_from_options(b, "BatchNormalization", &s, 1, (nn_opt[]){ NN_BOOL("scale", false) }, 1);
    g = nn_layer_from_options(b, "GlobalAveragePooling2D", &bn, 1, (nn_opt[]){ NN_BOOL("keepdims", true) }, 1);
    h = nn_layer_from_options(b, "Activation", &g, 1, (nn_opt[]){ NN_STR("activation", "hard_sigmoid") }, 1);
    mul = nn_layer_from_options(b, "Multiply", (kiln_layer *[]){ h, bn }, 2, NULL, 0);
    c = nn_layer_from_options(b, "Cropping2D", &mul, 1, (nn_opt[]){ NN_INTS("cropping", 1, 0, 1, 0) }, 1);
    u = nn_layer_from_options(b, "UpSampling2D", &c, 1, (nn_opt[]){ NN_INTS("size", 2, 1) }, 1);
    lr = nn_layer_from_options(b, "LeakyReLU", &u, 1, (nn_opt[]){ NN_FLOAT("negative_slope", 0.1) }, 1);
    e = nn_layer_from_options(b, "ELU", &u, 1, (nn_opt[]){ NN_FLOAT("alpha", 0.5) }, 1);
    mx = nn_layer_from_options(b, "Maximum", (kiln_layer *[]){ lr, e }, 2, NULL, 0);
    mn = nn_layer_from_options(b, "Minimum", (kiln_layer *[]){ lr, e }, 2, NULL, 0);
    sb = nn_layer_from_options(b, "Subtract", (kiln_layer *[]){ mx, mn }, 2, NULL, 0);
    av = nn_layer_from_options(b, "Average", (kiln_layer *[]){ sb, mx, u }, 3, NULL, 0);
    gm = nn_layer_from_options(b, "GlobalMaxPooling2D", &av, 1, NULL, 0);
    out = nn_layer_from_options(b, "Dense", &gm, 1, (nn_opt[]){ NN_INT("units", 3), NN_STR("activation", "mish") }, 2);
    CHECK_OK(kiln_model_functional(b, &x, 1, &out, 1));
    check_same(a, b, "keras.applications layers");
    /* errors name the layer and the option */
    kiln_model *m = kiln_model_new("bad");
    x = kiln_input(m, KILN_SHAPE(4, 4, 2));
    CHECK(!kiln_layer_cropping2d(m, &(kiln_pad2d_opts){ .input = x, .top = 2, .bottom = 2 }) && strstr(kiln_model_error(m), "leaves nothing"));
    kiln_model_free(m);
    m = kiln_model_new("bad");
    x = kiln_input(m, KILN_SHAPE(4, 4, 2));
    kiln_layer *y = kiln_layer_global_avg_pool2d(m, &(kiln_layer_opts){ .input = x });
    CHECK(!kiln_layer_multiply(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ x, kiln_layer_dense(m, &(kiln_dense_opts){ .input = y, .units = 3 }) }, .n_inputs = 2 })
          && strstr(kiln_model_error(m), "do not broadcast"));
    kiln_model_free(m);
    m = kiln_model_new("bad");
    x = kiln_input(m, KILN_SHAPE(4, 4, 2));
    CHECK(!kiln_layer_from_config(m, "Normalization", "{\"mean\": [1, 2, 3], \"variance\": [1, 1, 1]}", &x, 1) && strstr(kiln_model_error(m), "one per channel"));
    kiln_model_free(m);
}

/* A transformer block over a (6, 4) sequence: LayerNormalization, causal self-attention (query
 * and value the same layer, as Keras calls it), PositionEmbedding added back, typed and by options. */
static void test_transformer_same(void) {
    kiln_model *a = kiln_model_new("tf");
    kiln_layer *x = kiln_input(a, KILN_SHAPE(6, 4));
    kiln_layer *n = kiln_layer_layer_norm(a, &(kiln_layer_norm_opts){ .input = x, .epsilon = 1e-5 });
    kiln_layer *h = kiln_layer_multi_head_attention(a, &(kiln_mha_opts){ .inputs = (kiln_layer *[]){ n, n }, .n_inputs = 2, .num_heads = 2, .key_dim = 3, .causal = true });
    kiln_layer *p = kiln_layer_position_embedding(a, &(kiln_position_embedding_opts){ .input = h, .sequence_length = 8 });
    kiln_layer *s = kiln_layer_add(a, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ h, p, x }, .n_inputs = 3 });
    kiln_layer *n2 = kiln_layer_layer_norm(a, &(kiln_layer_norm_opts){ .input = s, .no_center = true });
    kiln_layer *f = kiln_layer_flatten(a, &(kiln_layer_opts){ .input = n2 });
    kiln_layer *out = kiln_layer_dense(a, &(kiln_dense_opts){ .input = f, .units = 3 });
    CHECK_OK(kiln_model_functional(a, &x, 1, &out, 1));

    kiln_model *b = kiln_model_new("tf");
    x = nn_layer_from_options(b, "InputLayer", NULL, 0, (nn_opt[]){ NN_INTS("shape", 6, 4) }, 1);
    n = nn_layer_from_options(b, "LayerNormalization", &x, 1, (nn_opt[]){ NN_FLOAT("epsilon", 1e-5) }, 1);
    h = nn_layer_from_options(b, "MultiHeadAttention", (kiln_layer *[]){ n, n }, 2,
                              (nn_opt[]){ NN_INT("num_heads", 2), NN_INT("key_dim", 3), NN_INT("value_dim", 3), NN_BOOL("use_causal_mask", true) }, 4);
    p = nn_layer_from_options(b, "PositionEmbedding", &h, 1, (nn_opt[]){ NN_INT("sequence_length", 8) }, 1);
    s = nn_layer_from_options(b, "Add", (kiln_layer *[]){ h, p, x }, 3, NULL, 0);
    n2 = nn_layer_from_options(b, "LayerNormalization", &s, 1, (nn_opt[]){ NN_BOOL("center", false) }, 1);
    f = nn_layer_from_options(b, "Flatten", &n2, 1, NULL, 0);
    out = nn_layer_from_options(b, "Dense", &f, 1, (nn_opt[]){ NN_INT("units", 3) }, 1);
    CHECK_OK(kiln_model_functional(b, &x, 1, &out, 1));
    check_same(a, b, "transformer");
}

/* One bad layer per model: NULL, a sticky error naming the layer and what is wrong. */
static void expect_error(const char *type, const nn_opt *o, int n, const char *want1, const char *want2) {
    kiln_model *m = kiln_sequential("bad", KILN_SHAPE(8, 8, 3));
    CHECK(nn_layer_from_options(m, type, NULL, 0, o, n) == NULL);
    CHECK(kiln_model_status(m) != KILN_OK);
    const char *e = kiln_model_error(m);
    CHECK_MSG(strstr(e, want1) && strstr(e, want2), "%s: wanted '%s' and '%s' in: %s", type, want1, want2, e);
    CHECK(kiln_layer_dense(m, &(kiln_dense_opts){ .units = 2 }) == NULL);    /* the error sticks */
    kiln_model_free(m);
}

static void test_errors(void) {
    expect_error("Conv3D", (nn_opt[]){ NN_STR("name", "vol") }, 1, "Conv3D", "'vol'");
    expect_error("Conv3D", NULL, 0, "Conv3D", "Conv2D");                  /* lists the known types */
    expect_error("Conv2D", (nn_opt[]){ NN_INT("filters", 4), NN_INT("kernal_size", 3) }, 2, "conv2d (Conv2D)", "unknown option 'kernal_size'");
    expect_error("Conv2D", (nn_opt[]){ NN_INT("filters", 4), NN_INT("kernal_size", 3) }, 2, "takes name, filters, kernel_size", "dilation_rate");
    expect_error("Conv2D", (nn_opt[]){ NN_STR("name", "c"), NN_INT("filters", 4), NN_INT("kernel_size", 3), NN_STR("padding", "middle") }, 4, "c (Conv2D)", "'padding'");
    expect_error("Conv2D", (nn_opt[]){ NN_INT("filters", 0), NN_INT("kernel_size", 3) }, 2, "'filters'", ">= 1, got 0");
    expect_error("Conv2D", (nn_opt[]){ NN_INT("filters", 4), NN_INTS("kernel_size", 3, 3, 3) }, 2, "'kernel_size'", "list of 2 ints");
    expect_error("Conv2D", (nn_opt[]){ NN_INT("filters", 4), NN_INT("kernel_size", 3), NN_INTS("strides", 1, 0) }, 3, "'strides'", ">= 1");
    expect_error("Conv2D", (nn_opt[]){ NN_STR("filters", "4"), NN_INT("kernel_size", 3) }, 2, "'filters'", "expects an int, got a string");
    expect_error("Conv2D", (nn_opt[]){ NN_INT("kernel_size", 3) }, 1, "conv2d (Conv2D)", "missing option 'filters'");
    expect_error("Conv2D", (nn_opt[]){ NN_INT("filters", 4), NN_NULL("kernel_size") }, 2, "conv2d (Conv2D)", "missing option 'kernel_size'");
    expect_error("Conv2D", (nn_opt[]){ NN_INT("filters", 4), NN_INT("filters", 5), NN_INT("kernel_size", 3) }, 3, "'filters'", "twice");
    expect_error("Activation", (nn_opt[]){ NN_STR("activation", "swoosh") }, 1, "'activation'", "unknown activation 'swoosh' (linear, relu");   /* swish is known since issue 29 */
    expect_error("Activation", (nn_opt[]){ NN_STR("activation", "swoosh") }, 1, "'activation'", "unknown activation 'swoosh' (linear, relu");   /* swish is known since issue 29 */
    expect_error("Dropout", (nn_opt[]){ NN_BOOL("rate", true) }, 1, "dropout (Dropout)", "'rate'");
    expect_error("Dropout", (nn_opt[]){ NN_FLOAT("rate", 1.5) }, 1, "dropout (Dropout)", "rate 1.5");
    expect_error("Dropout", (nn_opt[]){ NN_FLOAT("rate", 0.5), NN_INT("seed", -1) }, 2, "'seed'", ">= 0");
    expect_error("BatchNormalization", (nn_opt[]){ NN_FLOAT("momentum", 0.0) }, 1, "batch_normalization (BatchNormalization)", "momentum");
    expect_error("Reshape", (nn_opt[]){ NN_INT("target_shape", 3) }, 1, "'target_shape'", "list of ints");
    expect_error("Dense", (nn_opt[]){ NN_INT("units", 0) }, 1, "dense (Dense)", "'units'");    /* (Dense on (8, 8, 3) acts on the last axis, as Keras) */
    expect_error("Dense", (nn_opt[]){ NN_INT("units", 3), NN_STR("name", 0) }, 2, "Dense", "'name' must be a string");
    expect_error("Dense", (nn_opt[]){ { .key = NULL } }, 1, "dense", "no key");
    expect_error("Flatten", (nn_opt[]){ NN_INT("data_format", 1) }, 1, "flatten (Flatten)", "takes name");
    expect_error("Conv2D", (nn_opt[]){ NN_INT("filters", 4), NN_INT("kernel_size", 3), NN_INTS("dilation_rate", 1, 2) }, 3, "conv2d (Conv2D)", "dilation_rate (1, 2)");
    expect_error("InputLayer", (nn_opt[]){ NN_INTS("shape", 4) }, 1, "kiln_input", "sequential");
    expect_error("Add", NULL, 0, "add", "at least 2");
    kiln_model *m = kiln_sequential("s", KILN_SHAPE(4));
    kiln_layer *prev = kiln_model_layer(m, 0);
    CHECK(nn_layer_from_options(m, "Dense", (kiln_layer *[]){ prev, prev }, 2, (nn_opt[]){ NN_INT("units", 2) }, 1) == NULL);
    CHECK_MSG(strstr(kiln_model_error(m), "takes 1 input, got 2"), "%s", kiln_model_error(m));
    kiln_model_free(m);
    m = kiln_sequential("s", KILN_SHAPE(4));
    CHECK(nn_layer_from_options(m, "Add", NULL, 2, NULL, 0) == NULL);
    CHECK_MSG(strstr(kiln_model_error(m), "add: no input list") != NULL, "%s", kiln_model_error(m));
    kiln_model_free(m);
    CHECK(nn_layer_from_options(NULL, "Dense", NULL, 0, NULL, 0) == NULL);
    CHECK(strstr(kiln_last_error(), "NULL model") != NULL);
}

/* The 1-D layers, Conv2DTranspose, SpatialDropout2D and bilinear UpSampling2D: typed builders
 * and Keras options build the same model. */
static void test_1d_deconv_same(void) {
    kiln_model *a = kiln_sequential("seq1d", KILN_SHAPE(12, 3));
    kiln_layer_conv1d(a, &(kiln_conv1d_opts){ .filters = 4, .kernel = 3, .causal = true, .dilation = 2, .activation = KILN_RELU });
    kiln_layer_max_pool1d(a, &(kiln_pool1d_opts){ .size = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer_conv1d(a, &(kiln_conv1d_opts){ .filters = 4, .kernel = 2, .strides = 2, .padding = KILN_SAME, .groups = 2, .no_bias = true });
    kiln_layer_upsampling1d(a, &(kiln_upsampling1d_opts){ .size = 3 });
    kiln_layer_avg_pool1d(a, NULL);
    kiln_layer_reshape(a, &(kiln_reshape_opts){ .shape = KILN_SHAPE(2, 2, 4) });
    kiln_layer_conv2d_transpose(a, &(kiln_conv2d_opts){ .filters = 3, .kernel = 3, .strides = 2, .padding = KILN_SAME, .activation = KILN_TANH });
    kiln_layer_spatial_dropout2d(a, &(kiln_dropout_opts){ .rate = 0.4 });
    kiln_layer_gaussian_noise(a, &(kiln_gaussian_noise_opts){ .stddev = 0.3, .seed = 5 });
    kiln_layer_gaussian_dropout(a, &(kiln_dropout_opts){ .rate = 0.2 });
    kiln_layer_upsampling2d(a, &(kiln_upsampling2d_opts){ .size_h = 2, .size_w = 3, .bilinear = true });
    kiln_layer_conv2d_transpose(a, &(kiln_conv2d_opts){ .filters = 2, .kernel_h = 2, .kernel_w = 3, .strides = 3 });
    kiln_layer_reshape(a, &(kiln_reshape_opts){ .shape = KILN_SHAPE(-1, 2) });
    kiln_layer_global_max_pool1d(a, NULL);

    kiln_model *b = kiln_sequential("seq1d", KILN_SHAPE(12, 3));
    ADD(b, "Conv1D", NN_INT("filters", 4), NN_INTS("kernel_size", 3), NN_STR("padding", "causal"), NN_INTS("dilation_rate", 2), NN_STR("activation", "relu"));
    ADD(b, "MaxPooling1D", NN_INTS("pool_size", 3), NN_INTS("strides", 2), NN_STR("padding", "same"));
    ADD(b, "Conv1D", NN_INT("filters", 4), NN_INT("kernel_size", 2), NN_INT("strides", 2), NN_STR("padding", "same"), NN_INT("groups", 2), NN_BOOL("use_bias", false));
    ADD(b, "UpSampling1D", NN_INT("size", 3));
    nn_layer_from_options(b, "AveragePooling1D", NULL, 0, NULL, 0);
    ADD(b, "Reshape", NN_INTS("target_shape", 2, 2, 4));
    ADD(b, "Conv2DTranspose", NN_INT("filters", 3), NN_INT("kernel_size", 3), NN_INTS("strides", 2, 2), NN_STR("padding", "same"), NN_STR("activation", "tanh"));
    ADD(b, "SpatialDropout2D", NN_FLOAT("rate", 0.4));
    ADD(b, "GaussianNoise", NN_FLOAT("stddev", 0.3), NN_INT("seed", 5));
    ADD(b, "GaussianDropout", NN_FLOAT("rate", 0.2));
    ADD(b, "UpSampling2D", NN_INTS("size", 2, 3), NN_STR("interpolation", "bilinear"));
    ADD(b, "Conv2DTranspose", NN_INT("filters", 2), NN_INTS("kernel_size", 2, 3), NN_INT("strides", 3));
    ADD(b, "Reshape", NN_INTS("target_shape", -1, 2));
    nn_layer_from_options(b, "GlobalMaxPooling1D", NULL, 0, NULL, 0);
    /* the shapes Keras gives: causal keeps 12 steps, same pooling 6, stride 2 -> 3, x3 -> 9, pool 4;
     * [2, 2, 4] -> same deconv x2 [4, 4, 3] -> bilinear [8, 12, 3] -> valid deconv (2, 3) stride 3 [24, 36, 2] */
    CHECK(kiln_model_status(a) == KILN_OK && a->n_layers == 15 && a->layers[1]->out.dim[0] == 12 && a->layers[5]->out.dim[0] == 4 &&
          a->layers[11]->out.dim[0] == 8 && a->layers[12]->out.dim[0] == 24 && a->layers[12]->out.dim[1] == 36);
    check_same(a, b, "1-D and transposed");
    kiln_model *c = kiln_sequential("bad", KILN_SHAPE(12, 3));
    ADD(c, "Conv1D", NN_INT("filters", 4), NN_INT("kernel_size", 3), NN_STR("padding", "full"));
    CHECK_MSG(strstr(kiln_model_error(c), "padding") && strstr(kiln_model_error(c), "causal"), "%s", kiln_model_error(c));
    kiln_model_free(c);
    c = kiln_sequential("bad", KILN_SHAPE(4, 4, 3));
    ADD(c, "UpSampling2D", NN_STR("interpolation", "bicubic"));
    CHECK_MSG(strstr(kiln_model_error(c), "interpolation") && strstr(kiln_model_error(c), "bilinear"), "%s", kiln_model_error(c));
    kiln_model_free(c);
    c = kiln_sequential("bad", KILN_SHAPE(4, 4, 3));
    ADD(c, "Conv2DTranspose", NN_INT("filters", 4), NN_INT("kernel_size", 3), NN_INT("dilation_rate", 2));
    CHECK_MSG(strstr(kiln_model_error(c), "dilation_rate"), "%s", kiln_model_error(c));
    kiln_model_free(c);
}

/* Recurrent layers typed and by options: stacked sequences, go_backwards, GRU without
 * reset_after, Bidirectional merges; errors name the layer and the option. */
static void test_rnn_same(void) {
    kiln_activation relu = KILN_RELU;
    kiln_model *a = kiln_model_new("rnn");
    kiln_layer *x = kiln_input(a, KILN_SHAPE(5, 3));
    kiln_layer *r = kiln_layer_simple_rnn(a, &(kiln_rnn_opts){ .input = x, .units = 4, .return_sequences = true, .activation = &relu });
    kiln_layer *l = kiln_layer_lstm(a, &(kiln_rnn_opts){ .input = r, .units = 3, .return_sequences = true, .go_backwards = true });
    kiln_layer *g = kiln_layer_gru(a, &(kiln_rnn_opts){ .input = l, .units = 2, .return_sequences = true, .no_reset_after = true });
    kiln_layer *b = kiln_layer_bidirectional(a, &(kiln_bidirectional_opts){ .layer = KILN_RNN_LSTM, .merge_mode = KILN_MERGE_AVE,
                                                                            .rnn = { .input = g, .units = 2, .return_sequences = true } });
    kiln_layer *b2 = kiln_layer_bidirectional(a, &(kiln_bidirectional_opts){ .layer = KILN_RNN_GRU, .rnn = { .input = b, .units = 2 } });
    kiln_layer *out = kiln_layer_dense(a, &(kiln_dense_opts){ .input = b2, .units = 2 });
    CHECK_OK(kiln_model_functional(a, &x, 1, &out, 1));
    CHECK(kiln_layer_output_shape(b).rank == 2 && kiln_layer_output_shape(b).dim[1] == 2 && kiln_layer_output_shape(b2).dim[0] == 4);
    /* 3*4 + 4*4 + 4; LSTM 4 (4*3 + 3*3 + 3); GRU 3 (3*2 + 2*2 + 2); two LSTMs 2 * 4 (2*2 + 2*2 + 2); two GRUs 2 * 3 (2*2 + 2*2 + 2*2); dense 4*2 + 2 */
    CHECK(kiln_model_param_count(a, false) == 32 + 96 + 36 + 80 + 72 + 10);
    kiln_model *m = kiln_model_new("rnn");
    x = nn_layer_from_options(m, "InputLayer", NULL, 0, (nn_opt[]){ NN_INTS("shape", 5, 3) }, 1);
    r = nn_layer_from_options(m, "SimpleRNN", &x, 1, (nn_opt[]){ NN_INT("units", 4), NN_BOOL("return_sequences", true), NN_STR("activation", "relu") }, 3);
    l = nn_layer_from_options(m, "LSTM", &r, 1, (nn_opt[]){ NN_INT("units", 3), NN_BOOL("return_sequences", true), NN_BOOL("go_backwards", true) }, 3);
    g = nn_layer_from_options(m, "GRU", &l, 1, (nn_opt[]){ NN_INT("units", 2), NN_BOOL("return_sequences", true), NN_BOOL("reset_after", false) }, 3);
    b = nn_layer_from_options(m, "Bidirectional", &g, 1, (nn_opt[]){ NN_STR("layer", "LSTM"), NN_STR("merge_mode", "ave"), NN_INT("units", 2),
                                                                   NN_BOOL("return_sequences", true) }, 4);
    b2 = nn_layer_from_options(m, "Bidirectional", &b, 1, (nn_opt[]){ NN_STR("layer", "GRU"), NN_INT("units", 2) }, 2);
    out = nn_layer_from_options(m, "Dense", &b2, 1, (nn_opt[]){ NN_INT("units", 2) }, 1);
    CHECK_OK(kiln_model_functional(m, &x, 1, &out, 1));
    check_same(a, m, "recurrent layers");
    m = kiln_model_new("bad");
    x = kiln_input(m, KILN_SHAPE(5, 3));
    CHECK(!kiln_layer_from_config(m, "LSTM", "{\"units\": 2, \"return_state\": true}", &x, 1) && strstr(kiln_model_error(m), "return_state"));
    kiln_model_free(m);
    m = kiln_model_new("bad");
    x = kiln_input(m, KILN_SHAPE(5, 3));
    CHECK(!kiln_layer_from_config(m, "Bidirectional", "{\"units\": 2, \"layer\": \"Dense\"}", &x, 1) && strstr(kiln_model_error(m), "layer"));
    kiln_model_free(m);
    m = kiln_model_new("bad");
    x = kiln_input(m, KILN_SHAPE(5, 3, 2));
    CHECK(!kiln_layer_gru(m, &(kiln_rnn_opts){ .input = x, .units = 2 }) && strstr(kiln_model_error(m), "sequence"));
    kiln_model_free(m);
}

int main(void) {
    test_table();
    test_1d_deconv_same();
    test_rnn_same();
    test_defaults_valid();
    test_sequential_same();
    test_functional_same();
    test_keras_apps_layers_same();
    test_transformer_same();
    test_errors();
    return check_summary("test_layer_table");
}
