/* The model of kiln train / eval / predict / summary: from --model, --model-file or --load. The
 * model a file describes is built once into c->arch, and the path that uses it takes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln/kiln.h"
#include "tools/commands.h"
#include "tools/cli_data.h"
#include "tools/cli_model.h"

const char *const cli_fashion_names[10] = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot" };

kiln_shape cli_model_input(const cli_ctx *c, const char *model) {
    if (cli_onnx_file(&c->a)) return cli_onnx_input(c->a.model_file);
    if (c->arch && model && !strcmp(model, kiln_model_name(c->arch))) return kiln_model_input_shape(c->arch);
    kiln_model *m = kiln_model_preset(model, KILN_SCALAR, 10);
    kiln_shape s = m ? kiln_model_input_shape(m) : KILN_SCALAR;
    kiln_model_free(m);
    return s;
}

int cli_check_shapes(const cli_ctx *c, const char *cmd, const char *model, kiln_shape data) {
    kiln_shape want = cli_model_input(c, model);
    if (want.rank == 0) { kiln_model_preset(model, KILN_SCALAR, 10); return cli_fail(cmd, 2); }
    if (kiln_shape_equal(want, data)) return 0;
    bool from_ckpt = c->arch && !strcmp(model, kiln_model_name(c->arch));   /* a saved model keeps its shape */
    if (!from_ckpt && kiln_model_preset_takes(model, data)) return 0;
    /* the built-in mlp flattens: it takes any shape (CSV rows, npz arrays) */
    kiln_model *at = !from_ckpt && !strcmp(model, "mlp") ? kiln_model_preset(model, data, 10) : NULL;
    kiln_model_free(at);
    if (at) return 0;
    char w[64], d[64];
    fprintf(stderr, "kiln %s: model %s takes %s examples but --data %s has %s examples; pick a model for this data "
            "(fashion_cnn takes [28, 28, 1], cifar_cnn takes [32, 32, 3]; lenet5, resnet20, resnet56, inception and "
            "fast_cifar take either; mlp any shape: images, CSV rows)\n", cmd, model,
            kiln_shape_str(want, w, sizeof w), c->a.data, kiln_shape_str(data, d, sizeof d));
    return 2;
}

int cli_use_model_file(cli_ctx *c, const char *cmd) {
    args *a = &c->a;
    if (a->model) { fprintf(stderr, "kiln %s: give --model NAME or --model-file FILE, not both\n", cmd); return 2; }
    kiln_status st = cli_is_keras(a->model_file) ? kiln_model_from_keras_file(a->model_file, &c->arch)
                                                 : kiln_model_from_json_file(a->model_file, &c->arch);
    if (st != KILN_OK) return cli_fail(cmd, 2);
    snprintf(c->model_name, sizeof c->model_name, "%s", kiln_model_name(c->arch));
    a->model = c->model_name;
    return 0;
}

kiln_model *cli_keras_file_model(cli_ctx *c, const char *cmd, int classes) {
    kiln_model *m = c->arch;
    c->arch = NULL;
    kiln_shape out = kiln_model_output_shape(m);
    if (out.rank == 1 && out.dim[0] > 1 && out.dim[0] < classes) {
        fprintf(stderr, "kiln %s: model '%s' in %s has %lld outputs but --data %s has %d classes\n", cmd, kiln_model_name(m), c->a.model_file,
                (long long)out.dim[0], c->a.data, classes);
        kiln_model_free(m);
        return NULL;
    }
    return m;
}

bool cli_is_keras(const char *path) {
    size_t n = path ? strlen(path) : 0;
    return (n > 6 && !strcmp(path + n - 6, ".keras")) || (n > 3 && !strcmp(path + n - 3, ".h5")) || (n > 5 && !strcmp(path + n - 5, ".hdf5"));
}

bool cli_keras_own_weights(const args *a) { return a->model_file && cli_is_keras(a->model_file) && !a->load; }

kiln_model *cli_keras_file_compiled(cli_ctx *c, const char *cmd, int classes, kiln_dtype labels) {
    kiln_model *m = cli_keras_file_model(c, cmd, classes);
    kiln_compile_opts co = m ? cli_compile_opts(&c->a, m, labels, kiln_adam(1e-3), (kiln_lr_schedule){ 0 }) : (kiln_compile_opts){ 0 };
    if (m && kiln_compile(m, &co) != KILN_OK) {
        cli_fail(cmd, 1);
        kiln_model_free(m);
        return NULL;
    }
    return m;
}

kiln_model *cli_onnx_file_model(const args *a, const char *cmd, kiln_shape data, int classes) {
    if (cli_is_onnx(a->model_file)) return cli_onnx_model(a->model_file, cmd, data, classes);
    fprintf(stderr, "kiln %s: --model-file %s: not a model file kiln reads (FILE.onnx)\n", cmd, a->model_file);
    return NULL;
}

kiln_model *cli_onnx_file_model_loaded(const args *a, const char *cmd, kiln_shape data, int classes) {
    kiln_model *m = cli_onnx_file_model(a, cmd, data, classes);
    kiln_compile_opts co = cli_compile_opts(a, m, KILN_I32, kiln_adam(1e-3), (kiln_lr_schedule){ 0 });
    if (m && (kiln_compile(m, &co) != KILN_OK || (a->load && kiln_model_load(m, a->load) != KILN_OK))) {
        cli_fail(cmd, 1);
        kiln_model_free(m);
        return NULL;
    }
    return m;
}

