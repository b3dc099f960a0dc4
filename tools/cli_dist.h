/* kiln train as one process of an MPI job (tools/cli_dist.c). */
#ifndef KILN_TOOLS_CLI_DIST_H
#define KILN_TOOLS_CLI_DIST_H
#include "tools/cli_ctx.h"
/* Runs train(c) alone, or as one rank of the job mpirun started (c->a.dist set for it); a failing
 * rank ends the whole job. Returns train's status. */
int cli_dist_run(cli_ctx *c, int (*train)(cli_ctx *));
#endif
