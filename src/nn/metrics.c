/* Host metrics over one batch of outputs (accuracy, top-k), for the training and evaluation loops. */
#include "nn/nn_fit.h"

void nn_batch_metrics(const kiln_model *m, const kiln_tensor *out, const int32_t *labels, int64_t n,
                      double *correct, double *topk) {
    const float *o = out->data;
    int64_t c = out->shape.dim[1];
    int k = m->copts.top_k;
    double hit = 0, top = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *r = o + i * c;
        int32_t lab = labels[i];
        if (c == 1) {
            double thr = (m->copts.loss == KILN_LOSS_BINARY_CROSSENTROPY && m->copts.from_logits) ? 0.0 : 0.5;
            int pred = r[0] > thr;
            hit += pred == lab;
            top += pred == lab;
            continue;
        }
        if (lab < 0 || lab >= c) continue;
        int64_t best = 0, above = 0;
        for (int64_t j = 1; j < c; j++) if (r[j] > r[best]) best = j;
        for (int64_t j = 0; j < c; j++) if (r[j] > r[lab]) above++;
        hit += best == lab;
        top += above < k;
    }
    *correct = hit;
    *topk = top;
}
