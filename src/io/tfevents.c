/* TensorBoard event files: CRC-32C, TFRecord framing, the Event protobuf fields scalars need,
 * and a writer (see tfevents.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "core/core.h"
#include "io/tfevents.h"

/* ---- CRC-32C (reflected polynomial 0x82F63B78), one table of 256 ---- */

static uint32_t crc_table[256];
static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t kiln_crc32c(uint32_t crc, const void *p, size_t n) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, crc_init);
    const uint8_t *b = p;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ b[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

uint32_t kiln_crc32c_masked(const void *p, size_t n) {
    uint32_t c = kiln_crc32c(0, p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void le32(uint8_t *o, uint32_t v) { for (int i = 0; i < 4; i++) o[i] = (uint8_t)(v >> (8 * i)); }
static void le64(uint8_t *o, uint64_t v) { for (int i = 0; i < 8; i++) o[i] = (uint8_t)(v >> (8 * i)); }

size_t kiln_tfrecord_frame(const uint8_t *data, size_t n, uint8_t *out) {
    le64(out, (uint64_t)n);
    le32(out + 8, kiln_crc32c_masked(out, 8));
    memcpy(out + 12, data, n);
    le32(out + 12 + n, kiln_crc32c_masked(data, n));
    return n + 16;
}

/* ---- the protobuf fields ---- */

static size_t varint(uint8_t *o, uint64_t v) {
    size_t k = 0;
    do {
        o[k] = (uint8_t)(v & 0x7F);
        v >>= 7;
        if (v) o[k] |= 0x80;
        k++;
    } while (v);
    return k;
}

/* wall_time and step: the start of every Event */
static size_t event_head(double wall_time, int64_t step, uint8_t *o) {
    uint64_t bits;
    memcpy(&bits, &wall_time, 8);
    o[0] = 0x09;                          /* field 1, 64-bit */
    le64(o + 1, bits);
    o[9] = 0x10;                          /* field 2, varint */
    return 10 + varint(o + 10, (uint64_t)step);
}

size_t kiln_tfevent_scalar(double wall_time, int64_t step, const char *tag, float value, uint8_t *out, size_t cap) {
    size_t tl = strlen(tag);
    if (tl > 200) tl = 200;
    uint8_t v[256], s[264];
    size_t nv = 0, ns = 0;
    v[nv++] = 0x0a;                       /* Value.tag: field 1, length-delimited */
    nv += varint(v + nv, tl);
    memcpy(v + nv, tag, tl);
    nv += tl;
    uint32_t fb;
    memcpy(&fb, &value, 4);
    v[nv++] = 0x15;                       /* Value.simple_value: field 2, 32-bit */
    le32(v + nv, fb);
    nv += 4;
    s[ns++] = 0x0a;                       /* Summary.value: field 1 */
    ns += varint(s + ns, nv);
    memcpy(s + ns, v, nv);
    ns += nv;
    if (cap < 20 + 1 + 2 + ns) return 0;
    size_t k = event_head(wall_time, step, out);
    out[k++] = 0x2a;                      /* Event.summary: field 5 */
    k += varint(out + k, ns);
    memcpy(out + k, s, ns);
    return k + ns;
}

/* ---- the writer ---- */

struct kiln_tfevents {
    FILE *f;
    char path[4200];
};

static double wall_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static kiln_status write_record(kiln_tfevents *w, const uint8_t *data, size_t n) {
    uint8_t rec[600];
    if (n + 16 > sizeof rec) return kiln_set_error(KILN_INTERNAL, "tensorboard: event of %zu bytes too long", n);
    size_t k = kiln_tfrecord_frame(data, n, rec);
    if (fwrite(rec, 1, k, w->f) != k)
        return kiln_set_error(KILN_IO_ERROR, "tensorboard: cannot write %s: %s", w->path, strerror(errno));
    return KILN_OK;
}

/* mkdir -p */
static kiln_status make_dirs(const char *dir) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return kiln_set_error(KILN_INVALID_ARGUMENT, "tensorboard: path too long: %s", dir);
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c) continue;
        char keep = *c;
        *c = 0;
        struct stat st;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            return kiln_set_error(KILN_IO_ERROR, "tensorboard: cannot create the log directory %s: %s", p, strerror(errno));
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            return kiln_set_error(KILN_IO_ERROR, "tensorboard: %s is not a directory (the log directory is %s)", p, dir);
        if (!(*c = keep)) break;
    }
    return KILN_OK;
}

kiln_status kiln_tfevents_open(const char *dir, kiln_tfevents **out) {
    *out = NULL;
    if (!dir || !*dir) return kiln_set_error(KILN_INVALID_ARGUMENT, "tensorboard: no log directory given");
    kiln_status st = make_dirs(dir);
    if (st) return st;
    kiln_tfevents *w = kiln_calloc(1, sizeof *w);
    if (!w) return kiln_set_error(KILN_OUT_OF_MEMORY, "tensorboard: out of host memory");
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    double now = wall_now();
    int fd = -1;
    for (int n = 0; n < 1000 && fd < 0; n++) {      /* never replace another run's file */
        snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%lld.%s.%d.%d.v2", dir, (long long)now, host, (int)getpid(), n);
        fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0 || !(w->f = fdopen(fd, "wb"))) {
        st = kiln_set_error(KILN_IO_ERROR, "tensorboard: cannot create %s: %s", w->path, strerror(errno));
        if (fd >= 0) close(fd);
        kiln_free(w);
        return st;
    }
    uint8_t ev[64];
    size_t k = event_head(now, 0, ev);
    const char *version = "brain.Event:2";
    ev[k++] = 0x1a;                       /* Event.file_version: field 3 */
    k += varint(ev + k, strlen(version));
    memcpy(ev + k, version, strlen(version));
    k += strlen(version);
    if ((st = write_record(w, ev, k)) || (st = kiln_tfevents_flush(w))) {
        kiln_tfevents_close(w);
        return st;
    }
    *out = w;
    return KILN_OK;
}

kiln_status kiln_tfevents_scalar(kiln_tfevents *w, const char *tag, double value, int64_t step) {
    uint8_t ev[512];
    size_t n = kiln_tfevent_scalar(wall_now(), step, tag, (float)value, ev, sizeof ev);
    return write_record(w, ev, n);
}

kiln_status kiln_tfevents_flush(kiln_tfevents *w) {
    if (fflush(w->f) != 0) return kiln_set_error(KILN_IO_ERROR, "tensorboard: cannot write %s: %s", w->path, strerror(errno));
    return KILN_OK;
}

const char *kiln_tfevents_path(const kiln_tfevents *w) { return w->path; }

void kiln_tfevents_close(kiln_tfevents *w) {
    if (!w) return;
    if (w->f) fclose(w->f);
    kiln_free(w);
}
