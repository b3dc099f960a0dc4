/* The optimizer, schedule and callback options of kiln train, and --batch-size auto. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "kiln/kiln.h"
#include "kiln/device.h"
#include "tools/commands.h"
#include "tools/cli_ctx.h"
#include "tools/cli_train_opts.h"

#define CLI_CPU_AUTO_BATCH 256   /* --batch-size auto on the CPU: at most this */

int cli_parse_optimizer(const args *a, kiln_optimizer *o) {
    const char *name = a->optimizer;
    double lr = a->lr;
    if (!strcmp(name, "sgd")) *o = kiln_sgd(lr > 0 ? lr : 0.01);
    else if (!strcmp(name, "momentum")) *o = kiln_momentum(lr > 0 ? lr : 0.01, 0.9, false);
    else if (!strcmp(name, "adam")) *o = kiln_adam(lr > 0 ? lr : 1e-3);
    else if (!strcmp(name, "adamw")) *o = kiln_adamw(lr > 0 ? lr : 1e-3, 0);
    else if (!strcmp(name, "rmsprop")) *o = kiln_rmsprop(lr > 0 ? lr : 1e-3);
    else if (!strcmp(name, "adagrad")) *o = kiln_adagrad(lr > 0 ? lr : 0.01);
    else { fprintf(stderr, "kiln train: unknown optimizer '%s': use sgd, momentum, adam, adamw, rmsprop or adagrad\n", name); return 2; }
    if (a->momentum >= 0 || a->nesterov) {   /* Keras's SGD(momentum=M, nesterov=...) */
        if (o->kind != KILN_OPT_SGD) {
            fprintf(stderr, "kiln train: --%s is an option of SGD (--optimizer sgd or momentum), not %s\n",
                    a->momentum >= 0 ? "momentum" : "nesterov", name);
            return 2;
        }
        double m = a->momentum >= 0 ? a->momentum : (o->momentum > 0 ? o->momentum : 0.9);
        if (a->nesterov && m == 0) {
            fprintf(stderr, "kiln train: --nesterov needs a momentum above 0 (got --momentum 0)\n");
            return 2;
        }
        *o = kiln_momentum(o->lr, m, a->nesterov);
    }
    if (a->weight_decay >= 0) {
        if (o->kind == KILN_OPT_RMSPROP || o->kind == KILN_OPT_ADAGRAD) {
            fprintf(stderr, "kiln train: --weight-decay works with sgd, momentum, adam and adamw, not %s\n", name);
            return 2;
        }
        if (o->kind == KILN_OPT_ADAMW && a->weight_decay == 0) {
            fprintf(stderr, "kiln train: --weight-decay 0 with adamw: use --optimizer adam for no decay\n");
            return 2;
        }
        o->weight_decay = a->weight_decay;
    }
    if (a->clipnorm > 0) o->clip_norm = a->clipnorm;
    return 0;
}

int cli_parse_schedule(const args *a, kiln_lr_schedule *s) {
    const char *name = a->schedule;
    memset(s, 0, sizeof *s);
    if (!name || !strcmp(name, "constant")) s->kind = KILN_LR_CONSTANT;
    else if (!strcmp(name, "step")) {
        s->kind = KILN_LR_STEP;
        s->step_epochs = a->lr_step_epochs > 0 ? a->lr_step_epochs : 2;
        s->gamma = a->lr_step_factor > 0 ? a->lr_step_factor : 0.5;
    }
    else if (!strcmp(name, "exponential")) s->kind = KILN_LR_EXPONENTIAL;
    else if (!strcmp(name, "cosine")) { s->kind = KILN_LR_COSINE; s->warmup_epochs = a->warmup_epochs >= 0 ? a->warmup_epochs : 0.2; }
    else if (!strcmp(name, "one-cycle") || !strcmp(name, "onecycle")) s->kind = KILN_LR_ONE_CYCLE;
    else { fprintf(stderr, "kiln train: unknown schedule '%s': use constant, step, exponential, cosine or one-cycle\n", name); return 2; }
    if ((a->lr_step_epochs > 0 || a->lr_step_factor > 0) && s->kind != KILN_LR_STEP) {
        fprintf(stderr, "kiln train: --lr-step-epochs and --lr-step-factor set up --schedule step (the schedule is %s)\n", name ? name : "constant");
        return 2;
    }
    if (a->warmup_steps >= 0) {
        if (s->kind != KILN_LR_COSINE || a->warmup_epochs >= 0) {
            fprintf(stderr, "kiln train: --warmup-steps sets up --lr-schedule cosine, instead of --warmup-epochs (the schedule is %s)\n", name ? name : "constant");
            return 2;
        }
        s->warmup_epochs = 0;
        s->warmup_steps = a->warmup_steps;
    }
    if (a->warmup_epochs >= 0 && s->kind != KILN_LR_COSINE) {
        fprintf(stderr, "kiln train: --warmup-epochs sets up --schedule cosine (the schedule is %s)\n", name ? name : "constant");
        return 2;
    }
    return 0;
}

