/* Host metrics over one batch of outputs (accuracy, top-k, and compile's metric_list), for the
 * training and evaluation loops.
 * Accuracy follows Keras' "accuracy": binary accuracy for one output unit (the prediction
 * thresholded at 0.5, or 0 for logits, equal to the label: f32 labels must be exactly 0 or 1 to
 * count), else the arg-max equal to the class id. */
#include <math.h>
#include <stdlib.h>
#include "nn/nn_fit.h"

/* ---- compile's metric_list: Keras' metrics counted over an epoch or an evaluation ---- */
#define AUC_T 200
typedef enum { MK_BINARY_ACC, MK_CAT_ACC, MK_TOPK, MK_PRECISION, MK_RECALL, MK_AUC, MK_MAE, MK_MSE, MK_RMSE, MK_PERPLEXITY } metric_kind;
typedef struct metric {
    metric_kind kind;
    int k;
    char name[64];
    double sum, count;                       /* accuracies, mae, mse, rmse */
    double tp, fp, fn;                       /* precision, recall */
    double *pos, *neg;                       /* auc: examples above threshold i, by label [AUC_T] */
    double npos, nneg;
} metric;
struct nn_metric_set { int n; metric m[KILN_MAX_METRICS]; };

static const struct { const char *name; metric_kind k; } metric_names[] = {
    { "binary_accuracy", MK_BINARY_ACC }, { "categorical_accuracy", MK_CAT_ACC }, { "sparse_categorical_accuracy", MK_CAT_ACC },
    { "top_k_categorical_accuracy", MK_TOPK }, { "sparse_top_k_categorical_accuracy", MK_TOPK },
    { "precision", MK_PRECISION }, { "recall", MK_RECALL }, { "auc", MK_AUC },
    { "mae", MK_MAE }, { "mean_absolute_error", MK_MAE }, { "mse", MK_MSE }, { "mean_squared_error", MK_MSE },
    { "rmse", MK_RMSE }, { "root_mean_squared_error", MK_RMSE },
    { "perplexity", MK_PERPLEXITY },    /* not Keras': exp of the mean cross-entropy per label (per token) */
};

void nn_metric_set_free(nn_metric_set *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) { kiln_free(s->m[i].pos); kiln_free(s->m[i].neg); }
    kiln_free(s);
}

/* One entry "NAME[:K][@DISPLAY]" into mt. */
static kiln_status parse_entry(const char *e, metric *mt) {
    char nm[64];
    const char *at = strchr(e, '@'), *colon = strchr(e, ':');
    size_t len = colon && (!at || colon < at) ? (size_t)(colon - e) : at ? (size_t)(at - e) : strlen(e);
    if (len == 0 || len >= sizeof nm || (at && (!at[1] || strlen(at + 1) >= sizeof mt->name)))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: metric '%s': expected NAME[:K][@DISPLAY]", e);
    memcpy(nm, e, len);
    nm[len] = 0;
    size_t i = 0;
    while (i < sizeof metric_names / sizeof metric_names[0] && strcmp(nm, metric_names[i].name)) i++;
    if (i == sizeof metric_names / sizeof metric_names[0])
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: unknown metric '%s': use binary_accuracy, categorical_accuracy, "
                              "sparse_categorical_accuracy, top_k_categorical_accuracy[:K], sparse_top_k_categorical_accuracy[:K], "
                              "precision, recall, auc, mae, mse, rmse or perplexity", nm);
    mt->kind = metric_names[i].k;
    mt->k = 5;
    if (colon && (!at || colon < at)) {
        char *end;
        long k = strtol(colon + 1, &end, 10);
        if (mt->kind != MK_TOPK || k < 1 || k > 1000000 || (end != at && *end))
            return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: metric '%s': only the top-k metrics take :K, a whole number >= 1", e);
        mt->k = (int)k;
    }
    snprintf(mt->name, sizeof mt->name, "%s", at ? at + 1 : nm);
    if (mt->kind == MK_AUC && (!(mt->pos = kiln_calloc(AUC_T, sizeof(double))) || !(mt->neg = kiln_calloc(AUC_T, sizeof(double)))))
        return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_compile: out of host memory");
    return KILN_OK;
}

