/* Per-command option parsing for kiln train / eval / predict / summary: each command accepts only
 * its own options and names the problem otherwise (issue 17.2). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "tools/cli_args.h"
#include "tools/commands.h"
#include "kiln/kiln.h"

typedef enum { K_FLAG, K_STR, K_INT, K_I64, K_U64, K_REAL, K_LIST } opt_kind;
enum { OPEN_LO = 1, OPEN_HI = 2 };
enum { T = CMD_TRAIN, E = CMD_EVAL, P = CMD_PREDICT, S = CMD_SUMMARY };

typedef struct cli_opt {
    const char *name;
    opt_kind kind;
    unsigned cmds;             /* CMD_* bits of the commands taking it */
    size_t off;                /* the field in args */
    double lo, hi;             /* numbers: the range */
    unsigned open;             /* K_REAL: OPEN_LO / OPEN_HI */
} cli_opt;

#define F(field) offsetof(args, field)
static const cli_opt opts[] = {
    { "--model", K_STR, T | E | P | S, F(model), 0, 0, 0 },
    { "--load", K_STR, T | E | P | S, F(load), 0, 0, 0 },
    { "--model-file", K_STR, T | E | P | S, F(model_file), 0, 0, 0 },
    { "--data", K_STR, T | E | P, F(data), 0, 0, 0 },
    { "--image", K_LIST, P, F(images), 0, 0, 0 },
    { "--validation-split", K_REAL, T | E | P, F(val_split), 0, 1, OPEN_LO | OPEN_HI },
    { "--batch-size", K_INT, T | E | P | S, F(batch), 1, CLI_MAX_BATCH, 0 },
    { "--count", K_INT, P, F(count), 1, 100000, 0 },
    { "--output", K_STR, P, F(output), 0, 0, 0 },
    { "--threads", K_INT, T | E | P, F(threads), 0, CLI_MAX_THREADS, 0 },
    { "--device", K_STR, T | E | P | S, F(device), 0, 0, 0 },
    { "--log-device-placement", K_FLAG, T | E | P, F(log_placement), 0, 0, 0 },
    { "--prefetch", K_INT, T | E, F(prefetch), 0, 256, 0 },
    { "--workers", K_INT, T | E, F(workers), 0, 256, 0 },
    { "--epochs", K_INT, T, F(epochs), 0, CLI_MAX_EPOCHS, 0 },
    { "--optimizer", K_STR, T | S, F(optimizer), 0, 0, 0 },
    { "--lr", K_REAL, T, F(lr), 0, 1e6, OPEN_LO },
    { "--schedule", K_STR, T, F(schedule), 0, 0, 0 },
    { "--lr-schedule", K_STR, T, F(schedule), 0, 0, 0 },              /* nanoGPT-style spelling of --schedule */
    { "--lr-step-epochs", K_INT, T, F(lr_step_epochs), 1, CLI_MAX_EPOCHS, 0 },
    { "--lr-step-factor", K_REAL, T, F(lr_step_factor), 0, 1, OPEN_LO },
    { "--warmup-epochs", K_REAL, T, F(warmup_epochs), 0, CLI_MAX_EPOCHS, 0 },
    { "--warmup-steps", K_REAL, T, F(warmup_steps), 0, 1e12, 0 },
    { "--weight-decay", K_REAL, T, F(weight_decay), 0, 1e6, 0 },
    { "--momentum", K_REAL, T, F(momentum), 0, 1, OPEN_HI },
    { "--nesterov", K_FLAG, T, F(nesterov), 0, 0, 0 },
    { "--clipnorm", K_REAL, T, F(clipnorm), 0, 1e12, OPEN_LO },
    { "--clip-norm", K_REAL, T, F(clipnorm), 0, 1e12, OPEN_LO },
    { "--early-stopping", K_INT, T, F(patience), 1, CLI_MAX_EPOCHS, 0 },
    { "--monitor", K_STR, T, F(monitor), 0, 0, 0 },
    { "--min-delta", K_REAL, T, F(min_delta), 0, 1e12, 0 },
    { "--save-best", K_FLAG, T, F(save_best), 0, 0, 0 },
    { "--seed", K_U64, T, F(seed), 0, 0, 0 },
    { "--augment", K_STR, T, F(augment), 0, 0, 0 },
    { "--data-on-device", K_FLAG, T, F(data_on_device), 0, 0, 0 },
    { "--gpu-memory-limit", K_INT, T, F(gpu_mem_mib), 0, 1 << 24, 0 },
    { "--save", K_STR, T, F(save), 0, 0, 0 },
    { "--strict-load", K_FLAG, T, F(strict_load), 0, 0, 0 },
    { "--history", K_STR, T, F(history), 0, 0, 0 },
    { "--limit", K_I64, T, F(limit), 1, 0, 0 },
    { "--verbose", K_INT, T, F(verbose), 0, 2, 0 },
    { "--json", K_STR, S, F(json_out), 0, 0, 0 },
    { "--loss", K_STR, T | E, F(loss), 0, 0, 0 },
    { "--metrics", K_STR, T | E, F(metrics), 0, 0, 0 },
    { "--label-column", K_STR, T | E | P, F(label_column), 0, 0, 0 },
    { "--test-csv", K_STR, T | E | P, F(test_csv), 0, 0, 0 },
    { "--tensorboard", K_STR, T, F(tensorboard), 0, 0, 0 },
    { "--tensorboard-every", K_INT, T, F(tensorboard_every), 1, 1 << 30, 0 },
    { "--gpus", K_STR, T, F(gpus), 0, 0, 0 },
    { "--devices", K_STR, T, F(devices_list), 0, 0, 0 },
    { "--accumulate", K_INT, T | S, F(accumulate), 1, CLI_MAX_BATCH, 0 },
    { "--context", K_INT, S, F(context), 1, 1 << 20, 0 },
    { "--block-size", K_INT, T | E, F(context), 1, 1 << 20, 0 },
    { "--tokenizer", K_STR, T | E, F(tokenizer), 0, 0, 0 },
    { "--steps-per-epoch", K_INT, T, F(steps_per_epoch), 1, 1 << 30, 0 },
    { "--memory-limit", K_INT, T, F(memory_limit_mib), 1, 1 << 30, 0 },
    { "--debug-numerics", K_FLAG, T, F(debug_numerics), 0, 0, 0 },
    { "--precision", K_STR, T | S, F(precision), 0, 0, 0 },
    { "--sync-batchnorm", K_FLAG, T, F(sync_batchnorm), 0, 0, 0 },
    { "--bucket-kb", K_INT, T, F(bucket_kb), 1, 1 << 20, 0 },
};
#undef F
#define N_OPTS (sizeof opts / sizeof opts[0])

