/* User-error paths across the op families and the session: each gives a status (never a crash)
 * and a message that names the node or call and what is wrong. */
#include <string.h>
#include "check.h"
#include "core/core.h"

static kiln_graph *g;

/* Expects the last build to have failed with `st` and a message holding every word given. */
static void expect(kiln_node *n, kiln_status st, const char *what, const char *w1, const char *w2) {
    const char *e = kiln_graph_error(g);
    CHECK_MSG(n == NULL && kiln_graph_status(g) == st && strstr(e, w1) && (!w2 || strstr(e, w2)),
              "%s: status %s, message '%s' (wanted %s with '%s'%s%s)", what, kiln_status_name(kiln_graph_status(g)), e,
              kiln_status_name(st), w1, w2 ? ", " : "", w2 ? w2 : "");
    kiln_graph_clear_error(g);
}

int main(void) {
    /* a message that wraps the previous one (kiln_last_error() passed as an argument) keeps it whole */
    kiln_set_error(KILN_IO_ERROR, "cannot allocate %d bytes", 64);
    kiln_set_error(KILN_OUT_OF_MEMORY, "variable w does not fit: %s", kiln_last_error());
    CHECK_MSG(!strcmp(kiln_last_error(), "variable w does not fit: cannot allocate 64 bytes"), "wrapped message: '%s'", kiln_last_error());
    /* issue 16.3: numel of a shape with a zero dimension and huge others is 0 (was signed-overflow
     * UB, caught by UBSan); an overflowing product saturates, so no tensor of it is allocated
     * (it wrapped to 0 bytes and "succeeded") */
    const int64_t big = (int64_t)1 << 62;
    CHECK(kiln_shape_numel(KILN_SHAPE(big, big, 0)) == 0);
    CHECK(kiln_shape_numel(KILN_SHAPE(big, 4)) == INT64_MAX);
    CHECK(kiln_shape_numel(KILN_SHAPE(3, 0, big)) == 0);
    kiln_tensor *huge = kiln_tensor_new(KILN_F32, KILN_SHAPE(big, 4));
    CHECK_MSG(huge == NULL && strstr(kiln_last_error(), "too many elements"), "tensor of 2^64 elements: %p, '%s'", (void *)huge, kiln_last_error());
    kiln_tensor_free(huge);
    g = kiln_graph_new();
    kiln_node *a = kiln_placeholder(g, "a", KILN_F32, KILN_SHAPE(4, 3));
    kiln_node *d = kiln_placeholder(g, "d", KILN_F64, KILN_SHAPE(4, 3));
    kiln_node *i = kiln_placeholder(g, "i", KILN_I32, KILN_SHAPE(4));
    kiln_node *img = kiln_placeholder(g, "img", KILN_F32, KILN_SHAPE(2, 5, 5, 3));
    kiln_node *k48 = kiln_variable(g, "k48", KILN_F32, KILN_SHAPE(3, 3, 4, 8), kiln_init_zeros());
    kiln_node *v3 = kiln_variable(g, "v3", KILN_F32, KILN_SHAPE(3), kiln_init_zeros());

    expect(kiln_add(g, a, d), KILN_DTYPE_MISMATCH, "add f32 + f64", "Add", "f64");
    expect(kiln_exp(g, i), KILN_DTYPE_MISMATCH, "exp of i32", "Exp", "i32");
    expect(kiln_matmul(g, img, a, false, false), KILN_SHAPE_MISMATCH, "matmul of a rank-4 tensor", "MatMul", NULL);
    expect(kiln_conv2d(g, img, k48, &(kiln_conv_params){ .padding = KILN_SAME }), KILN_SHAPE_MISMATCH, "conv channels", "Conv2D", "[3, 3, 4, 8]");
    expect(kiln_conv2d(g, img, kiln_variable(g, "k2", KILN_F32, KILN_SHAPE(3, 3, 1, 4), kiln_init_zeros()),
                       &(kiln_conv_params){ .groups = 2 }), KILN_SHAPE_MISMATCH, "conv groups not dividing channels", "Conv2D", NULL);
    expect(kiln_max_pool2d(g, img, &(kiln_pool_params){ .size_h = 7, .size_w = 7 }), KILN_SHAPE_MISMATCH, "pool window larger than the input", "MaxPool", NULL);
    expect(kiln_reduce_sum(g, a, (int[]){ 5 }, 1, false), KILN_INVALID_ARGUMENT, "reduce over a missing axis", "Sum", "5");
    expect(kiln_transpose(g, a, (int[]){ 0, 0 }), KILN_INVALID_ARGUMENT, "transpose with a repeated axis", "Transpose", NULL);
    expect(kiln_concat(g, (kiln_node *[]){ a, img }, 2, 0), KILN_SHAPE_MISMATCH, "concat of different ranks", "Concat", NULL);
    expect(kiln_slice(g, a, (int64_t[]){ 3, 0 }, (int64_t[]){ 2, 3 }), KILN_SHAPE_MISMATCH, "slice past the end", "Slice", NULL);
    expect(kiln_pad(g, a, (int64_t[]){ -1, 0, 0, 0 }, 0), KILN_INVALID_ARGUMENT, "negative padding", "Pad", NULL);
    expect(kiln_bias_add(g, a, kiln_variable(g, "b5", KILN_F32, KILN_SHAPE(5), kiln_init_zeros())), KILN_SHAPE_MISMATCH, "bias of the wrong length", "BiasAdd", "[5]");
    expect(kiln_batch_norm(g, img, v3, v3, kiln_placeholder(g, "mm", KILN_F32, KILN_SHAPE(3)), v3, 0.99, 1e-3, true),
           KILN_INVALID_ARGUMENT, "batch norm training with moving stats that are not variables", "FusedBatchNorm", "variable");
    expect(kiln_batch_norm(g, img, kiln_variable(g, "g4", KILN_F32, KILN_SHAPE(4), kiln_init_ones()), v3, v3, v3, 0.99, 1e-3, false),
           KILN_SHAPE_MISMATCH, "batch norm gamma of the wrong size", "FusedBatchNorm", "[4]");
    expect(kiln_dropout(g, a, 1.0, 1, true), KILN_INVALID_ARGUMENT, "dropout rate 1", "dropout", "[0, 1)");
    expect(kiln_sparse_softmax_cross_entropy(g, a, kiln_placeholder(g, "y5", KILN_I32, KILN_SHAPE(5))), KILN_SHAPE_MISMATCH,
           "labels of the wrong length", "SparseSoftmaxCrossEntropy", "[5]");
    expect(kiln_sparse_softmax_cross_entropy(g, a, kiln_placeholder(g, "yf", KILN_F32, KILN_SHAPE(4))), KILN_DTYPE_MISMATCH,
           "float labels", "SparseSoftmaxCrossEntropy", NULL);
    kiln_node *w = kiln_variable(g, "w", KILN_F32, KILN_SHAPE(4, 3), kiln_init_zeros());
    expect(kiln_apply_sgd(g, &a, &a, 1, &(kiln_sgd_opts){ .lr = 0.1 }), KILN_INVALID_ARGUMENT, "updating a placeholder", "a", "variable");
    expect(kiln_apply_adam(g, &w, &v3, 1, &(kiln_adam_opts){ .lr = 0.1 }), KILN_SHAPE_MISMATCH, "gradient of the wrong shape", "w", NULL);
    kiln_node *dw;
    CHECK(kiln_gradients(g, a, &w, 1, &dw) != KILN_OK);
    CHECK_MSG(strstr(kiln_graph_error(g), "scalar") != NULL, "%s", kiln_graph_error(g));
    kiln_graph_clear_error(g);
    expect(kiln_gather_rows(g, a, kiln_placeholder(g, "fi", KILN_F32, KILN_SHAPE(2))), KILN_DTYPE_MISMATCH, "float indices", "GatherRows", NULL);
    expect(kiln_random_crop_flip(g, a, kiln_placeholder(g, "ck", KILN_I64, KILN_SHAPE(4)), 1, true, true),
           KILN_SHAPE_MISMATCH, "crop of a rank-2 tensor", "RandomCropFlip", NULL);
    CHECK(kiln_graph_push_device(g, "tpu:0") == KILN_INVALID_ARGUMENT);
    kiln_graph_clear_error(g);

    /* tensors and initializers */
    CHECK(kiln_tensor_new(KILN_F32, (kiln_shape){ 2, { 3, -1 } }) == NULL && strstr(kiln_last_error(), "negative"));
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(2));
    CHECK(kiln_init_fill((kiln_init){ .kind = KILN_INIT_COUNT }, t) == KILN_INVALID_ARGUMENT);

    /* sessions: a node of another graph, feeding a non-placeholder, a wrong output tensor */
    kiln_graph *other = kiln_graph_new();
    kiln_node *o = kiln_placeholder(other, "o", KILN_F32, KILN_SHAPE(2));
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU });
    kiln_tensor *out = NULL;
    CHECK(kiln_session_run(s, NULL, 0, &o, &out, 1, NULL, 0) == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "another graph"));
    kiln_node *sq = kiln_square(g, v3);
    CHECK(kiln_session_run(s, (kiln_feed[]){ { v3, t } }, 1, &sq, &out, 1, NULL, 0) == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "only placeholders"));
    kiln_tensor *wrong = kiln_tensor_new(KILN_F32, KILN_SHAPE(7));
    CHECK(kiln_session_run(s, NULL, 0, &sq, &wrong, 1, NULL, 0) == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "[7]"));
    CHECK(kiln_session_assign_variable(s, v3, wrong) == KILN_SHAPE_MISMATCH && strstr(kiln_last_error(), "v3"));
    CHECK(kiln_session_new(NULL, NULL) == NULL);
    kiln_tensor_free(wrong);
    kiln_tensor_free(out);
    kiln_tensor_free(t);
    kiln_session_free(s);
    kiln_graph_free(other);
    kiln_graph_free(g);
    return check_summary("test_errors");
}
