/* Input pipeline nodes: construction of the chain, properties, freeing. Iteration lives in
 * pipeline_iter.c, sources in pipeline_open.c, cifar.c and images.c. */
#include <stdio.h>
#include <string.h>
#include "core/core.h"
#include "data/pipeline_internal.h"

static const char *node_name[KILN_DN_COUNT] = {
    "source", "map", "shuffle", "batch", "repeat", "take", "skip", "cache", "normalize", "augment", "prefetch", "shard",
};

kiln_source *kiln_source_new(void) {
    kiln_source *s = kiln_calloc(1, sizeof *s);
    if (!s) kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory");
    return s;
}

void kiln_source_free(kiln_source *s) {
    if (!s) return;
    if (s->destroy) s->destroy(s);
    if (s->class_names) {
        for (int i = 0; i < s->num_classes; i++) kiln_free(s->class_names[i]);
        kiln_free(s->class_names);
    }
    kiln_free(s);
}

static void cache_free(kiln_data_cache_store *c) {
    if (!c) return;
    pthread_mutex_destroy(&c->mu);
    kiln_free(c->x);
    kiln_free(c->y);
    kiln_free((void *)c->state);
    kiln_free(c);
}

void kiln_data_free(kiln_data *d) {
    while (d) {
        kiln_data *in = d->borrows_input ? NULL : d->input;
        if (d->kind == KILN_DN_SOURCE) kiln_source_free(d->src);
        kiln_free(d->mean);
        kiln_free(d->std);
        cache_free(d->cache);
        kiln_free(d);
        d = in;
    }
}

kiln_data *kiln_data_from_source(kiln_source *s) {
    if (!s) return NULL;
    kiln_data *d = kiln_calloc(1, sizeof *d);
    if (!d) {
        kiln_source_free(s);
        kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory");
        return NULL;
    }
    d->kind = KILN_DN_SOURCE;
    d->src = s;
    d->batch = 1;
    d->card = s->n;
    return d;
}

/* New node on top of `in` inheriting its properties; frees `in` on failure. */
static kiln_data *node_on(kiln_data *in, kiln_node_kind kind) {
    if (!in) return NULL;
    kiln_data *d = kiln_calloc(1, sizeof *d);
    if (!d) {
        kiln_data_free(in);
        kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory");
        return NULL;
    }
    d->kind = kind;
    d->input = in;
    d->src = in->src;
    d->batched = in->batched;
    d->batch = in->batch;
    d->card = in->card;
    d->n_elem_ops = in->n_elem_ops;
    d->has_cache = in->has_cache;
    d->prefetch_buffers = in->prefetch_buffers;
    d->prefetch_workers = in->prefetch_workers;
    return d;
}

/* Fails building: frees in, sets the error. */
static kiln_data *fail(kiln_data *in, kiln_status s, const char *msg, kiln_node_kind kind) {
    kiln_data_free(in);
    kiln_set_error(s, "data %s: %s", node_name[kind], msg);
    return NULL;
}

static kiln_data *element_node(kiln_data *in, kiln_node_kind kind) {
    if (!in) return NULL;
    if (in->batched)
        return fail(in, KILN_UNSUPPORTED, "element transforms must come before batch (put it before kiln_data_batch)", kind);
    kiln_data *d = node_on(in, kind);
    if (d) d->n_elem_ops++;
    return d;
}

kiln_data *kiln_data_map(kiln_data *in, kiln_data_map_fn fn, void *user, uint64_t seed) {
    if (in && !fn) return fail(in, KILN_INVALID_ARGUMENT, "the callback must not be NULL", KILN_DN_MAP);
    kiln_data *d = element_node(in, KILN_DN_MAP);
    if (!d) return NULL;
    d->fn = fn;
    d->user = user;
    d->seed = seed;
    return d;
}

kiln_data *kiln_data_shuffle(kiln_data *in, int64_t buffer, uint64_t seed) {
    if (!in) return NULL;
    if (in->batched) return fail(in, KILN_UNSUPPORTED, "shuffling batches is not supported; shuffle before batch", KILN_DN_SHUFFLE);
    if (buffer < 1) return fail(in, KILN_INVALID_ARGUMENT, "the buffer size must be >= 1", KILN_DN_SHUFFLE);
    kiln_data *d = node_on(in, KILN_DN_SHUFFLE);
    if (!d) return NULL;
    d->n = buffer;
    d->seed = seed;
    return d;
}

