/* Image folders ROOT/CLASS_NAME/{*.png,*.jpg,*.jpeg}, decoded with libpng (simplified API) and
 * libjpeg-turbo (libjpeg API, setjmp error handling, warnings about corrupt data are errors, but
 * for extraneous bytes between segments).
 * Headers are checked when opening (same size everywhere); pixels are decoded on the pipeline's
 * worker threads. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <png.h>
#include <jpeglib.h>
#include <jerror.h>   /* JWRN_* message codes */
#include "core/core.h"
#include "data/pipeline_internal.h"
#include "io/name_index.h"
#include "io/read_file.h"

/* ---- decoding ---- */

typedef struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    bool warned;
} jerr;

static void j_error_exit(j_common_ptr c) {
    jerr *e = (jerr *)c->err;
    (*c->err->format_message)(c, e->msg);
    longjmp(e->jb, 1);
}

static void j_emit(j_common_ptr c, int level) {
    jerr *e = (jerr *)c->err;
    /* "N extraneous bytes before marker": junk between segments, common in real photo folders and
     * harmless to the pixels (TensorFlow and PIL decode such files too). Every other warning means
     * truncated or corrupt image data, so wrong pixels: an error. */
    if (level < 0 && c->err->msg_code == JWRN_EXTRANEOUS_DATA) return;
    if (level < 0 && !e->warned) {      /* a warning: corrupt or truncated data */
        (*c->err->format_message)(c, e->msg);
        e->warned = true;
    }
}

static void j_init(struct jpeg_decompress_struct *ci, jerr *e) {
    memset(e, 0, sizeof *e);
    ci->err = jpeg_std_error(&e->pub);
    e->pub.error_exit = j_error_exit;
    e->pub.emit_message = j_emit;
}

static kiln_status check_dims(const char *name, int64_t w, int64_t h) {
    if (w < 1 || h < 1 || w > 65535 || h > 65535 || w * h > KILN_IMAGE_MAX_PIXELS)
        return kiln_set_error(KILN_IO_ERROR, "%s: image size %lldx%lld is empty or too large (at most %lld pixels)", name,
                              (long long)w, (long long)h, (long long)KILN_IMAGE_MAX_PIXELS);
    return KILN_OK;
}

static kiln_status jpeg_channels(const char *name, J_COLOR_SPACE cs, int *c) {
    if (cs == JCS_GRAYSCALE) { *c = 1; return KILN_OK; }
    if (cs == JCS_RGB || cs == JCS_YCbCr) { *c = 3; return KILN_OK; }
    return kiln_set_error(KILN_UNSUPPORTED, "%s: JPEG colour space %d (CMYK / YCCK / unknown) is not supported; convert "
                          "it to RGB", name, (int)cs);
}

