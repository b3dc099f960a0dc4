#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core/core.h"

static _Thread_local char last_error[1024];

const char *kiln_last_error(void) { return last_error; }

/* Formats into a scratch buffer first: callers often pass kiln_last_error() itself as an
 * argument (wrapping the previous message), and vsnprintf must not write over its own input. */
kiln_status kiln_set_errorv(kiln_status s, const char *fmt, va_list ap) {
    char msg[sizeof last_error];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(last_error, msg, sizeof msg);
    return s;
}

kiln_status kiln_set_error(kiln_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kiln_set_errorv(s, fmt, ap);
    va_end(ap);
    return s;
}

const char *kiln_status_name(kiln_status s) {
    static const char *names[KILN_STATUS_COUNT] = {
        "OK", "INVALID_ARGUMENT", "SHAPE_MISMATCH", "DTYPE_MISMATCH", "OUT_OF_MEMORY",
        "UNSUPPORTED", "DEVICE_ERROR", "IO_ERROR", "NOT_FOUND", "NUMERIC_ERROR", "INTERNAL",
    };
    return (unsigned)s < KILN_STATUS_COUNT ? names[s] : "UNKNOWN";
}
