/* The C API a front end (the Python package) builds on: layers from Keras configs and the layer
 * table as JSON, weights one by one, a pipeline borrowing caller arrays, CIFAR-10 files as Keras
 * reads them, and the rank agreement of one process. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "kiln/nn.h"
#include "kiln/dist.h"

/* The same model from typed builders and from configs: same shapes, parameters and initial
 * weights (same seed), so a config is honoured, not approximated. */
static void configs_match_builders(void) {
    kiln_model *a = kiln_sequential("a", KILN_SHAPE(8, 8, 1)), *b = kiln_sequential("a", KILN_SHAPE(8, 8, 1));
    kiln_layer_conv2d(a, &(kiln_conv2d_opts){ .filters = 4, .kernel = 3, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_max_pool2d(a, &(kiln_pool_opts){ .size = 2 });
    kiln_layer_flatten(a, NULL);
    kiln_layer_dense(a, &(kiln_dense_opts){ .units = 3 });
    CHECK(kiln_layer_from_config(b, "Conv2D", "{\"filters\": 4, \"kernel_size\": [3, 3], \"padding\": \"same\", \"activation\": \"relu\"}", NULL, 0));
    CHECK(kiln_layer_from_config(b, "MaxPooling2D", "{\"pool_size\": 2}", NULL, 0));
    CHECK(kiln_layer_from_config(b, "Flatten", NULL, NULL, 0));
    CHECK(kiln_layer_from_config(b, "Dense", "{\"units\": 3}", NULL, 0));
    CHECK_OK(kiln_model_status(b));
    CHECK(kiln_model_param_count(a, false) == kiln_model_param_count(b, false) && kiln_model_param_count(b, false) == 4 * 9 + 4 + 64 * 3 + 3);
    CHECK(kiln_shape_equal(kiln_model_output_shape(b), KILN_SHAPE(3)));
    kiln_tensor *wa = NULL, *wb = NULL;
    CHECK_OK(kiln_model_get_weight(a, "conv2d/kernel", &wa));
    CHECK_OK(kiln_model_get_weight(b, "conv2d/kernel", &wb));
    CHECK(wa && wb && kiln_shape_equal(wa->shape, KILN_SHAPE(3, 3, 1, 4)) && !memcmp(wa->data, wb->data, kiln_tensor_nbytes(wa)));
    /* set, then read back */
    if (wa) {
        for (int i = 0; i < 36; i++) ((float *)wa->data)[i] = (float)i * 0.5f;
        CHECK_OK(kiln_model_set_weight(b, "conv2d/kernel", wa));
        kiln_tensor_free(wb);
        wb = NULL;
        CHECK_OK(kiln_model_get_weight(b, "conv2d/kernel", &wb));
        CHECK(wb && !memcmp(wa->data, wb->data, kiln_tensor_nbytes(wa)));
    }
    kiln_layer *l = kiln_model_find_layer(b, "dense");
    CHECK(kiln_layer_weight_count(l) == 2 && !strcmp(kiln_layer_weight_name(l, 1), "dense/bias") &&
          kiln_shape_equal(kiln_layer_weight_shape(l, 0), KILN_SHAPE(64, 3)) && kiln_layer_weight_trainable(l, 0));
    CHECK(kiln_layer_weight_name(l, 2) == NULL);
    /* wrong name, shape, dtype */
    kiln_tensor *bad = kiln_tensor_new(KILN_F32, KILN_SHAPE(2));
    CHECK(kiln_model_set_weight(b, "dense/bias", bad) == KILN_SHAPE_MISMATCH && strstr(kiln_last_error(), "dense/bias"));
    CHECK(kiln_model_set_weight(b, "dense/nothing", bad) == KILN_NOT_FOUND && strstr(kiln_last_error(), "dense/nothing"));
    kiln_tensor *ti = kiln_tensor_new(KILN_I32, KILN_SHAPE(3));
    CHECK(kiln_model_set_weight(b, "dense/bias", ti) == KILN_DTYPE_MISMATCH);
    kiln_tensor_free(ti);
    kiln_tensor_free(bad);
    kiln_tensor_free(wa);
    kiln_tensor_free(wb);
    kiln_model_free(a);
    kiln_model_free(b);
}

static void config_errors(void) {
    kiln_model *m = kiln_sequential("m", KILN_SHAPE(4));
    CHECK(!kiln_layer_from_config(m, "Dense", "{\"units\": 2, \"kernel_constraint\": \"max_norm\"}", NULL, 0));
    CHECK_MSG(strstr(kiln_model_error(m), "kernel_constraint"), "%s", kiln_model_error(m));
    kiln_model_free(m);
    m = kiln_sequential("m", KILN_SHAPE(4));
    CHECK(!kiln_layer_from_config(m, "Dense", "{\"units\": 2, \"frobnicate\": 1}", NULL, 0) && strstr(kiln_model_error(m), "frobnicate"));
    kiln_model_free(m);
    m = kiln_sequential("m", KILN_SHAPE(4));
    CHECK(!kiln_layer_from_config(m, "NoSuchLayer", "{}", NULL, 0) && strstr(kiln_model_error(m), "NoSuchLayer"));
    kiln_model_free(m);
    m = kiln_sequential("m", KILN_SHAPE(4));
    CHECK(!kiln_layer_from_config(m, "Dense", "{\"units\": ", NULL, 0) && strstr(kiln_model_error(m), "JSON"));
    kiln_model_free(m);
    m = kiln_sequential("m", KILN_SHAPE(4));
    CHECK(!kiln_layer_from_config(m, "Dense", "{\"units\": 2, \"batch_input_shape\": [null, 4]}", NULL, 0) && strstr(kiln_model_error(m), "input shape"));
    kiln_model_free(m);
    /* functional: two branches added from configs, merged */
    m = kiln_model_new("f");
    kiln_layer *in = kiln_input(m, KILN_SHAPE(6));
    kiln_layer *x1 = kiln_layer_from_config(m, "Dense", "{\"units\": 5, \"activation\": \"relu\"}", &in, 1);
    kiln_layer *x2 = kiln_layer_from_config(m, "Dense", "{\"units\": 5}", &in, 1);
    kiln_layer *both[2] = { x1, x2 };
    kiln_layer *sum = kiln_layer_from_config(m, "Add", NULL, both, 2);
    kiln_layer *relu = kiln_layer_from_config(m, "ReLU", "{}", &sum, 1);
    CHECK(relu && !strcmp(kiln_layer_type(relu), "Activation"));
    CHECK_OK(kiln_model_functional(m, &in, 1, &relu, 1));
    CHECK(kiln_model_param_count(m, false) == 2 * (6 * 5 + 5));
    kiln_model_free(m);
}

static void rename_and_lr(void) {
    kiln_model *m = kiln_model_new("f");
    kiln_layer *in = kiln_input(m, KILN_SHAPE(3));
    CHECK_OK(kiln_layer_rename(in, "features"));
    kiln_layer *d = kiln_layer_from_config(m, "Dense", "{\"units\": 2}", &in, 1);
    CHECK(kiln_layer_rename(d, "other") == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "weights"));
    CHECK_OK(kiln_model_functional(m, &in, 1, &d, 1));
    CHECK(kiln_model_find_layer(m, "features") == in && !strcmp(kiln_layer_name(in), "features"));
    CHECK(kiln_model_set_learning_rate(m, 0.5) == KILN_INVALID_ARGUMENT);     /* not compiled */
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(0.1), .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, .from_logits = true }));
    CHECK_NEAR(kiln_model_learning_rate(m), 0.1, 1e-12);
    /* one SGD step at lr 0 changes nothing; at lr 0.5 the kernel moves */
    float x[2 * 3] = { 1, 2, 3, -1, 0, 1 };
    int32_t y[2] = { 0, 1 };
    kiln_tensor *tx = kiln_tensor_wrap(KILN_F32, KILN_SHAPE(2, 3), x), *ty = kiln_tensor_wrap(KILN_I32, KILN_SHAPE(2), y);
    kiln_tensor *w0 = NULL, *w1 = NULL;
    CHECK_OK(kiln_model_get_weight(m, "dense/kernel", &w0));
    CHECK_OK(kiln_model_set_learning_rate(m, 0.0));
    kiln_data *d1 = kiln_data_batch(kiln_data_from_arrays(tx, ty, 2), 2, true);
    CHECK_OK(kiln_fit_data(m, d1, &(kiln_fit_opts){ .epochs = 1 }));
    CHECK_OK(kiln_model_get_weight(m, "dense/kernel", &w1));
    CHECK(w0 && w1 && !memcmp(w0->data, w1->data, kiln_tensor_nbytes(w0)));
    kiln_tensor_free(w1);
    w1 = NULL;
    CHECK_OK(kiln_model_set_learning_rate(m, 0.5));
    CHECK(kiln_model_set_learning_rate(m, -1) == KILN_INVALID_ARGUMENT);
    CHECK_OK(kiln_fit_data(m, d1, &(kiln_fit_opts){ .epochs = 1 }));
    CHECK_OK(kiln_model_get_weight(m, "dense/kernel", &w1));
    CHECK(w0 && w1 && memcmp(w0->data, w1->data, kiln_tensor_nbytes(w0)));
    kiln_data_free(d1);
    kiln_tensor_free(w0);
    kiln_tensor_free(w1);
    kiln_tensor_free(tx);
    kiln_tensor_free(ty);
    kiln_model_free(m);
    m = kiln_model_new("g");
    kiln_layer *a = kiln_input(m, KILN_SHAPE(3)), *b = kiln_input(m, KILN_SHAPE(3));
    CHECK_OK(kiln_layer_rename(a, "x"));
    CHECK(kiln_layer_rename(b, "x") == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "twice"));
    kiln_model_free(m);
}

