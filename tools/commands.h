/* CLI subcommands living in their own files. */
#ifndef KILN_TOOLS_COMMANDS_H
#define KILN_TOOLS_COMMANDS_H
#include <string.h>
int cmd_devices(int argc, char **argv);
int cmd_bench(int argc, char **argv);
#endif
