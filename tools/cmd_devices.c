/* kiln devices: what the machine offers (like tf.config.list_physical_devices + nvidia-smi). */
#include <stdio.h>
#include "kiln/kiln.h"
#include "kiln/device.h"
#include "tools/commands.h"

static void devices_usage(FILE *f) {
    fprintf(f,
        "usage: kiln devices\n\n"
        "Lists the devices Kiln can use: the CPU, and each visible NVIDIA GPU with its compute\n"
        "capability, memory, driver, CUDA runtime and cuDNN versions. Says why no GPU is used when\n"
        "there is none. CUDA_VISIBLE_DEVICES selects GPUs (CUDA_VISIBLE_DEVICES= hides them all).\n");
}

static double gib(size_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }
static void ver(char *buf, size_t n, int v) {
    if (v <= 0) snprintf(buf, n, "?");
    else snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10);
}

int cmd_devices(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { devices_usage(stdout); return 0; }
        fprintf(stderr, "kiln devices: unexpected argument '%s' (see kiln devices --help)\n", argv[i]);
        return 2;
    }
    kiln_device_info d[17];
    int n = 0;
    if (kiln_device_list(d, 17, &n) != KILN_OK) { fprintf(stderr, "kiln devices: %s\n", kiln_last_error()); return 1; }
    for (int i = 0; i < n && i < 17; i++) {
        if (d[i].kind == KILN_DEVICE_KIND_CPU) {
            printf("/device:CPU:%d  %s  %d cores  %.1f GiB memory (%.1f GiB free)\n", d[i].index, d[i].name, d[i].cores,
                   gib(d[i].total_memory), gib(d[i].free_memory));
        } else {
            char dv[16], rv[16], cv[16];
            ver(dv, sizeof dv, d[i].driver_version);
            ver(rv, sizeof rv, d[i].runtime_version);
            /* cudnnGetVersion: major*10000 + minor*100 + patch from cuDNN 9, major*1000 + ... before */
            int c = d[i].cudnn_version, mj = c >= 90000 ? c / 10000 : c / 1000, rest = c >= 90000 ? c % 10000 : c % 1000;
            if (c > 0) snprintf(cv, sizeof cv, "%d.%d.%d", mj, rest / 100, rest % 100);
            else snprintf(cv, sizeof cv, "unknown");
            printf("/device:GPU:%d  %s  compute %d.%d  %d SMs  %.1f GiB memory (%.1f GiB free)  driver %s  runtime %s  cuDNN %s\n",
                   d[i].index, d[i].name, d[i].cc_major, d[i].cc_minor, d[i].cores, gib(d[i].total_memory),
                   gib(d[i].free_memory), dv, rv, cv);
        }
    }
    int gpus = 0;
    for (int i = 0; i < n && i < 17; i++) gpus += d[i].kind == KILN_DEVICE_KIND_GPU;
    if (gpus > 1)
        printf("Replicas: kiln train --gpus %d (or --devices gpu:0,gpu:1,...) trains one replica per GPU, gradients averaged "
               "with NCCL\n", gpus);
    if (kiln_gpu_available()) printf("GPU available: yes\n");
    else printf("GPU available: no (%s)\n", kiln_gpu_unavailable_reason());
    return 0;
}
