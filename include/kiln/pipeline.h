/* Kiln input pipeline (like tf.data, in C): sources (in-memory datasets, IDX / MNIST, CIFAR-10,
 * CIFAR-100, image folders, numpy .npz, CSV, synthetic data) and transforms (map, shuffle, batch, repeat, take,
 * skip, cache, normalize, augment, prefetch on worker threads).
 *
 *   kiln_data *d = NULL;
 *   if (kiln_data_open("cifar10:/data/cifar", true, &d) != KILN_OK) { ... kiln_last_error() ... }
 *   d = kiln_data_shuffle(d, 50000, 42);
 *   d = kiln_data_augment(d, &(kiln_augment_opts){ .crop_pad = 4, .flip = true, .seed = 7 });
 *   d = kiln_data_batch(d, 128, true);
 *   d = kiln_data_prefetch(d, 4, 2);
 *   if (!d) { ... kiln_last_error() ... }            // transforms propagate the first error
 *   for (uint64_t epoch = 0; epoch < 10; epoch++) {
 *       kiln_data_iter *it;  kiln_tensor *x, *y;  kiln_status st;
 *       if (kiln_data_iter_new(d, epoch, &it) != KILN_OK) break;
 *       while ((st = kiln_data_iter_next(it, &x, &y)) == KILN_OK && x) { ... x [B,32,32,3], y [B] ... }
 *       kiln_data_iter_free(it);                      // fine mid-epoch too
 *       if (st != KILN_OK) { ... kiln_last_error() names the file / record ... }
 *   }
 *   kiln_data_free(d);
 *
 * Model of computation. A pipeline is a chain of nodes. Index-level nodes (source, shuffle,
 * repeat, take, skip, batch) decide WHICH examples form each batch; they run on whoever asks
 * for the next batch, in batch order, under a lock, so the batch sequence never depends on the
 * number of workers. Element-level nodes (map, cache, normalize, augment) are pure functions of
 * the example, its source index, the pass ("epoch") it belongs to and the node's seed: each
 * example's randomness is the key kiln_data_example_key(seed, epoch, index), never thread state.
 * So the same seeds give bit-identical batches and augmentations for any number of workers.
 * Element-level nodes may appear anywhere before batch; after batch only repeat, take, skip and
 * prefetch are allowed (they then count batches).
 *
 * Examples are f32 (images HWC: [H, W, C], values in [0, 1] for the file sources) and labels
 * i32 (class ids; -1 for an unlabelled in-memory dataset), or f32 values for npz / CSV data with
 * other labels (kiln_data_label_dtype).
 */
#ifndef KILN_PIPELINE_H
#define KILN_PIPELINE_H
#include "tensor.h"
#include "data.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_data kiln_data;            /* a pipeline node (owns its input chain) */
typedef struct kiln_data_iter kiln_data_iter;  /* one pass over a pipeline */

/* ---- sources. Each returns a new pipeline (free with kiln_data_free), or NULL / an error
 * status with kiln_last_error() naming the file and the record or offset. ---- */

/* From an in-memory dataset: copy true copies it (the pipeline owns the copy), copy false
 * borrows it (the caller keeps d alive and unchanged while the pipeline exists). */
kiln_data *kiln_data_from_dataset(const kiln_dataset *d, bool copy);
/* From arrays the caller owns and keeps alive and unchanged while the pipeline exists (borrowed,
 * no copy): x f32 [N, <example shape>] C-contiguous; y NULL (unlabelled), [N] i32 class ids
 * (checked: 0..num_classes-1; num_classes <= 0: max id + 1; [N, ...] i32: several per example,
 * kiln_data_label_shape) or [N] f32 values (regression, soft
 * targets: kiln_data_label_dtype says F32). */
kiln_data *kiln_data_from_arrays(const kiln_tensor *x, const kiln_tensor *y, int num_classes);
/* One CIFAR-10 binary batch file (data_batch_1.bin ... test_batch.bin) as Keras's load_data gives
 * it: *x u8 [N, 32, 32, 3] (HWC, not scaled), *y u8 [N] labels 0..9 (new tensors, caller frees).
 * Corrupt or truncated files are KILN_IO_ERROR naming the record. */
