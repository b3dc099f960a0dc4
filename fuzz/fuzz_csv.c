/* libFuzzer target: the CSV reader from memory (field splitting with quotes, header detection,
 * label columns by default, name and index, f32 labels). Build and run: bash fuzz/run.sh [seconds]. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "core/core.h"
#include "data/tabular.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const kiln_csv_opts opts[] = {
        { 0 }, { .label_column = "0" }, { .label_column = "label", .header = 1 }, { .label_column = "-2", .float_labels = true },
        { .header = -1 },
    };
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        kiln_labelled t;
        if (kiln_csv_parse("fuzz.csv", data, size, &opts[k], &t) != KILN_OK) {
            if (t.x || t.y) __builtin_trap();
            continue;
        }
        if (t.example.rank != 1 || t.example.dim[0] < 1 || t.n < 1 || !t.x || !t.y) __builtin_trap();
        for (int64_t i = 0; i < t.n * t.example.dim[0]; i++)
            if (!isfinite(t.x[i])) __builtin_trap();
        for (int64_t i = 0; i < t.n; i++)
            if (!t.float_labels && (t.y[i] < 0 || t.y[i] >= t.num_classes)) __builtin_trap();
        if (opts[k].float_labels && !t.float_labels) __builtin_trap();
        kiln_labelled_free(&t);
    }
    return 0;
}
