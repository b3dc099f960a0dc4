/* Resident training data (kiln_fit_opts.data_on_device): the training set is loaded once into the
 * session's data variables (_data/x, _data/y: forward.c builds the step over them) and each step
 * feeds only the batch's example indices (and, with crop/flip, the host augment's keys, so the
 * device draws the same crops and flips). The loop iterates an index dataset (example numbers and
 * labels) through the same shuffle and batching as the host path, so the batches are the host
 * path's, example for example. kiln_fit gives a dataset; kiln_fit_data a pipeline, whose examples
 * are read into memory here and whose shuffle, augment and batch nodes the index pipeline copies. */
#include <string.h>
#include "nn/nn_fit.h"
#include "data/pipeline_internal.h"

kiln_status nn_resident_begin(kiln_model *m, const kiln_dataset *set, int64_t n, int pad, bool flip, uint64_t seed,
                              kiln_dataset **index_ds) {
    *index_ds = NULL;
    if (n >= (1 << 24)) return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: data_on_device supports up to 16,777,215 examples, not %lld", (long long)n);
    if (pad < 0) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: device_crop_pad %d is negative", pad);
    m->res.ds = set;
    m->res.n = n;
    m->res.pad = pad;
    m->res.flip = flip;
    m->res.seed = seed;       /* the host augment's key seed (kiln_data_augment: op seed = .seed) */
    kiln_tensor yv = *kiln_dataset_y(set);
    yv.shape.dim[0] = n;
    yv.owns_data = false;
    kiln_tensor *ix = kiln_tensor_new(KILN_F32, KILN_SHAPE(n, 1));
    if (!ix) return KILN_OUT_OF_MEMORY;
    for (int64_t i = 0; i < n; i++) ((float *)ix->data)[i] = (float)i;
    *index_ds = kiln_dataset_from_tensors(ix, &yv, kiln_dataset_num_classes(set));
    kiln_tensor_free(ix);
    return *index_ds ? KILN_OK : KILN_OUT_OF_MEMORY;
}

kiln_status nn_resident_load(kiln_model *m, int batch) {
    if (!(m->res.idx_t = kiln_tensor_new(KILN_I32, KILN_SHAPE(batch))) ||
        !(m->res.keys_t = kiln_tensor_new(KILN_I64, KILN_SHAPE(batch)))) return KILN_OUT_OF_MEMORY;
    const kiln_tensor *x = kiln_dataset_x(m->res.ds), *y = kiln_dataset_y(m->res.ds);
    kiln_tensor xv = *x, yv = *y;            /* the first n examples, borrowed */
    xv.shape.dim[0] = m->res.n;
    yv.shape.dim[0] = m->res.n;
    xv.owns_data = yv.owns_data = false;
    kiln_status st;
    if ((st = kiln_session_assign_variable(m->s, kiln_graph_find(m->g, NN_DATA_PREFIX "x"), &xv)) ||
        (st = kiln_session_assign_variable(m->s, kiln_graph_find(m->g, NN_DATA_PREFIX "y"), &yv)))
        return kiln_set_error(st, "kiln_fit: loading the data set into the session: %s", kiln_last_error());
    return KILN_OK;
}

int nn_resident_feeds(kiln_model *m, const nn_forward *f, const kiln_tensor *x, int batch, int epoch, kiln_feed *feeds) {
    int32_t *ix = m->res.idx_t->data;
    int64_t *keys = m->res.keys_t->data;
    const float *xf = x->data;
    for (int b = 0; b < batch; b++) {
        ix[b] = (int32_t)xf[b];
        /* the key the host augment gives this example this epoch: same crop and flip */
        keys[b] = (int64_t)kiln_data_example_key(m->res.seed, (uint64_t)epoch, ix[b]);
    }
    feeds[0] = (kiln_feed){ f->idx, m->res.idx_t };
    feeds[1] = (kiln_feed){ f->keys, m->res.keys_t };
    return f->keys ? 2 : 1;
}

void nn_resident_end(kiln_model *m) {
    kiln_tensor_free(m->res.idx_t);
    kiln_tensor_free(m->res.keys_t);
    memset(&m->res, 0, sizeof m->res);   /* the next fit without data_on_device rebuilds the step */
}

/* ---- kiln_fit_data: a pipeline's examples made resident ---- */

/* The pipeline's parts: batch -> shuffle and augment (at most one each, in either order) -> the
 * examples: a source under take, cache and normalize only, so row i of the set in memory is source
 * example i (the augment's key) and every epoch reads the same values. Prefetch nodes anywhere. */
typedef struct res_parts { const kiln_data *batch, *shuffle, *augment, *examples; } res_parts;

static const char *kind_name(kiln_node_kind k) {
    static const char *names[KILN_DN_COUNT] = {
        "source", "map", "shuffle", "batch", "repeat", "take", "skip", "cache", "normalize", "augment", "prefetch", "shard",
    };
    return (int)k >= 0 && k < KILN_DN_COUNT ? names[k] : "unknown";
}