kiln_data *kiln_data_batch(kiln_data *in, int64_t n, bool drop_remainder) {
    if (!in) return NULL;
    if (in->batched) return fail(in, KILN_UNSUPPORTED, "the pipeline is already batched", KILN_DN_BATCH);
    if (n < 1 || n > ((int64_t)1 << 24)) return fail(in, KILN_INVALID_ARGUMENT, "the batch size must be in 1..2^24", KILN_DN_BATCH);
    kiln_data *d = node_on(in, KILN_DN_BATCH);
    if (!d) return NULL;
    d->n = n;
    d->drop_remainder = drop_remainder;
    d->batched = true;
    d->batch = n;
    if (in->card >= 0) d->card = drop_remainder ? in->card / n : (in->card + n - 1) / n;
    return d;
}

kiln_data *kiln_data_repeat(kiln_data *in, int64_t count) {
    if (!in) return NULL;
    if (count < -1) return fail(in, KILN_INVALID_ARGUMENT, "the count must be >= 0, or -1 for forever", KILN_DN_REPEAT);
    kiln_data *d = node_on(in, KILN_DN_REPEAT);
    if (!d) return NULL;
    d->n = count;
    if (in->card == 0 || count == 0) d->card = 0;
    else if (count < 0 || in->card < 0) d->card = -1;
    else d->card = in->card > INT64_MAX / count ? -1 : in->card * count;
    return d;
}

kiln_data *kiln_data_take(kiln_data *in, int64_t n) {
    if (!in) return NULL;
    if (n < 0) return fail(in, KILN_INVALID_ARGUMENT, "the count must be >= 0", KILN_DN_TAKE);
    kiln_data *d = node_on(in, KILN_DN_TAKE);
    if (!d) return NULL;
    d->n = n;
    d->card = in->card < 0 || in->card > n ? n : in->card;
    return d;
}

kiln_data *kiln_data_skip(kiln_data *in, int64_t n) {
    if (!in) return NULL;
    if (n < 0) return fail(in, KILN_INVALID_ARGUMENT, "the count must be >= 0", KILN_DN_SKIP);
    kiln_data *d = node_on(in, KILN_DN_SKIP);
    if (!d) return NULL;
    d->n = n;
    d->card = in->card < 0 ? -1 : (in->card > n ? in->card - n : 0);
    return d;
}

kiln_data *kiln_data_cache(kiln_data *in) {
    if (in && in->has_cache) return fail(in, KILN_UNSUPPORTED, "the pipeline already has a cache", KILN_DN_CACHE);
    kiln_data *d = element_node(in, KILN_DN_CACHE);
    if (!d) return NULL;
    d->has_cache = true;
    kiln_data_cache_store *c = kiln_calloc(1, sizeof *c);
    if (!c || pthread_mutex_init(&c->mu, NULL) != 0) {
        kiln_free(c);
        return fail(d, KILN_OUT_OF_MEMORY, "out of host memory", KILN_DN_CACHE);
    }
    d->cache = c;   /* storage allocated at the first iterator */
    return d;
}

kiln_data *kiln_data_normalize(kiln_data *in, const float *mean, const float *std, int channels) {
    if (!in) return NULL;
    kiln_shape s = in->src->shape;
    if (!mean || !std || channels < 1 || s.rank < 1 || s.dim[s.rank - 1] != channels) {
        char sb[96], msg[200];
        snprintf(msg, sizeof msg, "%d channels given (mean and std non-NULL) but examples are %s: the last dimension "
                 "is the channel count", channels, kiln_shape_str(s, sb, sizeof sb));
        return fail(in, KILN_INVALID_ARGUMENT, msg, KILN_DN_NORMALIZE);
    }
    for (int c = 0; c < channels; c++)
        if (!(std[c] > 0) || mean[c] != mean[c]) {
            char msg[120];
            snprintf(msg, sizeof msg, "channel %d: std %g must be > 0 and mean %g finite", c, std[c], mean[c]);
            return fail(in, KILN_INVALID_ARGUMENT, msg, KILN_DN_NORMALIZE);
        }
    kiln_data *d = element_node(in, KILN_DN_NORMALIZE);
    if (!d) return NULL;
    d->mean = kiln_malloc(sizeof(float) * (size_t)channels);
    d->std = kiln_malloc(sizeof(float) * (size_t)channels);
    if (!d->mean || !d->std) return fail(d, KILN_OUT_OF_MEMORY, "out of host memory", KILN_DN_NORMALIZE);
    memcpy(d->mean, mean, sizeof(float) * (size_t)channels);
    memcpy(d->std, std, sizeof(float) * (size_t)channels);
    d->channels = channels;
    return d;
}

