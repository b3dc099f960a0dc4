/* IDX files (the MNIST / Fashion-MNIST container), raw or gzip-compressed, and the MNIST-layout
 * directory loader.
 *
 * IDX layout: magic (big-endian u32: 0x00 0x00 <type> <ndims>), ndims big-endian u32 dimensions,
 * then prod(dims) elements. Kiln reads unsigned-byte files (type 0x08): 0x00000801 labels [N],
 * 0x00000803 images [N, H, W] (any rank 1..KILN_MAX_DIMS is accepted). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "core/core.h"
#include "data/data_internal.h"
#include "io/read_file.h"

#define IDX_INSTALL_HINT \
    "install the Debian package with: sudo apt-get install dataset-fashion-mnist " \
    "(files in /usr/share/datasets/fashion-mnist)"

/* ---- a byte source that is either a plain FILE or a gzip stream ---- */

/* gzip is inflated here (not with gzread): zlib's gzread ignores trailing garbage after the last
 * member silently. Each member's CRC-32 and length trailer is checked by inflate; after a member
 * only another member (1f 8b) or the end of the file may follow. */
#define GZ_IN (1u << 17)

typedef struct idx_src {
    const char *path;
    FILE *f;
    bool is_gz;
    int64_t raw_size; /* raw files: size from fstat (-1 if unknown) */
    z_stream z;       /* gzip */
    unsigned char *in;
    bool z_init, z_done;   /* z_done: the last member ended, nothing follows */
} idx_src;

static kiln_status src_open(idx_src *s, const char *path) {
    memset(s, 0, sizeof *s);
    s->path = path;
    s->raw_size = -1;
    FILE *f;
    uint64_t size;
    kiln_status st = kiln_file_open_read(path, "IDX file", &f, &size);    /* a FIFO is refused, not waited on */
    if (st) return st;
    unsigned char m[2];
    size_t got = fread(m, 1, 2, f);
    if (ferror(f) || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return kiln_set_error(KILN_IO_ERROR, "%s: read error: %s", path, strerror(errno));
    }
    s->f = f;
    if (got == 2 && m[0] == 0x1f && m[1] == 0x8b) {
        s->is_gz = true;
        s->in = kiln_malloc(GZ_IN);
        if (!s->in || inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) {
            kiln_free(s->in);
            fclose(f);
            s->f = NULL;
            s->in = NULL;
            return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of memory for gzip", path);
        }
        s->z_init = true;
        return KILN_OK;
    }
    s->raw_size = size > INT64_MAX ? -1 : (int64_t)size;
    return KILN_OK;
}

static void src_close(idx_src *s) {
    if (s->f) fclose(s->f);
    if (s->z_init) inflateEnd(&s->z);
    kiln_free(s->in);
    s->f = NULL;
    s->in = NULL;
    s->z_init = false;
}

/* Tops the input up to at least `want` unread bytes when the file has them; -1 on a read error. */
static int gz_fill(idx_src *s, size_t want) {
    if (s->z.avail_in >= want) return 0;
    if (s->z.avail_in) memmove(s->in, s->z.next_in, s->z.avail_in);
    s->z.next_in = s->in;
    while (s->z.avail_in < want) {
        size_t r = fread(s->in + s->z.avail_in, 1, GZ_IN - s->z.avail_in, s->f);
        s->z.avail_in += (unsigned)r;
        if (r == 0) break;
    }
    if (ferror(s->f)) {
        kiln_set_error(KILN_IO_ERROR, "%s: read error: %s", s->path, strerror(errno));
        return -1;
    }
    return 0;
}

/* After a member's end: the end of the file, or another gzip member; anything else is an error. */
static int gz_after_member(idx_src *s) {
    if (gz_fill(s, 2) < 0) return -1;
    if (s->z.avail_in == 0) { s->z_done = true; return 0; }
    if (s->z.avail_in >= 2 && s->z.next_in[0] == 0x1f && s->z.next_in[1] == 0x8b) { inflateReset(&s->z); return 0; }
    long extra = (long)s->z.avail_in;
    while (fgetc(s->f) != EOF) extra++;
    kiln_set_error(KILN_IO_ERROR, "%s: %ld bytes of trailing garbage after the gzip stream (corrupt or appended to)", s->path, extra);
    return -1;
}

