/* Internal to the input pipeline: sources, nodes, loaders' from-memory entries (used by the
 * fuzz targets). */
#ifndef KILN_PIPELINE_INTERNAL_H
#define KILN_PIPELINE_INTERNAL_H
#include <pthread.h>
#include <stdio.h>
#include "kiln/pipeline.h"

/* ---- sources: random access to example i ---- */
typedef struct kiln_source kiln_source;
struct kiln_source {
    kiln_shape shape;        /* example shape */
    int64_t n;               /* examples */
    int num_classes;
    char **class_names;      /* NULL or num_classes names (kiln_malloc'd) */
    /* Writes example i (numel floats) and its label. Thread-safe. Errors name the file. */
    kiln_status (*get)(const kiln_source *s, int64_t i, float *x, int32_t *label);
    void (*destroy)(kiln_source *s);   /* frees impl */
    void *impl;
    /* labels are f32 values (regression, soft targets: npz / CSV sources) written as their bits
     * into the int32 label slot; num_classes is then 0. Batches carry them as an f32 y. */
    bool float_labels;
    /* each example's label shape: rank 0 (the default) one label; e.g. [T] for a window's T
     * next-token ids. get writes kiln_source_label_numel of them. */
    kiln_shape label_shape;
};
static inline int64_t kiln_source_label_numel(const kiln_source *s) { return s->label_shape.rank ? kiln_shape_numel(s->label_shape) : 1; }
kiln_source *kiln_source_new(void);
void kiln_source_free(kiln_source *s);
kiln_data *kiln_data_from_source(kiln_source *s);   /* takes s (freed on failure) */

/* Reads a whole regular file into a kiln_malloc'd buffer; errors name the file. */
kiln_status kiln_read_whole_file(const char *path, uint8_t **out, size_t *n);

/* ---- CIFAR ---- */
#define KILN_CIFAR_PIXELS 3072
/* Validates a CIFAR buffer (`name` for messages): size a non-zero multiple of the record size
 * (3073 for CIFAR-10, 3074 for CIFAR-100), labels in range (10; 20 coarse / 100 fine). When
 * pixels/labels are non-NULL writes count records (CHW u8, 3072 each; chosen label) there. Sets
 * *count. Errors name the file, the record and its byte offset. */
kiln_status kiln_cifar_parse(const char *name, const uint8_t *buf, size_t n, int variant, bool coarse,
                             uint8_t *pixels, int32_t *labels, int64_t *count);

/* ---- images ---- */
typedef struct kiln_image_info { int width, height, channels; } kiln_image_info;
#define KILN_IMAGE_MAX_PIXELS ((int64_t)1 << 26)
/* Reads only the header (PNG up to IDAT, JPEG up to the first scan) from f. */
kiln_status kiln_image_probe(const char *name, FILE *f, kiln_image_info *info);
/* Decodes a whole PNG or JPEG (decided by the magic bytes) to u8 HWC with `channels` (1 or 3)
 * channels; *pixels is kiln_malloc'd (kiln_free). Corrupt or truncated data is an error. */
kiln_status kiln_image_decode(const char *name, const uint8_t *buf, size_t n, int channels, kiln_image_info *info,
                              uint8_t **pixels);

/* ---- element ops (augment.c) ---- */
void kiln_aug_normalize(float *x, int64_t numel, const float *mean, const float *std, int channels);
/* scratch: numel floats. */
void kiln_aug_apply(const kiln_augment_opts *o, float *x, int h, int w, int c, uint64_t key, float *scratch);

/* ---- nodes ---- */
typedef enum kiln_node_kind {
    KILN_DN_SOURCE, KILN_DN_MAP, KILN_DN_SHUFFLE, KILN_DN_BATCH, KILN_DN_REPEAT, KILN_DN_TAKE, KILN_DN_SKIP,
    KILN_DN_CACHE, KILN_DN_NORMALIZE, KILN_DN_AUGMENT, KILN_DN_PREFETCH, KILN_DN_SHARD, KILN_DN_COUNT
} kiln_node_kind;

typedef struct kiln_data_cache_store {
    pthread_mutex_t mu;
    float *x;                /* [n, numel] */
    int32_t *y;
    _Atomic unsigned char *state;   /* 0 empty, 1 being written, 2 filled */
} kiln_data_cache_store;

struct kiln_data {
    kiln_node_kind kind;
    kiln_data *input;        /* owned; NULL for a source */
    kiln_source *src;        /* the chain's source (owned by the source node) */
    /* properties of the stream this node produces */
    bool batched;
    int64_t batch;           /* batch size (1 unbatched) */
    int64_t card;            /* items per epoch, -1 infinite */
    int n_elem_ops;          /* element nodes up to here (map/cache/normalize/augment) */
    bool has_cache;
    int prefetch_buffers, prefetch_workers;   /* 0: none */
    /* parameters */
    int64_t n;               /* shuffle buffer, batch size, repeat count, take/skip count */
    bool drop_remainder;
    uint64_t seed;
    kiln_data_map_fn fn;
    void *user;
    float *mean, *std;       /* normalize (kiln_malloc'd) */
    int channels;
    kiln_augment_opts aug;
    kiln_data_cache_store *cache;
    int shard_index, shard_count;   /* shard: this part of each batch, of shard_count */
    bool borrows_input;      /* shard made by kiln_fit for data parallelism: input is the caller's */
};
/* kiln_data_shard over a borrowed pipeline (not freed with the shard, nor on failure). */
kiln_data *kiln_data_shard_borrowed(kiln_data *in, int index, int count);
/* The source example numbers of the rows of a batch the iterator handed out and still holds (x:
 * that batch's x tensor) into src[0..cap); the row count, or -1 when x is not one of its batches. */
int64_t kiln_data_iter_sources(const kiln_data_iter *it, const kiln_tensor *x, int64_t *src, int64_t cap);

#endif