kiln_data *kiln_data_augment(kiln_data *in, const kiln_augment_opts *o) {
    if (!in) return NULL;
    if (!o) return fail(in, KILN_INVALID_ARGUMENT, "options must not be NULL", KILN_DN_AUGMENT);
    kiln_shape s = in->src->shape;
    if (s.rank != 3) {
        char sb[96], msg[160];
        snprintf(msg, sizeof msg, "needs HWC image examples [H, W, C], got %s", kiln_shape_str(s, sb, sizeof sb));
        return fail(in, KILN_SHAPE_MISMATCH, msg, KILN_DN_AUGMENT);
    }
    if (o->crop_pad < 0 || o->crop_pad > 4096 || o->cutout_size < 0 || o->cutout_prob > 1 || o->fill != o->fill)
        return fail(in, KILN_INVALID_ARGUMENT, "crop_pad must be in 0..4096, cutout_size >= 0, cutout_prob <= 1, "
                    "fill finite", KILN_DN_AUGMENT);
    kiln_data *d = element_node(in, KILN_DN_AUGMENT);
    if (!d) return NULL;
    d->aug = *o;
    d->seed = o->seed;
    return d;
}

kiln_data *kiln_data_prefetch(kiln_data *in, int buffers, int workers) {
    if (!in) return NULL;
    if (buffers < 1 || buffers > 1024 || workers > 256)
        return fail(in, KILN_INVALID_ARGUMENT, "buffers must be in 1..1024 and workers <= 256", KILN_DN_PREFETCH);
    kiln_data *d = node_on(in, KILN_DN_PREFETCH);
    if (!d) return NULL;
    if (workers <= 0) {
        workers = kiln_threads_resolve(0);
        if (workers > 4) workers = 4;
    }
    d->prefetch_buffers = buffers;
    d->prefetch_workers = workers;
    return d;
}

static kiln_data *shard_node(kiln_data *in, int index, int count, bool borrow) {
    if (!in) return NULL;
    const char *bad = !in->batched ? "needs a batched pipeline (put it after kiln_data_batch): each batch is split"
                    : count < 1 || index < 0 || index >= count ? "index must be in 0..count-1"
                    : in->batch % count ? "the batch size must be a multiple of the number of parts" : NULL;
    if (bad) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s (batch %lld, part %d of %d)", bad, (long long)in->batch, index, count);
        if (borrow) { kiln_set_error(KILN_INVALID_ARGUMENT, "data shard: %s", msg); return NULL; }
        return fail(in, KILN_INVALID_ARGUMENT, msg, KILN_DN_SHARD);
    }
    kiln_data *d = borrow ? NULL : node_on(in, KILN_DN_SHARD);
    if (borrow) {    /* node_on would free the caller's pipeline on failure */
        kiln_data *tmp = kiln_calloc(1, sizeof *tmp);
        if (!tmp) { kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory"); return NULL; }
        *tmp = (kiln_data){ .kind = KILN_DN_SHARD, .input = in, .src = in->src, .batched = true, .card = in->card,
                            .n_elem_ops = in->n_elem_ops, .has_cache = in->has_cache, .prefetch_buffers = in->prefetch_buffers,
                            .prefetch_workers = in->prefetch_workers, .borrows_input = true };
        d = tmp;
    }
    if (!d) return NULL;
    d->batch = in->batch / count;
    d->shard_index = index;
    d->shard_count = count;
    return d;
}

kiln_data *kiln_data_shard(kiln_data *in, int index, int count) { return shard_node(in, index, count, false); }
kiln_data *kiln_data_shard_borrowed(kiln_data *in, int index, int count) { return shard_node(in, index, count, true); }

kiln_shape kiln_data_example_shape(const kiln_data *d) {
    kiln_shape s = { 0, { 0 } };
    return d ? d->src->shape : s;
}
int kiln_data_num_classes(const kiln_data *d) { return d ? d->src->num_classes : 0; }
kiln_dtype kiln_data_label_dtype(const kiln_data *d) { return d && d->src->float_labels ? KILN_F32 : KILN_I32; }
kiln_shape kiln_data_label_shape(const kiln_data *d) {
    kiln_shape s = { 0, { 0 } };
    return d ? d->src->label_shape : s;
}
const char *kiln_data_class_name(const kiln_data *d, int c) {
    if (!d || !d->src->class_names || c < 0 || c >= d->src->num_classes) return NULL;
    return d->src->class_names[c];
}
int64_t kiln_data_source_size(const kiln_data *d) { return d ? d->src->n : 0; }
int64_t kiln_data_batch_size(const kiln_data *d) { return d ? d->batch : 0; }
int64_t kiln_data_cardinality(const kiln_data *d) { return d ? d->card : 0; }

uint64_t kiln_data_example_key(uint64_t seed, uint64_t epoch, int64_t index) {
    return kiln_mix64(kiln_mix64(kiln_mix64(seed ^ 0xA24BAED4963EE407ull) ^ epoch) ^ (uint64_t)index);
}
