/* Numeric checks (kiln_session_set_check_numerics, TF's enable_check_numerics): after each kernel
 * the value it wrote is read (from a device: copied to the host) and a NaN or Inf stops the run
 * with KILN_NUMERIC_ERROR naming the node, so the steps after it (the optimizer's updates) do not
 * run. Off by default: the normal step pays nothing. Captured CUDA graphs are not used meanwhile. */
#include <math.h>
#include <stdio.h>
#include "runtime/runtime_internal.h"
#include "core/load_store.h"

void kiln_session_set_check_numerics(kiln_session *s, bool on) { if (s) s->check_numerics = on; }

static bool is_float(kiln_dtype t) { return t == KILN_F32 || t == KILN_F64 || t == KILN_F16 || t == KILN_BF16; }

kiln_status rt_check_numerics(kiln_session *s, const kiln_plan_step *stp) {
    kiln_node *n = stp->node, *out = s->g->nodes[stp->out_id];
    if ((kiln_op_get(n->op)->flags & KILN_OPF_MUTATES) || !is_float(n->dtype)) return KILN_OK;
    size_t bytes = node_bytes(out);
    const void *src = s->data[stp->space][stp->out_id];
    void *host = NULL;
    if (stp->space != KILN_SPACE_HOST) {
        const kiln_backend *be = s->be[stp->space];
        if (!(host = kiln_malloc(bytes ? bytes : 1))) return kiln_set_error(KILN_OUT_OF_MEMORY, "checking numerics: out of host memory");
        kiln_status st = be->copy(be, host, src, bytes, KILN_COPY_D2H);
        if (st == KILN_OK) st = be->sync(be);
        if (st != KILN_OK) { kiln_free(host); return st; }
        src = host;
    }
    int64_t bad = -1, numel = kiln_shape_numel(out->shape);
    double x = 0;
    for (int64_t i = 0; i < numel && bad < 0; i++) {
        x = kiln_load(src, out->dtype, i);
        if (!isfinite(x)) bad = i;
    }
    kiln_free(host);
    if (bad < 0) return KILN_OK;
    char sh[96];
    return kiln_set_error(KILN_NUMERIC_ERROR, "%s (%s%s%s): its output %s has %s at element %lld", n->name, kiln_op_get(n->op)->name,
                          out != n ? " fused with " : "", out != n ? out->name : "", kiln_shape_str(out->shape, sh, sizeof sh),
                          isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf", (long long)bad);
}
