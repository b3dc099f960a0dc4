/* --data's splits (an image folder's train/ and test/ sub-folders, a data set's own test split,
 * or a held-out part) and the input pipelines of kiln train / eval / predict. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "kiln/kiln.h"
#include "tools/cli_data.h"
#include "tools/cli_model.h"
#include "tools/cli_source.h"

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* True when dir holds files of a CIFAR / MNIST data set (so train/ and test/ are not image splits). */
static bool known_files(const char *dir) {
    static const char *const names[] = { "data_batch_1.bin", "test_batch.bin", "train.bin", "test.bin", "cifar-10-batches-bin",
                                         "cifar-100-binary", "train-images-idx3-ubyte", "train-images-idx3-ubyte.gz",
                                         "t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz" };
    char p[4400];
    struct stat st;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (stat(p, &st) == 0) return true;
    }
    return false;
}

void cli_data_src_free(data_src *d) {
    kiln_data_free(d->train);
    kiln_data_free(d->test);
    d->train = d->test = NULL;
}

/* --data synthetic: the specs of images shaped like the model's input, 50,000 (CIFAR-shaped) or
 * 60,000 training and 10,000 test examples. 0, or 2 after a message. */
static int synthetic_specs(const cli_ctx *c, const char *cmd, char *spec, size_t sn, char *test_spec, size_t tn) {
    const args *a = &c->a;
    kiln_shape s = cli_model_input(c, a->model);
    if (s.rank != 3 && c->arch) { fprintf(stderr, "kiln %s: --data synthetic makes images; model %s does not take images\n", cmd, a->model); return 2; }
    if (s.rank != 3) {
        if (!a->model_file) kiln_model_preset(a->model, KILN_SCALAR, 10);
        else if (s.rank) fprintf(stderr, "kiln %s: --data synthetic makes images; %s takes other examples\n", cmd, a->model_file);
        return s.rank ? 2 : cli_fail(cmd, 2);
    }
    snprintf(spec, sn, "synthetic:%lldx%lldx%lld:%d", (long long)s.dim[0], (long long)s.dim[1],
             (long long)s.dim[2], s.dim[2] == 3 ? 50000 : 60000);
    snprintf(test_spec, tn, "synthetic:%lldx%lldx%lld:40000", (long long)s.dim[0], (long long)s.dim[1],
             (long long)s.dim[2]);     /* the test split of synthetic:...:N has N/4 examples */
    return 0;
}

/* --data text:FILE --block-size N [--tokenizer F]: windows of the training head, consecutive
 * windows of the held-out tail (--validation-split, default 0.1). Without --tokenizer, the
 * tokenizer of the model --load / --model-file gives (c->arch), else bytes. */
static int open_text(const cli_ctx *c, const char *cmd, data_src *ds) {
    const args *a = &c->a;
    if (!strcmp(cmd, "predict")) {
        fprintf(stderr, "kiln predict: --data text: is for kiln train and kiln eval; continue a text with kiln generate --load CKPT\n");
        return 2;
    }
    if (a->context <= 0) {
        fprintf(stderr, "kiln %s: --data text:FILE needs --block-size N: the tokens in each training window, the model's context "
                "(e.g. 256 for gpt_char; kiln eval: the block size it was trained with)\n", cmd);
        return 2;
    }
    if (a->augment && strcmp(a->augment, "none")) { fprintf(stderr, "kiln %s: --augment is for images, not --data text:\n", cmd); return 2; }
    kiln_tokenizer *tok = NULL;
    if (a->tokenizer && kiln_tokenizer_load(a->tokenizer, &tok)) return cli_fail(cmd, 1);
    ds->held_out = ds->text = true;
    ds->fraction = a->val_split > 0 ? a->val_split : 0.1;
    const kiln_tokenizer *use = tok ? tok : c->arch ? kiln_model_tokenizer(c->arch) : NULL;
    kiln_status st = kiln_data_from_text(a->data + 5, &(kiln_text_data_opts){ .block_size = a->context, .tokenizer = use,
                                                                              .validation_split = ds->fraction }, &ds->train, &ds->test);
    kiln_tokenizer_free(tok);
    return st ? cli_fail(cmd, 1) : 0;
}

