/* ImportedGraph: a layer whose ops come from a translator at the edge (ONNX import, src/onnx)
 * rather than from options: the translator attaches its own description of a graph (ext) and
 * builds the ops from it in each forward; the graph's weights are the layer's variables, so the
 * model trains, saves and loads like any other. Its architecture is not stored in a checkpoint
 * (only its name): such a model is rebuilt from its source file, then loads the checkpoint. */
#include <stdio.h>
#include "nn/nn_layers.h"

static const nn_opt_spec imported_opts[] = { { NULL } };

static kiln_status imported_shape(kiln_layer *l, const nn_layer_cfg *c) {
    if (!l->ext)
        return nn_layer_fail(l, KILN_UNSUPPORTED, "this layer's ops come from an imported file (ONNX), which a model "
                             "description does not hold: rebuild the model from that file (kiln_model_from_onnx, or kiln "
                             "--model-file FILE.onnx) and load the checkpoint's weights into it");
    l->out = c->shape;
    return KILN_OK;
}

static kiln_node *imported_forward(const nn_fwd *f, kiln_layer *l, kiln_node *x) {
    return l->ext->forward(l->ext_data, f, l, x);
}

const nn_layer_def nn_def_imported_graph = { "ImportedGraph", "imported_graph", imported_opts, 1, 1, imported_shape, NULL, imported_forward };

kiln_layer *nn_layer_add_imported(kiln_model *m, const char *name, kiln_layer *in, const nn_layer_ext *ext, void *ext_data,
                                  kiln_shape out) {
    kiln_layer *l = nn_layer_begin(m, NN_IMPORTED, name, &in, 1);
    if (!l) {
        if (ext && ext->free) ext->free(ext_data);
        return NULL;
    }
    l->ext = ext;
    l->ext_data = ext_data;
    nn_layer_cfg c = nn_layer_defaults(NN_IMPORTED);
    c.name = name;
    c.shape = out;
    return nn_layer_finish(l, &c);
}