kiln_status kiln_image_probe(const char *name, FILE *f, kiln_image_info *info) {
    unsigned char m[4] = { 0 };
    size_t got = fread(m, 1, 4, f);
    rewind(f);
    if (got >= 4 && m[0] == 0x89 && m[1] == 'P' && m[2] == 'N' && m[3] == 'G') {
        png_image img;
        memset(&img, 0, sizeof img);
        img.version = PNG_IMAGE_VERSION;
        if (!png_image_begin_read_from_stdio(&img, f)) {
            kiln_status s = kiln_set_error(KILN_IO_ERROR, "%s: corrupt PNG header: %s", name, img.message);
            png_image_free(&img);
            return s;
        }
        info->width = (int)img.width;
        info->height = (int)img.height;
        info->channels = (img.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
        png_image_free(&img);
        return check_dims(name, img.width, img.height);
    }
    if (got >= 3 && m[0] == 0xFF && m[1] == 0xD8 && m[2] == 0xFF) {
        struct jpeg_decompress_struct ci;
        jerr e;
        j_init(&ci, &e);
        if (setjmp(e.jb)) {
            jpeg_destroy_decompress(&ci);
            return kiln_set_error(KILN_IO_ERROR, "%s: corrupt JPEG header: %s", name, e.msg);
        }
        jpeg_create_decompress(&ci);
        jpeg_stdio_src(&ci, f);
        jpeg_read_header(&ci, TRUE);
        int c = 0;
        kiln_status s = jpeg_channels(name, ci.jpeg_color_space, &c);
        info->width = (int)ci.image_width;
        info->height = (int)ci.image_height;
        info->channels = c;
        jpeg_destroy_decompress(&ci);
        if (s != KILN_OK) return s;
        return check_dims(name, info->width, info->height);
    }
    return kiln_set_error(KILN_IO_ERROR, "%s: not a PNG or JPEG file (first bytes %02X %02X %02X %02X)", name, m[0], m[1],
                          m[2], m[3]);
}

static kiln_status decode_png(const char *name, const uint8_t *buf, size_t n, int channels, kiln_image_info *info,
                              uint8_t **pixels) {
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, buf, n)) {
        kiln_status s = kiln_set_error(KILN_IO_ERROR, "%s: corrupt PNG: %s", name, img.message);
        png_image_free(&img);
        return s;
    }
    kiln_status s = check_dims(name, img.width, img.height);
    if (s != KILN_OK) { png_image_free(&img); return s; }
    img.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    size_t size = (size_t)img.width * img.height * (size_t)channels;
    uint8_t *p = kiln_calloc(size, 1);    /* zeroed: alpha is composited onto black */
    if (!p) { png_image_free(&img); return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of memory", name); }
    if (!png_image_finish_read(&img, NULL, p, 0, NULL)) {
        s = kiln_set_error(KILN_IO_ERROR, "%s: corrupt or truncated PNG: %s", name, img.message);
        png_image_free(&img);
        kiln_free(p);
        return s;
    }
    info->width = (int)img.width;
    info->height = (int)img.height;
    info->channels = channels;
    png_image_free(&img);
    *pixels = p;
    return KILN_OK;
}

static kiln_status decode_jpeg(const char *name, const uint8_t *buf, size_t n, int channels, kiln_image_info *info,
                               uint8_t **pixels) {
    struct jpeg_decompress_struct ci;
    jerr e;
    uint8_t *volatile p = NULL;
    j_init(&ci, &e);
    if (setjmp(e.jb)) {
        jpeg_destroy_decompress(&ci);
        kiln_free(p);
        return kiln_set_error(KILN_IO_ERROR, "%s: corrupt JPEG: %s", name, e.msg);
    }
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, buf, (unsigned long)n);
    jpeg_read_header(&ci, TRUE);
    int c = 0;
    kiln_status s = jpeg_channels(name, ci.jpeg_color_space, &c);
    if (s == KILN_OK) s = check_dims(name, ci.image_width, ci.image_height);
    if (s != KILN_OK) { jpeg_destroy_decompress(&ci); return s; }
    ci.out_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_start_decompress(&ci);
    if ((int)ci.output_components != channels || ci.output_width != ci.image_width || ci.output_height != ci.image_height) {
        jpeg_destroy_decompress(&ci);
        return kiln_set_error(KILN_IO_ERROR, "%s: JPEG decoder gave %d channels, expected %d", name,
                              (int)ci.output_components, channels);
    }
    size_t row = (size_t)ci.output_width * (size_t)channels;
    p = kiln_malloc(row * ci.output_height);
    if (!p) {
        jpeg_destroy_decompress(&ci);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of memory", name);
    }
    while (ci.output_scanline < ci.output_height) {
        JSAMPROW r = p + row * ci.output_scanline;
        if (jpeg_read_scanlines(&ci, &r, 1) != 1 || e.warned) break;   /* corrupt data: stop early */
    }
    bool complete = ci.output_scanline == ci.output_height;
    if (complete) jpeg_finish_decompress(&ci);
    info->width = (int)ci.output_width;
    info->height = (int)ci.output_height;
    info->channels = channels;
    jpeg_destroy_decompress(&ci);
    if (!complete || e.warned) {
        kiln_free(p);
        return kiln_set_error(KILN_IO_ERROR, "%s: corrupt or truncated JPEG: %s", name,
                              e.warned ? e.msg : "image data ends early");
    }
    *pixels = p;
    return KILN_OK;
}

