/* Sizes from a model file are checked (issue 24.5): a Reshape target, an input shape, a kernel, an
 * output or a FLOP count whose product overflows int64 is an error naming the layer and the
 * values (it raised SIGFPE, or wrapped to negative parameter counts), from a Keras JSON and from a
 * checkpoint's kiln.architecture or kiln.input_shape; the model totals saturate, never wrap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/nn.h"
#include "kiln/io.h"

static char dir[256];

/* A Sequential model: the input shape (batch excluded, as JSON) and the layers after it. */
static const char *seq(const char *in_shape, const char *layers) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": ["
             "{\"class_name\": \"InputLayer\", \"config\": {\"name\": \"in\", \"shape\": %s}}, %s]}}", in_shape, layers);
    return buf;
}

/* Refused, with every string of parts (NULL-terminated) in the message. */
static void refused(const char *what, const char *json, const char *const *parts) {
    kiln_model *m = (kiln_model *)1;
    kiln_status st = kiln_model_from_json(json, &m);
    CHECK_MSG(st == KILN_INVALID_ARGUMENT && m == NULL, "%s: got %s", what, kiln_status_name(st));
    for (; *parts; parts++) CHECK_MSG(strstr(kiln_last_error(), *parts), "%s: '%s' not in: %s", what, *parts, kiln_last_error());
    if (m != (kiln_model *)1) kiln_model_free(m);
}

static void test_json(void) {
    /* the product of the known dims wrapped to 0: n % 0 raised SIGFPE */
    refused("reshape", seq("[4]", "{\"class_name\": \"Reshape\", \"config\": {\"name\": \"r\", \"target_shape\": [-1, 4294967296, 4294967296]}}"),
            (const char *[]){ "r (Reshape)", "4294967296 x 4294967296", "overflow", NULL });
    refused("reshape, no -1", seq("[4]", "{\"class_name\": \"Reshape\", \"config\": {\"name\": \"r\", \"target_shape\": [3037000500, 3037000500]}}"),
            (const char *[]){ "r (Reshape)", "3037000500 x 3037000500", NULL });
    refused("input", seq("[4294967296, 4294967296]", "{\"class_name\": \"Flatten\", \"config\": {\"name\": \"f\"}}"),
            (const char *[]){ "(InputLayer)", "4294967296 x 4294967296", NULL });
    refused("dense kernel", seq("[5000000000]", "{\"class_name\": \"Dense\", \"config\": {\"name\": \"dense_1\", \"units\": 2000000000}}"),
            (const char *[]){ "dense_1 (Dense)", "kernel parameters", "5000000000 x 2000000000", NULL });
    refused("dense FLOPs", seq("[3000000000]", "{\"class_name\": \"Dense\", \"config\": {\"name\": \"dense_1\", \"units\": 2147483647}}"),
            (const char *[]){ "dense_1 (Dense)", "FLOPs", "6000000000 x 2147483647", NULL });
    refused("conv output", seq("[100000, 100000, 3]", "{\"class_name\": \"Conv2D\", \"config\": {\"name\": \"conv\", \"filters\": 2147483647, "
                                                     "\"kernel_size\": 1}}"),
            (const char *[]){ "conv (Conv2D)", "output values", "10000000000 x 2147483647", NULL });
    refused("conv kernel", seq("[8, 8, 3]", "{\"class_name\": \"Conv2D\", \"config\": {\"name\": \"conv\", \"filters\": 2147483647, "
                                           "\"kernel_size\": [2147483647, 2147483647], \"padding\": \"same\"}}"),
            (const char *[]){ "conv (Conv2D)", "kernel parameters", NULL });
    refused("depthwise channels", seq("[2, 2, 300000]", "{\"class_name\": \"DepthwiseConv2D\", \"config\": {\"name\": \"dw\", \"kernel_size\": 1, "
                                                       "\"depth_multiplier\": 100000}}"),
            (const char *[]){ "dw (DepthwiseConv2D)", "30000000000 output channels", NULL });
    refused("pool FLOPs", seq("[2000000000, 2000000000, 2]", "{\"class_name\": \"MaxPooling2D\", \"config\": {\"name\": \"pool\", "
                                                            "\"pool_size\": [2147483647, 2147483647], \"strides\": 1, \"padding\": \"same\"}}"),
            (const char *[]){ "pool (MaxPooling2D)", "FLOPs", NULL });
    /* a concatenation whose axis sum overflows */
    refused("concatenate", "{\"class_name\": \"Functional\", \"config\": {\"name\": \"f\", \"layers\": ["
            "{\"class_name\": \"InputLayer\", \"config\": {\"name\": \"in\", \"shape\": [2147483648, 2147483648]}, \"inbound_nodes\": []},"
            "{\"class_name\": \"Flatten\", \"config\": {\"name\": \"fl\"}, \"inbound_nodes\": [[[\"in\", 0, 0, {}]]]},"
            "{\"class_name\": \"Concatenate\", \"config\": {\"name\": \"cat\"}, \"inbound_nodes\": [[[\"fl\", 0, 0, {}], [\"fl\", 0, 0, {}], [\"fl\", 0, 0, {}]]]}],"
            "\"input_layers\": [[\"in\", 0, 0]], \"output_layers\": [[\"cat\", 0, 0]]}}",
            (const char *[]){ "cat (Concatenate)", "4611686018427387904 + 4611686018427387904", NULL });
}

