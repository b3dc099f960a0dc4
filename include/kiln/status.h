/* Kiln status codes and error messages. */
#ifndef KILN_STATUS_H
#define KILN_STATUS_H
#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_status {
    KILN_OK = 0,
    KILN_INVALID_ARGUMENT,
    KILN_SHAPE_MISMATCH,
    KILN_DTYPE_MISMATCH,
    KILN_OUT_OF_MEMORY,
    KILN_UNSUPPORTED,
    KILN_DEVICE_ERROR,
    KILN_IO_ERROR,
    KILN_NOT_FOUND,
    KILN_NUMERIC_ERROR,   /* NaN/Inf where a finite value was needed */
    KILN_INTERNAL,
    KILN_STATUS_COUNT
} kiln_status;

/* Message of the last failed call on this thread ("" if none). Borrowed; valid until the next
 * failing call on the same thread. */
const char *kiln_last_error(void);
/* Short name of a status code, e.g. "SHAPE_MISMATCH". */
const char *kiln_status_name(kiln_status s);

/* What the library says outside of errors: warnings (soft placement, a cuDNN fallback, no GPU
 * found), notes (KILN_VERBOSE detail) and reports (KILN_PROFILE, device placement logs). */
typedef enum kiln_log_level { KILN_LOG_INFO = 0, KILN_LOG_WARNING, KILN_LOG_LEVEL_COUNT } kiln_log_level;
/* Receives one message (no trailing newline) at a time. */
typedef void (*kiln_log_fn)(kiln_log_level level, const char *msg, void *user);
/* Routes the library's messages to fn (NULL: back to the default, one line each on stderr).
 * Process-wide; set it before the first session. */
void kiln_set_log_callback(kiln_log_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