kiln_safetensors *cli_checkpoint_read(cli_ctx *c, const char *cmd) {
    args *a = &c->a;
    kiln_safetensors *f = NULL;
    if (kiln_safetensors_load(a->load, &f) != KILN_OK) { cli_fail(cmd, 1); return NULL; }
    if (strcmp(cmd, "train") && !a->n_images && (cli_data_from_record(a, cmd, f, &c->data_record) || (c->data_record &&
        (cli_check_data_opts(a, cmd) || cli_check_paths(a, cmd))))) {
        kiln_safetensors_free(f);
        return NULL;
    }
    if (!a->model) {
        const char *saved = kiln_safetensors_meta(f, "kiln.model");
        if (kiln_safetensors_meta(f, "kiln.architecture")) {
            if (kiln_model_build_from_checkpoint(f, a->load, &c->arch) != KILN_OK) { cli_fail(cmd, 1); kiln_safetensors_free(f); return NULL; }
            saved = kiln_model_name(c->arch);
        }
        snprintf(c->model_name, sizeof c->model_name, "%s", saved ? saved : "fashion_cnn");
        a->model = c->model_name;
    }
    return f;
}

kiln_model *cli_checkpoint_model(cli_ctx *c, const char *cmd, const kiln_safetensors *f, kiln_shape data_shape, int classes,
                                 kiln_dtype labels) {
    const args *a = &c->a;
    kiln_model *m = c->arch && !strcmp(a->model, kiln_model_name(c->arch)) ? c->arch : kiln_model_preset(a->model, data_shape, classes);
    if (m != c->arch) kiln_model_free(c->arch);   /* --model named another one */
    c->arch = NULL;
    if (!m) { cli_fail(cmd, 1); return NULL; }
    kiln_shape out = kiln_model_output_shape(m);
    if (classes > 0 && out.rank == 1 && out.dim[0] > 1 && out.dim[0] < classes) {
        fprintf(stderr, "kiln %s: model '%s' in %s has %lld outputs but --data %s has %d classes\n", cmd, kiln_model_name(m), a->load,
                (long long)out.dim[0], a->data, classes);
        kiln_model_free(m);
        return NULL;
    }
    kiln_compile_opts co = cli_compile_opts(a, m, labels, kiln_adam(1e-3), (kiln_lr_schedule){ 0 });
    if (kiln_compile(m, &co) != KILN_OK || kiln_model_load_opts(m, a->load, &(kiln_load_opts){ .file = f }) != KILN_OK) {
        cli_fail(cmd, 1);
        kiln_model_free(m);
        return NULL;
    }
    return m;
}

/* kiln_model_build_from_checkpoint: its architecture, else the built-in model with
 * kiln.input_shape and its last layer's bias. */
kiln_model *cli_checkpoint_model_alone(cli_ctx *c, const char *cmd, const kiln_safetensors *f) {
    if (!c->arch && kiln_model_build_from_checkpoint(f, c->a.load, &c->arch) != KILN_OK) c->arch = NULL;
    kiln_shape in = c->arch ? kiln_model_input_shape(c->arch) : KILN_SCALAR;
    kiln_shape out = c->arch ? kiln_model_output_shape(c->arch) : KILN_SCALAR;
    return cli_checkpoint_model(c, cmd, f, in, out.rank == 1 && out.dim[0] <= INT32_MAX ? (int)out.dim[0] : 10, KILN_I32);
}

kiln_compile_opts cli_compile_opts(const args *a, const kiln_model *m, kiln_dtype labels, kiln_optimizer opt, kiln_lr_schedule sched) {
    kiln_loss_kind loss = cli_loss(a, m, labels);
    return (kiln_compile_opts){ .optimizer = opt, .schedule = sched, .loss = loss,
                                .from_logits = !kiln_model_outputs_probabilities(m), .metrics = cli_metrics(a, loss), .device = a->device,
                                .num_threads = a->threads, .log_device_placement = a->log_placement,
                                .precision = cli_precision(a), .sync_batchnorm = a->sync_batchnorm,
                                .metric_list = cli_metric_list(a) };
}

bool cli_fashion_like(const args *a, kiln_shape in, int64_t classes) {
    bool grey28 = in.rank == 3 && in.dim[0] == 28 && in.dim[1] == 28 && in.dim[2] == 1;
    return grey28 && classes == 10 && (!a->data_given || strstr(a->data, "fashion"));
}

kiln_status cli_set_class_names(const args *a, kiln_model *m, const kiln_data *train) {
    int n = kiln_data_num_classes(train);
    if (cli_fashion_like(a, kiln_data_example_shape(train), n)) return kiln_model_set_class_names(m, cli_fashion_names, 10);
    if (n <= 0 || !kiln_data_class_name(train, 0)) return KILN_OK;
    const char **names = calloc((size_t)n, sizeof *names);
    if (!names) return KILN_OUT_OF_MEMORY;
    for (int i = 0; i < n; i++) names[i] = kiln_data_class_name(train, i) ? kiln_data_class_name(train, i) : "";
    kiln_status st = kiln_model_set_class_names(m, names, n);
    free(names);
    return st;
}
