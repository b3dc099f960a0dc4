/* Internal to src/data: dataset construction shared by the loaders. */
#ifndef KILN_DATA_INTERNAL_H
#define KILN_DATA_INTERNAL_H
#include "kiln/data.h"

/* Where the Debian package dataset-fashion-mnist installs the files. */
#define KILN_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* Dataset that takes ownership of x (f32 [N, ...], rank >= 1) and y (i32 [N] or NULL). On failure
 * frees both and returns NULL. */
kiln_dataset *kiln_dataset_adopt(kiln_tensor *x, kiln_tensor *y, int num_classes);

#endif