/* Reads up to n bytes; returns the count read (short only at end of data) or -1 on error (message
 * set: corrupt gzip data, a stream cut before its end or CRC/length trailer, trailing garbage). */
static int64_t src_read(idx_src *s, void *buf, size_t n) {
    size_t done = 0;
    unsigned char *p = buf;
    while (done < n) {
        size_t want = n - done;
        if (s->is_gz) {
            if (s->z_done) break;
            if (gz_fill(s, 1) < 0) return -1;
            if (s->z.avail_in == 0) {
                kiln_set_error(KILN_IO_ERROR, "%s: truncated gzip file: the compressed stream ends before its end marker and "
                               "CRC/length trailer", s->path);
                return -1;
            }
            s->z.next_out = p + done;
            s->z.avail_out = (unsigned)(want > (1u << 30) ? (1u << 30) : want);
            unsigned before = s->z.avail_out;
            int r = inflate(&s->z, Z_NO_FLUSH);
            done += before - s->z.avail_out;
            if (r == Z_STREAM_END) { if (gz_after_member(s) < 0) return -1; }
            else if (r != Z_OK && r != Z_BUF_ERROR) {
                kiln_set_error(KILN_IO_ERROR, "%s: corrupt gzip data: %s", s->path, s->z.msg ? s->z.msg : "unknown error");
                return -1;
            }
        } else {
            size_t r = fread(p + done, 1, want, s->f);
            done += r;
            if (r < want) {
                if (ferror(s->f)) {
                    kiln_set_error(KILN_IO_ERROR, "%s: read error: %s", s->path, strerror(errno));
                    return -1;
                }
                break;
            }
        }
    }
    return (int64_t)done;
}

/* Counts the bytes left in the source (for "trailing data" messages). -1 on error. */
static int64_t src_count_rest(idx_src *s) {
    unsigned char buf[1 << 14];
    int64_t total = 0;
    for (;;) {
        int64_t r = src_read(s, buf, sizeof buf);
        if (r < 0) return -1;
        if (r == 0) return total;
        total += r;
    }
}

static uint32_t be32(const unsigned char *b) {
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | (uint32_t)b[3];
}

static const char *idx_type_name(unsigned t) {
    switch (t) {
    case 0x08: return "u8";
    case 0x09: return "i8";
    case 0x0B: return "i16";
    case 0x0C: return "i32";
    case 0x0D: return "f32";
    case 0x0E: return "f64";
    default: return "unknown";
    }
}

/* The magic and the dimensions: the shape and its element count. */
static kiln_status read_header(idx_src *s, const char *path, kiln_shape *shape, uint64_t *numel) {
    unsigned char hdr[4 + 4 * KILN_MAX_DIMS];
    int64_t got = src_read(s, hdr, 4);
    if (got < 0) return KILN_IO_ERROR;
    if (got < 4)
        return kiln_set_error(KILN_IO_ERROR, "%s: truncated IDX file: %lld bytes, too short for the 4-byte magic",
                              path, (long long)got);
    uint32_t magic = be32(hdr);
    unsigned type = hdr[2], ndims = hdr[3];
    if (hdr[0] != 0 || hdr[1] != 0)
        return kiln_set_error(KILN_IO_ERROR, "%s: not an IDX file (magic 0x%08X; expected 0x00000801 for labels or "
                              "0x00000803 for images)", path, (unsigned)magic);
    if (type != 0x08)
        return kiln_set_error(KILN_UNSUPPORTED, "%s: IDX element type 0x%02X (%s) is not supported (magic 0x%08X); Kiln "
                              "reads unsigned-byte IDX files: 0x00000801 labels, 0x00000803 images",
                              path, type, idx_type_name(type), (unsigned)magic);
    if (ndims < 1 || ndims > KILN_MAX_DIMS)
        return kiln_set_error(KILN_UNSUPPORTED, "%s: IDX file has %u dimensions (magic 0x%08X); Kiln reads 1..%d",
                              path, ndims, (unsigned)magic, KILN_MAX_DIMS);
    got = src_read(s, hdr + 4, 4 * (size_t)ndims);
    if (got < 0) return KILN_IO_ERROR;
    if (got < 4 * (int64_t)ndims)
        return kiln_set_error(KILN_IO_ERROR, "%s: truncated IDX header: %u dimensions need %u header bytes, %s is %lld",
                              path, ndims, 4 + 4 * ndims, s->is_gz ? "decompressed size" : "file size", (long long)(4 + got));
    *shape = (kiln_shape){ (int)ndims, { 0 } };
    *numel = 1;
    const uint64_t limit = (uint64_t)1 << 46;   /* 64 TiB of u8: far beyond any real IDX file */
    for (unsigned i = 0; i < ndims; i++) {
        uint32_t d = be32(hdr + 4 + 4 * i);
        if (d == 0) return kiln_set_error(KILN_IO_ERROR, "%s: IDX dimension %u is 0", path, i);
        if (*numel > limit / d)
            return kiln_set_error(KILN_IO_ERROR, "%s: IDX dimensions overflow (product of the %u dimensions exceeds 2^46 "
                                  "elements); the header is corrupt", path, ndims);
        *numel *= d;
        shape->dim[i] = d;
    }
    return KILN_OK;
}

