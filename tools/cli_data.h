/* kiln train / eval / predict: data as Keras users keep it (--data npz:FILE, csv:FILE with
 * --label-column and --test-csv), --loss and --metrics, --tensorboard (tools/cli_data.c). */
#ifndef KILN_TOOLS_CLI_DATA_H
#define KILN_TOOLS_CLI_DATA_H
#include "kiln/nn.h"
#include "tools/cli_args.h"

/* Checks --loss, --metrics, --label-column, --test-csv and --tensorboard-every before anything is
 * read: 0, or 2 after a message naming the option. */
int cli_check_data_opts(const args *a, const char *cmd);
/* An output that is an input is refused before anything is read or written (tools/cli_paths.c):
 * --save, --history, --json, --tensorboard against --load, --model-file, --data's file, --test-csv
 * and --image, and the outputs against each other, compared as files (device and inode: "./a",
 * "a", a symlink or a hard link all match). --save naming the --load checkpoint is allowed: that
 * is resuming in place. 0, or 2 after a message naming both options. */
int cli_check_paths(const args *a, const char *cmd);
/* The file or directory a data spec reads ("csv:a.csv" -> "a.csv"; NULL for synthetic data). */
const char *cli_data_path(const char *spec);
/* The training split of spec (csv: with --label-column). */
kiln_status cli_open_train(const args *a, const char *spec, kiln_data **out);
/* The test split of spec: --test-csv for csv:, x_test for npz:, kiln_data_open otherwise. *out
 * NULL with KILN_OK when the data has none (then part of the training split is held out). */
kiln_status cli_open_test(const args *a, const char *spec, const kiln_data *train, kiln_data **out);
/* Output units a built-in model gets for this data: 1 for --loss binary_crossentropy or mse, or
 * without --loss for f32 labels; else the number of classes. */
int cli_output_units(const args *a, const kiln_data *train);
/* The loss: --loss, else for a one-unit output mse (f32 labels) or binary_crossentropy, else
 * sparse_categorical_crossentropy. */
kiln_loss_kind cli_loss(const args *a, const kiln_model *m, kiln_dtype labels);
/* KILN_METRIC_* bits: --metrics, else accuracy (none for mse). */
unsigned cli_metrics(const args *a, kiln_loss_kind loss);
/* --metrics' Keras metrics beyond accuracy / top_k (compile's metric_list), or NULL. */
const char *cli_metric_list(const args *a);
/* kiln predict for value labels (mse): the first count outputs next to their labels. */
int cli_print_values(const kiln_tensor *out, const kiln_tensor *y, int count);
/* cli_output.c: kiln predict --output FILE.npy|FILE.csv (float32 [N, outputs]; a header and a
 * row per example); 0, or 1 after a message. */
bool cli_output_kind_ok(const char *path);
int cli_write_predictions(const char *path, const kiln_tensor *out);
/* cli_data_record.c: kiln train records its data options in m (saved with its checkpoints as
 * kiln.data); kiln eval / predict without --data take them from checkpoint f into a (and the data
 * options not given), saying so on stdout. *keep: the strings a now points into (free it after).
 * 0, or 1 after a message. */
#include "kiln/io.h"
void cli_data_record(const args *a, kiln_model *m);
int cli_data_from_record(args *a, const char *cmd, const kiln_safetensors *f, char **keep);

#endif
