/* Atomic, link-safe file replacement (see atomic_file.h). Everything goes through a directory fd
 * (openat / renameat / unlinkat), so the temp file and the rename stay in one directory even if
 * path's parents are renamed meanwhile. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/core.h"
#include "io/atomic_file.h"

#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif

/* Splits path into a directory and a file name (kiln_malloc'd). */
static kiln_status split_path(const char *path, char **dir, char **base) {
    const char *slash = strrchr(path, '/');
    *dir = slash ? kiln_malloc((size_t)(slash - path) + 2) : kiln_strdup(".");
    *base = kiln_strdup(slash ? slash + 1 : path);
    if (!*dir || !*base) { kiln_free(*dir); kiln_free(*base); return kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory"); }
    if (slash) {
        size_t n = slash == path ? 1 : (size_t)(slash - path);     /* "/x" -> "/" */
        memcpy(*dir, path, n);
        (*dir)[n] = 0;
    }
    if (!**base) {
        kiln_free(*dir); kiln_free(*base);
        return kiln_set_error(KILN_INVALID_ARGUMENT, "'%s' names a directory, not a file: give a file name", path);
    }
    return KILN_OK;
}

static kiln_status open_dir(const char *path, const char *dir, int *fd) {
    *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd >= 0) return KILN_OK;
    int e = errno;
    if (e == ENOENT) return kiln_set_error(KILN_IO_ERROR, "cannot write '%s': directory '%s' does not exist (create it first)", path, dir);
    return kiln_set_error(KILN_IO_ERROR, "cannot write '%s': directory '%s': %s", path, dir, strerror(e));
}

/* <base>.tmp.<pid>[.<anything>] with a pid that no longer runs: left by a killed save. */
static bool stale_temp(const char *name, const char *base) {
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) || strncmp(name + bl, ".tmp.", 5)) return false;
    char *end;
    errno = 0;
    long pid = strtol(name + bl + 5, &end, 10);
    if (errno || end == name + bl + 5 || (*end && *end != '.') || pid <= 0 || pid == (long)getpid()) return false;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static void remove_stale(int dir_fd, const char *base) {
    int fd = dup(dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) { if (fd >= 0) close(fd); return; }
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)))
        if (stale_temp(e->d_name, base) && fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            (void)unlinkat(dir_fd, e->d_name, 0);
    closedir(d);
}

/* Creates <base>.tmp.<pid>.<random> exclusively; retries on a name taken by someone else. */
static int create_temp(kiln_atomic_file *af) {
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (int tries = 0; tries < 64; tries++) {
        uint64_t r = kiln_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 12) ^ counter++);
        int w = snprintf(af->tmp, sizeof af->tmp, "%.*s.tmp.%ld.%06llx", (int)(sizeof af->tmp - 48), af->base,
                         (long)getpid(), (unsigned long long)(r & 0xffffff));
        if (w < 0 || (size_t)w >= sizeof af->tmp) { errno = ENAMETOOLONG; return -1; }
        int fd = openat(af->dir_fd, af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

static void release(kiln_atomic_file *af) {
    if (af->dir_fd >= 0) close(af->dir_fd);
    kiln_free(af->dir);
    kiln_free(af->base);
    af->dir_fd = -1;
    af->dir = af->base = NULL;
    af->f = NULL;
}

kiln_status kiln_atomic_open(const char *path, kiln_atomic_file *af) {
    memset(af, 0, sizeof *af);
    af->dir_fd = -1;
    af->path = path;
    kiln_status st = split_path(path, &af->dir, &af->base);
    if (st) return st;
    if ((st = open_dir(path, af->dir, &af->dir_fd))) { release(af); return st; }
    remove_stale(af->dir_fd, af->base);
    int fd = create_temp(af);
    if (fd < 0) {
        st = kiln_set_error(KILN_IO_ERROR, "cannot create a temp file in '%s' (for '%s'): %s", af->dir, path, strerror(errno));
        release(af);
        return st;
    }
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        st = kiln_set_error(KILN_IO_ERROR, "cannot write a temp file in '%s' (for '%s'): %s", af->dir, path, strerror(errno));
        close(fd);
        (void)unlinkat(af->dir_fd, af->tmp, 0);
        release(af);
    }
    return st;
}

void kiln_atomic_abort(kiln_atomic_file *af) {
    if (af->f) fclose(af->f);
    af->f = NULL;
    if (af->dir_fd >= 0) (void)unlinkat(af->dir_fd, af->tmp, 0);
    release(af);
}

kiln_status kiln_atomic_commit(kiln_atomic_file *af) {
    kiln_status st = KILN_OK;
    errno = 0;
    if (fflush(af->f) != 0 || ferror(af->f))     /* ferror: an earlier write that failed (a full disk) */
        st = kiln_set_error(KILN_IO_ERROR, "writing %s/%s (for '%s') failed: %s", af->dir, af->tmp, af->path, strerror(errno ? errno : EIO));
    else if (fsync(fileno(af->f)) != 0)
        st = kiln_set_error(KILN_IO_ERROR, "fsync of %s/%s (for '%s') failed: %s", af->dir, af->tmp, af->path, strerror(errno));
    if (fclose(af->f) != 0 && !st)
        st = kiln_set_error(KILN_IO_ERROR, "closing %s/%s (for '%s') failed: %s", af->dir, af->tmp, af->path, strerror(errno));
    af->f = NULL;
    if (!st && renameat(af->dir_fd, af->tmp, af->dir_fd, af->base) != 0)
        st = kiln_set_error(KILN_IO_ERROR, "cannot rename %s/%s to '%s': %s", af->dir, af->tmp, af->path, strerror(errno));
    if (st) (void)unlinkat(af->dir_fd, af->tmp, 0);
    else (void)fsync(af->dir_fd);      /* makes the rename durable (best effort) */
    release(af);
    return st;
}

kiln_status kiln_atomic_check(const char *path) {
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "no path given");
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "cannot write '%s': it is a directory (give a file name inside it)", path);
    kiln_atomic_file af;
    kiln_status s = kiln_atomic_open(path, &af);
    if (!s) kiln_atomic_abort(&af);
    return s;
}