int cli_open_data(const cli_ctx *c, const char *cmd, bool want_train, data_src *ds) {
    const args *a = &c->a;
    int rc;
    memset(ds, 0, sizeof *ds);
    if (cli_is_text(a->data)) {
        if ((rc = open_text(c, cmd, ds))) return rc;
        if (!want_train) { kiln_data_free(ds->train); ds->train = NULL; }
        return 0;
    }
    char spec[4096], test_spec[4096], tr[4200], te[4200];
    snprintf(spec, sizeof spec, "%s", a->data);
    snprintf(test_spec, sizeof test_spec, "%s", a->data);
    if (!strcmp(a->data, "synthetic") && (rc = synthetic_specs(c, cmd, spec, sizeof spec, test_spec, sizeof test_spec))) return rc;
    /* an image folder with train / test (or val) sub-folders */
    const char *dir = !strncmp(spec, "images:", 7) ? spec + 7 : (!strchr(spec, ':') && is_dir(spec) ? spec : NULL);
    kiln_status st = KILN_OK;
    bool split_dirs = false;
    if (dir && (!strncmp(spec, "images:", 7) || !known_files(dir))) {
        snprintf(tr, sizeof tr, "%s/train", dir);
        const char *names[3] = { "test", "val", "validation" };
        for (int i = 0; i < 3 && !split_dirs && is_dir(tr); i++) {
            snprintf(te, sizeof te, "%s/%s", dir, names[i]);
            split_dirs = is_dir(te);
        }
    }
    if (split_dirs) {
        /* the training folder is read for eval/predict too: its class names give the labels, and
         * the test folders are matched to them by name (not by rank) */
        ds->images = true;
        if ((st = kiln_data_from_images(tr, &ds->train))) return cli_fail(cmd, 1);
        if (a->val_split <= 0) {
            int n = kiln_data_num_classes(ds->train);
            const char **names = calloc((size_t)n, sizeof *names);
            for (int i = 0; names && i < n; i++) names[i] = kiln_data_class_name(ds->train, i);
            st = names ? kiln_data_from_images_classes(te, names, n, &ds->test) : KILN_OUT_OF_MEMORY;
            free(names);
            if (st) { cli_data_src_free(ds); return cli_fail(cmd, 1); }
        }
    } else {
        if ((st = cli_open_train(a, spec, &ds->train))) {
            if (st == KILN_NOT_FOUND && !strchr(spec, ':') && !is_dir(spec) && !strstr(kiln_last_error(), "apt-get"))
                fprintf(stderr, "kiln %s: %s; for Fashion-MNIST (the default data) install the Debian package with: "
                        "sudo apt-get install dataset-fashion-mnist (files in " CLI_DEFAULT_DATA ")\n", cmd, kiln_last_error());
            else cli_fail(cmd, 1);
            return 1;
        }
        ds->images = kiln_data_class_name(ds->train, 0) != NULL;
        if (!ds->images && a->val_split <= 0 && (st = cli_open_test(a, test_spec, ds->train, &ds->test))) { cli_data_src_free(ds); return cli_fail(cmd, 1); }
    }
    if (!ds->test && !want_train && a->val_split <= 0 && ds->images) {   /* eval / predict: all of a folder without a test split */
        ds->test = ds->train;
        ds->train = NULL;
        ds->whole = true;
    }
    if (!ds->test) {         /* hold out part of the training split */
        ds->held_out = true;
        ds->fraction = a->val_split > 0 ? a->val_split : 0.1;
        kiln_data *src = ds->train;
        ds->train = NULL;
        if (kiln_data_split_source(src, ds->fraction, &ds->train, &ds->test)) return cli_fail(cmd, 1);
    }
    if (!want_train) { kiln_data_free(ds->train); ds->train = NULL; }
    return 0;
}

