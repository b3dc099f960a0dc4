/* libFuzzer target: the CIFAR-10 / CIFAR-100 record parser (from memory), both variants.
 * Build and run: bash fuzz/run.sh [seconds]. */
#include <stdint.h>
#include <stdlib.h>
#include "core/core.h"
#include "data/pipeline_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int variant = 10; variant <= 100; variant += 90) {
        int64_t count = -1;
        if (kiln_cifar_parse("fuzz.bin", data, size, variant, false, NULL, NULL, &count) != KILN_OK) continue;
        size_t rec = variant == 100 ? 3074 : 3073;
        if (count < 1 || (size_t)count * rec != size) __builtin_trap();
        uint8_t *px = kiln_malloc((size_t)count * KILN_CIFAR_PIXELS);
        int32_t *lb = kiln_malloc((size_t)count * sizeof(int32_t));
        if (px && lb && kiln_cifar_parse("fuzz.bin", data, size, variant, true, px, lb, &count) == KILN_OK)
            for (int64_t i = 0; i < count; i++)
                if (lb[i] < 0 || lb[i] >= (variant == 100 ? 20 : 10)) __builtin_trap();
        kiln_free(px);
        kiln_free(lb);
    }
    return 0;
}
