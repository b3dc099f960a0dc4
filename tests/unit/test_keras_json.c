/* Keras model files (issue 12): the JSON real Keras wrote (tests/data/keras, made by
 * make_models.py with Keras 3 and tf.keras 2) builds in Kiln with Keras' layer count, output
 * shapes and parameter counts; Kiln's own JSON reads back the same; what Kiln cannot honour is
 * refused naming the layer and the key; malformed files are refused naming the file. */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/nn.h"

#ifndef KILN_KERAS_DATA
#define KILN_KERAS_DATA "tests/data/keras"
#endif
static const char *data_dir;

static char *json_of(const kiln_model *m) {
    char *s = NULL;
    CHECK_OK(kiln_model_to_json(m, &s));
    return s ? s : calloc(1, 1);
}

/* Compiles m and predicts a batch of 3 zero examples: the graph builds and has the output shape. */
static void runs(kiln_model *m, const char *what) {
    kiln_shape out = kiln_model_output_shape(m), in = kiln_model_input_shape(m);
    bool binary = out.rank == 1 && out.dim[0] == 1;
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-3), .device = "cpu",
                                                  .loss = binary ? KILN_LOSS_BINARY_CROSSENTROPY : KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY }));
    kiln_shape xs = { in.rank + 1, { 3 } };
    for (int i = 0; i < in.rank; i++) xs.dim[i + 1] = in.dim[i];
    kiln_tensor *x = kiln_tensor_new(KILN_F32, xs), *p = NULL;
    if (x) memset(x->data, 0, (size_t)kiln_shape_numel(xs) * sizeof(float));
    CHECK_OK(kiln_predict(m, x, NULL, &p));
    CHECK_MSG(p && p->shape.rank == 2 && p->shape.dim[0] == 3 && p->shape.dim[1] == out.dim[0], "%s: prediction shape", what);
    kiln_tensor_free(x);
    kiln_tensor_free(p);
}

/* One model against what Keras said about it (NAME.expected, see make_models.py). */
static void check_model(const char *dir, const char *name) {
    char path[512], exp_path[512];
    snprintf(path, sizeof path, "%s/%s/%s.json", data_dir, dir, name);
    snprintf(exp_path, sizeof exp_path, "%s/%s/%s.expected", data_dir, dir, name);
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_json_file(path, &m));
    FILE *f = fopen(exp_path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", exp_path);
    if (!m || !f) { if (f) fclose(f); kiln_model_free(m); return; }
    char line[512];
    int layers_seen = 0;
    while (fgets(line, sizeof line, f)) {
        long long v;
        char lname[128], cls[64];
        int pos = 0;
        if (sscanf(line, "params %lld", &v) == 1) CHECK_MSG(kiln_model_param_count(m, false) == v, "%s: %lld parameters, Keras %lld", path, (long long)kiln_model_param_count(m, false), v);
        else if (sscanf(line, "trainable %lld", &v) == 1) CHECK_MSG(kiln_model_param_count(m, true) == v, "%s: %lld trainable, Keras %lld", path, (long long)kiln_model_param_count(m, true), v);
        else if (sscanf(line, "layers %lld", &v) == 1) CHECK_MSG(kiln_model_layer_count(m) == v, "%s: %d layers, Keras %lld", path, kiln_model_layer_count(m), v);
        else if (sscanf(line, "layer %127s %63s %n", lname, cls, &pos) == 2) {
            kiln_layer *l = kiln_model_find_layer(m, lname);
            CHECK_MSG(l != NULL, "%s: no layer '%s'", path, lname);
            if (!l) continue;
            CHECK_MSG(kiln_model_layer(m, layers_seen) == l, "%s: layer %d is not '%s'", path, layers_seen, lname);
            layers_seen++;
            /* Kiln's ReLU is an Activation, but one with another max_value than 6 or slope than 0.2 */
            const char *want = strcmp(cls, "ReLU") || !strcmp(kiln_layer_type(l), "ReLU") ? cls : "Activation";
            CHECK_MSG(!strcmp(kiln_layer_type(l), want), "%s: layer '%s' is %s, Keras %s", path, lname, kiln_layer_type(l), cls);
            kiln_shape s = { 0 }, got = kiln_layer_output_shape(l);
            for (char *p = line + pos, *e; s.rank < KILN_MAX_DIMS; p = e) {
                long long d = strtoll(p, &e, 10);
                if (e == p) break;
                s.dim[s.rank++] = d;
            }
            char a[64], b[64];
            CHECK_MSG(kiln_shape_equal(s, got), "%s: layer '%s' outputs %s, Keras %s", path, lname, kiln_shape_str(got, a, sizeof a), kiln_shape_str(s, b, sizeof b));
        }
    }
    fclose(f);
    CHECK_MSG(layers_seen == kiln_model_layer_count(m), "%s: %d layers listed, Kiln has %d", path, layers_seen, kiln_model_layer_count(m));
    /* Kiln's JSON of it builds the same model and is written the same way again */
    char *j1 = json_of(m);
    kiln_model *m2 = NULL;
    CHECK_OK(kiln_model_from_json(j1, &m2));
    if (m2) {
        char *j2 = json_of(m2);
        CHECK_MSG(!strcmp(j1, j2), "%s: Kiln's JSON does not read back the same:\n%s\n%s", path, j1, j2);
        CHECK(kiln_model_param_count(m2, false) == kiln_model_param_count(m, false));
        free(j2);
    }
    free(j1);
    kiln_model_free(m2);
    runs(m, path);
    kiln_model_free(m);
}