/* Gzip data: the decompressed size is unknown until read, so a corrupt header must not make us
 * allocate its promised size up front: read into a buffer that grows as data arrives. *t is made
 * only when all numel bytes came; *got: the bytes read (-1 on a read error). */
static kiln_status read_gz_data(idx_src *s, const char *path, kiln_shape shape, uint64_t numel, kiln_tensor **t, int64_t *got) {
    size_t cap = numel < ((size_t)1 << 20) ? (size_t)numel : ((size_t)1 << 20), len = 0;
    unsigned char *buf = kiln_malloc(cap);
    if (!buf) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of memory", path);
    *got = 0;
    for (;;) {
        int64_t r = src_read(s, buf + len, cap - len);
        if (r < 0) { *got = -1; break; }
        len += (size_t)r;
        if (len < cap || len == numel) { *got = (int64_t)len; break; }
        size_t ncap = cap * 2 > numel ? (size_t)numel : cap * 2;
        unsigned char *nb = kiln_realloc(buf, ncap);
        if (!nb) {
            kiln_free(buf);
            return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of memory reading %llu bytes", path, (unsigned long long)numel);
        }
        buf = nb;
        cap = ncap;
    }
    if (*got == (int64_t)numel) {
        *t = kiln_tensor_new(KILN_U8, shape);
        if (*t) memcpy((*t)->data, buf, (size_t)numel);
    }
    kiln_free(buf);
    if (*got == (int64_t)numel && !*t)
        return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: cannot allocate %llu bytes for the IDX data", path, (unsigned long long)numel);
    return KILN_OK;
}

/* The data after the header into a new u8 tensor *t, checking the file holds exactly numel bytes
 * (raw files by their size before allocating anything; gzip by reading to the end). */
