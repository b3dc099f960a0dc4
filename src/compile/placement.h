/* Placement: the memory space (0: the host, k + 1: GPU k) every node runs or lives in. */
#ifndef KILN_PLACEMENT_H
#define KILN_PLACEMENT_H
#include "compile/plan.h"

typedef struct kiln_placement {
    const kiln_backend *const *devices;   /* [k]: the backend of GPU k (memory space k + 1) */
    int n_devices;
    const char *no_device_reason;          /* why there is no GPU, when n_devices is 0 */
    bool strict;                           /* placement that cannot be honoured is an error */
    bool *warned;                          /* in/out: the soft-placement warning is given once */
} kiln_placement;

/* Places every node whose place[id] is still -1: explicit scope > where a variable is first used
 * (its first updating op, else its first reader) > GPU 0 when it has a kernel for the op > the
 * CPU. Fed placeholders live on the host. An op asking for a GPU that is missing or lacks a
 * kernel runs on the CPU with one warning (soft placement), or is an error when strict. */
kiln_status kiln_place(kiln_graph *g, const kiln_placement *pl, int8_t *place);
/* "/device:CPU:0" for space 0, "/device:GPU:k" for space k + 1. */
const char *kiln_space_name(int space, char *buf, size_t n);
/* The device placement log (log_device_placement): each node of the plan once (logged[id]). */
void kiln_log_placement(kiln_graph *g, const kiln_plan *p, bool *logged);
/* The same for replica k >= 1 of a mirrored step (TensorFlow's form): names in the scope
 * "replica_k/", its device space shown as GPU gpu, the GPU it runs on. */
void kiln_log_placement_replica(kiln_graph *g, const kiln_plan *p, bool *logged, int replica, int gpu);
#endif