/* The refused models of errors/ (NAME.expected: words the message must hold). */
static void check_refused(const char *name) {
    char path[512], exp_path[512];
    snprintf(path, sizeof path, "%s/errors/%s.json", data_dir, name);
    snprintf(exp_path, sizeof exp_path, "%s/errors/%s.expected", data_dir, name);
    kiln_model *m = (kiln_model *)1;
    kiln_status st = kiln_model_from_json_file(path, &m);
    CHECK_MSG(st != KILN_OK && m == NULL, "%s was accepted", path);
    char err[2048];
    snprintf(err, sizeof err, "%s", kiln_last_error());
    const char *after = strstr(err, path);     /* the words must be in the message, not just the file name */
    CHECK_MSG(after, "the error does not name the file: %s", err);
    after = after ? after + strlen(path) : err;
    FILE *f = fopen(exp_path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", exp_path);
    char word[256];
    while (f && fgets(word, sizeof word, f)) {
        word[strcspn(word, "\n")] = 0;
        if (*word) CHECK_MSG(strstr(after, word), "'%s' not in: %s", word, err);
    }
    if (f) fclose(f);
    if (m != (kiln_model *)1) kiln_model_free(m);
}

/* json must be refused with a message holding every word of parts (NULL-terminated). */
static void refused(const char *what, const char *json, const char *const *parts) {
    kiln_model *m = (kiln_model *)1;
    kiln_status st = kiln_model_from_json(json, &m);
    CHECK_MSG(st != KILN_OK && m == NULL, "%s: accepted", what);
    for (; *parts; parts++) CHECK_MSG(strstr(kiln_last_error(), *parts), "%s: '%s' not in: %s", what, *parts, kiln_last_error());
    if (m != (kiln_model *)1) kiln_model_free(m);
}

/* A Sequential model of one layer after an 8-feature input, in Keras 3's form. */
static char *seq_with(const char *layer_json) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "{\"module\": \"keras\", \"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": ["
             "{\"class_name\": \"InputLayer\", \"config\": {\"batch_shape\": [null, 4, 4, 2], \"name\": \"in\"}}, %s]}}", layer_json);
    return buf;
}

