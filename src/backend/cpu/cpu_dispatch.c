/* cpu backend dispatch: which nodes have a fast cpu kernel. Others run on ref. */
#include "backend/backend.h"

kiln_kernel_fn kiln_cpu_kernel(const kiln_node *n) { (void)n; return NULL; }
size_t kiln_cpu_workspace(const kiln_node *n) { (void)n; return 0; }
