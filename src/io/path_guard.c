/* Same-file checks and writer locks (see path_guard.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/core.h"
#include "io/path_guard.h"

#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif

/* The directory part of path ("." for a bare name) into buf, and a pointer to the name part;
 * false when path is too long or ends in '/'. */
static bool split(const char *path, char *buf, size_t n, const char **base) {
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!**base) return false;
    int w = slash ? snprintf(buf, n, "%.*s", slash == path ? 1 : (int)(slash - path), path) : snprintf(buf, n, ".");
    return w > 0 && (size_t)w < n;
}

bool kiln_same_file(const char *a, const char *b) {
    if (!a || !b || !*a || !*b) return false;
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea || eb) return ea && eb && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char da[4096], db[4096];
    const char *na, *nb;
    if (!split(a, da, sizeof da, &na) || !split(b, db, sizeof db, &nb) || strcmp(na, nb)) return false;
    return stat(da, &sa) == 0 && stat(db, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

struct kiln_path_lock {
    int fd;
    char *lock_path;
};

/* The pid the holder wrote into its lock file (0 if unknown). */
static long holder_pid(int fd) {
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = 0;
    long pid = strtol(buf, NULL, 10);
    return pid > 0 ? pid : 0;
}

kiln_status kiln_path_lock_take(const char *path, const char *what, kiln_path_lock **out) {
    *out = NULL;
    if (!path || !*path) return kiln_set_error(KILN_INVALID_ARGUMENT, "path_lock: no path");
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return KILN_OK;   /* a device or FIFO: nothing a second run destroys */
    if (!what) what = "file";
    size_t n = strlen(path) + 6;
    char *lp = kiln_malloc(n);
    if (!lp) return kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory");
    snprintf(lp, n, "%s.lock", path);
    /* The holder removes the lock file when it finishes: a lock taken on a file that was removed
     * (or replaced) meanwhile is worthless, so it is checked against the name and taken again. */
    for (int tries = 0; tries < 16; tries++) {
        int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
        if (fd < 0) {
            int e = errno;
            kiln_status s = kiln_set_error(KILN_IO_ERROR, "%s '%s': cannot create its lock file '%s': %s", what, path, lp, strerror(e));
            kiln_free(lp);
            return s;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            if (e == EWOULDBLOCK || e == EINTR) {
                long pid = holder_pid(fd);
                close(fd);
                kiln_status s = pid == (long)getpid()
                    ? kiln_set_error(KILN_INVALID_ARGUMENT, "%s '%s' is written twice by this run (two callbacks with the same path): "
                                     "give each its own file", what, path)
                    : kiln_set_error(KILN_IO_ERROR, "%s '%s' is being written by another run (pid %ld; lock file '%s'): wait for it to "
                                     "finish, or write to another path", what, path, pid, lp);
                kiln_free(lp);
                return s;
            }
            close(fd);               /* a file system without locks (ENOLCK, EINVAL): go on unlocked */
            kiln_free(lp);
            return KILN_OK;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(lp, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            char pid[32];
            int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) { /* the pid is for messages only */ }
            kiln_path_lock *l = kiln_malloc(sizeof *l);
            if (!l) { unlink(lp); close(fd); kiln_free(lp); return kiln_set_error(KILN_OUT_OF_MEMORY, "out of host memory"); }
            l->fd = fd;
            l->lock_path = lp;
            *out = l;
            return KILN_OK;
        }
        close(fd);                   /* its holder removed it while we waited: take the new one */
    }
    kiln_status s = kiln_set_error(KILN_IO_ERROR, "%s '%s': its lock file '%s' keeps changing; is another run starting and "
                                   "stopping on it?", what, path, lp);
    kiln_free(lp);
    return s;
}

void kiln_path_lock_release(kiln_path_lock *l) {
    if (!l) return;
    unlink(l->lock_path);            /* while still locked: a waiter then sees the name is gone */
    close(l->fd);
    kiln_free(l->lock_path);
    kiln_free(l);
}
