/* The advice of the out-of-memory error (plan_cache.c's arena_oom): what fits in what the device
 * can still allocate, each with the figure the memory plan gives for it — a smaller batch
 * (kiln train --batch-size N), or the same batch as micro-batches (kiln train --accumulate K).
 * The figures come from the failed plan with its batch-sized buffers rescaled (kiln_plan_arena_at). */
#include <stdio.h>
#include "runtime/runtime_internal.h"

void rt_oom_advice(const kiln_plan *p, int sp, size_t avail, size_t vars, char *buf, size_t n) {
    snprintf(buf, n, "lower the batch size");
    if (p->batch <= 1 || avail == 0) return;
    int64_t lo = 0, hi = p->batch - 1;     /* lo fits (0 trivially), answer in [lo, hi] */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (kiln_plan_arena_at(p, sp, mid) <= avail) lo = mid; else hi = mid - 1;
    }
    if (lo < 1) {
        snprintf(buf, n, "even batch size 1 does not fit in the %.1f MiB that can be allocated: a smaller model, or the CPU", avail / 1048576.0);
        return;
    }
    size_t k = (size_t)snprintf(buf, n, "use a batch size of %lld or less instead of %lld (--batch-size %lld: its plan needs %.1f MiB "
                                "+ %.1f MiB of variables; %.1f MiB can be allocated)", (long long)lo, (long long)p->batch, (long long)lo,
                                kiln_plan_arena_at(p, sp, lo) / 1048576.0, vars / 1048576.0, avail / 1048576.0);
    /* the same batch as K micro-batches: accumulators of the gradients' size come on top */
    size_t acc = p->grad_bytes[sp] > 0 ? (size_t)p->grad_bytes[sp] : 0;
    for (int64_t K = 2; K <= p->batch && k < n; K++) {
        if (p->batch % K) continue;
        size_t a = kiln_plan_arena_at(p, sp, p->batch / K);
        if (a + acc > avail) continue;
        k += (size_t)snprintf(buf + k, n - k, ", or keep the batch of %lld as %lld micro-batches of %lld (--accumulate %lld: about %.1f MiB "
                              "+ %.1f MiB of variables and accumulators)", (long long)p->batch, (long long)K, (long long)(p->batch / K),
                              (long long)K, a / 1048576.0, (vars + acc) / 1048576.0);
        break;
    }
    if (k < n) snprintf(buf + k, n - k, " (C API: kiln_fit_opts.batch_size, .accumulate_steps)");
}
