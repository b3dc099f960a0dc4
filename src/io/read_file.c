/* Non-blocking, regular-files-only opens for readers (see read_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/core.h"
#include "io/read_file.h"

/* "what 'path'" or "'path'" for messages. */
#define WHAT_FMT "%s%s'%s'"
#define WHAT_ARGS(what, path) (what) ? (what) : "", (what) ? " " : "", (path)

kiln_status kiln_file_open_read(const char *path, const char *what, FILE **out, uint64_t *size) {
    if (out) *out = NULL;
    if (size) *size = 0;
    if (!path || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "file_open_read: path and out must not be NULL");
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the flag is dropped before reading */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return kiln_set_error(e == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR, WHAT_FMT ": cannot open: %s", WHAT_ARGS(what, path),
                              strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        bool dir = S_ISDIR(st.st_mode);
        close(fd);
        return kiln_set_error(KILN_IO_ERROR, WHAT_FMT ": not a regular file (%s)", WHAT_ARGS(what, path),
                              dir ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket");
    }
    FILE *f = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        return kiln_set_error(KILN_IO_ERROR, WHAT_FMT ": cannot read: %s", WHAT_ARGS(what, path), strerror(e));
    }
    *out = f;
    if (size) *size = (uint64_t)st.st_size;
    return KILN_OK;
}

kiln_status kiln_file_read_all(const char *path, const char *what, uint64_t max_bytes, uint8_t **out, size_t *n) {
    if (out) *out = NULL;
    if (n) *n = 0;
    if (!out || !n) return kiln_set_error(KILN_INVALID_ARGUMENT, "file_read_all: out and n must not be NULL");
    FILE *f;
    uint64_t size;
    kiln_status st = kiln_file_open_read(path, what, &f, &size);
    if (st) return st;
    if ((max_bytes && size > max_bytes) || size >= SIZE_MAX) {
        fclose(f);
        return kiln_set_error(KILN_INVALID_ARGUMENT, WHAT_FMT ": %llu bytes, more than the %llu this reader takes",
                              WHAT_ARGS(what, path), (unsigned long long)size, (unsigned long long)max_bytes);
    }
    uint8_t *buf = kiln_malloc((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return kiln_set_error(KILN_OUT_OF_MEMORY, WHAT_FMT ": cannot allocate %llu bytes", WHAT_ARGS(what, path),
                              (unsigned long long)size + 1);
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    bool err = ferror(f);
    fclose(f);
    if (err || got != size) {
        kiln_free(buf);
        return kiln_set_error(KILN_IO_ERROR, WHAT_FMT ": read error after %zu of %llu bytes (file changed while reading?)",
                              WHAT_ARGS(what, path), got, (unsigned long long)size);
    }
    buf[size] = 0;
    *out = buf;
    *n = (size_t)size;
    return KILN_OK;
}