kiln_status kiln_image_decode(const char *name, const uint8_t *buf, size_t n, int channels, kiln_image_info *info,
                              uint8_t **pixels) {
    *pixels = NULL;
    if (channels != 1 && channels != 3)
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: can decode to 1 or 3 channels, not %d", name, channels);
    if (n >= 8 && buf[0] == 0x89 && buf[1] == 'P' && buf[2] == 'N' && buf[3] == 'G')
        return decode_png(name, buf, n, channels, info, pixels);
    if (n >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF)
        return decode_jpeg(name, buf, n, channels, info, pixels);
    return kiln_set_error(KILN_IO_ERROR, "%s: not a PNG or JPEG file (%zu bytes)", name, n);
}

/* ---- one file ---- */

static kiln_status read_image(const char *path, int channels, kiln_image_info *info, uint8_t **px) {
    uint8_t *buf = NULL;
    size_t n = 0;
    kiln_status st = kiln_read_whole_file(path, &buf, &n);
    if (st != KILN_OK) return st;
    if (channels == 0) {       /* the file's own: 3 if it has colour */
        FILE *f;
        if ((st = kiln_file_open_read(path, "image", &f, NULL))) { kiln_free(buf); return st; }
        st = kiln_image_probe(path, f, info);
        fclose(f);
        channels = info->channels;
    }
    if (st == KILN_OK) st = kiln_image_decode(path, buf, n, channels, info, px);
    kiln_free(buf);
    return st;
}

kiln_status kiln_image_load(const char *path, kiln_shape want, kiln_tensor **out, bool *resized) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_image_load: out is NULL");
    *out = NULL;
    if (resized) *resized = false;
    if (!path) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_image_load: path is NULL");
    bool keep = want.rank == 0;
    if (!keep && (want.rank != 3 || (want.dim[2] != 1 && want.dim[2] != 3) || want.dim[0] < 1 || want.dim[1] < 1 ||
                  want.dim[0] * want.dim[1] > KILN_IMAGE_MAX_PIXELS))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_image_load: %s: want an [H, W, 1] or [H, W, 3] shape", path);
    kiln_image_info info;
    uint8_t *px = NULL;
    kiln_status st = read_image(path, keep ? 0 : (int)want.dim[2], &info, &px);
    if (st != KILN_OK) return st;
    int64_t h = keep ? info.height : want.dim[0], w = keep ? info.width : want.dim[1], c = info.channels;
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(h, w, c));
    if (!t) { kiln_free(px); return kiln_set_error(KILN_OUT_OF_MEMORY, "%s: out of memory", path); }
    float *x = t->data;
    for (int64_t i = 0; i < h; i++) {          /* nearest neighbour: source pixel under each centre */
        int64_t si = (2 * i + 1) * info.height / (2 * h);
        for (int64_t j = 0; j < w; j++) {
            int64_t sj = (2 * j + 1) * info.width / (2 * w);
            for (int64_t k = 0; k < c; k++) x[(i * w + j) * c + k] = px[(si * info.width + sj) * c + k] * (1.0f / 255.0f);
        }
    }
    kiln_free(px);
    if (resized) *resized = h != info.height || w != info.width;
    *out = t;
    return KILN_OK;
}

/* ---- the folder source ---- */

typedef struct images_impl {
    char **paths;
    int32_t *labels;
    int64_t n;
    int width, height, channels;
} images_impl;

