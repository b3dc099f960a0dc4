/* Kiln: a deep-learning training framework in C. Umbrella header: includes every public header,
 * so `#include <kiln/kiln.h>` is all a program needs (compile flags: `pkg-config --cflags kiln`). */
#ifndef KILN_KILN_H
#define KILN_KILN_H
#include "status.h"     /* kiln_status, kiln_last_error, kiln_set_log_callback */
#include "tensor.h"     /* dtypes, shapes, host tensors */
#include "device.h"     /* device list, GPU availability, device memory */
#include "graph.h"      /* graph builder, ops, autodiff, optimizers, sessions */
#include "data.h"       /* in-memory datasets, IDX / MNIST loading */
#include "pipeline.h"   /* input pipelines: sources, transforms, prefetch */
#include "text.h"       /* byte-level BPE tokenizers (tokenizer.json), token streams */
#include "io.h"         /* safetensors files */
#include "nn.h"         /* Keras-style models: layers, compile, fit, evaluate, predict, callbacks */
#include "onnx.h"       /* ONNX export and import */
#include "dist.h"       /* data parallelism across processes and machines (MPI) */
#define KILN_VERSION_STRING "0.1.0"
#endif