int cli_check_precision(const args *a, const char *cmd) {
    if (!a->precision || kiln_precision_parse(a->precision, NULL) == KILN_OK) return 0;
    fprintf(stderr, "kiln %s: --precision: %s\n", cmd, kiln_last_error());
    return 2;
}

kiln_precision cli_precision(const args *a) {
    kiln_precision p = KILN_PRECISION_FLOAT32;
    if (a->precision) kiln_precision_parse(a->precision, &p);
    return p;
}

unsigned cli_command_bit(const char *cmd) {
    static const char *const names[] = { "train", "eval", "predict", "summary" };
    for (unsigned i = 0; i < 4; i++) if (!strcmp(cmd, names[i])) return 1u << i;
    return 0;
}

static const cli_opt *find(const char *name) {
    for (size_t i = 0; i < N_OPTS; i++) if (!strcmp(opts[i].name, name)) return &opts[i];
    return NULL;
}

void cli_list_options(FILE *f, const char *cmd) {
    unsigned bit = cli_command_bit(cmd);
    for (size_t i = 0; i < N_OPTS; i++) if (opts[i].cmds & bit) fprintf(f, "%s, ", opts[i].name);
    fprintf(f, "--help");
}

/* "kiln summary: --epochs is a training option; summary takes --model, --load, --help" */
static int wrong_command(const char *cmd, const cli_opt *o) {
    static const char *const names[] = { "train", "eval", "predict", "summary" };
    if (o->cmds == CMD_TRAIN) fprintf(stderr, "kiln %s: %s is a training option; ", cmd, o->name);
    else {
        fprintf(stderr, "kiln %s: %s is an option of", cmd, o->name);
        for (unsigned i = 0, k = 0; i < 4; i++)
            if (o->cmds & (1u << i)) fprintf(stderr, "%s kiln %s", k++ ? "," : "", names[i]);
        fprintf(stderr, "; ");
    }
    fprintf(stderr, "%s takes ", cmd);
    cli_list_options(stderr, cmd);
    fprintf(stderr, "\n");
    return 2;
}

