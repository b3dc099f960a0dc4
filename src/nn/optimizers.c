/* Optimizer values and their update ops; learning-rate schedules. */
#include <math.h>
#include "nn/nn_step.h"

kiln_optimizer kiln_sgd(double lr) { return (kiln_optimizer){ .kind = KILN_OPT_SGD, .lr = lr }; }
kiln_optimizer kiln_momentum(double lr, double momentum, bool nesterov) {
    return (kiln_optimizer){ .kind = KILN_OPT_SGD, .lr = lr, .momentum = momentum, .nesterov = nesterov };
}
kiln_optimizer kiln_adam(double lr) { return (kiln_optimizer){ .kind = KILN_OPT_ADAM, .lr = lr }; }
kiln_optimizer kiln_adamw(double lr, double weight_decay) { return (kiln_optimizer){ .kind = KILN_OPT_ADAMW, .lr = lr, .weight_decay = weight_decay }; }
kiln_optimizer kiln_rmsprop(double lr) { return (kiln_optimizer){ .kind = KILN_OPT_RMSPROP, .lr = lr }; }
kiln_optimizer kiln_adagrad(double lr) { return (kiln_optimizer){ .kind = KILN_OPT_ADAGRAD, .lr = lr }; }

const char *kiln_optimizer_name(kiln_optimizer_kind k) {
    static const char *const names[KILN_OPT_COUNT] = { "sgd", "adam", "adamw", "rmsprop", "adagrad" };
    return (unsigned)k < KILN_OPT_COUNT ? names[k] : "?";
}

static double or_default(double v, double d) { return v != 0 ? v : d; }

/* The update op for (vars, grads); the learning rate comes from the model's "learning_rate"
 * variable, which the schedule assigns before each step. */
kiln_node *nn_build_optimizer(kiln_model *m, kiln_graph *g, kiln_node *const *vars, kiln_node *const *grads, int n) {
    const kiln_optimizer *o = &m->copts.optimizer;
    switch (o->kind) {
    case KILN_OPT_SGD:
        return kiln_apply_sgd(g, vars, grads, n, &(kiln_sgd_opts){ .lr = o->lr, .lr_node = m->lr_var, .momentum = o->momentum,
                                                                   .nesterov = o->nesterov, .weight_decay = o->weight_decay });
    case KILN_OPT_ADAM: case KILN_OPT_ADAMW: {
        kiln_adam_opts a = { .lr = o->lr, .lr_node = m->lr_var, .beta1 = or_default(o->beta1, 0.9), .beta2 = or_default(o->beta2, 0.999),
                             .epsilon = or_default(o->epsilon, 1e-7), .weight_decay = o->weight_decay };
        if (o->kind == KILN_OPT_ADAMW) {
            a.weight_decay = or_default(o->weight_decay, 0.004);
            return kiln_apply_adamw(g, vars, grads, n, &a);
        }
        return kiln_apply_adam(g, vars, grads, n, &a);
    }
    case KILN_OPT_RMSPROP:
        return kiln_apply_rmsprop(g, vars, grads, n, &(kiln_rmsprop_opts){ .lr = o->lr, .lr_node = m->lr_var, .rho = or_default(o->rho, 0.9),
                                                                           .momentum = o->momentum, .epsilon = or_default(o->epsilon, 1e-7) });
    case KILN_OPT_ADAGRAD:
        return kiln_apply_adagrad(g, vars, grads, n, &(kiln_adagrad_opts){ .lr = o->lr, .lr_node = m->lr_var,
                                                                           .initial_accumulator = or_default(o->initial_accumulator, 0.1),
                                                                           .epsilon = or_default(o->epsilon, 1e-7) });
    default:
        nn_fail(m, KILN_INVALID_ARGUMENT, "model '%s': unknown optimizer %d", m->name, (int)o->kind);
        return NULL;
    }
}

double kiln_lr_at(const kiln_lr_schedule *s, double lr, double t, double total) {
    if (!s) return lr;
    const double pi = 3.14159265358979323846;
    switch (s->kind) {
    case KILN_LR_STEP: {
        int every = s->step_epochs > 0 ? s->step_epochs : 1;
        return lr * pow(or_default(s->gamma, 0.1), floor(floor(t) / every));
    }
    case KILN_LR_EXPONENTIAL:
        return lr * pow(or_default(s->gamma, 0.96), t);
    case KILN_LR_COSINE: {
        double w = s->warmup_epochs;
        if (w > 0 && t < w) return lr * (t + 1e-3) / w;
        double span = total - w;
        double p = span > 0 ? (t - w) / span : 1;
        if (p > 1) p = 1;
        return s->min_lr + (lr - s->min_lr) * 0.5 * (1 + cos(pi * p));
    }
    case KILN_LR_ONE_CYCLE: {
        double pct = or_default(s->pct_start, 0.3), div = or_default(s->div_factor, 25), fdiv = or_default(s->final_div_factor, 1e4);
        double lo = lr / div, end = lo / fdiv, up = pct * total;
        double p;
        if (t < up) { p = up > 0 ? t / up : 1; return lo + (lr - lo) * 0.5 * (1 - cos(pi * p)); }
        p = total - up > 0 ? (t - up) / (total - up) : 1;
        if (p > 1) p = 1;
        return end + (lr - end) * 0.5 * (1 + cos(pi * p));
    }
    default:
        return lr;
    }
}