static void classes_json(void) {
    char *j = NULL;
    CHECK_OK(kiln_layer_classes_json(&j));
    CHECK(j && strstr(j, "\"class_name\":\"Dense\"") && strstr(j, "\"class_name\":\"ReLU\"") && !strstr(j, "InputLayer"));
    /* Dense's options in Keras's order, units required, activation defaulting to linear */
    const char *d = j ? strstr(j, "\"class_name\":\"Dense\"") : NULL;
    const char *u = d ? strstr(d, "\"name\":\"units\"") : NULL, *act = d ? strstr(d, "\"name\":\"activation\"") : NULL;
    CHECK(u && act && u < act && strstr(u, "\"required\":true") < act);
    CHECK(act && strstr(act, "\"default\":\"linear\""));
    free(j);
}

static void arrays_pipeline(void) {
    float x[6 * 2];
    int32_t y[6] = { 0, 1, 2, 1, 0, 2 };
    float yf[6] = { 0.5f, 1.5f, -2, 3, 4, 5 };
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    kiln_tensor *tx = kiln_tensor_wrap(KILN_F32, KILN_SHAPE(6, 2), x), *ty = kiln_tensor_wrap(KILN_I32, KILN_SHAPE(6), y);
    kiln_tensor *tf = kiln_tensor_wrap(KILN_F32, KILN_SHAPE(6), yf);
    kiln_data *d = kiln_data_from_arrays(tx, ty, 0);
    CHECK(d && kiln_data_num_classes(d) == 3 && kiln_data_label_dtype(d) == KILN_I32 && kiln_shape_equal(kiln_data_example_shape(d), KILN_SHAPE(2)));
    d = kiln_data_batch(d, 4, false);
    kiln_data_iter *it = NULL;
    kiln_tensor *bx = NULL, *by = NULL;
    CHECK_OK(kiln_data_iter_new(d, 1, &it));
    CHECK_OK(kiln_data_iter_next(it, &bx, &by));
    CHECK(bx && by && ((float *)bx->data)[7] == 7.0f && ((int32_t *)by->data)[2] == 2);   /* borrowed rows, in order */
    CHECK_OK(kiln_data_iter_next(it, &bx, &by));
    CHECK(bx && bx->shape.dim[0] == 2 && ((float *)bx->data)[3] == 11.0f);
    kiln_data_iter_free(it);
    kiln_data_free(d);
    d = kiln_data_from_arrays(tx, tf, 0);
    CHECK(d && kiln_data_label_dtype(d) == KILN_F32 && kiln_data_num_classes(d) == 0);
    kiln_data_free(d);
    y[3] = -1;
    CHECK(!kiln_data_from_arrays(tx, ty, 0) && strstr(kiln_last_error(), "example 3"));
    y[3] = 5;
    CHECK(!kiln_data_from_arrays(tx, ty, 4) && strstr(kiln_last_error(), "0..3"));
    kiln_tensor *short_y = kiln_tensor_wrap(KILN_I32, KILN_SHAPE(5), y);
    CHECK(!kiln_data_from_arrays(tx, short_y, 0));
    kiln_tensor_free(short_y);
    kiln_tensor_free(tx);
    kiln_tensor_free(ty);
    kiln_tensor_free(tf);
}

