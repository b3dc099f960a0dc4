/* kiln train as one process of an MPI job (tools/cli_dist.c). */
#ifndef KILN_TOOLS_CLI_DIST_H
#define KILN_TOOLS_CLI_DIST_H
#include "tools/cli_args.h"
/* Runs train(a) alone, or as one rank of the job mpirun started (a->dist set for it); a failing
 * rank ends the whole job. Returns train's status. */
int cli_dist_run(args *a, int (*train)(args *));
#endif
