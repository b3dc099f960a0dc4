/* Internal to src/data: the loaders for data as Keras users keep it (numpy .npz archives, CSV
 * files) and what they share: a zip reader, the .npy array parser, and a parsed split held in
 * memory (kiln_labelled) with the source over it. The *_parse entries work on a buffer so the
 * fuzz targets (fuzz/fuzz_npz.c, fuzz/fuzz_csv.c) reach them without files. */
#ifndef KILN_DATA_TABULAR_H
#define KILN_DATA_TABULAR_H
#include <stddef.h>
#include <stdint.h>
#include "kiln/pipeline.h"

/* ---- one split in memory (labelled.c) ---- */
typedef struct kiln_labelled {
    float *x;                /* [n, example] (kiln_malloc'd) */
    kiln_shape example;
    int64_t n;
    int32_t *y;              /* [n] class ids, or the f32 labels' bits when float_labels */
    bool float_labels;
    int num_classes;         /* class ids: the largest + 1; 0 for f32 labels */
} kiln_labelled;
void kiln_labelled_free(kiln_labelled *t);   /* frees the arrays; t itself is the caller's */
/* The most classes labels that are class ids may make (ids 0..65535): a larger id is refused
 * rather than a model of millions of output units built from one stray label. */
#define KILN_MAX_CLASSES 65536
/* Sets t->y from values[n] (finite, checked by the caller): class ids when every value is a whole
 * number in 0..2^31-2 and !force_float, else f32 values. Ids of KILN_MAX_CLASSES or more:
 * KILN_INVALID_ARGUMENT naming what (the file), the row and the value. */
kiln_status kiln_labelled_set_labels(kiln_labelled *t, const double *values, bool force_float, const char *what);
/* A source over t's arrays (taken: t is cleared, also on failure). */
kiln_data *kiln_labelled_source(kiln_labelled *t);

/* ---- zip archives (zip.c): the central directory, stored and deflated members, ZIP64 ---- */
typedef struct kiln_zip {
    const char *file;        /* for messages */
    const uint8_t *buf;
    size_t n;
    uint64_t cd_offset, cd_size, count;
} kiln_zip;
typedef struct kiln_zip_entry {
    const char *name;        /* points into the buffer; not NUL-terminated */
    size_t name_len;
    uint64_t data_offset;    /* of the member's (compressed) bytes */
    uint64_t comp_size, size;
    uint32_t crc;
    unsigned method;         /* 0 stored, 8 deflate */
} kiln_zip_entry;
/* Finds the end-of-central-directory record (and the ZIP64 one) and checks the directory lies in
 * the buffer. KILN_IO_ERROR naming the file when it is not a (whole) zip archive. */
kiln_status kiln_zip_open(kiln_zip *z, const char *file, const uint8_t *buf, size_t n);
/* The entry called name (exact match). KILN_NOT_FOUND when absent (message set); KILN_IO_ERROR for
 * a corrupt directory or local header, naming the member. */
kiln_status kiln_zip_find(const kiln_zip *z, const char *name, kiln_zip_entry *e);
/* Calls fn for each entry's name in directory order (for messages listing the members). */
void kiln_zip_names(const kiln_zip *z, void (*fn)(void *user, const char *name, size_t len), void *user);
/* The member's bytes, uncompressed and CRC-checked: *out kiln_malloc'd (*n bytes). */
kiln_status kiln_zip_extract(const kiln_zip *z, const kiln_zip_entry *e, uint8_t **out, size_t *n);

/* ---- .npy arrays (npz.c) ---- */
#define KILN_NPY_MAX_DIMS 8
typedef struct kiln_npy {
    char kind;               /* 'b' bool, 'u' unsigned, 'i' signed, 'f' float */
    int itemsize;            /* bytes: 1, 2, 4 or 8 */
    int rank;
    int64_t dim[KILN_NPY_MAX_DIMS];
    int64_t count;           /* elements */
    const uint8_t *data;     /* count * itemsize bytes, little-endian, C order */
} kiln_npy;
/* Parses a .npy image (format 1.0 to 3.0): magic, header dict (descr, fortran_order, shape),
 * and checks the data is exactly count * itemsize bytes. what names it in messages ("f.npz:
 * x_train"). */
kiln_status kiln_npy_parse(const char *what, const uint8_t *buf, size_t n, kiln_npy *a);
/* Element i as a double. */
double kiln_npy_get(const kiln_npy *a, int64_t i);

/* One split of an .npz image (x_train / y_train, or x_test / y_test) into t. The test split of an
 * archive without x_test is KILN_NOT_FOUND. */
kiln_status kiln_npz_parse(const char *file, const uint8_t *buf, size_t n, bool train, kiln_labelled *t);

/* ---- CSV (csv.c) ---- */
kiln_status kiln_csv_parse(const char *file, const uint8_t *buf, size_t n, const kiln_csv_opts *o, kiln_labelled *t);

#endif