static kiln_status images_get(const kiln_source *s, int64_t i, float *x, int32_t *label) {
    const images_impl *im = s->impl;
    uint8_t *buf, *px;
    size_t n;
    kiln_status st = kiln_read_whole_file(im->paths[i], &buf, &n);
    if (st != KILN_OK) return st;
    kiln_image_info info;
    st = kiln_image_decode(im->paths[i], buf, n, im->channels, &info, &px);
    kiln_free(buf);
    if (st != KILN_OK) return st;
    if (info.width != im->width || info.height != im->height) {
        kiln_free(px);
        return kiln_set_error(KILN_IO_ERROR, "%s: image is %dx%d but the data set's images are %dx%d (the file changed?)",
                              im->paths[i], info.width, info.height, im->width, im->height);
    }
    size_t total = (size_t)im->width * im->height * im->channels;
    for (size_t k = 0; k < total; k++) x[k] = px[k] * (1.0f / 255.0f);
    kiln_free(px);
    *label = im->labels[i];
    return KILN_OK;
}

static void images_destroy(kiln_source *s) {
    images_impl *im = s->impl;
    if (!im) return;
    for (int64_t i = 0; i < im->n; i++) kiln_free(im->paths[i]);
    kiln_free(im->paths);
    kiln_free(im->labels);
    kiln_free(im);
}

typedef struct name_list { char **v; int64_t n, cap; } name_list;

static bool list_push(name_list *l, const char *s) {
    if (l->n == l->cap) {
        int64_t nc = l->cap ? l->cap * 2 : 16;
        char **nv = kiln_realloc(l->v, sizeof(char *) * (size_t)nc);
        if (!nv) return false;
        l->v = nv;
        l->cap = nc;
    }
    if (!(l->v[l->n] = kiln_strdup(s))) return false;
    l->n++;
    return true;
}

