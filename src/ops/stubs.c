/* Weak placeholders for op definitions not written yet, so the library links while op families
 * are being filled in. A real definition in a family file overrides its stub. The conformance
 * test fails for any op still resolving to a stub (ref == NULL). */
#include "ops/op.h"

static kiln_status stub_infer(kiln_node *n) {
    return kiln_node_error(n, KILN_UNSUPPORTED, "op not implemented yet");
}
#define KILN_OP(e, nm, def) __attribute__((weak)) const kiln_op_def def = { nm, 0, 64, KILN_OPF_NO_GRAD, stub_infer, NULL, NULL, NULL };
#include "ops/ops.def"
#undef KILN_OP
