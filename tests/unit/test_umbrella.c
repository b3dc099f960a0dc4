/* <kiln/kiln.h> alone gives every public header: one declaration from each is used here, so a
 * header missing from the umbrella is a compile error. */
#include <stdio.h>
#include <string.h>
#include "kiln/kiln.h"

int main(void) {
    int fails = 0;
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(2, 3));                 /* tensor.h */
    if (!t || kiln_tensor_nbytes(t) != 24) { printf("FAIL: tensor\n"); fails++; }
    kiln_tensor_free(t);
    int n = 0;
    if (kiln_device_list(NULL, 0, &n) != KILN_OK || n < 1) { printf("FAIL: devices\n"); fails++; }   /* device.h */
    kiln_graph *g = kiln_graph_new();                                             /* graph.h */
    if (!g || kiln_graph_status(g) != KILN_OK) { printf("FAIL: graph\n"); fails++; }
    kiln_graph_free(g);
    kiln_dataset *d = kiln_dataset_synthetic(KILN_SHAPE(4), 2, 8, 1);             /* data.h */
    kiln_data *p = kiln_data_batch(kiln_data_from_dataset(d, false), 4, true);    /* pipeline.h */
    if (!p || kiln_data_batch_size(p) != 4) { printf("FAIL: pipeline: %s\n", kiln_last_error()); fails++; }
    kiln_data_free(p);
    kiln_dataset_free(d);
    kiln_model *m = kiln_sequential("m", KILN_SHAPE(4));                          /* nn.h */
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 2 });
    if (kiln_model_status(m) != KILN_OK) { printf("FAIL: model: %s\n", kiln_model_error(m)); fails++; }
    kiln_model_free(m);
    kiln_safetensors *f = NULL;                                                   /* io.h */
    if (kiln_safetensors_load("/nonexistent/kiln.safetensors", &f) == KILN_OK) { printf("FAIL: io\n"); fails++; }
    kiln_model *om = NULL;                                                        /* onnx.h */
    if (kiln_model_from_onnx("/nonexistent/kiln.onnx", NULL, &om) == KILN_OK || om) { printf("FAIL: onnx\n"); fails++; }
    kiln_tokenizer *tk = NULL;                                                    /* text.h */
    if (kiln_tokenizer_load("/nonexistent/tokenizer.json", &tk) == KILN_OK || tk) { printf("FAIL: text\n"); fails++; }
    if (strcmp(KILN_VERSION_STRING, "") == 0) fails++;                            /* status.h via kiln_last_error above */
    printf("test_umbrella: %s\n", fails ? "FAILED" : "ok");
    return fails != 0;
}
