/* Token streams as causal language-model data: a text file's ids (bytes or a tokenizer's), and
 * windows of block_size + 1 tokens cut into inputs and next-token labels. */
#include <string.h>
#include "core/core.h"
#include "io/read_file.h"
#include "kiln/tensor.h"
#include "text/text_internal.h"

#define TEXT_MAX_FILE ((uint64_t)1 << 31)

kiln_status kiln_text_read_ids(const char *path, const kiln_tokenizer *t, int32_t **ids, size_t *n) {
    if (!path || !ids || !n) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_text_read_ids: NULL argument");
    *ids = NULL;
    *n = 0;
    uint8_t *buf;
    size_t len;
    kiln_status s = kiln_file_read_all(path, "text file", TEXT_MAX_FILE, &buf, &len);
    if (s != KILN_OK) return s;
    if (t) {
        s = kiln_tokenizer_encode(t, (const char *)buf, len, ids, n);
        kiln_free(buf);
        if (s != KILN_OK) {
            char msg[300];
            snprintf(msg, sizeof msg, "%s", kiln_last_error());
            return kiln_set_error(s, "text file %s: %s", path, msg);
        }
        return KILN_OK;
    }
    int32_t *v = kiln_malloc((len ? len : 1) * sizeof *v);
    if (!v) { kiln_free(buf); return kiln_set_error(KILN_OUT_OF_MEMORY, "text file %s: out of memory for %zu ids", path, len); }
    for (size_t i = 0; i < len; i++) v[i] = buf[i];
    kiln_free(buf);
    *ids = v;
    *n = len;
    return KILN_OK;
}

size_t kiln_text_split(size_t n, double val_fraction) {
    if (!(val_fraction > 0)) return n;
    if (val_fraction >= 1) return 0;
    return n - (size_t)((double)n * val_fraction);
}

kiln_status kiln_text_windows(const int32_t *ids, size_t n, int block_size, int64_t count, uint64_t seed, kiln_tensor **x,
                              kiln_tensor **y) {
    if (!x || !y || (!ids && n)) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_text_windows: NULL argument");
    *x = *y = NULL;
    if (block_size < 1 || count < 0)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_text_windows: block_size %d must be >= 1 and count %lld >= 0", block_size, (long long)count);
    size_t T = (size_t)block_size;
    if (n < T + 1)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "text data: %zu tokens are too few for one window of block_size + 1 = %zu tokens", n, T + 1);
    size_t starts = n - T;   /* window starts 0 .. n - T - 1 */
    int64_t rows = count > 0 ? count : (int64_t)((n - 1) / T);
    *x = kiln_tensor_new(KILN_I32, KILN_SHAPE(rows, block_size));
    *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(rows, block_size));
    if (!*x || !*y) {
        kiln_tensor_free(*x); kiln_tensor_free(*y);
        *x = *y = NULL;
        return kiln_set_error(KILN_OUT_OF_MEMORY, "text data: out of memory for %lld windows of %d tokens", (long long)rows, block_size);
    }
    kiln_rng r = kiln_rng_new(seed);
    int32_t *xd = (*x)->data, *yd = (*y)->data;
    for (int64_t i = 0; i < rows; i++) {
        size_t s = count > 0 ? (size_t)(kiln_rng_next(&r) % starts) : (size_t)i * T;
        memcpy(xd + (size_t)i * T, ids + s, T * sizeof *ids);
        memcpy(yd + (size_t)i * T, ids + s + 1, T * sizeof *ids);
    }
    return KILN_OK;
}
