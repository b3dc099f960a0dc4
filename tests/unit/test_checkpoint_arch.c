/* Checkpoints hold the model's architecture (issue 17.3): a functional model built with the C API
 * and not in the zoo is rebuilt from its file alone (same summary, JSON, parameters, class names,
 * bit-identical predictions); a file without kiln.architecture (older kiln) still gives its zoo
 * model; corrupt architecture or class-name metadata is an error naming the key. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "kiln/nn.h"
#include "kiln/io.h"

static char dir[256];

static char *path_of(const char *name) {
    static char p[4][320];
    static int k;
    char *s = p[k++ % 4];
    snprintf(s, 320, "%s/%s", dir, name);
    return s;
}

/* A small residual net with every layer type that has options worth keeping. */
static kiln_model *tiny_resnet(void) {
    kiln_model *m = kiln_model_new("tiny_resnet");
    kiln_model_set_seed(m, 11);
    kiln_init he = kiln_init_he_normal(5), bi = kiln_init_constant(0.25);
    kiln_layer *in = kiln_input(m, KILN_SHAPE(8, 8, 3));
    kiln_layer *stem = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .name = "stem", .input = in, .filters = 4, .kernel = 3, .padding = KILN_SAME,
                                                                 .kernel_initializer = &he, .bias_initializer = &bi, .l2 = 1e-4 });
    kiln_layer *a = kiln_layer_activation(m, &(kiln_activation_opts){ .input = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .input = stem }), .activation = KILN_RELU });
    kiln_layer *c = kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .input = a, .filters = 4, .kernel_h = 3, .kernel_w = 1, .padding = KILN_SAME, .no_bias = true });
    kiln_layer *bn = kiln_layer_batch_norm(m, &(kiln_batch_norm_opts){ .input = c, .momentum = 0.9, .epsilon = 1e-5 });
    kiln_layer *dw = kiln_layer_depthwise_conv2d(m, &(kiln_conv2d_opts){ .input = a, .kernel = 3, .padding = KILN_SAME, .depth_multiplier = 1 });
    kiln_layer *sum = kiln_layer_add(m, &(kiln_merge_opts){ .name = "residual", .inputs = (kiln_layer *[]){ stem, bn, dw }, .n_inputs = 3 });
    kiln_layer *mp = kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .input = sum, .size = 2 });
    kiln_layer *ap = kiln_layer_avg_pool2d(m, &(kiln_pool_opts){ .input = sum, .size = 3, .strides = 2, .padding = KILN_SAME });
    kiln_layer *cat = kiln_layer_concatenate(m, &(kiln_merge_opts){ .inputs = (kiln_layer *[]){ mp, ap }, .n_inputs = 2 });
    kiln_layer *g = kiln_layer_global_avg_pool2d(m, &(kiln_layer_opts){ .input = cat });
    kiln_layer *d = kiln_layer_dropout(m, &(kiln_dropout_opts){ .input = g, .rate = 0.25 });
    kiln_layer *out = kiln_layer_dense(m, &(kiln_dense_opts){ .name = "logits", .input = d, .units = 3 });
    CHECK_OK(kiln_model_functional(m, &in, 1, &out, 1));
    return m;
}

static char *summary_of(const kiln_model *m) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    kiln_model_summary(m, f);
    fclose(f);
    return buf;
}

static char *json_of(const kiln_model *m) {
    char *s = NULL;
    CHECK_OK(kiln_model_to_json(m, &s));
    return s ? s : calloc(1, 1);
}

static kiln_tensor *predict(kiln_model *m, const kiln_tensor *x) {
    kiln_tensor *out = NULL;
    CHECK_OK(kiln_predict(m, x, &(kiln_eval_opts){ .batch_size = 8 }, &out));
    return out;
}

static bool same_bits(const kiln_tensor *a, const kiln_tensor *b) {
    return a && b && kiln_shape_equal(a->shape, b->shape) && !memcmp(a->data, b->data, (size_t)kiln_shape_numel(a->shape) * sizeof(float));
}

