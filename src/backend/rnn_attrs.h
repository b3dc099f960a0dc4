/* The fused recurrent op's attributes (src/ops/rnn.c) as the kernels read them. attrs fields:
 * groups = the cell (RNN_CELL_SIMPLE, _LSTM, _GRU), kh = the activation, kw = the recurrent
 * activation (kiln_activation), keepdims = GRU reset_after, trans_a = go_backwards. */
#ifndef KILN_RNN_ATTRS_H
#define KILN_RNN_ATTRS_H
#include "ops/op.h"
#include "backend/rnn_core.h"

static inline rnn_dims kiln_rnn_dims(const kiln_node *n) {
    const kiln_shape *x = &n->in[0]->shape;
    int k = n->attrs.groups == RNN_CELL_LSTM ? 4 : n->attrs.groups == RNN_CELL_GRU ? 3 : 1;
    rnn_dims d = { x->dim[0], x->dim[1], x->dim[2] / k, k, n->attrs.groups, n->attrs.kh, n->attrs.kw, n->attrs.keepdims, n->attrs.trans_a };
    return d;
}
_Static_assert((int)RNN_CELL_SIMPLE == (int)KILN_RNN_SIMPLE && (int)RNN_CELL_LSTM == (int)KILN_RNN_LSTM && (int)RNN_CELL_GRU == (int)KILN_RNN_GRU, "cells as kiln_rnn_cell");
#endif
