/* libFuzzer target: the .npz reader (zip central directory, ZIP64 records, stored and deflated
 * members, CRC-32, .npy headers, labels) from memory, both splits. Every array it returns must
 * hold what its shape promises. Build and run: bash fuzz/run.sh [seconds]. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "core/core.h"
#include "data/tabular.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int train = 0; train < 2; train++) {
        kiln_labelled t;
        if (kiln_npz_parse("fuzz.npz", data, size, train, &t) != KILN_OK) {
            if (t.x || t.y) __builtin_trap();        /* failure frees everything */
            continue;
        }
        int64_t row = kiln_shape_numel(t.example);
        if (t.n < 1 || row < 1 || !t.x || !t.y) __builtin_trap();
        volatile float sum = 0;                      /* touch every value: ASan checks the sizes */
        for (int64_t i = 0; i < t.n * row; i++) sum += t.x[i];
        for (int64_t i = 0; i < t.n; i++) {
            if (!t.float_labels && (t.y[i] < 0 || t.y[i] >= t.num_classes)) __builtin_trap();
            if (!isfinite(t.x[i * row])) __builtin_trap();
        }
        kiln_labelled_free(&t);
    }
    return 0;
}