static void test_functional_roundtrip(void) {
    kiln_model *m = tiny_resnet();
    CHECK_OK(kiln_model_set_class_names(m, (const char *[]){ "cat", "dog", "bird \"quoted\"" }, 3));
    CHECK(kiln_model_data_spec(m) == NULL);
    CHECK_OK(kiln_model_set_data_spec(m, "--data\ncsv:/d/x y.csv\n"));
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-2), .from_logits = true, .metrics = KILN_METRIC_ACCURACY }));
    kiln_dataset *ds = kiln_dataset_synthetic(KILN_SHAPE(8, 8, 3), 3, 64, 7);
    CHECK_OK(kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 1, .batch_size = 16 }));
    const kiln_tensor *x = kiln_dataset_x(ds);
    kiln_tensor *p1 = predict(m, x);
    CHECK_OK(kiln_model_save(m, path_of("res.safetensors"), true));

    kiln_model *m2 = NULL;
    CHECK_OK(kiln_model_from_checkpoint(path_of("res.safetensors"), &m2));
    CHECK(m2 != NULL);
    if (m2) {
        CHECK(!strcmp(kiln_model_name(m2), "tiny_resnet"));
        CHECK(kiln_model_layer_count(m2) == kiln_model_layer_count(m));
        CHECK(kiln_model_param_count(m2, false) == kiln_model_param_count(m, false));
        CHECK(kiln_model_param_count(m2, true) == kiln_model_param_count(m, true));
        CHECK(kiln_model_epoch(m2) == 1);
        char *s1 = summary_of(m), *s2 = summary_of(m2), *j1 = json_of(m), *j2 = json_of(m2);
        CHECK_MSG(!strcmp(s1, s2), "summaries differ:\n%s\n%s", s1, s2);
        CHECK_MSG(!strcmp(j1, j2), "architectures differ:\n%s\n%s", j1, j2);
        CHECK_MSG(strstr(j1, "\"class_name\":\"HeNormal\",\"config\":{\"seed\":5}") && strstr(j1, "\"l2\":0.0001") &&
                  strstr(j1, "\"kernel_size\":[3,1]") &&
                  strstr(j1, "\"keras_history\":[\"stem\",0,0]}},{\"class_name\":\"__keras_tensor__\",\"config\":{\"shape\":[null,8,8,4],"
                             "\"dtype\":\"float32\",\"keras_history\":[\"batch_normalization_1\",0,0]"),
                  "resolved options / inputs missing from %s", j1);
        free(s1); free(s2); free(j1); free(j2);
        CHECK(kiln_model_class_count(m2) == 3 && !strcmp(kiln_model_class_name(m2, 2), "bird \"quoted\"") && !kiln_model_class_name(m2, 3));
        CHECK(kiln_model_data_spec(m2) && !strcmp(kiln_model_data_spec(m2), "--data\ncsv:/d/x y.csv\n"));
        CHECK_OK(kiln_model_set_data_spec(m2, ""));
        CHECK(kiln_model_data_spec(m2) == NULL);
        kiln_tensor *p2 = predict(m2, x);
        CHECK_MSG(same_bits(p1, p2), "predictions of the rebuilt model differ");
        /* the weights came from the file: a fresh build of the same architecture predicts otherwise */
        char *j = json_of(m2);
        kiln_model *fresh = NULL;
        CHECK_OK(kiln_model_from_json(j, &fresh));
        kiln_tensor *p3 = fresh ? predict(fresh, x) : NULL;
        CHECK(p3 && !same_bits(p1, p3));
        /* the rebuilt model trains on (resume) */
        CHECK_OK(kiln_compile(m2, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-2), .from_logits = true }));
        CHECK_OK(kiln_fit(m2, ds, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = kiln_model_epoch(m2), .batch_size = 16 }));
        free(j);
        kiln_tensor_free(p2);
        kiln_tensor_free(p3);
        kiln_model_free(fresh);
    }
    kiln_tensor_free(p1);
    kiln_model_free(m2);
    kiln_model_free(m);
    kiln_dataset_free(ds);
}

/* Sequential, through the JSON alone: options left to their None defaults stay None. */
static void test_sequential_json(void) {
    kiln_model *m = kiln_sequential("seq", KILN_SHAPE(6, 6, 2));
    kiln_init u = kiln_init_uniform(-0.5, 0.125, 9);
    kiln_layer_max_pool2d(m, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_reshape(m, &(kiln_reshape_opts){ .shape = KILN_SHAPE(-1, 2) });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dropout(m, &(kiln_dropout_opts){ .rate = 0.1 });
    kiln_layer_dropout(m, &(kiln_dropout_opts){ .rate = 0.3, .seed = 42 });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 5, .activation = KILN_SOFTMAX, .kernel_initializer = &u, .l2 = 0.3 });
    CHECK_OK(kiln_model_status(m));
    char *j = json_of(m);
    CHECK_MSG(strstr(j, "\"class_name\":\"Sequential\"") && strstr(j, "\"strides\":null") && strstr(j, "\"seed\":null") &&
              strstr(j, "\"seed\":42") && strstr(j, "\"target_shape\":[-1,2]") && !strstr(j, "inbound_nodes"), "%s", j);
    kiln_model *m2 = NULL;
    CHECK_OK(kiln_model_from_json(j, &m2));
    if (m2) {
        char *j2 = json_of(m2), *s1 = summary_of(m), *s2 = summary_of(m2);
        CHECK_MSG(!strcmp(j, j2), "%s\n%s", j, j2);
        CHECK(!strcmp(s1, s2));
        free(j2); free(s1); free(s2);
    }
    free(j);
    kiln_model_free(m);
    kiln_model_free(m2);
}

