/* libFuzzer target: the IDX reader (raw and gzip) through its from-path entry kiln_idx_read.
 * The input goes to one memfd, read through /proc/self/fd/N: no file is left behind (a
 * /dev/shm file per fuzzing process used to be). Build and run: bash fuzz/run.sh [seconds]. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "kiln/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("kiln_fuzz_idx", MFD_CLOEXEC);
        if (fd < 0) __builtin_trap();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) __builtin_trap();
    kiln_tensor *t = NULL;
    kiln_status st = kiln_idx_read(path, &t);
    if (st == KILN_OK) {
        if (!t || kiln_tensor_nbytes(t) == 0) __builtin_trap();
        kiln_tensor_free(t);
    } else if (t) {
        __builtin_trap();   /* failure must leave *out NULL */
    }
    return 0;
}
