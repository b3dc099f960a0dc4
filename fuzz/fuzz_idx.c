/* libFuzzer target: the IDX reader (raw and gzip) through its from-path entry kiln_idx_read.
 * Build and run: bash fuzz/run.sh [seconds]. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include "kiln/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "%s/kiln_fuzz_idx_%d", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
                           (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    if (size) fwrite(data, 1, size, f);
    fclose(f);
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