/* Copies src to dst with metadata key (one of those below) set to val (NULL: dropped);
 * weights-only files. */
static void resave(const char *src, const char *dst, const char *key, const char *val) {
    kiln_safetensors *f = NULL;
    CHECK_OK(kiln_safetensors_load(src, &f));
    if (!f) return;
    int n = kiln_safetensors_count(f);
    kiln_named_tensor nt[64];
    for (int i = 0; i < n && i < 64; i++) nt[i] = (kiln_named_tensor){ kiln_safetensors_name(f, i), kiln_safetensors_tensor(f, i) };
    const char *all[] = { "kiln.model", "kiln.epoch", "kiln.input_shape", "kiln.architecture", "kiln.class_names" };
    const char *keys[6], *vals[6];
    int k = 0;
    for (int i = 0; i < 5; i++) {
        const char *v = !strcmp(all[i], key) ? val : kiln_safetensors_meta(f, all[i]);
        if (v) { keys[k] = all[i]; vals[k++] = v; }
    }
    CHECK_OK(kiln_safetensors_save(dst, nt, n, keys, vals, k));
    kiln_safetensors_free(f);
}

static void test_old_checkpoint(void) {
    kiln_model *m = kiln_model_preset("mlp", KILN_SHAPE(4, 4, 1), 5);
    kiln_dataset *ds = kiln_dataset_synthetic(KILN_SHAPE(4, 4, 1), 5, 32, 3);
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(1e-2), .from_logits = true }));
    CHECK_OK(kiln_fit(m, ds, &(kiln_fit_opts){ .epochs = 1, .batch_size = 8 }));
    kiln_tensor *p1 = predict(m, kiln_dataset_x(ds));
    CHECK_OK(kiln_model_save(m, path_of("mlp.safetensors"), false));
    resave(path_of("mlp.safetensors"), path_of("old.safetensors"), "kiln.architecture", NULL);
    kiln_safetensors *f = NULL;
    CHECK_OK(kiln_safetensors_load(path_of("old.safetensors"), &f));
    CHECK(f && !kiln_safetensors_meta(f, "kiln.architecture") && kiln_safetensors_meta(f, "kiln.model"));
    kiln_safetensors_free(f);
    kiln_model *m2 = NULL;
    CHECK_OK(kiln_model_from_checkpoint(path_of("old.safetensors"), &m2));
    if (m2) {
        CHECK(!strcmp(kiln_model_name(m2), "mlp"));
        CHECK(kiln_shape_equal(kiln_model_input_shape(m2), KILN_SHAPE(4, 4, 1)));
        CHECK(kiln_shape_equal(kiln_model_output_shape(m2), KILN_SHAPE(5)));
        kiln_tensor *p2 = predict(m2, kiln_dataset_x(ds));
        CHECK(same_bits(p1, p2));
        kiln_tensor_free(p2);
    }
    /* an older file of a model that is not built in: says what is missing */
    resave(path_of("old.safetensors"), path_of("old_custom.safetensors"), "kiln.model", "tiny_resnet");
    kiln_model *m3 = (kiln_model *)1;
    CHECK(kiln_model_from_checkpoint(path_of("old_custom.safetensors"), &m3) == KILN_NOT_FOUND && m3 == NULL);
    CHECK_MSG(strstr(kiln_last_error(), "kiln.architecture") && strstr(kiln_last_error(), "'tiny_resnet'") && strstr(kiln_last_error(), "old_custom.safetensors"),
              "%s", kiln_last_error());
    kiln_tensor_free(p1);
    kiln_model_free(m);
    kiln_model_free(m2);
    kiln_dataset_free(ds);
}

static void expect_bad(const char *key, const char *val, kiln_status want, const char *const *parts, int n) {
    resave(path_of("good.safetensors"), path_of("bad.safetensors"), key, val);
    kiln_model *m = (kiln_model *)1;
    kiln_status st = kiln_model_from_checkpoint(path_of("bad.safetensors"), &m);
    CHECK_MSG(st == want && m == NULL, "%s = %.60s: got %s", key, val, kiln_status_name(st));
    for (int i = 0; i < n; i++) CHECK_MSG(strstr(kiln_last_error(), parts[i]), "'%s' not in: %s", parts[i], kiln_last_error());
    if (m != (kiln_model *)1) kiln_model_free(m);
}

