/* Data as Keras users keep it, and Keras' compile choices, for kiln train / eval / predict:
 * --data npz:FILE / csv:FILE (--label-column, --test-csv), --loss, --metrics, --tensorboard-every. */
#include <stdio.h>
#include <string.h>
#include "kiln/pipeline.h"
#include "tools/cli_data.h"

static bool is_csv(const char *spec) { return spec && !strncmp(spec, "csv:", 4); }
static bool is_npz(const char *spec) { return spec && !strncmp(spec, "npz:", 4); }

/* Keras' metric names: "accuracy" is binary accuracy for one output unit, else categorical. */
static int metric_bit(const char *name, unsigned *bit) {
    static const char *const acc[] = { "accuracy", "acc", "binary_accuracy", "sparse_categorical_accuracy", "categorical_accuracy" };
    static const char *const top[] = { "top_k", "top5", "top_5", "sparse_top_k_categorical_accuracy", "top_k_categorical_accuracy" };
    for (int i = 0; i < 5; i++) if (!strcmp(name, acc[i])) { *bit = KILN_METRIC_ACCURACY; return 0; }
    for (int i = 0; i < 5; i++) if (!strcmp(name, top[i])) { *bit = KILN_METRIC_TOP_K; return 0; }
    return 2;
}

/* --metrics: accuracy and top_k as before (bits); Keras' other metrics (precision, recall, auc,
 * mae, mse, rmse, top_k_categorical_accuracy:K) into *more, compile's metric_list. */
static int parse_metrics(const char *list, unsigned *bits, char *more, size_t cap, const char *cmd) {
    *bits = 0;
    *more = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        unsigned b;
        if (!strcmp(t, "none")) continue;
        if (!metric_bit(t, &b)) { *bits |= b; continue; }
        if (kiln_metric_list_check(t) != KILN_OK || strlen(more) + strlen(t) + 2 > cap) {
            if (cmd) fprintf(stderr, "kiln %s: unknown metric '%s' in --metrics: use accuracy (binary_accuracy, sparse_categorical_accuracy), "
                             "top_k (top-5 accuracy), precision, recall, auc, mae, mse, rmse, perplexity, top_k_categorical_accuracy:K or none, "
                             "comma-separated\n", cmd, t);
            return 2;
        }
        snprintf(more + strlen(more), cap - strlen(more), "%s%s", *more ? "," : "", t);
    }
    return 0;
}

int cli_check_data_opts(const args *a, const char *cmd) {
    kiln_loss_kind k;
    unsigned bits;
    if (a->loss && kiln_loss_from_name(a->loss, &k) != KILN_OK) { fprintf(stderr, "kiln %s: --loss: %s\n", cmd, kiln_last_error()); return 2; }
    char more[512];
    if (a->metrics && parse_metrics(a->metrics, &bits, more, sizeof more, cmd)) return 2;
    if ((a->label_column || a->test_csv) && !is_csv(a->data)) {
        fprintf(stderr, "kiln %s: %s goes with --data csv:FILE.csv (the data is %s)\n", cmd, a->label_column ? "--label-column" : "--test-csv",
                a->data_given ? a->data : "the default Fashion-MNIST");
        return 2;
    }
    if (a->test_csv && a->val_split > 0) {
        fprintf(stderr, "kiln %s: give --test-csv or --validation-split, not both\n", cmd);
        return 2;
    }
    if ((a->tokenizer || a->context > 0) && !cli_is_text(a->data)) {
        fprintf(stderr, "kiln %s: %s goes with --data text:FILE (the data is %s)\n", cmd, a->tokenizer ? "--tokenizer" : "--block-size", a->data);
        return 2;
    }
    if (a->tensorboard_every > 0 && !a->tensorboard) {
        fprintf(stderr, "kiln %s: --tensorboard-every N needs --tensorboard DIR\n", cmd);
        return 2;
    }
    return 0;
}

/* --loss mse: the labels are values to predict, also when they are whole numbers (read as class
 * ids, 250000 would make a model of 250,001 classes, which the CSV reader refuses) */
