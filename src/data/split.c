/* kiln_data_split_source: a held-out validation part of a source that has no test split (image
 * folders), as two sources reading the same files through an index map. */
#include <stdatomic.h>
#include <string.h>
#include "core/core.h"
#include "kiln/pipeline.h"
#include "data/pipeline_internal.h"

typedef struct split_shared { kiln_data *orig; atomic_int refs; } split_shared;
typedef struct split_impl { split_shared *sh; int64_t *idx; } split_impl;

static kiln_status split_get(const kiln_source *s, int64_t i, float *x, int32_t *label) {
    const split_impl *im = s->impl;
    const kiln_source *o = im->sh->orig->src;
    return o->get(o, im->idx[i], x, label);
}

static void shared_release(split_shared *sh) {
    if (sh && atomic_fetch_sub(&sh->refs, 1) == 1) {
        kiln_data_free(sh->orig);
        kiln_free(sh);
    }
}

static void split_destroy(kiln_source *s) {
    split_impl *im = s->impl;
    if (!im) return;
    kiln_free(im->idx);
    shared_release(im->sh);
    kiln_free(im);
}

static bool held(int64_t i, double f) { return (int64_t)((double)(i + 1) * f) > (int64_t)((double)i * f); }

/* A source over the examples i of sh->orig with held(i) == want. Takes one reference of sh. */
static kiln_data *part(split_shared *sh, double f, bool want, int64_t count) {
    const kiln_source *o = sh->orig->src;
    kiln_source *s = kiln_source_new();
    split_impl *im = kiln_calloc(1, sizeof *im);
    int64_t *idx = kiln_malloc(sizeof(int64_t) * (size_t)count);
    char **names = o->class_names ? kiln_calloc((size_t)o->num_classes, sizeof *names) : NULL;
    bool ok = s && im && idx && (!o->class_names || names);
    for (int c = 0; ok && names && c < o->num_classes; c++) ok = (names[c] = kiln_strdup(o->class_names[c] ? o->class_names[c] : "")) != NULL;
    if (!ok) {
        if (names) for (int c = 0; c < o->num_classes; c++) kiln_free(names[c]);
        kiln_free(names);
        kiln_free(idx);
        kiln_free(im);
        kiln_free(s);
        shared_release(sh);
        kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_data_split_source: out of host memory");
        return NULL;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < o->n; i++)
        if (held(i, f) == want) idx[k++] = i;
    im->sh = sh;
    im->idx = idx;
    s->shape = o->shape;
    s->n = count;
    s->num_classes = o->num_classes;
    s->float_labels = o->float_labels;
    s->label_shape = o->label_shape;
    s->class_names = names;
    s->get = split_get;
    s->destroy = split_destroy;
    s->impl = im;
    return kiln_data_from_source(s);   /* frees s (and releases sh) on failure */
}

kiln_status kiln_data_split_source(kiln_data *source, double fraction, kiln_data **train, kiln_data **held_out) {
    if (train) *train = NULL;
    if (held_out) *held_out = NULL;
    if (!source || !train || !held_out) {
        kiln_data_free(source);
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_split_source: source, train and held_out must not be NULL");
    }
    if (source->kind != KILN_DN_SOURCE) {
        kiln_data_free(source);
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_split_source: split the bare source, before shuffle / batch / other transforms");
    }
    int64_t n = source->src->n, nh = 0;
    if (fraction > 0 && fraction < 1)
        for (int64_t i = 0; i < n; i++) nh += held(i, fraction);
    if (!(fraction > 0 && fraction < 1) || nh == 0 || nh == n) {
        kiln_data_free(source);
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_split_source: holding out %g of %lld examples must leave both parts non-empty (fraction in (0, 1))",
                              fraction, (long long)n);
    }
    split_shared *sh = kiln_calloc(1, sizeof *sh);
    if (!sh) {
        kiln_data_free(source);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_data_split_source: out of host memory");
    }
    sh->orig = source;
    atomic_init(&sh->refs, 2);
    kiln_data *t = part(sh, fraction, false, n - nh);
    kiln_data *h = part(sh, fraction, true, nh);
    if (!t || !h) {
        kiln_data_free(t);
        kiln_data_free(h);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_data_split_source: out of host memory");
    }
    *train = t;
    *held_out = h;
    return KILN_OK;
}
