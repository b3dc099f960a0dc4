/* kiln predict --output FILE: a whole data set's predictions where a script reads them back:
 * .npy (float32 [N, outputs], numpy.load) or .csv (a header, one row per example). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "kiln/kiln.h"
#include "tools/cli_data.h"

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

bool cli_output_kind_ok(const char *path) { return ends_with(path, ".npy") || ends_with(path, ".csv"); }

/* NPY 1.0: magic, version, a little-endian u16 header length, the header dict padded with spaces
 * and a newline to a multiple of 64 bytes, then the data (C order). */
static int write_npy(FILE *f, const float *v, int64_t n, int64_t c) {
    char h[128];
    int len = snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }", (long long)n, (long long)c);
    int total = 10 + len + 1, pad = (64 - total % 64) % 64;
    unsigned hl = (unsigned)(len + pad + 1);
    unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff), (unsigned char)(hl >> 8) };
    if (fwrite(pre, 1, 10, f) != 10 || fwrite(h, 1, (size_t)len, f) != (size_t)len) return 1;
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    return fwrite(v, sizeof(float), (size_t)(n * c), f) != (size_t)(n * c);   /* Kiln's hosts are little-endian */
}

static int write_csv(FILE *f, const float *v, int64_t n, int64_t c) {
    for (int64_t j = 0; j < c; j++) fprintf(f, "%soutput_%lld", j ? "," : "", (long long)j);
    fputc('\n', f);
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < c; j++) fprintf(f, "%s%.9g", j ? "," : "", (double)v[i * c + j]);
        fputc('\n', f);
    }
    return 0;
}

int cli_write_predictions(const char *path, const kiln_tensor *out) {
    int64_t n = out->shape.dim[0], c = n > 0 ? kiln_shape_numel(out->shape) / n : 1;
    FILE *f = fopen(path, "wb");
    if (!f) { fprintf(stderr, "kiln predict: --output %s: cannot write: %s\n", path, strerror(errno)); return 1; }
    int bad = ends_with(path, ".npy") ? write_npy(f, out->data, n, c) : write_csv(f, out->data, n, c);
    if (fclose(f) || bad) { fprintf(stderr, "kiln predict: --output %s: write failed (disk full?)\n", path); return 1; }
    printf("wrote the predictions of %lld examples (%lld outputs each) to %s\n", (long long)n, (long long)c, path);
    return 0;
}
