/* The two host backends: ref (every op, plain C) and cpu (fast kernels, ref for the rest). One
 * object each: host memory is one space, so there is no per-device state (ctx NULL, index 0). */
#include <string.h>
#include "backend/backend.h"

static void *host_alloc(const kiln_backend *b, size_t n) { (void)b; return kiln_malloc_aligned(n); }
static void host_free(const kiln_backend *b, void *p) { (void)b; kiln_free_aligned(p); }
static kiln_status host_copy(const kiln_backend *b, void *d, const void *s, size_t n, kiln_copy_kind k) {
    (void)b; (void)k;
    memcpy(d, s, n);
    return KILN_OK;
}
static kiln_status host_sync(const kiln_backend *b) { (void)b; return KILN_OK; }

static kiln_kernel_fn ref_kernel(const kiln_backend *b, const kiln_node *n) { (void)b; return kiln_op_get(n->op)->ref; }
static size_t ref_workspace(const kiln_backend *b, const kiln_node *n) {
    (void)b;
    const kiln_op_def *d = kiln_op_get(n->op);
    return d->ref_workspace ? d->ref_workspace(n) : 0;
}
static kiln_kernel_fn cpu_kernel(const kiln_backend *b, const kiln_node *n) { (void)b; return kiln_cpu_kernel(n); }
static size_t cpu_workspace(const kiln_backend *b, const kiln_node *n) { (void)b; return kiln_cpu_workspace(n); }
static bool cpu_fuses(const kiln_backend *b, const kiln_node *n) { (void)b; return kiln_cpu_fuses(n); }

static const kiln_backend ref_backend = {
    .name = "ref", .type = KILN_DEVICE_CPU, .alloc = host_alloc, .free = host_free, .copy = host_copy, .sync = host_sync,
    .kernel = ref_kernel, .workspace = ref_workspace,
};
static const kiln_backend cpu_backend = {
    .name = "cpu", .type = KILN_DEVICE_CPU, .alloc = host_alloc, .free = host_free, .copy = host_copy, .sync = host_sync,
    .kernel = cpu_kernel, .workspace = cpu_workspace, .fuses = cpu_fuses,
};

const kiln_backend *kiln_backend_ref(void) { return &ref_backend; }
const kiln_backend *kiln_backend_cpu(void) { return &cpu_backend; }
