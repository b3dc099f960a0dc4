/* CLI subcommands living in their own files. */
#ifndef KILN_TOOLS_COMMANDS_H
#define KILN_TOOLS_COMMANDS_H
#include <string.h>
#include <time.h>

/* Seconds on a monotonic clock. */
static inline double cli_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
int cmd_devices(int argc, char **argv);
int cmd_bench(int argc, char **argv);
#endif