int cli_check_callbacks(const args *a) {
    static const char *const ok[] = { "val_loss", "val_accuracy", "loss", "accuracy" };
    if (a->monitor) {
        bool known = false;
        for (int i = 0; i < 4; i++) known |= !strcmp(a->monitor, ok[i]);
        if (!known) { fprintf(stderr, "kiln train: unknown --monitor '%s': use val_loss, val_accuracy, loss or accuracy\n", a->monitor); return 2; }
        if (!a->patience && !a->save_best) { fprintf(stderr, "kiln train: --monitor chooses what --early-stopping or --save-best watch; give one of them\n"); return 2; }
    }
    if (a->min_delta >= 0 && !a->patience) { fprintf(stderr, "kiln train: --min-delta needs --early-stopping PATIENCE\n"); return 2; }
    if (a->save_best && !a->save) { fprintf(stderr, "kiln train: --save-best needs --save PATH\n"); return 2; }
    return 0;
}

const char *cli_monitor(const args *a) { return a->monitor ? a->monitor : "val_loss"; }

int cli_best_epoch(const kiln_logs *h, int n, const char *monitor) {
    int best = 0;
    for (int i = 0; i < n; i++) {
        const kiln_logs *l = &h[i];
        double v = !strcmp(monitor, "loss") ? l->loss : !strcmp(monitor, "accuracy") ? l->accuracy
                 : !strcmp(monitor, "val_accuracy") ? l->val_accuracy : l->val_loss;
        double b = !strcmp(monitor, "loss") ? h[best].loss : !strcmp(monitor, "accuracy") ? h[best].accuracy
                 : !strcmp(monitor, "val_accuracy") ? h[best].val_accuracy : h[best].val_loss;
        if (strstr(monitor, "accuracy") ? v > b : v < b) best = i;
    }
    return best;
}

int cli_auto_batch(args *a, kiln_model *m, int64_t n_train) {
    bool gpu = kiln_gpu_available() && (!a->device || (strcmp(a->device, "cpu") && strcmp(a->device, "ref")));
    size_t limit = 0;
    const char *why;
    if (gpu && a->gpu_mem_mib > 0) { limit = (size_t)a->gpu_mem_mib << 20; why = "--gpu-memory-limit"; }
    else if (gpu) why = "the GPU's free memory";
    else if (a->memory_limit_mib > 0) { limit = (size_t)a->memory_limit_mib << 20; why = "--memory-limit"; }
    else {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        limit = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 : (size_t)1 << 30;
        why = "half the physical memory (--memory-limit MIB to choose)";
    }
    int b = 0;
    size_t peak = 0;
    int cap = n_train < CLI_MAX_BATCH ? (int)n_train : CLI_MAX_BATCH;
    /* On the CPU the largest batch that fits is not the one to train with: past a few hundred a
     * step is no faster per example, and an epoch takes fewer updates (the whole --limit set was
     * one step, 47% where 64 gave 76%). So, unless --memory-limit asks for the memory probe,
     * auto is the largest power of two up to CLI_CPU_AUTO_BATCH that fits (Keras users pick 32..256). */
    bool cpu_cap = !gpu && a->memory_limit_mib <= 0;
    if (cpu_cap && cap > CLI_CPU_AUTO_BATCH) cap = CLI_CPU_AUTO_BATCH;
    if (kiln_model_max_batch(m, limit, a->accumulate, 8, cap, &b, &peak) != KILN_OK) return cli_fail("train", 1);
    if (cpu_cap) {
        int p = 8;
        while (p * 2 <= b) p *= 2;
        if (a->accumulate <= 1 || p % a->accumulate == 0) b = p;
        printf("Batch size auto: %d on the CPU: the largest power of two up to %d (and the training set) that fits in "
               "half the physical memory (%.1f MiB): larger batches are no faster per example on a CPU and make fewer "
               "updates per epoch (--memory-limit MIB: the largest batch that fits, as on a GPU)\n",
               b, CLI_CPU_AUTO_BATCH, limit / 1048576.0);
        a->batch = b;
        return 0;
    }
    printf("Batch size auto: %d, the largest multiple of 8%s whose planned training step fits in %s (%.1f MiB): it needs %.1f MiB\n",
           b, a->accumulate > 1 ? " and of --accumulate" : "", why, (limit ? limit : peak) / 1048576.0, peak / 1048576.0);
    a->batch = b;
    return 0;
}
