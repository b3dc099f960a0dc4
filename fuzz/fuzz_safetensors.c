/* libFuzzer target: the safetensors checkpoint loader (the most exposed input: checkpoints are
 * downloaded and shared). The input is written to one memfd, read through /proc/self/fd/N, so
 * nothing is left on disk. Build and run: bash fuzz/run.sh [seconds]. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "kiln/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("kiln_fuzz_safetensors", MFD_CLOEXEC);
        if (fd < 0) __builtin_trap();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) __builtin_trap();
    kiln_safetensors *f = (kiln_safetensors *)1;
    if (kiln_safetensors_load(path, &f) != KILN_OK) {
        if (f) __builtin_trap();          /* failure must leave *out NULL */
        return 0;
    }
    /* a file that loads: every name is found again at its position, data sizes add up */
    uint64_t total = 0;
    for (int i = 0; i < kiln_safetensors_count(f); i++) {
        const char *name = kiln_safetensors_name(f, i);
        const kiln_tensor *t = kiln_safetensors_tensor(f, i);
        if (!name || !t || kiln_safetensors_index(f, name) != i || kiln_safetensors_find(f, name) != t) __builtin_trap();
        total += kiln_tensor_nbytes(t);
    }
    if (total > size) __builtin_trap();
    (void)kiln_safetensors_meta(f, "kiln.model");
    kiln_safetensors_free(f);
    return 0;
}
