/* Internal op machinery: nodes, attributes, the op table and the kernel interface.
 * Every op family file (src/ops/<family>.c) defines `const kiln_op_def kiln_opdef_<op>` for the
 * ops it owns (shape inference + gradient); ref kernels live in src/backend/ref/, declared in
 * ops/ref_kernels.h. */
#ifndef KILN_OP_H
#define KILN_OP_H
#include <math.h>
#include "kiln/graph.h"
#include "core/core.h"

typedef enum kiln_op {
#define KILN_OP(e, name, def) KILN_OP_##e,
#include "ops.def"
#undef KILN_OP
    KILN_OP_COUNT
} kiln_op;

#define KILN_MAX_INPUTS 8

/* Attributes: one flat struct; each op documents which fields it reads. Zero-initialised. */
typedef struct kiln_attrs {
    int axis;                              /* softmax, concat, argmax */
    int axes[KILN_MAX_DIMS]; int n_axes;   /* reductions (normalised, sorted) */
    bool keepdims;
    bool trans_a, trans_b;                 /* matmul */
    int perm[KILN_MAX_DIMS];               /* transpose */
    int64_t begin[KILN_MAX_DIMS];          /* slice; pad: pads before */
    int64_t end[KILN_MAX_DIMS];            /* pad: pads after */
    kiln_shape shape;                      /* reshape / sum_to / broadcast_to / conv & pool grad: the input shape */
    /* conv & pool: window, stride, dilation, resolved padding (top, bottom, left, right) */
    int kh, kw, sh, sw, dh, dw, pt, pb, pl, pr, groups;
    kiln_padding padding;
    double alpha;                          /* leaky_relu/elu alpha; pow exponent; pad value; scalar const */
    double momentum, epsilon;              /* batch_norm; optimizers */
    double lr, beta1, beta2, rho, weight_decay, clip;   /* optimizers, clip */
    bool nesterov;
    bool training;                         /* batch_norm, dropout */
    double rate;                           /* dropout */
    uint64_t seed;                         /* dropout (already mixed with the node id) */
    kiln_dtype to;                         /* cast */
    int n_vars;                            /* optimizers: number of (var, grad) groups */
    bool causal;                           /* attention: query i sees keys j <= i + Tk - Tq (alpha: the scale) */
    bool acc_f32;                          /* matmul, conv2d and its backprops: f16/bf16 inputs,
                                              f32 accumulation and f32 output (mixed precision) */
} kiln_attrs;

struct kiln_node {
    int id;                 /* index in the graph, topological (inputs have smaller ids) */
    kiln_op op;
    char *name;
    kiln_dtype dtype;
    kiln_shape shape;
    int n_in;
    kiln_node **in;         /* n_in inputs (arena/heap owned by graph) */
    kiln_attrs attrs;
    char device[32];        /* requested device ("" = automatic) */
    /* sources */
    kiln_init init;         /* variables */
    bool trainable;         /* variables */
    kiln_tensor *value;     /* constants (owned) */
    kiln_graph *graph;
    const kiln_node *grad_of;   /* autodiff: the forward node whose gradient this node helps compute (NULL: none) */
};

/* Kernel interface: one function per (op, backend). Tensors are views on planned buffers. */
typedef struct kiln_view {
    void *data;
    kiln_dtype dtype;
    kiln_shape shape;
    int64_t numel;
} kiln_view;

typedef struct kiln_kctx {
    const kiln_node *node;
    int n_in;
    const kiln_view *in;             /* n_in inputs; variables an op mutates are written through these */
    kiln_view out;
    void *workspace;                 /* ws_bytes of scratch, planned (no allocation in the step) */
    size_t ws_bytes;
    uint64_t step;                   /* session step (dropout) */
    int num_threads;
    /* Fused epilogue (only for kernels whose backend says it fuses, see kiln_backend.fuses):
     * out = act(out + epi_bias) with epi_bias [C] on the last dim (NULL: none), epi_relu. */
    const kiln_view *epi_bias;
    bool epi_relu;
} kiln_kctx;

typedef kiln_status (*kiln_kernel_fn)(const kiln_kctx *ctx);

enum {
    KILN_OPF_NO_GRAD   = 1u << 0,   /* not differentiable (or a gradient op itself): by design */
    KILN_OPF_MUTATES   = 1u << 1,   /* writes to variable inputs (optimizers, batch_norm training) */
    KILN_OPF_SOURCE    = 1u << 2,   /* placeholder / variable / constant */
    KILN_OPF_INPLACE0  = 1u << 3,   /* output may share input 0's buffer (same size, elementwise) */
    KILN_OPF_ALIAS0    = 1u << 4,   /* output IS input 0's data (reshape / identity): no kernel copy */
    KILN_OPF_UPDATE    = 1u << 5,   /* an optimizer update: input 0 the variable, input 1 its gradient
                                       (the planner lays such gradients out in one block) */
};