static void test_corrupt(void) {
    kiln_model *m = tiny_resnet();
    CHECK_OK(kiln_model_save(m, path_of("good.safetensors"), false));
    kiln_model_free(m);
    kiln_model *ok = NULL;
    CHECK_OK(kiln_model_from_checkpoint(path_of("good.safetensors"), &ok));
    kiln_model_free(ok);
    expect_bad("kiln.architecture", "{\"class_name\": \"Functional\", \"config\": {", KILN_INVALID_ARGUMENT,
               (const char *[]){ "metadata 'kiln.architecture'", "not valid JSON", "bad.safetensors" }, 3);
    expect_bad("kiln.architecture", "[1, 2]", KILN_INVALID_ARGUMENT, (const char *[]){ "kiln.architecture", "Sequential" }, 2);
    expect_bad("kiln.architecture", "{\"class_name\": \"Functional\", \"config\": {\"name\": \"x\", \"layers\": ["
               "{\"class_name\": \"InputLayer\", \"config\": {\"name\": \"in\", \"shape\": [4, 4, 1]}, \"inbound_nodes\": []},"
               "{\"class_name\": \"Conv3D\", \"config\": {\"name\": \"c\"}, \"inbound_nodes\": [[[\"in\", 0, 0, {}]]]}]}}",
               KILN_INVALID_ARGUMENT, (const char *[]){ "kiln.architecture", "unknown type 'Conv3D'", "layer 'c'" }, 3);
    expect_bad("kiln.architecture", "{\"class_name\": \"Functional\", \"config\": {\"name\": \"x\", \"layers\": ["
               "{\"class_name\": \"InputLayer\", \"config\": {\"name\": \"in\", \"shape\": [4, 4, 1]}, \"inbound_nodes\": []},"
               "{\"class_name\": \"Conv2D\", \"config\": {\"name\": \"c\", \"filters\": -2, \"kernel_size\": 3}, \"inbound_nodes\": [[[\"in\", 0, 0, {}]]]}]}}",
               KILN_INVALID_ARGUMENT, (const char *[]){ "kiln.architecture", "'filters'", "c (Conv2D)" }, 3);
    expect_bad("kiln.architecture", "{\"class_name\": \"Functional\", \"config\": {\"name\": \"x\", \"layers\": ["
               "{\"class_name\": \"InputLayer\", \"config\": {\"name\": \"in\", \"shape\": [4, 4, 1]}, \"inbound_nodes\": []},"
               "{\"class_name\": \"Flatten\", \"config\": {\"name\": \"f\"}, \"inbound_nodes\": [[[\"nowhere\", 0, 0, {}]]]}]}}",
               KILN_INVALID_ARGUMENT, (const char *[]){ "kiln.architecture", "layer 'f': input 'nowhere'" }, 2);
    /* a well-formed architecture of another model: the weights do not match it */
    expect_bad("kiln.architecture", "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"x\", \"layers\": ["
               "{\"class_name\": \"InputLayer\", \"config\": {\"name\": \"input_1\", \"shape\": [4]}},"
               "{\"class_name\": \"Dense\", \"config\": {\"name\": \"logits\", \"units\": 2}}]}}",
               KILN_SHAPE_MISMATCH, (const char *[]){ "logits/kernel" }, 1);
    expect_bad("kiln.class_names", "[\"a\", 3]", KILN_INVALID_ARGUMENT, (const char *[]){ "metadata 'kiln.class_names'", "element 1" }, 2);
    resave(path_of("good.safetensors"), path_of("none.safetensors"), "kiln.architecture", NULL);
    resave(path_of("none.safetensors"), path_of("bad.safetensors"), "kiln.model", NULL);
    kiln_model *m2 = NULL;
    CHECK(kiln_model_from_checkpoint(path_of("bad.safetensors"), &m2) == KILN_NOT_FOUND && !m2);
    CHECK_MSG(strstr(kiln_last_error(), "kiln.architecture") && strstr(kiln_last_error(), "kiln.model"), "%s", kiln_last_error());
    CHECK(kiln_model_from_checkpoint(path_of("missing.safetensors"), &m2) == KILN_NOT_FOUND && !m2);
    CHECK(kiln_model_set_class_names(NULL, NULL, 0) == KILN_INVALID_ARGUMENT);
    CHECK(kiln_model_set_data_spec(NULL, "x") == KILN_INVALID_ARGUMENT && kiln_model_data_spec(NULL) == NULL);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/kiln_ckarch_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    kiln_set_num_threads(1);
    test_functional_roundtrip();
    test_sequential_json();
    test_old_checkpoint();
    test_corrupt();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_checkpoint_arch");
}