static bool value_labels(const args *a) {
    kiln_loss_kind k;
    if (!a->loss || kiln_loss_from_name(a->loss, &k) != KILN_OK) return false;
    return k == KILN_LOSS_MSE || k == KILN_LOSS_MAE || k == KILN_LOSS_HUBER || k == KILN_LOSS_LOG_COSH || k == KILN_LOSS_POISSON ||
           k == KILN_LOSS_HINGE || k == KILN_LOSS_SQUARED_HINGE;
}

kiln_status cli_open_train(const args *a, const char *spec, kiln_data **out) {
    if (is_csv(spec))
        return kiln_data_from_csv(spec + 4, &(kiln_csv_opts){ .label_column = a->label_column, .float_labels = value_labels(a) }, out);
    return kiln_data_open(spec, true, out);
}

kiln_status cli_open_test(const args *a, const char *spec, const kiln_data *train, kiln_data **out) {
    *out = NULL;
    if (is_csv(spec)) {
        if (!a->test_csv) return KILN_OK;              /* one file: hold part of it out */
        /* read like the training file: its label column, f32 labels when it has them */
        bool f32 = kiln_data_label_dtype(train) == KILN_F32;
        return kiln_data_from_csv(a->test_csv, &(kiln_csv_opts){ .label_column = a->label_column, .float_labels = f32 }, out);
    }
    kiln_status st = kiln_data_open(spec, false, out);
    if (st == KILN_NOT_FOUND && is_npz(spec)) return KILN_OK;   /* no x_test: a training-only file */
    return st;
}

/* the losses of values (and hinge's -1/1 targets) train one output unit; kl_divergence,
 * categorical_hinge and cosine_similarity compare a row with the class id's one-hot row */
static bool single_output_loss(const args *a) {
    kiln_loss_kind k;
    return a->loss && kiln_loss_from_name(a->loss, &k) == KILN_OK && (k == KILN_LOSS_BINARY_CROSSENTROPY || value_labels(a));
}

int cli_output_units(const args *a, const kiln_data *train) {
    if (single_output_loss(a) || (!a->loss && kiln_data_label_dtype(train) == KILN_F32)) return 1;
    return kiln_data_num_classes(train);
}

kiln_loss_kind cli_loss(const args *a, const kiln_model *m, kiln_dtype labels) {
    kiln_loss_kind k = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    if (a->loss && kiln_loss_from_name(a->loss, &k) == KILN_OK) return k;
    kiln_shape out = kiln_model_output_shape(m);
    if (out.rank == 1 && out.dim[0] == 1) return labels == KILN_F32 ? KILN_LOSS_MSE : KILN_LOSS_BINARY_CROSSENTROPY;
    return k;
}

unsigned cli_metrics(const args *a, kiln_loss_kind loss) {
    unsigned bits = 0;
    char more[512];
    if (a->metrics && parse_metrics(a->metrics, &bits, more, sizeof more, NULL) == 0) return bits;
    bool values = loss == KILN_LOSS_MSE || loss == KILN_LOSS_MAE || loss == KILN_LOSS_HUBER || loss == KILN_LOSS_LOG_COSH || loss == KILN_LOSS_POISSON;
    return values ? 0 : KILN_METRIC_ACCURACY;
}

const char *cli_metric_list(const args *a) {
    static char more[512];
    unsigned bits;
    more[0] = 0;
    if (a->metrics && parse_metrics(a->metrics, &bits, more, sizeof more, NULL)) return NULL;
    if (cli_is_text(a->data) && !strstr(more, "perplexity"))     /* text: always reported */
        snprintf(more + strlen(more), sizeof more - strlen(more), "%sperplexity", *more ? "," : "");
    return *more ? more : NULL;
}

bool cli_is_text(const char *spec) { return spec && !strncmp(spec, "text:", 5); }

int cli_print_values(const kiln_tensor *out, const kiln_tensor *y, int count) {
    const float *o = out->data, *l = y->data;
    int64_t c = out->shape.dim[1];
    double se = 0;
    printf("%6s  %-14s %-14s\n", "row", "predicted", "label");
    for (int i = 0; i < count; i++) {
        printf("%6d  %-14.6g %-14.6g\n", i, o[(int64_t)i * c], l[i]);
        se += (o[(int64_t)i * c] - l[i]) * (o[(int64_t)i * c] - l[i]);
    }
    printf("mean squared error of these %d: %.6g\n", count, count ? se / count : 0);
    return 0;
}