static kiln_status read_data(idx_src *s, const char *path, kiln_shape shape, uint64_t numel, kiln_tensor **t) {
    const char *what = s->is_gz ? "decompressed size" : "file size";
    const int64_t header_bytes = 4 + 4 * (int64_t)shape.rank;
    const int64_t expect_total = header_bytes + (int64_t)numel;
    char sb[96];
    if (!s->is_gz && s->raw_size >= 0 && s->raw_size != expect_total)
        return kiln_set_error(KILN_IO_ERROR, "%s: %s IDX file: header promises %s u8 = %llu data bytes (%lld bytes with "
                              "the header), file size is %lld bytes (%s %lld)",
                              path, s->raw_size < expect_total ? "truncated" : "trailing data in",
                              kiln_shape_str(shape, sb, sizeof sb), (unsigned long long)numel,
                              (long long)expect_total, (long long)s->raw_size,
                              s->raw_size < expect_total ? "missing" : "extra",
                              (long long)(s->raw_size < expect_total ? expect_total - s->raw_size : s->raw_size - expect_total));
    int64_t got = 0;
    if (!s->is_gz) {
        *t = kiln_tensor_new(KILN_U8, shape);
        if (!*t) return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: cannot allocate %llu bytes for the IDX data",
                                       path, (unsigned long long)numel);
        got = src_read(s, (*t)->data, (size_t)numel);
    } else {
        kiln_status st = read_gz_data(s, path, shape, numel, t, &got);
        if (st != KILN_OK) return st;
    }
    if (got < 0) return KILN_IO_ERROR;
    if (got < (int64_t)numel)
        return kiln_set_error(KILN_IO_ERROR, "%s: truncated IDX file: header promises %s u8 = %llu data bytes (%lld bytes "
                              "with the header), %s is %lld bytes", path, kiln_shape_str(shape, sb, sizeof sb),
                              (unsigned long long)numel, (long long)expect_total, what, (long long)(header_bytes + got));
    int64_t rest = src_count_rest(s);     /* for gzip this also checks the trailer and what follows */
    if (rest < 0) return KILN_IO_ERROR;
    if (rest > 0)
        return kiln_set_error(KILN_IO_ERROR, "%s: trailing data in IDX file: header promises %s u8 = %llu data bytes "
                              "(%lld bytes with the header), %s is %lld bytes (extra %lld)", path,
                              kiln_shape_str(shape, sb, sizeof sb), (unsigned long long)numel, (long long)expect_total,
                              what, (long long)(expect_total + rest), (long long)rest);
    return KILN_OK;
}

kiln_status kiln_idx_read(const char *path, kiln_tensor **out) {
    if (out) *out = NULL;
    if (!path || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_idx_read: path and out must not be NULL");
    idx_src s;
    kiln_status st = src_open(&s, path);
    if (st != KILN_OK) return st;
    kiln_shape shape;
    uint64_t numel = 0;
    kiln_tensor *t = NULL;
    st = read_header(&s, path, &shape, &numel);
    if (st == KILN_OK) st = read_data(&s, path, shape, numel, &t);
    src_close(&s);
    if (st != KILN_OK) { kiln_tensor_free(t); return st; }
    *out = t;
    return KILN_OK;
}

/* ---- MNIST-layout directory ---- */

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Finds dir/name or dir/name.gz (a regular file preferred); buf receives the path. A name that
 * exists but is not a regular file (a FIFO, a directory) is chosen too, so that opening it says
 * "not a regular file" instead of "not found". */
static kiln_status find_idx(const char *dir, const char *name, char *buf, size_t n) {
    static const char *const ext[2] = { "", ".gz" };
    int exists = -1;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 2; i++) {
            int w = snprintf(buf, n, "%s/%s%s", dir, name, ext[i]);
            if (w < 0 || (size_t)w >= n) return kiln_set_error(KILN_INVALID_ARGUMENT, "mnist: path too long: %s/%s%s", dir, name, ext[i]);
            if (pass == 0 ? is_file(buf) : exists == i) return KILN_OK;
            struct stat st;
            if (pass == 0 && exists < 0 && stat(buf, &st) == 0) exists = i;
        }
    return kiln_set_error(KILN_NOT_FOUND, "mnist: %s/%s (or %s.gz) not found; " IDX_INSTALL_HINT, dir, name, name);
}

