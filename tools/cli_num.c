/* Numbers on the command line: one strict parser for every numeric option, so no value wraps
 * (4294967297 read as 1), empties ("--epochs=") never read as 0, only plain decimal numbers are
 * taken (not "0x10", " 0.1", "inf" or "nan"), and each option has a range. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tools/commands.h"

/* The whole of s is a plain decimal number: an optional '-' (or '+' when sign_plus), digits with
 * at most one '.', and for reals an exponent (e-5): no spaces, hex (0x10), inf or nan, which
 * strtod and strtoll would take. */
static bool plain_number(const char *s, bool real) {
    const char *p = s;
    if (*p == '-' || (real && *p == '+')) p++;
    int digits = 0;
    bool dot = false;
    for (; *p; p++) {
        if (*p >= '0' && *p <= '9') digits++;
        else if (real && *p == '.' && !dot) dot = true;
        else break;
    }
    if (!digits) return false;
    if (real && (*p == 'e' || *p == 'E')) {
        p++;
        if (*p == '-' || *p == '+') p++;
        if (*p < '0' || *p > '9') return false;
        while (*p >= '0' && *p <= '9') p++;
    }
    return *p == 0;
}

int cli_int(const char *cmd, const char *flag, const char *val, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(val, &end, 10);
    bool whole = plain_number(val, false) && end != val && !*end;
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
    if (!plain_number(val, false) || end == val || *end || errno == ERANGE || val[0] == '-') {   /* strtoull takes "-1" */
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
    bool ok = plain_number(val, true) && end != val && !*end && isfinite(v) && (open_lo ? v > lo : v >= lo) && (open_hi ? v < hi : v <= hi);
    if (!ok) {
        fprintf(stderr, "kiln %s: %s wants a number %s %g and %s %g, got '%s'\n", cmd, flag, open_lo ? "above" : "from", lo,
                open_hi ? "below" : "up to", hi, val);
        return 2;
    }
    *out = v;
    return 0;
}