static void test_refusals(void) {
    /* relu6, swish, BatchNormalization scale=False and GlobalAveragePooling2D keepdims were refused
     * here until issue 29: keras3/apps_layers.json holds them now */
    static const char *const files[] = { "channels_first", "dilation_uneven", "l1_regularizer", "bias_regularizer", "relu_threshold", "unknown_layer",
                                         "frozen", "lecun", "bicubic" };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) check_refused(files[i]);
    refused("unknown config key", seq_with("{\"class_name\": \"Flatten\", \"config\": {\"name\": \"fl\", \"frobnicate\": 1}}"),
            (const char *[]){ "layer 'fl' (Flatten)", "'frobnicate'", NULL });
    refused("BN over another axis", seq_with("{\"class_name\": \"BatchNormalization\", \"config\": {\"name\": \"bn\", \"axis\": [1]}}"),
            (const char *[]){ "layer 'bn'", "'axis'", "last axis", NULL });
    refused("mixed precision", seq_with("{\"class_name\": \"Flatten\", \"config\": {\"name\": \"fl\", \"dtype\": {\"module\": \"keras\", \"class_name\": "
                                        "\"DTypePolicy\", \"config\": {\"name\": \"mixed_float16\"}}}}"),
            (const char *[]){ "layer 'fl'", "'dtype'", "float32", NULL });
    refused("custom layer class", seq_with("{\"module\": \"my_layers\", \"class_name\": \"Dense\", \"registered_name\": \"Custom>Dense\", \"config\": {\"name\": \"d\", \"units\": 2}}"),
            (const char *[]){ "layer 'd'", "Custom>Dense", NULL });
    refused("custom activation", seq_with("{\"class_name\": \"Activation\", \"config\": {\"name\": \"a\", \"activation\": {\"module\": \"builtins\", "
                                          "\"class_name\": \"function\", \"config\": \"mine\", \"registered_name\": \"function\"}}}"),
            (const char *[]){ "layer 'a'", "'activation'", NULL });
    refused("bad option value", seq_with("{\"class_name\": \"Conv2D\", \"config\": {\"name\": \"c\", \"filters\": 0, \"kernel_size\": 3}}"),
            (const char *[]){ "c (Conv2D)", "'filters'", NULL });
    refused("malformed JSON", "{\"class_name\": \"Sequential\", \"config\": {\"layers\": [", (const char *[]){ "not valid JSON", "byte", NULL });
    refused("not JSON", "Sequential([Dense(10)])", (const char *[]){ "not valid JSON", "byte 0", NULL });
    refused("not a model", "[1, 2]", (const char *[]){ "Sequential", "Functional", NULL });
    refused("no input shape", "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"binary\", \"layers\": [{\"class_name\": \"Dense\", \"config\": "
                              "{\"name\": \"dense\", \"units\": 10}}]}}", (const char *[]){ "'binary'", "keras.Input", NULL });
    static const char fn_head[] = "{\"class_name\": \"Functional\", \"config\": {\"name\": \"f\", \"layers\": ["
        "{\"class_name\": \"InputLayer\", \"config\": {\"batch_input_shape\": [null, 6], \"name\": \"x\"}, \"inbound_nodes\": []},";
    char buf[2048];
    snprintf(buf, sizeof buf, "%s{\"class_name\": \"Dense\", \"config\": {\"name\": \"d\", \"units\": 6}, \"inbound_nodes\": [[[\"x\", 0, 0, {}]], [[\"d\", 0, 0, {}]]]}],"
             "\"input_layers\": [[\"x\", 0, 0]], \"output_layers\": [[\"d\", 1, 0]]}}", fn_head);
    refused("shared layer", buf, (const char *[]){ "layer 'd'", "shared", NULL });
    snprintf(buf, sizeof buf, "%s{\"class_name\": \"Dense\", \"config\": {\"name\": \"d\", \"units\": 6}, \"inbound_nodes\": [[[\"nowhere\", 0, 0, {}]]]}],"
             "\"input_layers\": [[\"x\", 0, 0]], \"output_layers\": [[\"d\", 0, 0]]}}", fn_head);
    refused("missing input", buf, (const char *[]){ "layer 'd': input 'nowhere'", NULL });
    snprintf(buf, sizeof buf, "%s{\"class_name\": \"Dropout\", \"config\": {\"name\": \"d\", \"rate\": 0.5}, \"inbound_nodes\": [{\"args\": [{\"class_name\": "
             "\"__keras_tensor__\", \"config\": {\"keras_history\": [\"x\", 0, 0]}}], \"kwargs\": {\"mask\": [1]}}]}],"
             "\"input_layers\": [\"x\", 0, 0], \"output_layers\": [\"d\", 0, 0]}}", fn_head);
    refused("call argument", buf, (const char *[]){ "layer 'd'", "mask", NULL });
    snprintf(buf, sizeof buf, "%s{\"class_name\": \"Dropout\", \"config\": {\"name\": \"d\", \"rate\": 0.5}, \"inbound_nodes\": [[[\"x\", 0, 0, {\"training\": true}]]]}],"
             "\"input_layers\": [\"x\", 0, 0], \"output_layers\": [\"d\", 0, 0]}}", fn_head);
    refused("tf.keras 2 call argument", buf, (const char *[]){ "layer 'd'", "training=true", NULL });
    kiln_model *m = (kiln_model *)1;
    CHECK(kiln_model_from_json_file("/nonexistent/model.json", &m) == KILN_NOT_FOUND && m == NULL);
    CHECK_MSG(strstr(kiln_last_error(), "/nonexistent/model.json"), "%s", kiln_last_error());
}

