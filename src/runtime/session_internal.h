/* Session hooks for tests and for the device backends. */
#ifndef KILN_SESSION_INTERNAL_H
#define KILN_SESSION_INTERNAL_H
#include "kiln/graph.h"
#include "backend/backend.h"

/* Leave `bytes` guard bytes after every planned host output and fail a run whose kernel writes
 * into them. Takes effect for plans built afterwards. */
void kiln_session_set_guard(kiln_session *s, size_t bytes);

/* Whole-step graph capture on a device backend (CUDA graphs). */
typedef struct kiln_device_hooks {
    kiln_status (*capture_begin)(void);
    kiln_status (*capture_end)(void **graph_exec);
    kiln_status (*graph_launch)(void *graph_exec);
    void (*graph_free)(void *graph_exec);
    kiln_status (*set_step)(uint64_t step);   /* the step captured dropout kernels read; may be NULL */
    size_t (*free_memory)(void);              /* largest device allocation possible now (out-of-memory advice); may be NULL */
    /* Host -> device copies on a second stream, overlapping the step being computed
     * (kiln_session_run_ahead); copy_ahead_wait waits for them. Both NULL: no copies ahead. */
    kiln_status (*copy_ahead)(void *dst, const void *src, size_t bytes);
    kiln_status (*copy_ahead_wait)(void);
} kiln_device_hooks;

/* A session with an explicit device backend (tests use a fake device to exercise placement and
 * copies without a GPU). hooks may be NULL. */
kiln_session *kiln_session_new_with_device(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *dev,
                                           const kiln_device_hooks *hooks);
/* Where the session places n: 0 host, 1 device, -1 on error. */
int kiln_session_node_space(kiln_session *s, const kiln_node *n);
#endif
