/* The built-in models (zoo.c: the preset table and the small models; zoo_nets.c: LeNet-5, the
 * CIFAR ResNets, the Inception net and fast_cifar). Above the layers' public builders only. */
#ifndef KILN_NN_ZOO_H
#define KILN_NN_ZOO_H
#include <stdbool.h>
#include "kiln/nn.h"
#include "core/core.h"

/* Adds the model's layers to m (errors stick to m). A sequential preset gets m with its input;
 * a functional one an empty kiln_model_new, and makes its input and declares its output. */
typedef void (*nn_preset_build)(kiln_model *m, kiln_shape input_shape, int classes);
typedef struct nn_preset {
    const char *name;
    kiln_shape input;        /* the default input shape */
    bool any_size;           /* takes any image shape it builds for, not only `input` */
    bool functional;
    nn_preset_build build;
    int classes;             /* the default number of classes (vocabulary); 0: 10 */
} nn_preset;

void nn_zoo_lenet5(kiln_model *m, kiln_shape in, int classes);
void nn_zoo_resnet(kiln_model *m, kiln_shape in, int classes);    /* depth from the model's name */
void nn_zoo_inception(kiln_model *m, kiln_shape in, int classes);
void nn_zoo_fast_cifar(kiln_model *m, kiln_shape in, int classes);

/* zoo_gpt.c: gpt_char and gpt2 (their sizes from the model's name; classes: the vocabulary) */
typedef struct nn_gpt_config {
    int layers, heads, width, vocab;
    int positions;           /* the position table's length; 0: the context (the input's length) */
    double dropout, epsilon;
    bool gelu_tanh;          /* GPT-2's gelu_new; false: exact GELU */
} nn_gpt_config;
void nn_zoo_gpt(kiln_model *m, kiln_shape in, int classes);
void nn_zoo_gpt_build(kiln_model *m, kiln_shape in, const nn_gpt_config *c);   /* on kiln_model_new */

#endif