kiln_status nn_metric_set_parse(const char *list, nn_metric_set **out) {
    *out = NULL;
    if (!list || !*list) return KILN_OK;
    nn_metric_set *s = kiln_calloc(1, sizeof *s);
    char buf[1024];
    if (!s) return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_compile: out of host memory");
    if (strlen(list) >= sizeof buf) { kiln_free(s); return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: metric_list is too long"); }
    snprintf(buf, sizeof buf, "%s", list);
    kiln_status st = KILN_OK;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !st; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ') t++;
        if (s->n == KILN_MAX_METRICS) st = kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_compile: more than %d metrics in metric_list", KILN_MAX_METRICS);
        else st = parse_entry(t, &s->m[s->n++]);
    }
    if (st) { nn_metric_set_free(s); return st; }
    *out = s;
    return KILN_OK;
}

kiln_status kiln_metric_list_check(const char *list) {
    nn_metric_set *s;
    kiln_status st = nn_metric_set_parse(list, &s);
    nn_metric_set_free(s);
    return st;
}

const char *kiln_model_metric_name(const kiln_model *m, int i) {
    return m && m->mset && i >= 0 && i < m->mset->n ? m->mset->m[i].name : NULL;
}

void nn_metrics_reset(const kiln_model *m) {
    for (int i = 0; m->mset && i < m->mset->n; i++) {
        metric *t = &m->mset->m[i];
        t->sum = t->count = t->tp = t->fp = t->fn = t->npos = t->nneg = 0;
        if (t->pos) { memset(t->pos, 0, AUC_T * sizeof(double)); memset(t->neg, 0, AUC_T * sizeof(double)); }
    }
}

/* Keras' AUC thresholds: -eps, i / 199 (i = 1..198), 1 + eps; an example counts above when >. */
static double auc_threshold(int i) { return i == 0 ? -1e-7 : i == AUC_T - 1 ? 1 + 1e-7 : (double)i / (AUC_T - 1); }

/* The cross-entropy of one row against class id lab: r logits (log-sum-exp - r[lab]) or probabilities. */
static double row_xent(const float *r, int64_t c, int32_t lab, bool logits) {
    if (!logits) return -log(fmax((double)r[lab], 1e-7));
    double mx = r[0], s = 0;
    for (int64_t j = 1; j < c; j++) mx = fmax(mx, (double)r[j]);
    for (int64_t j = 0; j < c; j++) s += exp((double)r[j] - mx);
    return mx + log(s) - (double)r[lab];
}

static void update_one(metric *t, const float *r, int64_t c, double label, bool ids, bool logits) {
    int32_t lab = (int32_t)label;
    if (t->kind == MK_PERPLEXITY) {
        if (ids && c > 1 && lab >= 0 && lab < c) { t->sum += row_xent(r, c, lab, logits); t->count += 1; }
        return;
    }
    if (t->kind == MK_CAT_ACC || t->kind == MK_TOPK) {
        int64_t best = 0, above = 0;
        for (int64_t j = 1; j < c; j++) if (r[j] > r[best]) best = j;
        bool in = ids && lab >= 0 && lab < c;
        for (int64_t j = 0; in && j < c; j++) if (r[j] > r[lab]) above++;
        t->sum += t->kind == MK_CAT_ACC ? (in && best == lab) : (in && above < t->k);
        t->count += 1;
        return;
    }
    for (int64_t j = 0; j < c; j++) {       /* element-wise against the target: the value, or one-hot */
        double p = r[j], y = c == 1 ? label : (double)(j == lab), d = p - y;
        bool pp = p > 0.5, yp = y != 0;      /* Keras casts labels to bool for the confusion counts */
        switch (t->kind) {
        case MK_BINARY_ACC: t->sum += (double)pp == y; t->count += 1; break;
        case MK_PRECISION: case MK_RECALL: t->tp += pp && yp; t->fp += pp && !yp; t->fn += !pp && yp; break;
        case MK_AUC:
            if (yp) t->npos += 1; else t->nneg += 1;
            p = p < 0 ? 0 : p > 1 ? 1 : p;   /* Keras clips the predictions to [0, 1] */
            for (int i = 0; i < AUC_T && p > auc_threshold(i); i++) (yp ? t->pos : t->neg)[i] += 1;
            break;
        case MK_MAE: t->sum += fabs(d); t->count += 1; break;
        default: t->sum += d * d; t->count += 1; break;
        }
    }
}

