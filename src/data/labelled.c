/* One split held in memory (what the npz and CSV loaders parse into) and the pipeline source
 * over it; the rule that decides whether labels are class ids or f32 values. */
#include <math.h>
#include <string.h>
#include "core/core.h"
#include "data/pipeline_internal.h"
#include "data/tabular.h"

void kiln_labelled_free(kiln_labelled *t) {
    if (!t) return;
    kiln_free(t->x);
    kiln_free(t->y);
    t->x = NULL;
    t->y = NULL;
}

kiln_status kiln_labelled_set_labels(kiln_labelled *t, const double *v, bool force_float, const char *what) {
    /* whole numbers from 0 are class ids (what Keras' sparse losses take); anything else is a
     * value to regress on (mse) or a soft target (binary_crossentropy) */
    bool ids = !force_float;
    int64_t top = -1;
    for (int64_t i = 0; ids && i < t->n; i++) {
        ids = v[i] >= 0 && v[i] <= 2147483646.0 && v[i] == floor(v[i]);
        if (ids && (top < 0 || v[i] > v[top])) top = i;      /* the row of the largest id */
    }
    /* one output unit per class: a stray large id would build a model of millions of classes */
    if (ids && top >= 0 && v[top] >= KILN_MAX_CLASSES)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: data row %lld has the label %.0f: as a class id that makes %.0f classes, more "
                              "than the %d Kiln takes (class ids 0..%d). Labels that are values to predict: train with --loss mse "
                              "(kiln_csv_opts.float_labels); class ids: number the classes from 0", what ? what : "data",
                              (long long)top + 1, v[top], v[top] + 1, KILN_MAX_CLASSES, KILN_MAX_CLASSES - 1);
    kiln_free(t->y);
    t->y = kiln_malloc(sizeof(int32_t) * (size_t)(t->n > 0 ? t->n : 1));
    if (!t->y) return kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory for %lld labels", (long long)t->n);
    t->float_labels = !ids;
    t->num_classes = ids && top >= 0 ? (int)v[top] + 1 : 0;
    for (int64_t i = 0; i < t->n; i++) {
        if (ids) t->y[i] = (int32_t)v[i];
        else {
            float f = (float)v[i];
            memcpy(&t->y[i], &f, sizeof f);
        }
    }
    return KILN_OK;
}

typedef struct lab_impl { float *x; int32_t *y; int64_t row; } lab_impl;

static kiln_status lab_get(const kiln_source *s, int64_t i, float *x, int32_t *label) {
    const lab_impl *im = s->impl;
    memcpy(x, im->x + (size_t)i * (size_t)im->row, sizeof(float) * (size_t)im->row);
    *label = im->y[i];
    return KILN_OK;
}

static void lab_destroy(kiln_source *s) {
    lab_impl *im = s->impl;
    if (!im) return;
    kiln_free(im->x);
    kiln_free(im->y);
    kiln_free(im);
}

kiln_data *kiln_labelled_source(kiln_labelled *t) {
    lab_impl *im = kiln_calloc(1, sizeof *im);
    kiln_source *s = im ? kiln_source_new() : NULL;
    if (!s) {
        kiln_free(im);
        kiln_labelled_free(t);
        kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory");
        return NULL;
    }
    im->x = t->x;
    im->y = t->y;
    im->row = kiln_shape_numel(t->example);
    s->shape = t->example;
    s->n = t->n;
    s->num_classes = t->num_classes;
    s->float_labels = t->float_labels;
    s->get = lab_get;
    s->destroy = lab_destroy;
    s->impl = im;
    t->x = NULL;
    t->y = NULL;
    return kiln_data_from_source(s);
}