/* What the Keras-written files do not show: string and VarianceScaling initializers, tuples,
 * ReLU with a 0.2 slope, layers listed before their inputs, seeds beyond 2^53. */
static void test_forms(void) {
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_json(seq_with("{\"class_name\": \"Conv2D\", \"config\": {\"name\": \"c\", \"filters\": 3, \"kernel_size\": "
                                           "{\"class_name\": \"__tuple__\", \"config\": {\"value\": [3, 1]}}, \"kernel_initializer\": \"he_normal\", "
                                           "\"bias_initializer\": {\"class_name\": \"VarianceScaling\", \"config\": {\"scale\": 1.0, \"mode\": \"fan_avg\", "
                                           "\"distribution\": \"uniform\", \"seed\": 3}}}}"), &m));
    if (m) {
        char *j = json_of(m);
        CHECK_MSG(strstr(j, "\"kernel_size\":[3,1]") && strstr(j, "\"class_name\":\"HeNormal\",\"config\":{\"seed\":null}") &&
                  strstr(j, "\"class_name\":\"GlorotUniform\",\"config\":{\"seed\":3}"), "%s", j);
        CHECK(kiln_model_param_count(m, false) == 3 * 1 * 2 * 3 + 3);
        free(j);
    }
    kiln_model_free(m);
    m = NULL;
    CHECK_OK(kiln_model_from_json(seq_with("{\"class_name\": \"ReLU\", \"config\": {\"name\": \"lr\", \"negative_slope\": 0.2, \"max_value\": null, \"threshold\": 0.0}}"), &m));
    if (m) {
        char *j = json_of(m);
        CHECK_MSG(strstr(j, "\"class_name\":\"Activation\"") && strstr(j, "\"activation\":\"leaky_relu\""), "%s", j);
        free(j);
    }
    kiln_model_free(m);
    /* a functional model whose layers are not listed in order: Kiln orders them by their inputs */
    m = NULL;
    CHECK_OK(kiln_model_from_json("{\"class_name\": \"Functional\", \"config\": {\"name\": \"f\", \"seed\": \"18446744073709551557\", \"layers\": ["
                                  "{\"class_name\": \"Dense\", \"config\": {\"name\": \"late\", \"units\": 2}, \"inbound_nodes\": [[[\"early\", 0, 0, {}]]]},"
                                  "{\"class_name\": \"Dense\", \"config\": {\"name\": \"early\", \"units\": 3}, \"inbound_nodes\": [[[\"x\", 0, 0, {}]]]},"
                                  "{\"class_name\": \"InputLayer\", \"config\": {\"batch_input_shape\": [null, 5], \"name\": \"x\"}, \"inbound_nodes\": []}],"
                                  "\"input_layers\": [[\"x\", 0, 0]], \"output_layers\": [[\"late\", 0, 0]]}}", &m));
    if (m) {
        CHECK(kiln_model_param_count(m, false) == 5 * 3 + 3 + 3 * 2 + 2);
        CHECK(kiln_model_layer(m, 0) && !strcmp(kiln_layer_name(kiln_model_layer(m, 0)), "x"));
        char *j = json_of(m);
        CHECK_MSG(strstr(j, "\"seed\":\"18446744073709551557\""), "a seed above 2^53 should be written as a string: %s", j);
        kiln_model *m2 = NULL;
        CHECK_OK(kiln_model_from_json(j, &m2));
        char *j2 = m2 ? json_of(m2) : NULL;
        CHECK(j2 && !strcmp(j, j2));
        free(j);
        free(j2);
        kiln_model_free(m2);
    }
    kiln_model_free(m);
}