static void cifar_file(void) {
    char path[] = "/tmp/kiln_cifar_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    unsigned char rec[2][3073];
    for (int r = 0; r < 2; r++) {
        rec[r][0] = (unsigned char)(7 + r);
        for (int k = 0; k < 3072; k++) rec[r][1 + k] = (unsigned char)((k / 1024) * 10 + r);   /* plane c holds 10c + r */
    }
    CHECK(write(fd, rec, sizeof rec) == (ssize_t)sizeof rec);
    close(fd);
    kiln_tensor *x = NULL, *y = NULL;
    CHECK_OK(kiln_cifar10_read_u8(path, &x, &y));
    CHECK(x && kiln_shape_equal(x->shape, KILN_SHAPE(2, 32, 32, 3)) && x->dtype == KILN_U8);
    CHECK(y && ((uint8_t *)y->data)[1] == 8);
    if (x) {
        const uint8_t *p = (const uint8_t *)x->data + 3072;   /* example 1, HWC: pixel 5's channels 1, 11, 21 */
        CHECK(p[5 * 3] == 1 && p[5 * 3 + 1] == 11 && p[5 * 3 + 2] == 21);
    }
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    truncate(path, 3000);
    CHECK(kiln_cifar10_read_u8(path, &x, &y) == KILN_IO_ERROR && !x && !y);
    unlink(path);
}

static void agree_alone(void) {
    kiln_dist *d = NULL;
    CHECK_OK(kiln_dist_init(NULL, NULL, &d));
    const kiln_dist_fact f[] = { { "--batch-size", 64, NULL, false }, { "--model", kiln_dist_hash("mlp"), "mlp", false } };
    CHECK_OK(kiln_dist_agree(d, f, 2));       /* one process: nothing to disagree with */
    CHECK(!kiln_dist_disagreed(d) && kiln_dist_hash(NULL) == kiln_dist_hash("") && kiln_dist_hash("a") != kiln_dist_hash("b"));
    kiln_dist_free(d);
}

int main(void) {
    configs_match_builders();
    config_errors();
    rename_and_lr();
    classes_json();
    arrays_pipeline();
    cifar_file();
    agree_alone();
    return check_summary("test_front_end_api");
}