/* Loads one split: images [N, H, W] u8 + labels [N] u8 -> dataset (f32 [N, H, W, 1] in [0, 1], i32). */
static kiln_status load_split(const char *dir, const char *img_name, const char *lbl_name, kiln_dataset **out) {
    char ipath[4096], lpath[4096];
    kiln_status st = find_idx(dir, img_name, ipath, sizeof ipath);
    if (st != KILN_OK) return st;
    st = find_idx(dir, lbl_name, lpath, sizeof lpath);
    if (st != KILN_OK) return st;

    kiln_tensor *img = NULL, *lbl = NULL;
    st = kiln_idx_read(ipath, &img);
    if (st != KILN_OK) return st;
    st = kiln_idx_read(lpath, &lbl);
    if (st != KILN_OK) { kiln_tensor_free(img); return st; }

    if (img->shape.rank != 3) {
        char sb[96];
        st = kiln_set_error(KILN_IO_ERROR, "%s: expected images [N, H, W] (magic 0x00000803), got shape %s", ipath,
                            kiln_shape_str(img->shape, sb, sizeof sb));
        goto fail;
    }
    if (lbl->shape.rank != 1) {
        char sb[96];
        st = kiln_set_error(KILN_IO_ERROR, "%s: expected labels [N] (magic 0x00000801), got shape %s", lpath,
                            kiln_shape_str(lbl->shape, sb, sizeof sb));
        goto fail;
    }
    int64_t n = img->shape.dim[0];
    if (lbl->shape.dim[0] != n) {
        st = kiln_set_error(KILN_IO_ERROR, "mnist: %s holds %lld images but %s holds %lld labels", ipath, (long long)n,
                            lpath, (long long)lbl->shape.dim[0]);
        goto fail;
    }
    const uint8_t *lb = lbl->data;
    for (int64_t i = 0; i < n; i++)
        if (lb[i] >= 10) {
            st = kiln_set_error(KILN_IO_ERROR, "%s: label %u at index %lld is out of range (MNIST classes are 0..9)", lpath,
                                (unsigned)lb[i], (long long)i);
            goto fail;
        }

    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(n, img->shape.dim[1], img->shape.dim[2], 1));
    kiln_tensor *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(n));
    if (!x || !y) {
        kiln_tensor_free(x);
        kiln_tensor_free(y);
        st = kiln_set_error(KILN_OUT_OF_MEMORY, "mnist: out of memory converting %s", ipath);
        goto fail;
    }
    const uint8_t *px = img->data;
    float *fx = x->data;
    int64_t total = kiln_shape_numel(img->shape);
    for (int64_t i = 0; i < total; i++) fx[i] = (float)px[i] * (1.0f / 255.0f);
    int32_t *iy = y->data;
    for (int64_t i = 0; i < n; i++) iy[i] = lb[i];
    kiln_tensor_free(img);
    kiln_tensor_free(lbl);
    *out = kiln_dataset_adopt(x, y, 10);
    if (!*out) return kiln_set_error(KILN_OUT_OF_MEMORY, "mnist: out of memory");
    return KILN_OK;
fail:
    kiln_tensor_free(img);
    kiln_tensor_free(lbl);
    return st;
}

kiln_status kiln_mnist_load(const char *dir, kiln_dataset **train, kiln_dataset **test) {
    if (train) *train = NULL;
    if (test) *test = NULL;
    if (!dir || !*dir) dir = KILN_FASHION_MNIST_DIR;
    struct stat st;
    if (stat(dir, &st) != 0)
        return kiln_set_error(KILN_NOT_FOUND, "mnist: dataset directory %s not found (%s); " IDX_INSTALL_HINT, dir,
                              strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return kiln_set_error(KILN_NOT_FOUND, "mnist: %s is not a directory; " IDX_INSTALL_HINT, dir);
    kiln_dataset *tr = NULL, *te = NULL;
    kiln_status s;
    if (train) {
        s = load_split(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", &tr);
        if (s != KILN_OK) return s;
    }
    if (test) {
        s = load_split(dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", &te);
        if (s != KILN_OK) { kiln_dataset_free(tr); return s; }
    }
    if (tr && te) {
        kiln_shape a = kiln_dataset_example_shape(tr), b = kiln_dataset_example_shape(te);
        if (!kiln_shape_equal(a, b)) {
            char sa[96], sb[96];
            kiln_dataset_free(tr);
            kiln_dataset_free(te);
            return kiln_set_error(KILN_IO_ERROR, "mnist: %s: train images are %s but test images are %s", dir,
                                  kiln_shape_str(a, sa, sizeof sa), kiln_shape_str(b, sb, sizeof sb));
        }
    }
    if (train) *train = tr;
    if (test) *test = te;
    return KILN_OK;
}
