/* Device strings as TensorFlow and PyTorch users write them. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "graph/graph_internal.h"

kiln_status kiln_parse_device(const char *s, kiln_device_spec *out) {
    if (!s) return kiln_set_error(KILN_INVALID_ARGUMENT, "device string is NULL");
    const char *p = s;
    if (*p == '/') p++;
    if (strncasecmp(p, "device:", 7) == 0) p += 7;
    kiln_device_spec d = { KILN_DEVICE_CPU, 0 };
    size_t len;
    if (strncasecmp(p, "gpu", 3) == 0) { d.type = KILN_DEVICE_GPU; len = 3; }
    else if (strncasecmp(p, "cuda", 4) == 0) { d.type = KILN_DEVICE_GPU; len = 4; }
    else if (strncasecmp(p, "cpu", 3) == 0) { d.type = KILN_DEVICE_CPU; len = 3; }
    else goto bad;
    p += len;
    if (*p == ':') {
        p++;
        if (!isdigit((unsigned char)*p)) goto bad;
        char *end;
        long idx = strtol(p, &end, 10);
        if (*end != 0 || idx < 0 || idx > 1024) goto bad;
        d.index = (int)idx;
    } else if (*p != 0) goto bad;
    *out = d;
    return KILN_OK;
bad:
    return kiln_set_error(KILN_INVALID_ARGUMENT,
        "cannot parse device '%s' (expected e.g. \"/gpu:0\", \"/device:GPU:0\", \"cuda:0\", \"/cpu:0\", \"cpu\")", s);
}

void kiln_device_spec_str(const kiln_device_spec *d, char *buf, size_t n) {
    snprintf(buf, n, "/device:%s:%d", d->type == KILN_DEVICE_GPU ? "GPU" : "CPU", d->index);
}
