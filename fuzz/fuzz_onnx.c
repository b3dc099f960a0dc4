/* libFuzzer target: the ONNX reader and importer (src/onnx): protobuf parsing, graph inputs and
 * initializers, every op handler, build-time folding, layouts; kiln_graph_from_onnx and
 * kiln_model_from_onnx (its probes import the graph at batch 1 and 2) with options picked from a
 * hash of the input. The importer reads a path, so each input goes to /dev/shm/kiln_fuzz_onnx_<pid>
 * and is removed again. A structure-aware mutator (fuzz/onnx_mutator.c) decodes the protobuf,
 * changes dims, attributes, op types, names, initializers and the node list, and re-encodes: byte
 * mutation alone rarely yields a file that parses. Build and run: bash fuzz/run.sh [seconds]. */
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "kiln/graph.h"
#include "kiln/nn.h"
#include "kiln/onnx.h"

static char path[64];

static void remove_input(void) { if (path[0]) unlink(path); }

static int write_input(const uint8_t *data, size_t size) {
    if (!path[0]) {
        snprintf(path, sizeof path, "/dev/shm/kiln_fuzz_onnx_%d", (int)getpid());
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (write_input(data, size)) { perror("fuzz_onnx: /dev/shm"); abort(); }
    uint32_t h = 2166136261u;                       /* FNV-1a: the options, fixed per input */
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;

    kiln_graph *g = kiln_graph_new();
    kiln_onnx_import_opts o = { .batch = 1 + (h & 3), .constants = h >> 2 & 1, .training = h >> 3 & 1, .seed = h };
    kiln_onnx_graph *r = NULL;
    if (g && kiln_graph_from_onnx(g, path, &o, &r) == KILN_OK) {
        if (!r) __builtin_trap();
        for (int i = 0; i < kiln_onnx_graph_output_count(r); i++) {
            const kiln_node *y = kiln_onnx_graph_output(r, i);
            if (!y || !kiln_onnx_graph_output_name(r, i)) __builtin_trap();
            kiln_shape s = kiln_node_shape(y);
            if (s.rank < 0 || s.rank > KILN_MAX_DIMS) __builtin_trap();
        }
        for (int i = 0; i < kiln_onnx_graph_input_count(r); i++)
            if (!kiln_onnx_graph_input(r, i) || !kiln_onnx_graph_input_name(r, i)) __builtin_trap();
    } else if (r) {
        __builtin_trap();                           /* nothing usable is left on an error */
    }
    kiln_onnx_graph_free(r);
    kiln_graph_free(g);

    kiln_onnx_model_opts mo = { .nhwc_input = h >> 4 & 1, .strip_softmax = h >> 5 & 1 };
    kiln_model *m = NULL;
    if (kiln_model_from_onnx(path, &mo, &m) == KILN_OK) {
        if (!m || kiln_model_layer_count(m) < 2) __builtin_trap();
        kiln_shape s = kiln_model_output_shape(m);
        if (s.rank < 0 || s.rank > KILN_MAX_DIMS) __builtin_trap();
        (void)kiln_model_param_count(m, false);
        (void)kiln_model_flops(m);
    } else if (m) {
        __builtin_trap();
    }
    kiln_model_free(m);
    unlink(path);
    return 0;
}