kiln_status kiln_cifar10_read_u8(const char *path, kiln_tensor **x, kiln_tensor **y);
/* MNIST-layout IDX files in dir (see kiln_mnist_load): train or t10k split. [28, 28, 1], 10 classes. */
kiln_status kiln_data_from_mnist(const char *dir, bool train, kiln_data **out);
/* CIFAR-10 binary batches in dir or dir/cifar-10-batches-bin: train = data_batch_1..5.bin (all
 * five required), test = test_batch.bin. Records: 1 label byte + 3072 pixel bytes (R, G, B planes
 * of 32x32). Examples [32, 32, 3] HWC in [0, 1]; 10 classes. */
kiln_status kiln_data_from_cifar10(const char *dir, bool train, kiln_data **out);
/* CIFAR-100 train.bin / test.bin in dir or dir/cifar-100-binary. Records: coarse label byte,
 * fine label byte, 3072 pixel bytes. Labels: fine (100 classes) unless coarse (20 classes). */
kiln_status kiln_data_from_cifar100(const char *dir, bool train, bool coarse, kiln_data **out);
/* Image folder dir/CLASS_NAME/{*.png,*.jpg,*.jpeg} (case-insensitive extensions; other files and
 * hidden entries are ignored). Classes are the sub-folders sorted by name (strcmp); label = rank.
 * Files are sorted by name within a class. Every header is checked when opening: all images must
 * have the same width and height (no resizing: an odd-sized file is an error naming it and both
 * sizes). Channels: 3 if any image has colour, else 1 (grey is replicated, alpha is composited
 * on black). Pixels are decoded on the worker threads at each pass (add kiln_data_cache to keep
 * them). An empty class folder or a root without class folders is an error. */
kiln_status kiln_data_from_images(const char *dir, kiln_data **out);
/* The same for an evaluation split labelled like its training split: labels are positions in
 * classes[0..n_classes) (e.g. the training split's kiln_data_class_name list), matched by folder
 * name; num_classes = n_classes even when some classes have no folder here. A sub-folder whose
 * name is not in the list is an error naming it (same-count, different-name folders would
 * otherwise mislabel every example). classes are copied. */
kiln_status kiln_data_from_images_classes(const char *dir, const char *const *classes, int n_classes, kiln_data **out);
/* Decodes one PNG or JPEG file (what an image folder holds) into a new f32 tensor [H, W, C] with
 * values in [0, 1]. want: [H, W, C] with C 1 (grey; colour is converted) or 3 (RGB; grey is
 * replicated); a file of another size is resized to H x W by nearest neighbour (as Keras'
 * load_img(target_size=...)), and *resized says so (may be NULL). want of rank 0 keeps the file's
 * size and channels. A missing, corrupt or non-image file is an error naming it; *out is NULL
 * then. Free with kiln_tensor_free. */
kiln_status kiln_image_load(const char *path, kiln_shape want, kiln_tensor **out, bool *resized);
/* A numpy .npz archive (np.savez / np.savez_compressed; the keras.datasets files such as
 * mnist.npz): the arrays x_train / y_train (train) or x_test / y_test. Members stored or deflated
 * (ZIP64 too), each a .npy array (format 1.0 to 3.0), little-endian, C order (Fortran order is an
 * error). x: uint8 (scaled to [0, 1], as the other image loaders), another int or bool, or float
 * (converted to f32; must be finite); shape (N, H, W) -> examples [H, W, 1], (N, H, W, C) ->
 * [H, W, C], (N, D) -> [D]. y: (N,) or (N, 1) of any int, bool or float dtype, or one-hot (N, C).
 * Labels that are all whole numbers in 0..2^31-2 are class ids (num_classes = the largest + 1);
 * others are f32 values (kiln_data_label_dtype KILN_F32; for mse or binary_crossentropy). The test
 * split of a file without x_test is KILN_NOT_FOUND (hold part of the training split out instead);
 * a missing y_ array, or one of another length, is an error. Errors name the file and the member. */
kiln_status kiln_data_from_npz(const char *path, bool train, kiln_data **out);
/* A CSV file of numbers, one example per row: every column but the label column is a feature
 * (examples [D]). Comma-separated; fields may be quoted ("..."); blank lines are skipped; a UTF-8
 * byte-order mark and CRLF line ends are fine. Labels as for kiln_data_from_npz: class ids when
 * all are whole numbers >= 0, else f32 values. Errors name the file, the line and the column. */
