/* kiln_train_on_batch (Keras's model.train_on_batch): one optimizer step on a batch the caller
 * holds, labels of the model's label shape: (B) class ids, or (B, T) next-token ids for a model
 * with (T, vocabulary) outputs (a GPT), which kiln_fit's datasets do not carry (one label per
 * example). The rate is the compiled one (schedules run inside kiln_fit). */
#include <string.h>
#include "nn/nn_fit.h"

kiln_status kiln_train_on_batch(kiln_model *m, const kiln_tensor *x, const kiln_tensor *y, double *loss) {
    if (!m || !x || !y) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_train_on_batch: NULL argument");
    kiln_status st = nn_check(m);
    if (st) return st;
    if (nn_accum_n(m) > 1 || m->res.n)
        return kiln_set_error(KILN_UNSUPPORTED, "kiln_train_on_batch: model '%s' is set up for accumulation or resident data; use kiln_fit", m->name);
    char a[96], b[96];
    if (x->dtype != KILN_F32 || x->shape.rank != m->input->out.rank + 1 || x->shape.dim[0] < 1)
        return kiln_set_error(KILN_SHAPE_MISMATCH, "kiln_train_on_batch: x is %s %s; model '%s' takes f32 (B, %s)", kiln_dtype_name(x->dtype),
                              kiln_shape_str(x->shape, a, sizeof a), m->name, kiln_shape_str(m->input->out, b, sizeof b));
    int batch = (int)x->shape.dim[0];
    kiln_shape ls = nn_label_shape(m), want = { ls.rank + 1, { batch } };
    for (int i = 0; i < ls.rank; i++) want.dim[i + 1] = ls.dim[i];
    if (y->dtype != KILN_I32 || !kiln_shape_equal(y->shape, want))
        return kiln_set_error(KILN_SHAPE_MISMATCH, "kiln_train_on_batch: y is %s %s; expected i32 %s", kiln_dtype_name(y->dtype),
                              kiln_shape_str(y->shape, a, sizeof a), kiln_shape_str(want, b, sizeof b));
    m->float_labels = false;
    if ((st = nn_ensure_train(m, batch)) || (st = nn_set_lr(m, m->base_lr))) return st;
    nn_forward *f = &m->train;
    kiln_feed feeds[2] = { { f->x, x }, { f->y, y } };
    kiln_tensor *lt = NULL;
    st = kiln_session_run(m->s, feeds, 2, &f->loss, &lt, 1, &f->step, 1);
    if (!st && loss) *loss = kiln_tensor_get(lt, 0);
    kiln_tensor_free(lt);
    return st;
}