static void metrics_update(const kiln_model *m, const kiln_tensor *out, const kiln_tensor *y, int64_t n) {
    int64_t c = out->shape.dim[out->shape.rank - 1];
    bool ids = y->dtype != KILN_F32;
    for (int i = 0; m->mset && i < m->mset->n; i++)
        for (int64_t e = 0; e < n; e++)
            update_one(&m->mset->m[i], (const float *)out->data + e * c, c, ids ? ((const int32_t *)y->data)[e] : ((const float *)y->data)[e], ids,
                       m->copts.from_logits);
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }   /* Keras' divide_no_nan */

static double auc_value(const metric *t) {
    double area = 0;
    for (int i = 0; i + 1 < AUC_T; i++) {     /* trapezoids over (false positive rate, recall) */
        double x0 = ratio(t->neg[i], t->nneg), x1 = ratio(t->neg[i + 1], t->nneg);
        double y0 = ratio(t->pos[i], t->npos), y1 = ratio(t->pos[i + 1], t->npos);
        area += (x0 - x1) * (y0 + y1) / 2;
    }
    return area;
}

int nn_metrics_values(const kiln_model *m, double *out) {
    int n = m->mset ? m->mset->n : 0;
    for (int i = 0; i < n; i++) {
        const metric *t = &m->mset->m[i];
        switch (t->kind) {
        case MK_PRECISION: out[i] = ratio(t->tp, t->tp + t->fp); break;
        case MK_RECALL: out[i] = ratio(t->tp, t->tp + t->fn); break;
        case MK_AUC: out[i] = auc_value(t); break;
        case MK_RMSE: out[i] = sqrt(ratio(t->sum, t->count)); break;
        case MK_PERPLEXITY: out[i] = exp(ratio(t->sum, t->count)); break;
        default: out[i] = ratio(t->sum, t->count); break;
        }
    }
    return n;
}


void nn_batch_metrics(const kiln_model *m, const kiln_tensor *out, const kiln_tensor *y, int64_t n,
                      double *correct, double *topk) {
    const float *o = out->data;
    const int32_t *labels = y->data;
    const float *values = y->data;
    bool f32 = y->dtype == KILN_F32;
    int64_t c = out->shape.dim[out->shape.rank - 1], per = 1;
    for (int i = 1; i + 1 < out->shape.rank; i++) per *= out->shape.dim[i];   /* a label per position (a language model): each counts 1/T */
    n *= per;
    int k = m->copts.top_k;
    double hit = 0, top = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *r = o + i * c;
        if (c == 1) {
            double thr = (m->copts.loss == KILN_LOSS_BINARY_CROSSENTROPY && m->copts.from_logits) ? 0.0 : 0.5;
            int pred = r[0] > thr;
            bool eq = f32 ? (double)values[i] == (double)pred : labels[i] == pred;
            hit += eq;
            top += eq;
            continue;
        }
        if (f32) continue;                  /* f32 labels need one output unit (checked before fit) */
        int32_t lab = labels[i];
        if (lab < 0 || lab >= c) continue;
        int64_t best = 0, above = 0;
        for (int64_t j = 1; j < c; j++) if (r[j] > r[best]) best = j;
        for (int64_t j = 0; j < c; j++) if (r[j] > r[lab]) above++;
        hit += best == lab;
        top += above < k;
    }
    *correct = hit / (double)per;
    *topk = top / (double)per;
    metrics_update(m, out, y, n);       /* n rows: each position of a language model */
}