static int set_value(const char *cmd, const cli_opt *o, const char *val, args *a) {
    void *field = (char *)a + o->off;
    long long v;
    switch (o->kind) {
    case K_STR: *(const char **)field = val; return 0;
    case K_INT: return cli_int32(cmd, o->name, val, (int)o->lo, (int)o->hi, field);
    case K_I64: if (cli_int(cmd, o->name, val, (long long)o->lo, INT64_MAX, &v)) return 2; *(long long *)field = v; return 0;
    case K_U64: return cli_u64(cmd, o->name, val, field);
    case K_REAL: return cli_real(cmd, o->name, val, o->lo, o->hi, o->open & OPEN_LO, o->open & OPEN_HI, field);
    case K_LIST:
        if (a->n_images >= CLI_MAX_IMAGES) {
            fprintf(stderr, "kiln %s: at most %d files for %s\n", cmd, CLI_MAX_IMAGES, o->name);
            return 2;
        }
        a->images[a->n_images++] = val;
        return 0;
    default: return 2;
    }
}

/* Edit distance (insertions, deletions, substitutions, swaps of neighbours), capped at 3. */
static int distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 62 || m > 62) return 3;
    int d[64][64];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v) v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m] < 3 ? d[n][m] : 3;
}

/* "unknown option '--epoch' (did you mean --epochs?)": the nearest of this command's options
 * within 2 edits, or one that the word begins ("--val" -> --validation-split) */
static int unknown_option(const char *cmd, const char *name, unsigned bit) {
    const char *best = NULL;
    int bd = 3;
    for (size_t i = 0; i < N_OPTS; i++) {
        if (!(opts[i].cmds & bit)) continue;
        int d = distance(name, opts[i].name);
        if (d >= 3 && strlen(name) > 4 && !strncmp(opts[i].name, name, strlen(name))) d = 2;
        if (d < bd) { bd = d; best = opts[i].name; }
    }
    if (best) fprintf(stderr, "kiln %s: unknown option '%s' (did you mean %s? see kiln %s --help)\n", cmd, name, best, cmd);
    else fprintf(stderr, "kiln %s: unknown option '%s' (see kiln %s --help)\n", cmd, name, cmd);
    return 2;
}

/* A missing value: the end of the line, or the next word is an option ("--load --data x"). */
static bool is_option_word(const char *s) { return !strncmp(s, "--", 2) && s[2]; }

int cli_parse(int argc, char **argv, args *a, const char *cmd) {
    unsigned bit = cli_command_bit(cmd);
    for (int i = 2; i < argc; i++) {
        const char *opt = argv[i], *val = NULL, *eq = strchr(opt, '=');
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) { a->help = true; continue; }
        if (!is_option_word(opt)) { fprintf(stderr, "kiln %s: unexpected argument '%s' (see kiln %s --help)\n", cmd, opt, cmd); return 2; }
        char name[64];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - opt) : (int)strlen(opt), opt);
        const cli_opt *o = find(name);
        if (!o) return unknown_option(cmd, name, bit);
        if (!(o->cmds & bit)) return wrong_command(cmd, o);
        if (o->kind == K_FLAG) {
            if (eq) { fprintf(stderr, "kiln %s: %s takes no value (got '%s')\n", cmd, name, eq + 1); return 2; }
            *(bool *)((char *)a + o->off) = true;
            continue;
        }
        if (eq) val = eq + 1;
        else if (i + 1 < argc && !is_option_word(argv[i + 1])) val = argv[++i];
        else { fprintf(stderr, "kiln %s: option %s needs a value (see kiln %s --help)\n", cmd, name, cmd); return 2; }
        if (!strcmp(name, "--batch-size")) a->batch_given = true;
        if (!strcmp(name, "--batch-size") && !strcmp(val, "auto") && (bit & CMD_TRAIN)) { a->batch_auto = true; continue; }
        if (set_value(cmd, o, val, a)) return 2;
        /* --image a.png b.png: the words up to the next option are files too */
        while (o->kind == K_LIST && i + 1 < argc && strncmp(argv[i + 1], "--", 2))
            if (set_value(cmd, o, argv[++i], a)) return 2;
    }
    return 0;
}