static kiln_status split_pipeline(const kiln_data *d, res_parts *p) {
    memset(p, 0, sizeof *p);
    while (d->kind == KILN_DN_PREFETCH) d = d->input;
    const kiln_data *bad = d->kind == KILN_DN_BATCH ? NULL : d;
    p->batch = d;
    for (d = d->input; !bad && d && (d->kind == KILN_DN_SHUFFLE || d->kind == KILN_DN_AUGMENT || d->kind == KILN_DN_PREFETCH); d = d->input) {
        if (d->kind == KILN_DN_PREFETCH) continue;      /* where the work runs, not what it does */
        const kiln_data **slot = d->kind == KILN_DN_SHUFFLE ? &p->shuffle : &p->augment;
        if (*slot) bad = d;
        *slot = d;
    }
    p->examples = d;
    for (; !bad && d; d = d->input)
        if (d->kind != KILN_DN_SOURCE && d->kind != KILN_DN_TAKE && d->kind != KILN_DN_CACHE && d->kind != KILN_DN_NORMALIZE &&
            d->kind != KILN_DN_PREFETCH) bad = d;
    if (bad)
        return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: data_on_device reads a pipeline of the form source [-> take, cache, normalize] "
                              "[-> shuffle] [-> augment (crop, flip)] -> batch [-> prefetch] into memory; this one has a %s node where "
                              "that cannot be replayed there: train it without data_on_device", kind_name(bad->kind));
    const kiln_augment_opts *a = p->augment ? &p->augment->aug : NULL;
    if (a && a->cutout_size > 0) return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: data_on_device does crop and flip on the device, not cutout");
    if (a && a->crop_pad > 0 && a->fill != 0)
        return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: data_on_device pads crops with zeros, not the augment's fill %g", (double)a->fill);
    return KILN_OK;
}

/* The normalize nodes at or below d, source side first. */
static void normalize_row(const kiln_data *d, float *row, int64_t numel) {
    if (!d) return;
    normalize_row(d->input, row, numel);
    if (d->kind == KILN_DN_NORMALIZE) kiln_aug_normalize(row, numel, d->mean, d->std, d->channels);
}

/* The examples' rows 0 .. card - 1, read from the source on this thread (as the host pipeline's
 * element work does, without augmentation), class-id labels. */
static kiln_status materialize(const kiln_data *ex, kiln_dataset **out) {
    const kiln_source *src = ex->src;
    int64_t n = ex->card, numel = kiln_shape_numel(src->shape);
    kiln_shape xs = { src->shape.rank + 1, { n } };
    for (int i = 0; i < src->shape.rank; i++) xs.dim[i + 1] = src->shape.dim[i];
    kiln_tensor *x = kiln_tensor_new(KILN_F32, xs), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(n));
    kiln_status st = x && y ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "kiln_fit: data_on_device: out of host memory for %lld examples", (long long)n);
    for (int64_t i = 0; i < n && !st; i++) {
        float *row = (float *)x->data + i * numel;
        if (!(st = src->get(src, i, row, (int32_t *)y->data + i))) normalize_row(ex, row, numel);
    }
    if (!st && !(*out = kiln_dataset_from_tensors(x, y, src->num_classes))) st = nn_data_status();
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return st;
}

kiln_status nn_resident_from_pipeline(kiln_model *m, const kiln_data *train, const kiln_fit_opts *o, nn_resident_data *r) {
    memset(r, 0, sizeof *r);
    if (kiln_data_label_dtype(train) == KILN_F32)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: data_on_device takes class-id labels; the data's labels are values (mse): "
                              "train without data_on_device");
    if (kiln_data_label_shape(train).rank > 0)
        return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: data_on_device takes one label per example; this data has a label per position: "
                              "train without data_on_device");
    res_parts p;
    kiln_status st = split_pipeline(train, &p);
    if (st) return st;
    if (p.augment && (o->device_crop_pad || o->device_flip))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: data_on_device takes the crop and flip from the pipeline's augment node; "
                              "leave device_crop_pad and device_flip unset");
    if ((st = materialize(p.examples, &r->set))) return st;
    const kiln_augment_opts *a = p.augment ? &p.augment->aug : NULL;
    if ((st = a ? nn_resident_begin(m, r->set, p.examples->card, a->crop_pad, a->flip, p.augment->seed, &r->index_ds)
                : nn_resident_begin(m, r->set, p.examples->card, o->device_crop_pad, o->device_flip, o->device_augment_seed, &r->index_ds)))
        return st;
    /* the host pipeline's order: the same shuffle (buffer, seed) and batching over example numbers */
    kiln_data *d = kiln_data_from_dataset(r->index_ds, false);
    if (p.shuffle) d = kiln_data_shuffle(d, p.shuffle->n, p.shuffle->seed);
    r->index = kiln_data_batch(d, p.batch->n, p.batch->drop_remainder);
    return r->index ? KILN_OK : nn_data_status();
}

void nn_resident_data_free(kiln_model *m, nn_resident_data *r) {
    kiln_data_free(r->index);
    kiln_dataset_free(r->index_ds);
    kiln_dataset_free(r->set);
    memset(r, 0, sizeof *r);
    nn_resident_end(m);
}