typedef struct kiln_csv_opts {
    const char *label_column;  /* a header name, or a 0-based index (-1: the last); NULL: the last column */
    int header;                /* 0: detect (a first row with a field that is not a number is a header),
                                  1: the first row is a header, -1: there is none */
    bool float_labels;         /* f32 labels even when all are whole numbers (a test file read like its
                                  training file) */
} kiln_csv_opts;
kiln_status kiln_data_from_csv(const char *path, const kiln_csv_opts *o, kiln_data **out);
/* Parses a data spec, as the CLI's --data takes it:
 *   cifar10:DIR  cifar100:DIR  cifar100-coarse:DIR  mnist:DIR  images:DIR
 *   (mnist: with no DIR reads /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist)
 *   synthetic  (random [28, 28, 1], 10 classes, 2048 train / 512 test examples)
 *   synthetic:HxWxC[:N]  (e.g. synthetic:32x32x3:50000)
 *   npz:FILE.npz  (kiln_data_from_npz; the test split of a file without x_test: KILN_NOT_FOUND)
 *   csv:FILE.csv  (kiln_data_from_csv, label in the last column; a CSV file has one split: its
 *                  test split is KILN_NOT_FOUND)
 *   DIR  (format recognised from the files present: CIFAR-10 batches, CIFAR-100 train/test.bin,
 *         MNIST IDX files, else class sub-folders holding images).
 * train picks the split. The result is the bare source: add shuffle / batch / ... yourself. */
kiln_status kiln_data_open(const char *spec, bool train, kiln_data **out);

/* Frees the pipeline and its input chain; NULL is a no-op. No iterator may be alive. */
void kiln_data_free(kiln_data *d);

/* ---- transforms. Each TAKES `in` (owns it from now on) and returns the new node. On failure it
 * frees `in`, sets kiln_last_error() and returns NULL; given NULL it returns NULL and keeps the
 * earlier error, so a chain can be checked once at the end. ---- */

/* Callback applied to every example on the worker threads. x is the example (f32, the pipeline's
 * example shape; modify in place, the shape must stay), *label may be changed (it must stay in
 * 0..num_classes-1; label points at all kiln_data_label_shape's labels when there are several).
 * rng_key: this example's key (from the map's seed, the epoch and the source index): use it for
 * randomness (e.g. kiln-style counter hashing), never global state. Must be thread-safe. Return KILN_OK, or an error status (set a message with your own text; it reaches
 * the consumer's next call). */
typedef kiln_status (*kiln_data_map_fn)(void *user, kiln_tensor *x, int32_t *label, uint64_t rng_key);
kiln_data *kiln_data_map(kiln_data *in, kiln_data_map_fn fn, void *user, uint64_t seed);
/* Buffered shuffle (tf.data semantics: a buffer of `buffer` elements, each output drawn uniformly
 * from it). buffer >= the number of elements gives a full uniform shuffle. Reshuffles each epoch
 * and each repetition: the order is a function of (seed, epoch). */
kiln_data *kiln_data_shuffle(kiln_data *in, int64_t buffer, uint64_t seed);
/* Groups n consecutive examples; the last smaller batch is dropped when drop_remainder. */
kiln_data *kiln_data_batch(kiln_data *in, int64_t n, bool drop_remainder);
/* Repeats the input count times (count -1: forever); each repetition is a new pass (new shuffle
 * order, new augmentations). */
kiln_data *kiln_data_repeat(kiln_data *in, int64_t count);
kiln_data *kiln_data_take(kiln_data *in, int64_t n);
kiln_data *kiln_data_skip(kiln_data *in, int64_t n);
/* Keeps each example, as produced by the element nodes before the cache, in memory (f32) after
 * the first time it is computed. Those nodes always see epoch 0, so random nodes before the cache
 * are frozen (as in tf.data): put augmentation after it. At most one cache per pipeline. */
kiln_data *kiln_data_cache(kiln_data *in);
/* x[..., c] = (x[..., c] - mean[c]) / std[c]; channels must equal the last example dimension and
 * every std must be > 0. The arrays are copied. */
kiln_data *kiln_data_normalize(kiln_data *in, const float *mean, const float *std, int channels);

/* Random augmentation of HWC images ([H, W, C] examples), applied in this order:
 * crop: pad each side with crop_pad pixels of `fill`, then crop H x W at a uniform offset;
 * flip: mirror left-right with probability 1/2;
 * cutout: with probability cutout_prob (<= 0 means 1), fill a cutout_size x cutout_size square
 * (clipped at the borders) centred on a uniform pixel with `fill` (random erasing with a fixed
 * square). Fields left 0 are off. */
typedef struct kiln_augment_opts {
    int crop_pad;
    bool flip;
    int cutout_size;
    float cutout_prob;
    float fill;
    uint64_t seed;
} kiln_augment_opts;
kiln_data *kiln_data_augment(kiln_data *in, const kiln_augment_opts *o);

