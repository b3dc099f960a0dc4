/* Numbers on the command line: one strict parser for every numeric option, so no value wraps
 * (4294967297 read as 1), empties ("--epochs=") never read as 0, and each option has a range. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tools/commands.h"

int cli_int(const char *cmd, const char *flag, const char *val, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(val, &end, 10);
    bool whole = end != val && !*end && val[0] != ' ' && val[0] != '\t' && val[0] != '+';
    if (!whole || errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "kiln %s: %s wants a whole number from %lld to %lld, got '%s'\n", cmd, flag, lo, hi, val);
        return 2;
    }
    *out = v;
    return 0;
}

int cli_int32(const char *cmd, const char *flag, const char *val, int lo, int hi, int *out) {
    long long v;
    if (cli_int(cmd, flag, val, lo, hi, &v)) return 2;
    *out = (int)v;
    return 0;
}

int cli_u64(const char *cmd, const char *flag, const char *val, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (end == val || *end || errno == ERANGE || val[0] < '0' || val[0] > '9') {   /* strtoull takes "-1" */
        fprintf(stderr, "kiln %s: %s wants a whole number from 0 to %llu, got '%s'\n", cmd, flag, (unsigned long long)UINT64_MAX, val);
        return 2;
    }
    *out = v;
    return 0;
}

int cli_real(const char *cmd, const char *flag, const char *val, double lo, double hi, bool open_lo, bool open_hi,
             double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(val, &end);
    bool ok = end != val && !*end && isfinite(v) && (open_lo ? v > lo : v >= lo) && (open_hi ? v < hi : v <= hi);
    if (!ok) {
        fprintf(stderr, "kiln %s: %s wants a number %s %g and %s %g, got '%s'\n", cmd, flag, open_lo ? "above" : "from", lo,
                open_hi ? "below" : "up to", hi, val);
        return 2;
    }
    *out = v;
    return 0;
}
