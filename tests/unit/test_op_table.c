/* The op table (src/ops/ops.def) and the op definitions agree: one name per op, every op has a
 * definition with a ref kernel. A missing definition is a link error (no weak stubs), so this
 * test only has to catch a definition whose name drifted from its ops.def line. */
#include <string.h>
#include "check.h"
#include "ops/op.h"

static const char *const table_names[KILN_OP_COUNT] = {
#define KILN_OP(e, name, def) [KILN_OP_##e] = name,
#include "ops/ops.def"
#undef KILN_OP
};

int main(void) {
    for (int i = 0; i < KILN_OP_COUNT; i++) {
        const kiln_op_def *d = kiln_op_get((kiln_op)i);
        CHECK_MSG(d != NULL, "op %d has no definition", i);
        if (!d) continue;
        CHECK_MSG(!strcmp(d->name, table_names[i]), "ops.def names op %d \"%s\" but its definition says \"%s\"", i, table_names[i], d->name);
        CHECK_MSG(d->ref != NULL, "%s has no ref kernel", d->name);
    }
    CHECK(!strcmp(kiln_op_get(KILN_OP_VARIABLE)->name, "VariableV2"));
    CHECK(kiln_op_get(KILN_OP_COUNT) == NULL);
    return check_summary("test_op_table");
}
