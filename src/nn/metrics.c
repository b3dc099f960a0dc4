/* Host metrics over one batch of outputs (accuracy, top-k), for the training and evaluation loops.
 * Accuracy follows Keras' "accuracy": binary accuracy for one output unit (the prediction
 * thresholded at 0.5, or 0 for logits, equal to the label: f32 labels must be exactly 0 or 1 to
 * count), else the arg-max equal to the class id. */
#include "nn/nn_fit.h"

void nn_batch_metrics(const kiln_model *m, const kiln_tensor *out, const kiln_tensor *y, int64_t n,
                      double *correct, double *topk) {
    const float *o = out->data;
    const int32_t *labels = y->data;
    const float *values = y->data;
    bool f32 = y->dtype == KILN_F32;
    int64_t c = out->shape.dim[out->shape.rank - 1], per = 1;
    if (out->shape.rank == 3) { per = out->shape.dim[1]; n *= per; }   /* a language model: each position, counted 1/T */
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
}
