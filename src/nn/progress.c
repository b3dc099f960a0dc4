/* Keras-style progress: a live bar on a terminal, one line per epoch otherwise. */
#include <stdio.h>
#include <unistd.h>
#include "kiln/dist.h"
#include "nn/nn_fit.h"

void nn_progress_begin(nn_progress *p, const kiln_model *m, int verbose, int epoch, int epochs, int64_t steps) {
    /* < 0 (KILN_VERBOSE_SILENT): nothing; 0 (auto, the default) and 1: the bar on a terminal */
    p->verbose = verbose < 0 ? 0 : verbose == 0 ? 1 : verbose > 2 ? 2 : verbose;
    /* under mpirun (or srun) stdout is the launcher's forwarding, a pty even when the job's
     * output goes to a file: rank 0 cannot see its real stdout, so no \r frames there */
    p->tty = isatty(fileno(stdout)) && kiln_dist_launched_size() <= 1;
    if (p->verbose == 1 && !p->tty) p->verbose = 2;
    p->epoch = epoch;
    p->epochs = epochs;
    p->steps = steps;
    p->metrics = m->copts.metrics;
    p->top_k = m->copts.top_k;
    p->m = m;
    p->t0 = kiln_now();
    p->last_draw = 0;
    if (p->verbose == 1) { printf("Epoch %d/%d\n", epoch, epochs); fflush(stdout); }
}

static void metrics(const nn_progress *p, const kiln_logs *l, bool val) {
    printf(" - loss: %.4f", l->loss);
    if (p->metrics & KILN_METRIC_ACCURACY) printf(" - accuracy: %.4f", l->accuracy);
    if (p->metrics & KILN_METRIC_TOP_K) printf(" - top_%d: %.4f", p->top_k, l->top_k);
    for (int i = 0; i < l->n_metrics; i++) printf(" - %s: %.4f", kiln_model_metric_name(p->m, i), l->metrics[i]);
    if (!val || !l->has_val) return;
    printf(" - val_loss: %.4f", l->val_loss);
    if (p->metrics & KILN_METRIC_ACCURACY) printf(" - val_accuracy: %.4f", l->val_accuracy);
    if (p->metrics & KILN_METRIC_TOP_K) printf(" - val_top_%d: %.4f", p->top_k, l->val_top_k);
    for (int i = 0; i < l->n_metrics; i++) printf(" - val_%s: %.4f", kiln_model_metric_name(p->m, i), l->val_metrics[i]);
}

static void bar(const nn_progress *p, int64_t step) {
    char b[31];
    int filled = (int)(30 * step / (p->steps ? p->steps : 1));
    for (int i = 0; i < 30; i++) b[i] = i < filled ? '=' : '.';
    if (filled < 30 && filled > 0) b[filled - 1] = '>';
    if (filled == 0) b[0] = '>';
    b[30] = 0;
    int w = snprintf(NULL, 0, "%lld", (long long)p->steps);
    printf("\r%*lld/%lld [%s]", w, (long long)step, (long long)p->steps, b);
}

void nn_progress_batch(nn_progress *p, int64_t step, const kiln_logs *l) {
    if (p->verbose != 1) return;
    double now = kiln_now();
    if (step < p->steps && now - p->last_draw < 0.1) return;
    p->last_draw = now;
    if (step >= p->steps) return;           /* the final draw comes with the epoch's end */
    double el = now - p->t0;
    double eta = step > 0 ? el / (double)step * (double)(p->steps - step) : 0;
    bar(p, step);
    printf(" - ETA: %.0fs", eta);
    metrics(p, l, false);
    printf("\033[K");
    fflush(stdout);
}

/* Token windows (ids [T] into an Embedding) count tokens per second, as language-model trainers
 * report; anything else counts examples, "img/s" as the benchmarks read it. */
static double tokens_per_example(const kiln_model *m) {
    if (!m->input || m->input->out.rank != 1) return 0;
    for (int i = 0; i < m->n_layers; i++)
        if (m->layers[i]->kind == NN_EMBEDDING) return (double)m->input->out.dim[0];
    return 0;
}

void nn_progress_end(nn_progress *p, const kiln_logs *l) {
    if (p->verbose == 0) return;
    double per = l->batch > 0 ? l->seconds / (double)l->batch * 1e3 : 0;
    if (p->verbose == 1) {
        bar(p, l->batch);
        printf(" - %.0fs %.0fms/step", l->seconds, per);
    } else {
        printf("Epoch %d/%d - %lld/%lld - %.0fs %.0fms/step", p->epoch, p->epochs, (long long)l->batch, (long long)p->steps, l->seconds, per);
    }
    metrics(p, l, true);
    if (l->loss_scale > 0) printf(" - skipped steps: %lld - loss scale: %g", (long long)l->skipped_steps, l->loss_scale);
    double tok = tokens_per_example(p->m);
    printf(" - %.0f %s%s\n", tok > 0 ? l->images_per_sec * tok : l->images_per_sec, tok > 0 ? "tokens/s" : "img/s", p->verbose == 1 ? "\033[K" : "");
    fflush(stdout);
}