/* Three Dense layers of (2^31 - 1)^2 parameters each: every layer fits, the total does not. */
static void test_totals_saturate(void) {
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_json(seq("[2147483647]", "{\"class_name\": \"Dense\", \"config\": {\"name\": \"a\", \"units\": 2147483647, \"use_bias\": false}},"
                                                      "{\"class_name\": \"Dense\", \"config\": {\"name\": \"b\", \"units\": 2147483647, \"use_bias\": false}},"
                                                      "{\"class_name\": \"Dense\", \"config\": {\"name\": \"c\", \"units\": 2147483647, \"use_bias\": false}}"), &m));
    if (!m) return;
    CHECK_MSG(kiln_model_param_count(m, false) == INT64_MAX && kiln_model_param_count(m, true) == INT64_MAX, "params %lld",
              (long long)kiln_model_param_count(m, false));
    CHECK_MSG(kiln_model_flops(m) == INT64_MAX, "FLOPs %lld", (long long)kiln_model_flops(m));
    CHECK(kiln_layer_flops(kiln_model_layer(m, 1)) == 2 * 2147483647LL * 2147483647LL);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    kiln_model_summary(m, f);
    fclose(f);
    CHECK_MSG(buf && strstr(buf, "Total params: 9,223,372,036,854,775,807") && strstr(buf, "FLOPs per example: 9,223,372,036,854,775,807"), "%s", buf ? buf : "");
    free(buf);
    kiln_model_free(m);
}

/* The same through a checkpoint: its architecture, or the input shape of a built-in model. */
static void test_checkpoint(void) {
    char path[320];
    snprintf(path, sizeof path, "%s/crafted.safetensors", dir);
    const char *keys[] = { "kiln.architecture" };
    const char *vals[] = { seq("[4]", "{\"class_name\": \"Reshape\", \"config\": {\"name\": \"r\", \"target_shape\": [-1, 4294967296, 4294967296]}}") };
    CHECK_OK(kiln_safetensors_save(path, NULL, 0, keys, vals, 1));
    kiln_model *m = (kiln_model *)1;
    CHECK(kiln_model_from_checkpoint(path, &m) == KILN_INVALID_ARGUMENT && m == NULL);
    CHECK_MSG(strstr(kiln_last_error(), "kiln.architecture") && strstr(kiln_last_error(), "r (Reshape)") && strstr(kiln_last_error(), "4294967296 x 4294967296"),
              "%s", kiln_last_error());
    const char *k2[] = { "kiln.model", "kiln.input_shape" }, *v2[] = { "mlp", "4294967296,4294967296,1" };
    CHECK_OK(kiln_safetensors_save(path, NULL, 0, k2, v2, 2));
    m = (kiln_model *)1;
    CHECK(kiln_model_from_checkpoint(path, &m) == KILN_INVALID_ARGUMENT && m == NULL);
    CHECK_MSG(strstr(kiln_last_error(), "kiln.input_shape") && strstr(kiln_last_error(), "4294967296 x 4294967296"), "%s", kiln_last_error());
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/kiln_sizes_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    kiln_set_num_threads(1);
    test_json();
    test_totals_saturate();
    test_checkpoint();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_model_sizes");
}
