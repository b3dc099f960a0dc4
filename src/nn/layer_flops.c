/* FLOPs of one example's forward pass per layer (the rules are in include/kiln/nn.h, at
 * kiln_layer_flops). A switch over every layer kind, without a default, so that a new kind in
 * layers.def is a compiler warning here until its cost is written down. */
#include "nn/nn_layers.h"

static int64_t act_flops(const kiln_layer *l) { return l->act == KILN_LINEAR ? 0 : kiln_shape_numel(l->out); }

int64_t kiln_layer_flops(const kiln_layer *l) {
    if (!l) return 0;
    int64_t out = kiln_shape_numel(l->out);
    kiln_shape in = l->n_in ? l->in[0]->out : l->out;
    switch (l->kind) {
    case NN_CONV2D:
    case NN_DWCONV2D: {
        int64_t macs = out * l->kh * l->kw * (in.dim[2] / l->groups);
        return 2 * macs + (l->use_bias ? out : 0) + act_flops(l);
    }
    case NN_DENSE: return 2 * in.dim[0] * l->units + (l->use_bias ? out : 0) + act_flops(l);
    case NN_BN: return 2 * out;
    case NN_ACTIVATION: return act_flops(l);
    case NN_MAXPOOL:
    case NN_AVGPOOL: return out * l->kh * l->kw;
    case NN_GAP: return kiln_shape_numel(in);
    case NN_ADD: return (int64_t)(l->n_in - 1) * out;
    case NN_INPUT:
    case NN_FLATTEN:
    case NN_RESHAPE:
    case NN_DROPOUT:
    case NN_CONCAT: return 0;
    case NN_IMPORTED: return 0;     /* an ONNX graph: its ops are not counted (summary shows 0) */
    case NN_KIND_COUNT: break;
    }
    return 0;
}

int64_t kiln_model_flops(const kiln_model *m) {
    int64_t n = 0;
    for (int i = 0; m && i < m->n_layers; i++) n += kiln_layer_flops(m->layers[i]);
    return n;
}
