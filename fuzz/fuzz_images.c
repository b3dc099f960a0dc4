/* libFuzzer target: PNG / JPEG header probe (via fmemopen) and full decode to 1 and 3 channels.
 * Build and run: bash fuzz/run.sh [seconds]. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include "core/core.h"
#include "data/pipeline_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    FILE *f = fmemopen((void *)data, size, "rb");
    if (f) {
        kiln_image_info info;
        if (kiln_image_probe("fuzz", f, &info) == KILN_OK &&
            (info.width < 1 || info.height < 1 || (info.channels != 1 && info.channels != 3)))
            __builtin_trap();
        fclose(f);
    }
    for (int c = 1; c <= 3; c += 2) {
        kiln_image_info info;
        uint8_t *px = NULL;
        if (kiln_image_decode("fuzz", data, size, c, &info, &px) == KILN_OK) {
            if (!px || info.channels != c || (int64_t)info.width * info.height > KILN_IMAGE_MAX_PIXELS) __builtin_trap();
            volatile uint8_t sink = px[(size_t)info.width * info.height * c - 1];   /* whole buffer addressable */
            (void)sink;
            kiln_free(px);
        } else if (px) {
            __builtin_trap();
        }
    }
    return 0;
}