/* The architecture older Kiln checkpoints hold (tf.keras 2's form with every schema option,
 * InputLayer "shape", the model seed) still builds, and is written anew in Keras 3's form. */
static void test_older_kiln_json(void) {
    static const char old[] =
        "{\"class_name\": \"Functional\", \"config\": {\"name\": \"tiny\", \"seed\": 11, \"layers\": ["
        "\n  {\"class_name\": \"InputLayer\", \"name\": \"input_1\", \"config\": {\"name\": \"input_1\", \"shape\": [8, 8, 3]}, \"inbound_nodes\": []},"
        "\n  {\"class_name\": \"Conv2D\", \"name\": \"stem\", \"config\": {\"name\": \"stem\", \"filters\": 4, \"kernel_size\": [3, 3], \"strides\": [1, 1], "
        "\"padding\": \"same\", \"dilation_rate\": [1, 1], \"activation\": \"linear\", \"use_bias\": true, \"bias_initializer\": {\"class_name\": "
        "\"Constant\", \"config\": {\"value\": 0.25}}, \"groups\": 1, \"kernel_initializer\": {\"class_name\": \"HeNormal\", \"config\": {\"seed\": 5}}, "
        "\"kernel_regularizer\": {\"class_name\": \"L2\", \"config\": {\"l2\": 0.0001}}}, \"inbound_nodes\": [[[\"input_1\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"BatchNormalization\", \"name\": \"batch_normalization\", \"config\": {\"name\": \"batch_normalization\", \"momentum\": 0.9, "
        "\"epsilon\": 1.0000000000000001e-05}, \"inbound_nodes\": [[[\"stem\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"DepthwiseConv2D\", \"name\": \"dw\", \"config\": {\"name\": \"dw\", \"kernel_size\": [3, 3], \"strides\": [1, 1], "
        "\"padding\": \"same\", \"dilation_rate\": [1, 1], \"activation\": \"relu\", \"use_bias\": true, \"bias_initializer\": {\"class_name\": \"Zeros\", "
        "\"config\": {}}, \"depth_multiplier\": 1, \"depthwise_initializer\": {\"class_name\": \"RandomUniform\", \"config\": {\"minval\": -0.5, "
        "\"maxval\": 0.125, \"seed\": 9}}, \"depthwise_regularizer\": null}, \"inbound_nodes\": [[[\"stem\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"Add\", \"name\": \"residual\", \"config\": {\"name\": \"residual\"}, \"inbound_nodes\": [[[\"stem\", 0, 0, {}], "
        "[\"batch_normalization\", 0, 0, {}], [\"dw\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"MaxPooling2D\", \"name\": \"max_pooling2d\", \"config\": {\"name\": \"max_pooling2d\", \"pool_size\": [2, 2], "
        "\"strides\": null, \"padding\": \"valid\"}, \"inbound_nodes\": [[[\"residual\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"AveragePooling2D\", \"name\": \"average_pooling2d\", \"config\": {\"name\": \"average_pooling2d\", \"pool_size\": [3, 3], "
        "\"strides\": [2, 2], \"padding\": \"same\"}, \"inbound_nodes\": [[[\"residual\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"Concatenate\", \"name\": \"concatenate\", \"config\": {\"name\": \"concatenate\", \"axis\": -1}, \"inbound_nodes\": "
        "[[[\"max_pooling2d\", 0, 0, {}], [\"average_pooling2d\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"GlobalAveragePooling2D\", \"name\": \"gap\", \"config\": {\"name\": \"gap\"}, \"inbound_nodes\": [[[\"concatenate\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"Reshape\", \"name\": \"reshape\", \"config\": {\"name\": \"reshape\", \"target_shape\": [-1, 2]}, \"inbound_nodes\": [[[\"gap\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"Flatten\", \"name\": \"flatten\", \"config\": {\"name\": \"flatten\"}, \"inbound_nodes\": [[[\"reshape\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"Dropout\", \"name\": \"dropout\", \"config\": {\"name\": \"dropout\", \"rate\": 0.25, \"seed\": null}, \"inbound_nodes\": [[[\"flatten\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"Activation\", \"name\": \"act\", \"config\": {\"name\": \"act\", \"activation\": \"gelu\"}, \"inbound_nodes\": [[[\"dropout\", 0, 0, {}]]]},"
        "\n  {\"class_name\": \"Dense\", \"name\": \"logits\", \"config\": {\"name\": \"logits\", \"units\": 3, \"activation\": \"linear\", \"use_bias\": true, "
        "\"kernel_initializer\": {\"class_name\": \"GlorotUniform\", \"config\": {\"seed\": 0}}, \"bias_initializer\": {\"class_name\": \"Zeros\", \"config\": {}}, "
        "\"kernel_regularizer\": null}, \"inbound_nodes\": [[[\"act\", 0, 0, {}]]]}],"
        "\n \"input_layers\": [[\"input_1\", 0, 0]], \"output_layers\": [[\"logits\", 0, 0]]}}";
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_json(old, &m));
    if (!m) return;
    /* stem 3*3*3*4 + 4, BN 4 * 4, depthwise 3*3*1*4 + 4, logits 8 * 3 + 3 */
    CHECK(kiln_model_param_count(m, false) == 112 + 16 + 40 + 27);
    CHECK(kiln_model_layer_count(m) == 14);
    char *j = json_of(m);
    CHECK_MSG(strstr(j, "\"seed\":11,") && strstr(j, "\"class_name\":\"HeNormal\",\"config\":{\"seed\":5}") && strstr(j, "\"epsilon\":1e-05") &&
              strstr(j, "\"class_name\":\"RandomUniform\",\"config\":{\"minval\":-0.5,\"maxval\":0.125,\"seed\":9}") &&
              strstr(j, "\"kernel_initializer\":{\"module\":\"keras.initializers\",\"class_name\":\"GlorotUniform\",\"config\":{\"seed\":null}"), "%s", j);
    free(j);
    kiln_model_free(m);
}

