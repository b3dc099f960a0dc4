/* cpu backend dispatch: which nodes have a fast f32 cpu kernel. Others (other dtypes, unusual
 * broadcast patterns, ops without a kernel here) return NULL and run on ref. */
#include "backend/cpu/cpu_internal.h"

kiln_kernel_fn cpu_data_kernel(const kiln_node *n);   /* cpu_data.c */
kiln_kernel_fn cpu_transformer_kernel(const kiln_node *n);   /* cpu_transformer.c */
size_t cpu_transformer_workspace(const kiln_node *n);

kiln_kernel_fn kiln_cpu_kernel(const kiln_node *n) {
    if (n && n->op == KILN_OP_CAST) return cpu_cast_kernel(n);
    if (n && (n->op == KILN_OP_TRANSPOSE || n->op == KILN_OP_SLICE || n->op == KILN_OP_PAD ||
              n->op == KILN_OP_CONCAT))
        return cpu_shape_kernel(n);   /* byte copies: every dtype */
    if (n && n->dtype == KILN_BF16) return cpu_bf16_act_kernel(n);
    if (!n || n->dtype != KILN_F32) return NULL;
    switch (n->op) {
    case KILN_OP_MATMUL: case KILN_OP_BATCH_MATMUL: {
        kiln_kernel_fn f = cpu_bf16_matmul_kernel(n);
        if (!f) f = cpu_dnnl_matmul_kernel(n);
        return f ? f : cpu_matmul_kernel(n);
    }
    case KILN_OP_CONV2D: case KILN_OP_CONV2D_BWD_INPUT: case KILN_OP_CONV2D_BWD_FILTER: {
        kiln_kernel_fn f = cpu_winograd_kernel(n);
        if (!f) f = cpu_dnnl_conv_kernel(n);
        return f ? f : cpu_conv_kernel(n);
    }
    case KILN_OP_MAX_POOL: case KILN_OP_MAX_POOL_GRAD: case KILN_OP_AVG_POOL:
    case KILN_OP_AVG_POOL_GRAD: case KILN_OP_GLOBAL_AVG_POOL:
        return cpu_pool_kernel(n);
    case KILN_OP_RANDOM_CROP_FLIP:
        return cpu_data_kernel(n);
    case KILN_OP_ALL_FINITE:
        return cpu_all_finite_kernel(n);
    case KILN_OP_BATCH_NORM: case KILN_OP_BATCH_NORM_GRAD: case KILN_OP_BN_GRAD_GAMMA:
        return cpu_norm_kernel(n);
    case KILN_OP_EMBEDDING: case KILN_OP_EMBEDDING_GRAD: case KILN_OP_LAYER_NORM: case KILN_OP_LAYER_NORM_GRAD:
    case KILN_OP_LAYER_NORM_GAMMA_GRAD: case KILN_OP_ATTENTION: case KILN_OP_ATTENTION_GRAD:
        return cpu_transformer_kernel(n);
    case KILN_OP_RNN: case KILN_OP_RNN_GRAD:
        return cpu_rnn_kernel(n);
    default: break;
    }
    kiln_kernel_fn f = cpu_elementwise_kernel(n);
    return f ? f : cpu_loss_optim_kernel(n);
}

size_t kiln_cpu_workspace(const kiln_node *n) {
    if (!n || !kiln_cpu_kernel(n)) return 0;
    if (n->dtype == KILN_BF16 && n->op == KILN_OP_MAX_POOL_GRAD) return cpu_bf16_act_workspace(n);
    switch (n->op) {
    case KILN_OP_CONV2D: case KILN_OP_CONV2D_BWD_INPUT: case KILN_OP_CONV2D_BWD_FILTER:
        if (cpu_winograd_kernel(n)) return cpu_winograd_workspace(n);
        return cpu_dnnl_conv_kernel(n) ? cpu_dnnl_conv_workspace(n) : cpu_conv_workspace(n);
    case KILN_OP_BATCH_NORM: case KILN_OP_BATCH_NORM_GRAD: case KILN_OP_BN_GRAD_GAMMA:
        return cpu_norm_workspace(n);
    case KILN_OP_LAYER_NORM_GAMMA_GRAD:
        return cpu_transformer_workspace(n);
    case KILN_OP_MATMUL:
        return cpu_bf16_matmul_workspace(n);
    case KILN_OP_RNN: case KILN_OP_RNN_GRAD:
        return cpu_rnn_workspace(n);
    default:
        return cpu_loss_optim_workspace(n);
    }
}

/* Conv2D and 2-D MatMul apply a bias + relu epilogue while their output is still in cache. */
bool kiln_cpu_fuses(const kiln_node *n) {
    if (n && n->dtype == KILN_BF16) return n->op == KILN_OP_CONV2D && kiln_cpu_kernel(n) != NULL;   /* oneDNN's bias + relu */
    if (!n || n->dtype != KILN_F32) return false;
    if (n->op == KILN_OP_CONV2D) return kiln_cpu_kernel(n) != NULL;
    if (n->op == KILN_OP_MATMUL) return kiln_cpu_kernel(n) != NULL;   /* f32 sgemm, or bf16/f16 mixed (cpu_bf16.c) */
    return false;
}
