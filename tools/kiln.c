/* kiln: the command-line tool. */
#include <stdio.h>
#include <string.h>
#include "kiln/kiln.h"

static void usage(FILE *f) {
    fprintf(f,
        "kiln %s - train neural networks on the GPU or the CPU\n\n"
        "usage: kiln <command> [options]\n\n"
        "commands:\n"
        "  --help       show this help\n"
        "  --version    show the version\n", KILN_VERSION);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return argc < 2 ? 1 : 0;
    }
    if (!strcmp(argv[1], "--version")) { printf("kiln %s\n", KILN_VERSION); return 0; }
    fprintf(stderr, "kiln: unknown command '%s' (see kiln --help)\n", argv[1]);
    return 2;
}