/* Training a Keras-file model: the seed's binary classifier learns a separable problem. */
static void test_binary_trains(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/keras3/binary.json", data_dir);
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_json_file(path, &m));
    if (!m) return;
    int n = 256;
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(n, 8)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(n));
    uint64_t r = 5;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int k = 0; k < 8; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            double v = 2 * (double)(r >> 11) / 9007199254740992.0 - 1; ((float *)x->data)[i * 8 + k] = (float)v; s += (k % 2 ? -1 : 1) * v; }
        ((int32_t *)y->data)[i] = s > 0;
    }
    kiln_dataset *ds = kiln_dataset_from_tensors(x, y, 2);
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.02), .loss = KILN_LOSS_BINARY_CROSSENTROPY, .metrics = KILN_METRIC_ACCURACY, .device = "cpu" }));
    kiln_eval_result before, after;
    CHECK_OK(kiln_evaluate(m, ds, NULL, &before));
    CHECK_OK(kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 15, .batch_size = 32 }));
    CHECK_OK(kiln_evaluate(m, ds, NULL, &after));
    CHECK_MSG(after.loss < before.loss * 0.6 && after.accuracy > 0.85, "loss %g -> %g, accuracy %g", before.loss, after.loss, after.accuracy);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_dataset_free(ds);
    kiln_model_free(m);
}

int main(void) {
    data_dir = getenv("KILN_KERAS_DATA") ? getenv("KILN_KERAS_DATA") : KILN_KERAS_DATA;
    kiln_set_num_threads(1);
    static const char *const dirs[] = { "keras3", "tf_keras2" };
    static const char *const names[] = { "binary", "mlp", "cnn", "functional", "initializers" };
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 5; i++) check_model(dirs[d], names[i]);
    check_model("keras3", "apps_layers");    /* Keras 3 only: issue 29's layers and activations */
    test_refusals();
    test_forms();
    test_older_kiln_json();
    test_binary_trains();
    return check_summary("test_keras_json");
}
