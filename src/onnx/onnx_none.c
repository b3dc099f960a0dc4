/* A build without ONNX support (protobuf-c or libonnx-dev's onnx.proto missing at build time):
 * the ONNX API says what to install. */
#include "kiln/onnx.h"
#include "core/core.h"

#define NO_ONNX(fn) kiln_set_error(KILN_UNSUPPORTED, "%s: this Kiln was built without ONNX support; install protobuf-c and " \
    "ONNX's headers (apt-get install libprotobuf-c-dev protobuf-c-compiler libonnx-dev) and rebuild", fn)

bool kiln_onnx_available(void) { return false; }
kiln_status kiln_model_export_onnx(kiln_model *m, const char *path, const kiln_onnx_export_opts *o) { return NO_ONNX("kiln_model_export_onnx"); }
kiln_status kiln_graph_from_onnx(kiln_graph *g, const char *path, const kiln_onnx_import_opts *o, kiln_onnx_graph **out) {
    if (out) *out = NULL;
    return NO_ONNX("kiln_graph_from_onnx");
}
kiln_status kiln_model_from_onnx(const char *path, const kiln_onnx_model_opts *o, kiln_model **out) {
    if (out) *out = NULL;
    return NO_ONNX("kiln_model_from_onnx");
}
int kiln_onnx_graph_input_count(const kiln_onnx_graph *r) { return 0; }
kiln_node *kiln_onnx_graph_input(const kiln_onnx_graph *r, int i) { return NULL; }
const char *kiln_onnx_graph_input_name(const kiln_onnx_graph *r, int i) { return NULL; }
int kiln_onnx_graph_output_count(const kiln_onnx_graph *r) { return 0; }
kiln_node *kiln_onnx_graph_output(const kiln_onnx_graph *r, int i) { return NULL; }
const char *kiln_onnx_graph_output_name(const kiln_onnx_graph *r, int i) { return NULL; }
kiln_status kiln_onnx_graph_init_session(const kiln_onnx_graph *r, kiln_session *s) { return NO_ONNX("kiln_onnx_graph_init_session"); }
void kiln_onnx_graph_free(kiln_onnx_graph *r) { (void)r; }
