/* kiln train / summary: no output may be one of the run's inputs (issue 24.13). Writing a history
 * over the checkpoint being resumed, or summary's JSON over the checkpoint it reads, destroyed the
 * input; files are compared by (device, inode) (io/path_guard.h), not by name. */
#include <stdio.h>
#include <string.h>
#include "io/path_guard.h"
#include "tools/cli_data.h"

const char *cli_data_path(const char *spec) {
    static const char *const prefixes[] = { "cifar10:", "cifar100:", "cifar100-coarse:", "mnist:", "fashion-mnist:", "idx:",
                                            "images:", "npz:", "csv:", "text:" };
    if (!spec || !strncmp(spec, "synthetic", 9)) return NULL;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (!strncmp(spec, prefixes[i], n)) return spec[n] ? spec + n : NULL;
    }
    return spec;
}

typedef struct named { const char *opt, *path; } named;

int cli_check_paths(const args *a, const char *cmd) {
    if (a->help) return 0;
    named in[5 + CLI_MAX_IMAGES], out[4];
    int ni = 0, no = 0;
    if (a->load) in[ni++] = (named){ "--load", a->load };
    if (a->model_file) in[ni++] = (named){ "--model-file", a->model_file };
    if (cli_data_path(a->data)) in[ni++] = (named){ "--data", cli_data_path(a->data) };
    if (a->test_csv) in[ni++] = (named){ "--test-csv", a->test_csv };
    if (a->tokenizer) in[ni++] = (named){ "--tokenizer", a->tokenizer };
    for (int i = 0; i < a->n_images; i++) in[ni++] = (named){ "--image", a->images[i] };
    if (a->save) out[no++] = (named){ "--save", a->save };
    if (a->history) out[no++] = (named){ "--history", a->history };
    if (a->json_out) out[no++] = (named){ "--json", a->json_out };
    if (a->tensorboard) out[no++] = (named){ "--tensorboard", a->tensorboard };
    for (int o = 0; o < no; o++) {
        for (int i = 0; i < ni; i++) {
            /* --save over --load is resuming in place, as Keras' ModelCheckpoint does */
            if (!strcmp(out[o].opt, "--save") && !strcmp(in[i].opt, "--load")) continue;
            if (!kiln_same_file(out[o].path, in[i].path)) continue;
            fprintf(stderr, "kiln %s: %s %s is the same file as %s %s: writing it would destroy the input; give %s another path\n",
                    cmd, out[o].opt, out[o].path, in[i].opt, in[i].path, out[o].opt);
            return 2;
        }
        for (int k = 0; k < o; k++)
            if (kiln_same_file(out[o].path, out[k].path)) {
                fprintf(stderr, "kiln %s: %s %s and %s %s are the same file: each output needs its own path\n", cmd, out[k].opt,
                        out[k].path, out[o].opt, out[o].path);
                return 2;
            }
    }
    return 0;
}
