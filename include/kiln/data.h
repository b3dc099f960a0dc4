/* Kiln datasets: IDX (MNIST / Fashion-MNIST) files, in-memory arrays, synthetic data;
 * seeded shuffling and batching. (The threaded pipeline with prefetch comes later.) */
#ifndef KILN_DATA_H
#define KILN_DATA_H
#include "tensor.h"
#ifdef __cplusplus
extern "C" {
#endif

/* An in-memory labelled dataset: x [N, ...] (e.g. [N, 28, 28, 1] f32 scaled to [0, 1]) and
 * y [N] i32 class ids, or [N, ...] several ids per example (e.g. [N, T] next-token ids of a
 * language model whose output is [T, vocabulary]). */
typedef struct kiln_dataset kiln_dataset;

/* Reads an IDX file (raw or gzip, decided by content: gzip magic 1f 8b) into a new tensor: u8
 * images [N, H, W] (magic 0x00000803) or labels [N] (0x00000801); other u8 ranks up to
 * KILN_MAX_DIMS are accepted too. Checks magic, dimensions (non-zero, no overflow) and that the
 * file holds exactly the promised bytes. Errors name the file: KILN_NOT_FOUND (no such file),
 * KILN_UNSUPPORTED (IDX element type other than u8), KILN_IO_ERROR (not IDX, corrupt, truncated or
 * trailing data; the message gives expected vs actual bytes). *out is NULL on failure. Caller
 * frees with kiln_tensor_free. */
kiln_status kiln_idx_read(const char *path, kiln_tensor **out);

/* Loads MNIST-layout files from dir: train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz),
 * t10k-images-idx3-ubyte(.gz), t10k-labels-idx1-ubyte(.gz) (the raw file is used when both
 * exist). Images become f32 [N, H, W, 1] ([N, 28, 28, 1] for (Fashion-)MNIST) scaled to [0, 1];
 * labels i32, checked to be 0..9 and as many as the images; 10 classes. train/test may be NULL to
 * skip. dir NULL or "" means /usr/share/datasets/fashion-mnist (Debian package
 * dataset-fashion-mnist). A missing dir or file gives KILN_NOT_FOUND with the install command;
 * bad files KILN_IO_ERROR. On failure both outputs are NULL. Caller frees both. */
kiln_status kiln_mnist_load(const char *dir, kiln_dataset **train, kiln_dataset **test);

/* Dataset from tensors (copied; x converted to f32). x's first dim is N; y is [N] (or [N, ...]) i32 (or i64,
 * u8), or NULL for an unlabelled dataset. Labels must be in 0..num_classes-1; num_classes <= 0
 * means max label + 1. NULL (and kiln_last_error) on failure. */
kiln_dataset *kiln_dataset_from_tensors(const kiln_tensor *x, const kiln_tensor *y, int num_classes);
/* Random data shaped like (example_shape, num_classes), n examples, seeded: x uniform in [0, 1),
 * labels uniform in 0..num_classes-1. Same seed -> same data. NULL on failure. */
kiln_dataset *kiln_dataset_synthetic(kiln_shape example_shape, int num_classes, int64_t n, uint64_t seed);
void kiln_dataset_free(kiln_dataset *d);

int64_t kiln_dataset_size(const kiln_dataset *d);
kiln_shape kiln_dataset_example_shape(const kiln_dataset *d);   /* e.g. [28, 28, 1] */
int kiln_dataset_num_classes(const kiln_dataset *d);
const kiln_tensor *kiln_dataset_x(const kiln_dataset *d);       /* borrowed */
const kiln_tensor *kiln_dataset_y(const kiln_dataset *d);       /* borrowed */

/* Splits off the last `fraction` of d into a new dataset (validation_split); d keeps the rest,
 * the first int(N * (1 - fraction)) examples, like Keras. fraction must be in (0, 1) and leave both
 * parts non-empty; on failure returns NULL and d is unchanged. Caller frees the result. */
kiln_dataset *kiln_dataset_split_tail(kiln_dataset *d, double fraction);

/* Iteration order for one epoch: a permutation of 0..N-1 (seeded Fisher-Yates; the seed is
 * mixed with epoch so each epoch reshuffles, same (seed, epoch) -> same order; identity when
 * shuffle false). order must hold N entries. */
void kiln_dataset_order(const kiln_dataset *d, bool shuffle, uint64_t seed, uint64_t epoch, int64_t *order);
/* Gathers examples order[start .. start+count) into bx and by. No allocation. The caller passes
 * tensors of exactly the batch size: bx f32 [count, <example shape>] and by i32 [count] (or [count, ...] like y) (for a
 * partial last batch, tensors whose first dim is that smaller count). by may be NULL (labels not
 * wanted; required for an unlabelled dataset). Needs 1 <= count, start + count <= N and every
 * order entry in 0..N-1; otherwise INVALID_ARGUMENT / SHAPE_MISMATCH / DTYPE_MISMATCH and nothing
 * is written. */
kiln_status kiln_dataset_gather(const kiln_dataset *d, const int64_t *order, int64_t start, int64_t count,
                                kiln_tensor *bx, kiln_tensor *by);

#ifdef __cplusplus
}
#endif
#endif
