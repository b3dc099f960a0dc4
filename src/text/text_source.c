/* kiln_data_from_text: a text file's token ids as two pipeline sources for a causal language
 * model, windows of block_size + 1 tokens cut into inputs (f32 ids, what an Embedding takes) and
 * next-token labels [block_size]: every start in the training head (shuffle and take them for
 * random windows), consecutive windows in the held-out tail. */
#include <string.h>
#include "core/core.h"
#include "data/pipeline_internal.h"
#include "text/text_internal.h"

typedef struct text_impl {
    int32_t *ids;      /* this part's tokens (kiln_malloc'd) */
    int64_t T, stride; /* window length; distance between window starts */
} text_impl;

static kiln_status text_get(const kiln_source *s, int64_t i, float *x, int32_t *label) {
    const text_impl *im = s->impl;
    const int32_t *w = im->ids + i * im->stride;
    for (int64_t k = 0; k < im->T; k++) x[k] = (float)w[k];
    memcpy(label, w + 1, sizeof(int32_t) * (size_t)im->T);
    return KILN_OK;
}

static void text_destroy(kiln_source *s) {
    text_impl *im = s->impl;
    if (im) kiln_free(im->ids);
    kiln_free(im);
}

/* A source over ids[0..n) (copied): windows at starts 0, stride, 2 stride, ... (`windows` of them). */
static kiln_status part(const int32_t *ids, size_t n, int T, int64_t stride, int64_t windows, int vocab, kiln_data **out) {
    text_impl *im = kiln_calloc(1, sizeof *im);
    kiln_source *s = im ? kiln_source_new() : NULL;
    if (im) im->ids = kiln_malloc(n * sizeof *ids);
    if (!s || !im->ids) {
        if (im) kiln_free(im->ids);
        kiln_free(im);
        kiln_free(s);
        return kiln_set_error(KILN_OUT_OF_MEMORY, "text data: out of host memory for %zu tokens", n);
    }
    memcpy(im->ids, ids, n * sizeof *ids);
    im->T = T;
    im->stride = stride;
    s->shape = KILN_SHAPE(T);
    s->label_shape = KILN_SHAPE(T);
    s->n = windows;
    s->num_classes = vocab;
    s->get = text_get;
    s->destroy = text_destroy;
    s->impl = im;
    return (*out = kiln_data_from_source(s)) ? KILN_OK : kiln_set_error(KILN_OUT_OF_MEMORY, "text data: out of host memory");
}

kiln_status kiln_data_from_text(const char *path, const kiln_text_data_opts *o, kiln_data **train, kiln_data **val) {
    if (train) *train = NULL;
    if (val) *val = NULL;
    if (!path || !o || !train || !val) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_from_text: NULL argument");
    double f = o->validation_split > 0 ? o->validation_split : 0.1;
    if (o->block_size < 1 || o->block_size > (1 << 24))
        return kiln_set_error(KILN_INVALID_ARGUMENT, "text data %s: the block size %d must be 1 or more (tokens per window)", path, o->block_size);
    if (!(f < 1)) return kiln_set_error(KILN_INVALID_ARGUMENT, "text data %s: the validation split %g must be below 1", path, f);
    int32_t *ids;
    size_t n;
    kiln_status st = kiln_text_read_ids(path, o->tokenizer, &ids, &n);
    if (st) return st;
    int vocab = o->tokenizer ? kiln_tokenizer_vocab_size(o->tokenizer) : 256;
    size_t T = (size_t)o->block_size, cut = kiln_text_split(n, f), nv = n - cut;
    if (cut < T + 1 || nv < T + 1) {
        kiln_text_free(ids);
        return kiln_set_error(KILN_INVALID_ARGUMENT, "text data %s: %zu tokens are too few for block size %zu: the training part (%zu tokens) and "
                              "the held-out %g (%zu tokens) each need at least block size + 1 = %zu; use a smaller --block-size or a longer text",
                              path, n, T, cut, f, nv, T + 1);
    }
    st = part(ids, cut, (int)T, 1, (int64_t)(cut - T), vocab, train);
    if (!st) st = part(ids + cut, nv, (int)T, (int64_t)T, (int64_t)((nv - 1) / T), vocab, val);
    kiln_text_free(ids);
    if (st) { kiln_data_free(*train); *train = NULL; }
    return st;
}

int64_t kiln_text_epoch_windows(const kiln_data *train) {
    int64_t T = kiln_data_example_shape(train).dim[0], n = kiln_data_source_size(train);
    return T > 0 && n + T >= T ? (n + T) / T : 0;   /* the training tokens / block size (n + T tokens hold n windows) */
}
