/* kiln_predict_image: one image file through a classifier. */
#include <math.h>
#include "kiln/pipeline.h"
#include "nn/nn_fit.h"

/* In place: probabilities from logits (max-subtracted, so large logits do not overflow). */
static void softmax(float *p, int64_t n) {
    float mx = p[0];
    double sum = 0;
    for (int64_t i = 1; i < n; i++) if (p[i] > mx) mx = p[i];
    for (int64_t i = 0; i < n; i++) sum += exp((double)p[i] - mx);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(exp((double)p[i] - mx) / sum);
}

kiln_status kiln_predict_image(kiln_model *m, const char *path, kiln_tensor **out, bool *resized) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_predict_image: out is NULL");
    *out = NULL;
    kiln_status st = nn_check(m);
    if (st) return st;
    kiln_shape os = kiln_model_output_shape(m), is = kiln_model_input_shape(m);
    if (os.rank != 1) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_predict_image: model '%s' is not a classifier "
                                            "(its output is not [classes])", kiln_model_name(m));
    kiln_tensor *img = NULL, *y = NULL;
    if ((st = kiln_image_load(path, is, &img, resized))) return st;
    kiln_shape bs = { is.rank + 1, { 1 } };      /* a batch of one */
    for (int i = 0; i < is.rank; i++) bs.dim[i + 1] = is.dim[i];
    img->shape = bs;
    st = kiln_predict(m, img, NULL, &y);
    kiln_tensor_free(img);
    if (st) return st;
    int64_t n = os.dim[0];
    float *p = y->data;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(p[i])) {
            kiln_tensor_free(y);
            return kiln_set_error(KILN_NUMERIC_ERROR, "kiln_predict_image: %s: model '%s' gives a non-finite output "
                                  "(NaN or Inf): its weights are not usable", path, kiln_model_name(m));
        }
    if (m->copts.from_logits) softmax(p, n);
    y->shape = KILN_SHAPE(n);
    *out = y;
    return KILN_OK;
}
