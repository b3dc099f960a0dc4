/* Whole-step CUDA graphs: a plan whose kernels all run on one device (no host kernel or copy
 * between them, no collective steps) is captured once after two warm-up runs and replayed; feeds
 * are copied before the replay. If capture fails: plain launches, said when KILN_VERBOSE is set. */
#include "runtime/runtime_internal.h"

bool rt_capture_replays(kiln_session *s, run_plan *rp) {
    kiln_plan *p = rp->plan;
    if (p->device_space < 1) return false;
    const kiln_backend *be = s->be[p->device_space];
    if (!be->capture_begin || s->opts.no_cuda_graphs || s->prof || s->check_numerics || s->reduce || rp->n_coll || p->host_steps_between ||
        rp->capture_failed || (p->has_dropout && !be->set_step))
        return false;
    if (rp->graph_exec && rp->graph_arena_gen != s->arena_gen) {   /* buffers moved: capture again */
        be->graph_free(be, rp->graph_exec);
        rp->graph_exec = NULL;
        rp->warm_runs = 0;
    }
    if (!rp->graph_exec && rp->warm_runs < 2) { rp->warm_runs++; return false; }
    return true;
}

kiln_status rt_run_captured(kiln_session *s, run_plan *rp) {
    kiln_plan *p = rp->plan;
    const kiln_backend *be = s->be[p->device_space];
    kiln_status st = rt_activate(s, p->device_space);
    if (st == KILN_OK) st = rt_run_loop(s, rp, 0, p->n_feed_copies);
    if (st != KILN_OK) return st;
    if (!rp->graph_exec) {
        st = be->capture_begin(be);
        if (st == KILN_OK) {
            kiln_status rs = rt_run_loop(s, rp, p->n_feed_copies, rp->n_steps);
            void *ge = NULL;
            st = be->capture_end(be, &ge);
            if (rs != KILN_OK) { if (ge) be->graph_free(be, ge); return rs; }
            if (st == KILN_OK) { rp->graph_exec = ge; rp->graph_arena_gen = s->arena_gen; }
        }
        if (st != KILN_OK) {
            rp->capture_failed = true;
            if (s->verbose) kiln_log_msg(KILN_LOG_INFO, "kiln: CUDA graph capture failed (%s); using plain launches", kiln_last_error());
            return rt_run_loop(s, rp, p->n_feed_copies, rp->n_steps);
        }
    }
    if (be->set_step && (st = be->set_step(be, s->step ^ kiln_mix64(s->opts.seed))) != KILN_OK) return st;
    return be->graph_launch(be, rp->graph_exec);
}
