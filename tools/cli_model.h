/* The model of kiln train / eval / predict / summary: a built-in one (--model), one a file
 * describes (--model-file: Keras JSON or ONNX), or the one a checkpoint holds (--load); its
 * compile options and class names (tools/cli_model.c). Errors go to stderr naming the command. */
#ifndef KILN_TOOLS_CLI_MODEL_H
#define KILN_TOOLS_CLI_MODEL_H
#include <stdbool.h>
#include <stdint.h>
#include "kiln/nn.h"
#include "kiln/data.h"
#include "kiln/io.h"
#include "tools/cli_ctx.h"

/* The input shape of model: the --model-file ONNX input, the file-described model's (c->arch) when
 * model names it, else the built-in model's ([28, 28, 1] for fashion_cnn and mlp, [32, 32, 3] for
 * cifar_cnn); rank 0 for an unknown name. */
kiln_shape cli_model_input(const cli_ctx *c, const char *model);
/* The model must take the data's examples as they are: 0, or 2 after a message. */
int cli_check_shapes(const cli_ctx *c, const char *cmd, const char *model, kiln_shape data);

/* --model-file F.json | F.keras | F.h5: builds the model the Keras file describes (with the
 * .keras / .h5 file's weights) once, into c->arch, and points
 * a.model at its name, so the paths that use a checkpoint's architecture use it; with --load the
 * checkpoint gives only the weights. 0, or 2 after a message. */
int cli_use_model_file(cli_ctx *c, const char *cmd);
/* The --model-file (Keras JSON) model for training on data with `classes` classes, taken from
 * c->arch; NULL after a message when it has fewer outputs than classes. */
kiln_model *cli_keras_file_model(cli_ctx *c, const char *cmd, int classes);
/* A Keras model file with weights by its name (.keras, .h5, .hdf5), and whether --model-file
 * names one with no --load: the model keeps the file's own weights. */
bool cli_is_keras(const char *path);
bool cli_keras_own_weights(const args *a);
/* cli_keras_file_model compiled for labels (eval, predict with the file's weights). */
kiln_model *cli_keras_file_compiled(cli_ctx *c, const char *cmd, int classes, kiln_dtype labels);
/* --model-file F.onnx: the model for data examples of shape data (rank 0: any) and classes classes
 * (0: any), not compiled; NULL after a message. */
kiln_model *cli_onnx_file_model(const args *a, const char *cmd, kiln_shape data, int classes);
/* The same compiled, with --load's weights when given. */
kiln_model *cli_onnx_file_model_loaded(const args *a, const char *cmd, kiln_shape data, int classes);

/* Reads --load once (eval, predict): the model comes from it and the weights are loaded from the
 * same copy. Unless --model was given, the model is the one the file's kiln.architecture
 * describes (built here, into c->arch), else the built-in one its kiln.model names; a.model is
 * set to its name. NULL after a message. */
kiln_safetensors *cli_checkpoint_read(cli_ctx *c, const char *cmd);
/* Builds the model the checkpoint was saved from (c->arch, else the built-in a.model) for data of
 * data_shape / classes / labels, compiles it and loads it from f (borrowed); NULL after a message. */
kiln_model *cli_checkpoint_model(cli_ctx *c, const char *cmd, const kiln_safetensors *f, kiln_shape data_shape, int classes,
                                 kiln_dtype labels);
/* The same from the checkpoint alone (no data): the input shape and class count of the model the
 * file describes. */
kiln_model *cli_checkpoint_model_alone(cli_ctx *c, const char *cmd, const kiln_safetensors *f);

/* --loss (or the default for the model's outputs and the labels), --metrics, --device, --threads,
 * --precision, --sync-batchnorm; from_logits unless the model ends in softmax / sigmoid (a Keras
 * model file's Dense(1, activation="sigmoid")). */
kiln_compile_opts cli_compile_opts(const args *a, const kiln_model *m, kiln_dtype labels, kiln_optimizer opt, kiln_lr_schedule sched);

/* Fashion-MNIST's class names. */
extern const char *const cli_fashion_names[10];
/* A 10-class [28, 28, 1] model or data set with the default or a Fashion-MNIST --data: its
 * classes are Fashion-MNIST's. */
bool cli_fashion_like(const args *a, kiln_shape in, int64_t classes);
/* The class names the checkpoints of this run hold (predict --image prints them): an image
 * folder's, or Fashion-MNIST's for the default or a Fashion-MNIST data set; none otherwise. */
kiln_status cli_set_class_names(const args *a, kiln_model *m, const kiln_data *train);
#endif
