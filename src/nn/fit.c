/* kiln_fit / kiln_evaluate over in-memory datasets (wrapped in pipelines for the one loop in
 * fit_data.c) and kiln_predict. The top of src/nn. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_fit.h"

static kiln_status check_data(kiln_model *m, const kiln_dataset *d, const char *what) {
    if (!d) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: NULL dataset", what);
    kiln_status st = nn_check_examples(m, kiln_dataset_example_shape(d), kiln_dataset_y(d) != NULL,
                                       kiln_dataset_num_classes(d), what, "the dataset");
    const kiln_tensor *y = kiln_dataset_y(d);
    kiln_shape ls = { 0, { 0 } };
    if (y && y->shape.rank > 1) {
        ls.rank = y->shape.rank - 1;
        for (int i = 1; i < y->shape.rank; i++) ls.dim[i - 1] = y->shape.dim[i];
    }
    if (st || (st = nn_check_labels(m, ls, what, "the dataset"))) return st;
    if (kiln_dataset_size(d) <= 0) return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: the dataset is empty", what);
    return KILN_OK;
}

static kiln_tensor view_of(const kiln_tensor *t, int64_t rows) {
    kiln_tensor v = *t;
    v.shape.dim[0] = rows;
    v.owns_data = false;
    return v;
}

static kiln_status batch_buffers(kiln_model *m, int batch, kiln_tensor **bx, kiln_tensor **by) {
    kiln_shape xs = { .rank = m->input->out.rank + 1 };
    xs.dim[0] = batch;
    for (int i = 0; i < m->input->out.rank; i++) xs.dim[i + 1] = m->input->out.dim[i];
    *bx = kiln_tensor_new(KILN_F32, xs);
    *by = kiln_tensor_new(KILN_I32, KILN_SHAPE(batch));
    if (!*bx || !*by) { kiln_tensor_free(*bx); kiln_tensor_free(*by); *bx = *by = NULL; return kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory for batch %d", batch); }
    return KILN_OK;
}

static int eval_batch(const kiln_model *m, const kiln_eval_opts *o) {
    if (o && o->batch_size > 0) return o->batch_size;
    if (m->last_fit_batch > 0) return m->last_fit_batch;
    return 32;
}

kiln_status kiln_evaluate(kiln_model *m, const kiln_dataset *d, const kiln_eval_opts *o, kiln_eval_result *out) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_evaluate: NULL result");
    if (!m->compiled) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_evaluate: model '%s' is not compiled: call kiln_compile() to choose the loss", m->name);
    if ((st = check_data(m, d, "kiln_evaluate"))) return st;
    kiln_data *p = kiln_data_batch(kiln_data_from_dataset(d, false), eval_batch(m, o), false);
    if (!p) return nn_data_status();
    st = kiln_evaluate_data(m, p, o, out);
    kiln_data_free(p);
    return st;
}

kiln_status kiln_predict(kiln_model *m, const kiln_tensor *x, const kiln_eval_opts *o, kiln_tensor **out) {
    kiln_status st = nn_check(m);
    if (st) return st;
    if (!x || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_predict: NULL input or output");
    *out = NULL;
    kiln_shape is = m->input->out;
    char a[96], b[96];
    bool ok = x->dtype == KILN_F32 && x->shape.rank == is.rank + 1;
    for (int i = 0; ok && i < is.rank; i++) ok = x->shape.dim[i + 1] == is.dim[i];
    if (!ok) return kiln_set_error(KILN_SHAPE_MISMATCH, "kiln_predict: x is %s %s but model '%s' takes f32 [N, %s]",
                                   kiln_dtype_name(x->dtype), kiln_shape_str(x->shape, a, sizeof a), m->name, kiln_shape_str(is, b, sizeof b) + 1);
    int batch = eval_batch(m, o);
    if ((st = nn_ensure_session(m, batch))) return st;
    int64_t n = x->shape.dim[0], row = kiln_shape_numel(is);
    kiln_shape os = { .rank = m->output->out.rank + 1 };
    os.dim[0] = n;
    for (int i = 0; i < m->output->out.rank; i++) os.dim[i + 1] = m->output->out.dim[i];
    int64_t orow = kiln_shape_numel(m->output->out);
    kiln_tensor *res = kiln_tensor_new(KILN_F32, os), *bx = NULL, *by = NULL;
    if (!res) return KILN_OUT_OF_MEMORY;
    if ((st = batch_buffers(m, batch, &bx, &by))) { kiln_tensor_free(res); return st; }
    for (int64_t done = 0; done < n && !st;) {
        int64_t k = n - done < batch ? n - done : batch;
        nn_forward *f;
        if ((st = nn_get_infer(m, (int)k, &f))) break;
        kiln_tensor vx = view_of(bx, k);
        memcpy(vx.data, (const float *)x->data + done * row, (size_t)(k * row) * sizeof(float));
        kiln_feed feed = { f->x, &vx };
        kiln_node *fetch = f->out;
        kiln_tensor *o1 = f->out_t;
        if ((st = kiln_session_run(m->s, &feed, 1, &fetch, &o1, 1, NULL, 0))) break;
        memcpy((float *)res->data + done * orow, f->out_t->data, (size_t)(k * orow) * sizeof(float));
        done += k;
    }
    kiln_tensor_free(bx);
    kiln_tensor_free(by);
    if (st) { kiln_tensor_free(res); return st; }
    *out = res;
    return KILN_OK;
}

/* The in-memory special case of kiln_fit_data: the dataset read through a pipeline on this
 * thread (borrowed, no copy), [take the examples before the held-out tail,] shuffle it whole
 * (seed shuffle_seed ^ model seed, reshuffled each epoch), full batches only. data_on_device: the
 * pipeline carries example numbers instead (fit_resident.c). */