/* Runs the element work on `workers` threads (<= 0: min(4, cores)) that fill up to `buffers`
 * batches ahead of the consumer (bounded; >= 1). Without prefetch everything runs on the
 * consumer's thread. Applies to the whole pipeline wherever it is placed (conventionally last). */
kiln_data *kiln_data_prefetch(kiln_data *in, int buffers, int workers);
/* Part `index` of `count` of every batch of a batched pipeline (data parallelism: rank index of
 * count): rows [index * B / count, (index + 1) * B / count) of each full batch of B, which must be
 * a multiple of count; a smaller last batch gives every part the same, smaller share. Only those
 * rows are read and transformed. kiln_fit with .dist does this itself. */
kiln_data *kiln_data_shard(kiln_data *in, int index, int count);

/* ---- information ---- */
kiln_shape kiln_data_example_shape(const kiln_data *d);      /* e.g. [32, 32, 3] */
int kiln_data_num_classes(const kiln_data *d);
/* The labels' dtype in batches: KILN_I32 class ids, or KILN_F32 values (npz / CSV sources whose
 * labels are not all class ids; num_classes is then 0, and a map callback's *label holds the
 * float's bits). */
kiln_dtype kiln_data_label_dtype(const kiln_data *d);
/* Each example's label shape (batch excluded): rank 0 for one label per example (class id or
 * value), e.g. [T] for text windows (kiln_data_from_text: T next-token ids); batches' y is then
 * [B, T]. */
kiln_shape kiln_data_label_shape(const kiln_data *d);
/* Class name (image folders: the folder name; others: NULL). Borrowed. */
const char *kiln_data_class_name(const kiln_data *d, int c);
/* Number of examples in the source. */
int64_t kiln_data_source_size(const kiln_data *d);
/* Batch size (1 when the pipeline has no batch node). */
int64_t kiln_data_batch_size(const kiln_data *d);
/* Items per epoch: batches (examples when unbatched), -1 when infinite. */
int64_t kiln_data_cardinality(const kiln_data *d);
/* The randomness key of an example: a hash of (seed, epoch, index) with kiln_mix64. */
uint64_t kiln_data_example_key(uint64_t seed, uint64_t epoch, int64_t index);

/* ---- iteration ---- */

/* Starts pass `epoch` (shuffle order and augmentations are a function of it). d is borrowed and
 * must outlive the iterator; several iterators may run at once. Workers start at once. */
kiln_status kiln_data_iter_new(kiln_data *d, uint64_t epoch, kiln_data_iter **out);
/* Next batch: *x f32 [B, <example shape>], *y i32 [B] ([B, <label shape>] for a source with
 * several labels per example) (f32 for kiln_data_label_dtype F32) (B is smaller for a kept remainder; 1 when
 * unbatched), both borrowed, valid until the next call or kiln_data_iter_free. At the end of the
 * pass returns KILN_OK with *x = *y = NULL. An error in a worker (unreadable image, map callback
 * failure) is returned here, for the batch it belongs to, with its message; the iterator then
 * stays failed. */
kiln_status kiln_data_iter_next(kiln_data_iter *it, kiln_tensor **x, kiln_tensor **y);
/* Keeps the last `batches` (1 or 2) batches valid: with 2, a batch stays valid until the call
 * after next, for a consumer that looks one batch ahead (kiln_fit copies the next batch to the GPU
 * while the current one trains). Call before the first kiln_data_iter_next. */
kiln_status kiln_data_iter_hold(kiln_data_iter *it, int batches);
/* Stops the workers (also mid-epoch) and frees everything; NULL is a no-op. */
void kiln_data_iter_free(kiln_data_iter *it);

/* Splits a bare source (straight from kiln_data_open / kiln_data_from_*, before any transform)
 * into two sources over the same files: *held_out gets every example i with
 * floor((i + 1) * fraction) > floor(i * fraction) (evenly spaced, about fraction * N of them; per
 * class when the source is sorted by class, as image folders are), *train the rest, both in the
 * source's order. Takes `source` (freed on failure, or when both results are freed). fraction in
 * (0, 1), leaving both parts non-empty. Used by `kiln train --validation-split`. */
kiln_status kiln_data_split_source(kiln_data *source, double fraction, kiln_data **train, kiln_data **held_out);

#ifdef __cplusplus
}
#endif
#endif
