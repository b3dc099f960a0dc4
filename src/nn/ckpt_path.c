/* Checkpoint file names with Keras ModelCheckpoint placeholders: "model-{epoch:02d}-{val_loss:.2f}.st".
 * Placeholders are {key} or {key:spec}, key one of epoch (spec: [0][width]d) or loss, accuracy,
 * val_loss, val_accuracy (spec: [width][.prec]f|e|g); {{ and }} are literal braces; everything
 * else, '%' included, is copied as it is. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "nn/nn_types.h"

typedef struct pbuf { char *p; size_t len, cap; } pbuf;

static bool put(pbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->len + n + 1 > cap) cap *= 2;
        char *p = kiln_realloc(b->p, cap);
        if (!p) return false;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return true;
}

/* spec: [0][width][.prec]conv with at most two digits each; conv one of `convs`. */
static bool spec_ok(const char *spec, size_t n, const char *convs) {
    size_t i = 0, d = 0;
    if (n == 0) return true;
    if (spec[i] == '0') i++;
    while (i < n && isdigit((unsigned char)spec[i]) && d < 2) { i++; d++; }
    if (i < n && spec[i] == '.') {
        i++;
        d = 0;
        while (i < n && isdigit((unsigned char)spec[i]) && d < 2) { i++; d++; }
        if (d == 0) return false;
    }
    return i + 1 == n && strchr(convs, spec[i]);
}

kiln_status kiln_checkpoint_path(const char *pattern, const kiln_logs *l, char **out) {
    if (out) *out = NULL;
    if (!pattern || !*pattern || !l || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_checkpoint_path: pattern, logs and out are needed");
    pbuf b = { 0 };
    bool ok = put(&b, "", 0);
    for (const char *p = pattern; *p && ok;) {
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) { ok = put(&b, p, 1); p += 2; continue; }
        if (*p == '}') { kiln_free(b.p); return kiln_set_error(KILN_INVALID_ARGUMENT, "checkpoint path '%s': a lone '}' (write }} for a brace)", pattern); }
        if (*p != '{') { ok = put(&b, p, 1); p++; continue; }
        const char *close = strchr(p, '}');
        if (!close) { kiln_free(b.p); return kiln_set_error(KILN_INVALID_ARGUMENT, "checkpoint path '%s': '{' without '}' (write {{ for a brace)", pattern); }
        const char *colon = memchr(p, ':', (size_t)(close - p));
        size_t klen = (size_t)((colon ? colon : close) - p - 1);
        const char *spec = colon ? colon + 1 : close;
        size_t slen = (size_t)(close - spec);
        char key[32], fmt[16], num[64];
        snprintf(key, sizeof key, "%.*s", (int)(klen < 31 ? klen : 31), p + 1);
        bool is_epoch = !strcmp(key, "epoch");
        double v = 0;
        bool val = !strncmp(key, "val_", 4), known = true;
        const char *base = val ? key + 4 : key;
        if (is_epoch) {}
        else if (!strcmp(base, "loss")) v = val ? l->val_loss : l->loss;
        else if (!strcmp(base, "accuracy")) v = val ? l->val_accuracy : l->accuracy;
        else known = false;
        if (!known || klen >= 31 || !spec_ok(spec, slen, is_epoch ? "d" : "feg")) {
            kiln_free(b.p);
            return kiln_set_error(KILN_INVALID_ARGUMENT, "checkpoint path '%s': unknown placeholder '%.*s': use {epoch}, {epoch:02d}, "
                                  "{loss}, {accuracy}, {val_loss}, {val_accuracy} (e.g. {val_loss:.4f}); {{ and }} for braces",
                                  pattern, (int)(close - p + 1), p);
        }
        if (val && !l->has_val) {
            kiln_free(b.p);
            return kiln_set_error(KILN_INVALID_ARGUMENT, "checkpoint path '%s' uses {%s} but fit has no validation data", pattern, key);
        }
        snprintf(fmt, sizeof fmt, "%%%.*s", (int)slen, spec);
        if (slen == 0) snprintf(fmt, sizeof fmt, is_epoch ? "%%d" : "%%g");
        int n = is_epoch ? snprintf(num, sizeof num, fmt, l->epoch) : snprintf(num, sizeof num, fmt, v);
        ok = n > 0 && put(&b, num, (size_t)(n < (int)sizeof num ? n : (int)sizeof num - 1));
        p = close + 1;
    }
    if (!ok) { kiln_free(b.p); return kiln_set_error(KILN_OUT_OF_MEMORY, "checkpoint path '%s': out of memory", pattern); }
    *out = b.p;     /* kiln_realloc's memory is malloc's: the caller's free() (nn.h) releases it */
    return KILN_OK;
}
