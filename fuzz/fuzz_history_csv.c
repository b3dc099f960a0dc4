/* libFuzzer target: the training-history CSV readers: the shared parser from memory
 * (kiln_history_csv_parse, src/io/history_csv.c, where the tree has it), kiln plot's reader
 * (tools/plot/history_csv.c: header or not, fields, numbers, NaN cells) and the one
 * `kiln train --history` resume runs (src/nn/callbacks.c: the rows of epochs after initial_epoch
 * dropped, then appended to), on the same bytes, then kiln plot's reader again on what resume
 * left. Those two take a path: each input goes to /dev/shm/kiln_fuzz_hist_<pid>.csv and is
 * removed again. Build and run: bash fuzz/run.sh [seconds]. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kiln/nn.h"
#include "nn/nn_fit.h"
#include "tools/plot/history.h"
#if __has_include("io/history_csv.h")
#include "io/history_csv.h"
#define HAVE_HISTORY_PARSE 1
#endif

static char path[64];

static void remove_input(void) { if (path[0]) unlink(path); }

static int write_input(const uint8_t *data, size_t size) {
    if (!path[0]) {
        snprintf(path, sizeof path, "/dev/shm/kiln_fuzz_hist_%d.csv", (int)getpid());
        atexit(remove_input);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) { close(fd); return -1; }
        off += (size_t)w;
    }
    return close(fd);
}

static void plot_read(void) {
    history h;
    char err[512] = "";
    if (history_read(path, &h, err, sizeof err)) {
        if (!err[0]) __builtin_trap();                 /* an error says what */
        return;
    }
    if (h.n_cols < 0 || h.n_rows < 0 || (h.n_cols && !h.names) || (h.n_rows && !h.values)) __builtin_trap();
    for (int c = 0; c < h.n_cols; c++)
        if (!h.names[c] || history_column(&h, h.names[c]) < 0) __builtin_trap();
    volatile double sum = 0;                         /* every cell: ASan checks the size */
    for (int64_t i = 0; i < (int64_t)h.n_rows * h.n_cols; i++)
        if (!isnan(h.values[i])) sum += h.values[i];
    (void)history_column(&h, "epoch");
    history_free(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
#ifdef HAVE_HISTORY_PARSE
    kiln_history_csv t;
    if (kiln_history_csv_parse("fuzz.csv", (const char *)data, size, &t) == KILN_OK) {
        if (t.n_cols < 0 || t.n_rows < 0 || (t.n_cols && !t.names) || (t.n_rows && (!t.values || !t.row_start))) __builtin_trap();
        volatile double sum = 0;
        for (int64_t i = 0; i < (int64_t)t.n_rows * t.n_cols; i++)
            if (!isnan(t.values[i])) sum += t.values[i];
        for (int r = 0; r < t.n_rows; r++)
            if (t.row_start[r] >= size) __builtin_trap();      /* each row starts inside the text */
        for (int c = 0; c < t.n_cols; c++)
            if (!t.names[c] || kiln_history_csv_column(&t, t.names[c]) < 0) __builtin_trap();
        kiln_history_csv_free(&t);
    }
#endif
    if (write_input(data, size)) { perror("fuzz_history_csv: /dev/shm"); abort(); }
    plot_read();
    kiln_model *m = kiln_model_new("fuzz");
    if (m) {
        kiln_callback cb = kiln_callback_csv_logger(path);
        kiln_fit_opts o = { .initial_epoch = 1 + (size ? data[0] % 8 : 0), .callbacks = &cb, .n_callbacks = 1 };
        nn_cb_state st[1];
        memset(st, 0, sizeof st);
        (void)nn_callbacks_begin(m, &o, st);
        nn_callbacks_end(&o, st);
        kiln_model_free(m);
        plot_read();
    }
    unlink(path);
    return 0;
}
