/* kiln train's (and summary --batch-size's) training settings: the optimizer, the learning-rate
 * schedule, the callbacks' options, --batch-size auto (tools/cli_train_opts.c). A message on
 * stderr says what is wrong; 2 is the usage exit status. */
#ifndef KILN_TOOLS_CLI_TRAIN_OPTS_H
#define KILN_TOOLS_CLI_TRAIN_OPTS_H
#include <stdint.h>
#include "kiln/nn.h"
#include "tools/cli_args.h"

/* --optimizer with --lr, --weight-decay, --clipnorm: 0 or 2. */
int cli_parse_optimizer(const args *a, kiln_optimizer *o);
/* --schedule with --lr-step-epochs / --lr-step-factor (step) and --warmup-epochs (cosine): 0 or 2. */
int cli_parse_schedule(const args *a, kiln_lr_schedule *s);
/* --early-stopping, --monitor, --min-delta, --save-best, checked before any data is read: 0 or 2. */
int cli_check_callbacks(const args *a);
/* What --early-stopping and --save-best watch (default val_loss). */
const char *cli_monitor(const args *a);
/* The epoch (index into h) whose checkpoint --save-best kept: the first best by the monitor. */
int cli_best_epoch(const kiln_logs *h, int n, const char *monitor);
/* --batch-size auto: sets a->batch to the largest multiple of 8 (and of --accumulate) whose planned
 * training step fits: in --gpu-memory-limit or the GPU's free memory, on the CPU in --memory-limit
 * or half the physical memory; at most the training examples. 0, or 1 after a message. */
int cli_auto_batch(args *a, kiln_model *m, int64_t n_train);
#endif
