/* KILN_PROFILE=1: kernel time per op, host-timed (device kernels synchronised one by one),
 * reported when the session is freed. */
#include "runtime/runtime_internal.h"

kiln_status rt_profile_init(kiln_session *s, bool on) {
    if (!on) return KILN_OK;
    s->prof = kiln_calloc(KILN_OP_COUNT, sizeof *s->prof);
    s->prof_n = kiln_calloc(KILN_OP_COUNT, sizeof *s->prof_n);
    if (!s->prof || !s->prof_n) return kiln_set_error(KILN_OUT_OF_MEMORY, "session: out of host memory");
    return KILN_OK;
}

void rt_profile_report(const kiln_session *s) {
    if (!s->prof || !s->prof_n) { kiln_free(s->prof); kiln_free(s->prof_n); return; }
    double total = 0;
    for (int i = 0; i < KILN_OP_COUNT; i++) total += s->prof[i];
    kiln_log_msg(KILN_LOG_INFO, "kiln profile: %.3f s in kernels (host-timed%s)", total,
             s->n_spaces > 1 ? "; device kernels synchronised one by one, no CUDA graphs: slower than a real run" : "");
    bool done[KILN_OP_COUNT] = { 0 };
    for (;;) {
        int best = -1;
        for (int i = 0; i < KILN_OP_COUNT; i++) if (!done[i] && s->prof_n[i] && (best < 0 || s->prof[i] > s->prof[best])) best = i;
        if (best < 0) break;
        done[best] = true;
        kiln_log_msg(KILN_LOG_INFO, "  %-30s %9.3f s %5.1f%% %9lld calls %9.1f us/call", kiln_op_get((kiln_op)best)->name, s->prof[best],
                 total > 0 ? 100 * s->prof[best] / total : 0, (long long)s->prof_n[best], 1e6 * s->prof[best] / (double)s->prof_n[best]);
    }
    kiln_free(s->prof);
    kiln_free(s->prof_n);
}
