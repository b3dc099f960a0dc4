/* The two host backends: ref (every op, plain C) and cpu (fast kernels, ref for the rest). */
#include <string.h>
#include "backend/backend.h"

static void *host_alloc(size_t n) { return kiln_malloc_aligned(n); }
static void host_free(void *p) { kiln_free_aligned(p); }
static kiln_status host_copy(void *d, const void *s, size_t n, kiln_copy_kind k) { (void)k; memcpy(d, s, n); return KILN_OK; }
static kiln_status host_sync(void) { return KILN_OK; }

static kiln_kernel_fn ref_kernel(const kiln_node *n) { return kiln_op_get(n->op)->ref; }
static size_t ref_workspace(const kiln_node *n) {
    const kiln_op_def *d = kiln_op_get(n->op);
    return d->ref_workspace ? d->ref_workspace(n) : 0;
}

static const kiln_backend ref_backend = { "ref", KILN_DEVICE_CPU, host_alloc, host_free, host_copy, host_sync, ref_kernel, ref_workspace, NULL };
static const kiln_backend cpu_backend = { "cpu", KILN_DEVICE_CPU, host_alloc, host_free, host_copy, host_sync, kiln_cpu_kernel, kiln_cpu_workspace, kiln_cpu_fuses };

const kiln_backend *kiln_backend_ref(void) { return &ref_backend; }
const kiln_backend *kiln_backend_cpu(void) { return &cpu_backend; }