kiln_status kiln_fit(kiln_model *m, const kiln_dataset *train, const kiln_fit_opts *o) {
    kiln_status st = nn_check(m);
    if (st) return st;
    kiln_fit_opts dflt = { 0 };
    if (!o) o = &dflt;
    if (!m->compiled) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: model '%s' is not compiled: call kiln_compile() first", m->name);
    if ((st = check_data(m, train, "kiln_fit"))) return st;
    if (o->validation && (st = check_data(m, o->validation, "kiln_fit (validation)"))) return st;
    if (o->validation && o->validation_data)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: give .validation (a dataset) or .validation_data (a pipeline), not both");
    if (o->validation_data && (st = nn_check_pipeline(m, o->validation_data, "kiln_fit (validation)", false))) return st;
    int batch = o->batch_size > 0 ? o->batch_size : 32;
    if (o->validation_split < 0 || o->validation_split >= 1) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: validation_split %g must be in [0, 1)", o->validation_split);
    bool has_val = o->validation || o->validation_data;
    int64_t n = kiln_dataset_size(train);
    int64_t n_val_split = has_val ? 0 : (int64_t)((double)n * o->validation_split);
    int64_t n_train = n - n_val_split;
    if (n_train / batch == 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_fit: batch size %d is larger than the %lld training examples; use a smaller --batch-size", batch, (long long)n_train);
    kiln_dataset *index_ds = NULL;
    if ((st = nn_accum_check(m, batch, o->accumulate_steps, "kiln_fit"))) return st;
    const kiln_tensor *ty = kiln_dataset_y(train);
    if (o->data_on_device && ty && ty->shape.rank > 1)
        return kiln_set_error(KILN_UNSUPPORTED, "kiln_fit: data_on_device takes one label per example; this dataset has a label per position: "
                              "train without data_on_device");
    if (o->data_on_device &&
        (st = nn_resident_begin(m, train, n_train, o->device_crop_pad, o->device_flip, o->device_augment_seed, &index_ds))) {
        kiln_dataset_free(index_ds);
        nn_resident_end(m);
        return st;
    }
    /* resident: the pipeline carries example indices (and labels, for the metrics) through the same
     * shuffle and batching, so the batches are the host path's, example for example */
    kiln_data *td = kiln_data_from_dataset(index_ds ? index_ds : train, false), *vd = NULL;
    if (n_val_split > 0 && !index_ds) td = kiln_data_take(td, n_train);
    if (!o->no_shuffle) td = kiln_data_shuffle(td, n_train, o->shuffle_seed ^ m->seed);
    td = kiln_data_batch(td, batch, true);
    int eb = batch / nn_accum_n(m);          /* evaluation in micro-batches with accumulation */
    if (o->validation) vd = kiln_data_batch(kiln_data_from_dataset(o->validation, false), eb, false);
    else if (n_val_split > 0) vd = kiln_data_batch(kiln_data_skip(kiln_data_from_dataset(train, false), n_train), eb, false);
    if (!td || ((o->validation || n_val_split > 0) && !vd)) st = nn_data_status();
    else st = nn_fit_loop(m, td, vd ? vd : o->validation_data, o);
    kiln_data_free(td);
    kiln_data_free(vd);
    kiln_dataset_free(index_ds);
    nn_resident_end(m);      /* the next fit without data_on_device rebuilds the step */
    return st;
}