typedef struct kiln_op_def {
    const char *name;
    int min_in, max_in;
    unsigned flags;
    /* Fills n->dtype and n->shape from inputs and attrs; on a user error returns a status after
     * kiln_node_error(...). */
    kiln_status (*infer)(kiln_node *n);
    /* Emits ops computing dx[i] = dL/d(input i) given dy = dL/d(output); leaves dx[i] NULL for
     * inputs with no gradient (labels, integer inputs). NULL for NO_GRAD ops. */
    kiln_status (*grad)(kiln_graph *g, kiln_node *n, kiln_node *dy, kiln_node **dx);
    kiln_kernel_fn ref;                        /* the oracle kernel: required */
    size_t (*ref_workspace)(const kiln_node *n);   /* NULL: none */
} kiln_op_def;

/* Table lookup. */
const kiln_op_def *kiln_op_get(kiln_op op);
#define KILN_OP(e, name, def) extern const kiln_op_def def;
#include "ops.def"
#undef KILN_OP

/* ---- helpers for op families (src/graph/graph.c) ---- */
/* Creates a node of op `op` with inputs and attrs, runs shape inference; NULL on error (sticky
 * error set on g). Any NULL input -> NULL. Name: scope + op name, uniquified. */
kiln_node *kiln_node_new(kiln_graph *g, kiln_op op, kiln_node *const *in, int n_in,
                         const kiln_attrs *attrs);
/* Records a build error on the node's graph: "<node name> (<Op>): <message>". Returns status. */
kiln_status kiln_node_error(kiln_node *n, kiln_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records an error on the graph without a node. */
kiln_status kiln_graph_fail(kiln_graph *g, kiln_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Broadcast shape of a and b (numpy rules); error naming n if incompatible. */
kiln_status kiln_broadcast_shapes(kiln_node *n, kiln_shape a, kiln_shape b, kiln_shape *out);
/* Gradient helper: reduce `grad` (broadcast result) back to `shape` (sum over broadcast dims). */
kiln_node *kiln_sum_to(kiln_graph *g, kiln_node *grad, kiln_shape shape);
kiln_node *kiln_broadcast_to(kiln_graph *g, kiln_node *x, kiln_shape shape);
kiln_node *kiln_identity(kiln_graph *g, kiln_node *x);
/* Mixed precision (src/graph/autocast.c): under kiln_graph_set_autocast, casts f32 operands *a
 * and *b to the compute dtype and returns true (the op then sets acc_f32); false leaves them. */
bool kiln_autocast_operands(kiln_graph *g, kiln_node **a, kiln_node **b);
/* x is a bf16/f16 Cast of an f32 value (a master weight under autocast): the gradient products
 * of a half op produce x's gradient in f32 (acc_f32), so it reaches the f32 value unrounded. */
static inline bool kiln_is_half_cast(const kiln_node *x) {
    return x->op == KILN_OP_CAST && (x->dtype == KILN_BF16 || x->dtype == KILN_F16) && x->in[0]->dtype == KILN_F32;
}
/* Attention with its packed output [B, H, Tq, Dh + 1] (O, then the row's log-sum-exp):
 * src/ops/attention.c; kiln_attention slices O out of it. scale <= 0: 1/sqrt(Dh). */
kiln_node *kiln_attention_packed(kiln_graph *g, kiln_node *q, kiln_node *k, kiln_node *v, bool causal, double scale);
/* Scalar constant of x's dtype. */
kiln_node *kiln_scalar_like(kiln_graph *g, kiln_node *x, double v);

/* Dropout mask, shared by every backend so they agree bit for bit: element i is kept iff this
 * returns true. `seed` is attrs.seed (already mixed with the forward node's id). */
static inline uint64_t kiln_dropout_key(uint64_t seed, uint64_t step) { return kiln_mix64(seed ^ kiln_mix64(step + 0x1234567ull)); }
static inline bool kiln_dropout_keep_key(uint64_t key, int64_t i, double rate) { return kiln_rand_uniform(key, (uint64_t)i) >= rate; }
static inline bool kiln_dropout_keep(uint64_t seed, uint64_t step, int64_t i, double rate) {
    return kiln_dropout_keep_key(kiln_dropout_key(seed, step), i, rate);
}

/* Standard-normal draw i of RandomNormal (Box-Muller on the uniforms 2i and 2i + 1 of its own
 * stream), shared by every backend. `seed` is attrs.seed (mixed with the node id). */
static inline double kiln_normal_draw(uint64_t seed, uint64_t step, int64_t i) {
    uint64_t key = kiln_mix64(seed ^ kiln_mix64(step + 0x7654321ull));
    double u1 = kiln_rand_uniform(key, 2 * (uint64_t)i), u2 = kiln_rand_uniform(key, 2 * (uint64_t)i + 1);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);   /* 1 - u1 in (0, 1]: finite */
}

/* ---- helpers for ref kernels (src/core) ---- */
/* Element i of a buffer of dtype t, as double; and store. */
static inline double kiln_load(const void *p, kiln_dtype t, int64_t i);
static inline void kiln_store(void *p, kiln_dtype t, int64_t i, double v);
#include "core/load_store.h"

#endif