/* Cache decoded image-folder pixels when they fit in 2 GiB (decoding every epoch is slow). */
static kiln_data *maybe_cache(kiln_data *d, bool images) {
    if (!d || !images) return d;
    double bytes = (double)kiln_data_source_size(d) * (double)kiln_shape_numel(kiln_data_example_shape(d)) * 4.0;
    return bytes <= 2.0 * 1024 * 1024 * 1024 ? kiln_data_cache(d) : d;
}

int cli_parse_augment(const char *list, kiln_augment_opts *o, kiln_shape shape, uint64_t seed) {
    memset(o, 0, sizeof *o);
    o->seed = seed * 0x9E3779B97F4A7C15ull + 17;
    if (!list || !*list || !strcmp(list, "none")) return 0;
    char *buf = strdup(list);          /* the whole list, however long (a fixed buffer cut it silently) */
    if (!buf) { fprintf(stderr, "kiln train: out of memory\n"); return 1; }
    int rc = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "flip")) o->flip = true;
        else if (!strcmp(t, "crop")) o->crop_pad = 4;
        else if (!strcmp(t, "cutout")) o->cutout_size = shape.rank == 3 && shape.dim[0] >= 8 ? (int)(shape.dim[0] / 4) : 2;
        else { fprintf(stderr, "kiln train: unknown augmentation '%.64s' in --augment: use flip, crop, cutout (comma-separated)\n", t); rc = 2; }
    }
    free(buf);
    return rc;
}

bool cli_augmenting(const kiln_augment_opts *o) { return o->flip || o->crop_pad > 0 || o->cutout_size > 0; }

kiln_data *cli_train_pipeline(const args *a, kiln_data *src, bool images, const kiln_augment_opts *aug) {
    int64_t n = kiln_data_source_size(src), windows = cli_is_text(a->data) ? kiln_text_epoch_windows(src) : 0;
    kiln_data *d = src;
    if (a->limit > 0 && a->limit < n) { d = kiln_data_take(d, a->limit); n = a->limit; }
    d = maybe_cache(d, images);
    d = kiln_data_shuffle(d, n, a->seed);
    if (windows > 0 && windows < n) d = kiln_data_take(d, windows);   /* text: an epoch of random windows */
    if (cli_augmenting(aug)) d = kiln_data_augment(d, aug);
    d = kiln_data_batch(d, a->batch, true);
    if (a->prefetch > 0) d = kiln_data_prefetch(d, a->prefetch, a->workers > 0 ? a->workers : 1);
    return d;
}

kiln_data *cli_eval_pipeline(const args *a, kiln_data *src, bool images) {
    /* with --accumulate, evaluation runs in micro-batches too: it needs no more memory than training */
    int eb = a->batch > 0 ? a->batch : 64;
    kiln_data *d = kiln_data_batch(maybe_cache(src, images), a->accumulate > 1 && eb % a->accumulate == 0 ? eb / a->accumulate : eb, false);
    if (a->prefetch > 0) d = kiln_data_prefetch(d, a->prefetch, a->workers > 0 ? a->workers : 1);
    return d;
}

void cli_say_whole(const data_src *ds, const char *data) {
    if (ds->whole)
        printf("%s has no test split (no test/ or val/ sub-folder): using all %lld examples "
               "(--validation-split F uses the part kiln train held out)\n", data, (long long)kiln_data_source_size(ds->test));
}

void cli_split_name(const data_src *ds, char *buf, size_t n) {
    if (ds->held_out) snprintf(buf, n, "held-out (%g of the training data)", ds->fraction);
    else if (ds->whole) snprintf(buf, n, "overall");
    else snprintf(buf, n, "test");
}
