/* The examples of kiln train / eval / predict: --data's two splits as bare sources, and the
 * pipelines over them (tools/cli_source.c). Errors go to stderr naming the command. */
#ifndef KILN_TOOLS_CLI_SOURCE_H
#define KILN_TOOLS_CLI_SOURCE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kiln/data.h"
#include "kiln/pipeline.h"
#include "tools/cli_ctx.h"

/* The examples of the two splits (bare sources) and how to name the evaluation split. */
typedef struct data_src {
    kiln_data *train, *test;
    bool images;             /* an image folder: decoded pixels are cached */
    bool held_out;           /* test = a held-out part of the training data */
    bool whole;              /* test = all of a source without a test split (eval, predict) */
    bool text;               /* --data text:FILE: token windows, test = the held-out tail */
    double fraction;
} data_src;

/* Opens --data for cmd: both splits for train, the evaluation split alone otherwise (want_train
 * false). The evaluation split is the source's test split, or a held-out part of the training
 * split (--validation-split, or for train 10% of an image folder without train/test sub-folders;
 * eval and predict use all of such a folder). 0, or the exit status after a message. */
int cli_open_data(const cli_ctx *c, const char *cmd, bool want_train, data_src *ds);
void cli_data_src_free(data_src *d);
/* Says which examples eval / predict use when the source has no test split. */
void cli_say_whole(const data_src *ds, const char *data);
/* "test", "overall" or "held-out (F of the training data)". */
void cli_split_name(const data_src *ds, char *buf, size_t n);

/* --augment LIST for examples of shape: 0, or 2 after a message naming the unknown one. */
int cli_parse_augment(const char *list, kiln_augment_opts *o, kiln_shape shape, uint64_t seed);
bool cli_augmenting(const kiln_augment_opts *o);
/* source -> [take --limit] -> [cache] -> shuffle -> [augment] -> batch (full batches) -> [prefetch];
 * takes src. */
kiln_data *cli_train_pipeline(const args *a, kiln_data *src, bool images, const kiln_augment_opts *aug);
/* source -> [cache] -> batch (the last partial batch kept) -> [prefetch]; takes src. */
kiln_data *cli_eval_pipeline(const args *a, kiln_data *src, bool images);
#endif