static void list_free(name_list *l) {
    for (int64_t i = 0; i < l->n; i++) kiln_free(l->v[i]);
    kiln_free(l->v);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool is_image_name(const char *s) {
    const char *dot = strrchr(s, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* Entries of dir that are directories (want_dirs) or image files, sorted. */
static kiln_status list_dir(const char *dir, bool want_dirs, name_list *out) {
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        return kiln_set_error(e == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR, "images: cannot open folder %s: %s", dir,
                              strerror(e));
    }
    struct dirent *de;
    char path[4352];
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        /* an image name that is not a regular file (a FIFO) is listed so that reading it says so */
        bool ok = want_dirs ? S_ISDIR(st.st_mode) : (!S_ISDIR(st.st_mode) && is_image_name(de->d_name));
        if (ok && !list_push(out, de->d_name)) {
            closedir(d);
            return kiln_set_error(KILN_OUT_OF_MEMORY, "images: out of memory listing %s", dir);
        }
    }
    closedir(d);
    if (out->n > 1) qsort(out->v, (size_t)out->n, sizeof(char *), cmp_str);
    return KILN_OK;
}

static const char *given_name(const void *names, int i) { return ((const char *const *)names)[i]; }

/* Labels: the sub-folder's rank (given NULL), or its position in given (a test split labelled as
 * its training split: classes are matched by name, never by rank). */
static kiln_status from_images(const char *dir, const char *const *given, int n_given, kiln_data **out) {
    if (out) *out = NULL;
    if (!dir || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "images: dir and out must not be NULL");
    name_list classes = { 0 }, files = { 0 }, paths = { 0 };
    kiln_name_index idx;
    kiln_name_index_init(&idx, given_name, given);
    int32_t *labels = NULL;
    images_impl *im = NULL;
    kiln_source *src = NULL;
    kiln_status st = list_dir(dir, true, &classes);
    if (st != KILN_OK) goto done;
    if (classes.n == 0) {
        st = kiln_set_error(KILN_NOT_FOUND, "images: %s has no class sub-folders (expected %s/CLASS_NAME/*.png|*.jpg)",
                            dir, dir);
        goto done;
    }
    if (classes.n > 1000000) { st = kiln_set_error(KILN_IO_ERROR, "images: %s has too many class folders", dir); goto done; }
    for (int i = 0; given && i < n_given; i++)
        if (!given[i] || kiln_name_index_find(&idx, given[i]) >= 0 || !kiln_name_index_add(&idx, i)) {
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "images: class list for %s: entry %d is NULL, repeated or out of memory", dir, i);
            goto done;
        }
    char path[8704], cdir[4352];
    for (int64_t c = 0; c < classes.n; c++) {
        int32_t label = (int32_t)c;
        if (given && (label = kiln_name_index_find(&idx, classes.v[c])) < 0) {
            st = kiln_set_error(KILN_INVALID_ARGUMENT, "images: class folder %s/%s is not one of the %d training classes "
                                "(first: '%s'); the evaluation split's folders must be named as the training split's",
                                dir, classes.v[c], n_given, n_given ? given[0] : "");
            goto done;
        }
        snprintf(cdir, sizeof cdir, "%s/%s", dir, classes.v[c]);
        list_free(&files);
        if ((st = list_dir(cdir, false, &files)) != KILN_OK) goto done;
        if (files.n == 0) {
            st = kiln_set_error(KILN_NOT_FOUND, "images: class folder %s has no .png / .jpg / .jpeg images", cdir);
            goto done;
        }
        int32_t *nl = kiln_realloc(labels, sizeof(int32_t) * (size_t)(paths.n + files.n));
        if (!nl) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "images: out of memory"); goto done; }
        labels = nl;
        for (int64_t f = 0; f < files.n; f++) {
            snprintf(path, sizeof path, "%s/%s", cdir, files.v[f]);
            labels[paths.n] = label;
            if (!list_push(&paths, path)) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "images: out of memory"); goto done; }
        }
    }
    if (given) {      /* the names of the given list, in its order */
        list_free(&classes);
        for (int i = 0; i < n_given; i++)
            if (!list_push(&classes, given[i])) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "images: out of memory"); goto done; }
    }
    kiln_image_info first = { 0, 0, 0 };
    int channels = 1;
    for (int64_t i = 0; i < paths.n; i++) {
        FILE *f;
        if ((st = kiln_file_open_read(paths.v[i], "image", &f, NULL))) goto done;      /* a FIFO: refused, not waited on */
        kiln_image_info info;
        st = kiln_image_probe(paths.v[i], f, &info);
        fclose(f);
        if (st != KILN_OK) goto done;
        if (i == 0) first = info;
        else if (info.width != first.width || info.height != first.height) {
            st = kiln_set_error(KILN_IO_ERROR, "images: %s is %dx%d (WxH) but %s is %dx%d: all images must have the same "
                                "size (Kiln does not resize)", paths.v[i], info.width, info.height, paths.v[0],
                                first.width, first.height);
            goto done;
        }
        if (info.channels == 3) channels = 3;
    }
    im = kiln_calloc(1, sizeof *im);
    src = kiln_source_new();
    if (!im || !src) { st = kiln_set_error(KILN_OUT_OF_MEMORY, "images: out of memory"); goto done; }
    im->paths = paths.v;
    im->n = paths.n;
    im->labels = labels;
    im->width = first.width;
    im->height = first.height;
    im->channels = channels;
    memset(&paths, 0, sizeof paths);
    labels = NULL;
    src->shape = KILN_SHAPE(first.height, first.width, channels);
    src->n = im->n;
    src->num_classes = (int)classes.n;
    src->class_names = classes.v;
    memset(&classes, 0, sizeof classes);
    src->get = images_get;
    src->destroy = images_destroy;
    src->impl = im;
    im = NULL;
    *out = kiln_data_from_source(src);
    src = NULL;
    st = *out ? KILN_OK : KILN_OUT_OF_MEMORY;
done:
    kiln_name_index_free(&idx);
    list_free(&classes);
    list_free(&files);
    list_free(&paths);
    kiln_free(labels);
    kiln_free(im);
    kiln_source_free(src);
    return st;
}

kiln_status kiln_data_from_images(const char *dir, kiln_data **out) { return from_images(dir, NULL, 0, out); }

kiln_status kiln_data_from_images_classes(const char *dir, const char *const *classes, int n_classes, kiln_data **out) {
    if (!classes || n_classes < 1) {
        if (out) *out = NULL;
        return kiln_set_error(KILN_INVALID_ARGUMENT, "images: %s: the class list is empty", dir ? dir : "(null)");
    }
    return from_images(dir, classes, n_classes, out);
}
