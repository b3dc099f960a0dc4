/* The model's sticky error: the first failure is kept and every later call returns it. */
#include <stdio.h>
#include "nn/nn_types.h"

kiln_status nn_fail(kiln_model *m, kiln_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kiln_set_errorv(s, fmt, ap);
    va_end(ap);
    if (m && m->status == KILN_OK) {
        m->status = s;
        snprintf(m->error, sizeof m->error, "%s", kiln_last_error());
    }
    return s;
}

kiln_status nn_check(const kiln_model *m) {
    if (!m) return kiln_set_error(KILN_INVALID_ARGUMENT, "NULL model");
    if (m->status != KILN_OK) return kiln_set_error(m->status, "%s", m->error);
    return KILN_OK;
}
