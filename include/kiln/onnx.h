/* ONNX export and import (https://onnx.ai). Built when protobuf-c and libonnx-dev's onnx.proto
 * were found at build time (kiln_onnx_available()); otherwise every call returns KILN_UNSUPPORTED
 * saying what to install (apt-get install libprotobuf-c-dev protobuf-c-compiler libonnx-dev).
 *
 *   kiln_model_export_onnx(m, "model.onnx", NULL);          // serve it with onnxruntime, TensorRT...
 *   kiln_model *m2;
 *   kiln_model_from_onnx("resnet.onnx", &(kiln_onnx_model_opts){ .nhwc_input = true }, &m2);
 *   kiln_compile(m2, ...); kiln_fit(m2, ...);                // fine-tune it
 *
 * Layout: Kiln is NHWC, ONNX's Conv, pooling and BatchNormalization are NCHW. An exported model
 * keeps Kiln's NHWC input [N, H, W, C] (the arrays Kiln is fed feed it too) and transposes it to
 * NCHW once, right after the input; conv kernels are converted to ONNX's OIHW at export (the
 * weights, once, not the activations at every step). Before Flatten / Reshape the activations are
 * transposed back to NHWC, so the Dense weights after them keep Kiln's feature order. Import goes
 * the other way: it tracks each tensor's layout and transposes only where an op needs another one,
 * so an exported Kiln model imports with no transposes at all. */
#ifndef KILN_ONNX_H
#define KILN_ONNX_H
#include "graph.h"
#include "nn.h"
#ifdef __cplusplus
extern "C" {
#endif

/* True when this build has ONNX support. */
bool kiln_onnx_available(void);

/* ---- export ---- */
typedef struct kiln_onnx_export_opts {
    bool probabilities;      /* end with a Softmax over the classes when the model outputs logits
                                (its last layer has no softmax activation) */
} kiln_onnx_export_opts;
/* Writes m's inference graph to path (atomically), ONNX opset 17 (IR 8): input [N, <model input
 * shape>] with a symbolic batch dimension "N", one output [N, <model output shape>], the weights
 * as initializers. Every layer type exports: Dense -> Gemm, Conv2D / DepthwiseConv2D -> Conv
 * (explicit pads), pooling -> MaxPool / AveragePool / GlobalAveragePool, BatchNormalization with
 * its moving statistics (inference), Dropout left out, Flatten / Reshape, Concatenate -> Concat,
 * Add; activations relu, sigmoid, tanh, softmax, elu, leaky_relu, softplus as the ONNX ops of
 * those names, gelu as x * 0.5 * (1 + Erf(x / sqrt(2))) (opset 17 has no Gelu). The weights are
 * those of the model's session (after fit or load); a model never built is built first (fresh
 * weights). o may be NULL. */
kiln_status kiln_model_export_onnx(kiln_model *m, const char *path, const kiln_onnx_export_opts *o);

/* ---- import ---- */
/* A graph input bound by the caller. */
typedef struct kiln_onnx_input {
    const char *name;            /* the ONNX graph input's name */
    kiln_node *node;             /* its value in the graph (NULL: a placeholder is made) */
    const kiln_tensor *value;    /* its value, when known while building (borrowed during the call):
                                    ops that need an input as a constant (Reshape's shape, Pad's
                                    pads, Clip's bounds, ...) read it; NULL: not known */
} kiln_onnx_input;

typedef struct kiln_onnx_import_opts {
    int64_t batch;               /* the value of a symbolic first dimension of the inputs (0 -> 1) */
    const kiln_onnx_input *inputs; int n_inputs;   /* bound inputs; the others become placeholders */
    bool constants;              /* initializers become constants (default: variables, floating
                                    point ones of rank >= 1 trainable except BatchNormalization's
                                    running statistics; assign them with kiln_onnx_graph_init_session) */
    bool training;               /* BatchNormalization on batch statistics, Dropout drops (default:
                                    inference) */
    uint64_t seed;               /* Dropout seeds when training */
} kiln_onnx_import_opts;

/* What an import made: the graph's inputs and outputs as nodes of g. Owned by the caller. */
typedef struct kiln_onnx_graph kiln_onnx_graph;
/* Adds the ops of the ONNX model at path to g (o may be NULL). Each ONNX op maps to Kiln ops;
 * broadcasting follows ONNX (numpy) rules. An op, attribute value or element type Kiln lacks is
 * KILN_UNSUPPORTED naming the node, its op and the attribute; nothing usable is left in *out
 * (NULL) on any error, though g may hold nodes made before it (drop g). */
kiln_status kiln_graph_from_onnx(kiln_graph *g, const char *path, const kiln_onnx_import_opts *o, kiln_onnx_graph **out);
int kiln_onnx_graph_input_count(const kiln_onnx_graph *r);
kiln_node *kiln_onnx_graph_input(const kiln_onnx_graph *r, int i);      /* placeholder or bound node */
const char *kiln_onnx_graph_input_name(const kiln_onnx_graph *r, int i);
int kiln_onnx_graph_output_count(const kiln_onnx_graph *r);
kiln_node *kiln_onnx_graph_output(const kiln_onnx_graph *r, int i);
const char *kiln_onnx_graph_output_name(const kiln_onnx_graph *r, int i);
/* Assigns the initializers' values to the variables the import made (after kiln_session_new). */
kiln_status kiln_onnx_graph_init_session(const kiln_onnx_graph *r, kiln_session *s);
void kiln_onnx_graph_free(kiln_onnx_graph *r);         /* NULL is a no-op */

typedef struct kiln_onnx_model_opts {
    bool nhwc_input;             /* the ONNX model takes NCHW images [N, C, H, W] (PyTorch): the Kiln
                                    model takes them NHWC [N, H, W, C], as Kiln's data sets give them */
    bool strip_softmax;          /* leave out a Softmax over the last axis at the end, so the model
                                    outputs logits (for from_logits losses) */
    const char *name;            /* the model's name (NULL: the file's name without .onnx) */
} kiln_onnx_model_opts;
/* A Kiln model computing the ONNX model at path: an input layer and one ImportedGraph layer
 * ("onnx_graph") holding the graph. The model needs one input [N, ...] (N symbolic or fixed; the
 * other dimensions fixed) and one output [N, ...]. Its variables are the floating-point
 * initializers of rank >= 1 that ops read as data, named "onnx_graph/<initializer name>"
 * (conv weights stored HWIO), trainable except BatchNormalization's running statistics, so the
 * model compiles, fits, evaluates, predicts, saves and loads checkpoints like any other; a
 * checkpoint of it is loaded into a model rebuilt from the same file. Not compiled. o may be NULL. */
kiln_status kiln_model_from_onnx(const char *path, const kiln_onnx_model_opts *o, kiln_model **out);

#ifdef __cplusplus
}
#endif
#endif
