/* Input pipeline iteration: index iterators (source, shuffle, repeat, take, skip, batch) decide
 * the batches in order under a lock; the element work (source read/decode, map, cache, normalize,
 * augment) runs on worker threads into a bounded ring of batch buffers (prefetch), or on the
 * consumer's thread without prefetch. Element randomness comes from (seed, epoch, source index)
 * only, so results do not depend on the number of workers. */
#include <stdatomic.h>
#include <string.h>
#include "core/core.h"
#include "data/pipeline_internal.h"

typedef struct elem_id { int64_t src; uint64_t epoch; } elem_id;

/* ---- index iterators ---- */

typedef struct iiter iiter;
struct iiter {
    const kiln_data *node;
    iiter *child;
    uint64_t epoch;
    int64_t pos;
    bool any;              /* repeat: the current pass produced something */
    elem_id *buf;          /* shuffle buffer */
    int64_t cap, fill;
    bool child_done;
    kiln_rng rng;
};

static bool is_index_kind(kiln_node_kind k) {
    return k == KILN_DN_SOURCE || k == KILN_DN_SHUFFLE || k == KILN_DN_REPEAT || k == KILN_DN_TAKE ||
           k == KILN_DN_SKIP || k == KILN_DN_BATCH || k == KILN_DN_SHARD;
}

static const kiln_data *index_node(const kiln_data *d) {
    while (d && !is_index_kind(d->kind)) d = d->input;
    return d;
}

static void iiter_free(iiter *it) {
    while (it) {
        iiter *c = it->child;
        kiln_free(it->buf);
        kiln_free(it);
        it = c;
    }
}

static iiter *iiter_build(const kiln_data *d) {
    d = index_node(d);
    iiter *it = kiln_calloc(1, sizeof *it);
    if (!it) return NULL;
    it->node = d;
    if (d->input) {
        it->child = iiter_build(d->input);
        if (!it->child) { kiln_free(it); return NULL; }
    }
    if (d->kind == KILN_DN_SHUFFLE) {
        int64_t cap = d->n, up = d->input->card;
        if (up >= 0 && up < cap) cap = up;
        if (cap < 1) cap = 1;
        it->cap = cap;
        it->buf = kiln_malloc(sizeof(elem_id) * (size_t)cap);
        if (!it->buf) { iiter_free(it); return NULL; }
    }
    if (d->kind == KILN_DN_SHARD) {    /* room for a whole batch of the input */
        it->cap = d->input->batch;
        it->buf = kiln_malloc(sizeof(elem_id) * (size_t)it->cap);
        if (!it->buf) { iiter_free(it); return NULL; }
    }
    return it;
}

static uint64_t repeat_epoch(const kiln_data *d, uint64_t epoch, int64_t rep) {
    return d->n > 0 ? epoch * (uint64_t)d->n + (uint64_t)rep : (epoch << 32) + (uint64_t)rep;
}

static void iiter_reset(iiter *it, uint64_t epoch) {
    it->epoch = epoch;
    it->pos = 0;
    it->any = false;
    it->fill = 0;
    it->child_done = false;
    if (it->node->kind == KILN_DN_SHUFFLE) it->rng = kiln_rng_new(it->node->seed ^ kiln_mix64(epoch ^ 0x5851F42D4C957F2Dull));
    if (it->child) iiter_reset(it->child, it->node->kind == KILN_DN_REPEAT ? repeat_epoch(it->node, epoch, 0) : epoch);
}

static uint64_t rng_below(kiln_rng *r, uint64_t bound) {
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        uint64_t v = kiln_rng_next(r);
        if (v >= threshold) return v % bound;
    }
}

/* Next item into dst (room for cap elements): returns its element count (1 below a batch), 0 at end. */
static int64_t iiter_next(iiter *it, elem_id *dst, int64_t cap) {
    const kiln_data *d = it->node;
    switch (d->kind) {
    case KILN_DN_SOURCE:
        if (it->pos >= d->src->n) return 0;
        dst[0].src = it->pos++;
        dst[0].epoch = it->epoch;
        return 1;
    case KILN_DN_SHUFFLE: {
        while (!it->child_done && it->fill < it->cap) {
            if (iiter_next(it->child, &it->buf[it->fill], 1)) it->fill++;
            else it->child_done = true;
        }
        if (it->fill == 0) return 0;
        int64_t j = (int64_t)rng_below(&it->rng, (uint64_t)it->fill);
        dst[0] = it->buf[j];
        if (it->child_done || !iiter_next(it->child, &it->buf[j], 1)) {
            it->child_done = true;
            it->buf[j] = it->buf[--it->fill];
        }
        return 1;
    }
    case KILN_DN_REPEAT:
        for (;;) {
            if (d->n >= 0 && it->pos >= d->n) return 0;
            int64_t r = iiter_next(it->child, dst, cap);
            if (r) { it->any = true; return r; }
            if (!it->any) return 0;          /* empty input: stop instead of looping forever */
            it->pos++;
            it->any = false;
            iiter_reset(it->child, repeat_epoch(d, it->epoch, it->pos));
        }
    case KILN_DN_TAKE: {
        if (it->pos >= d->n) return 0;
        int64_t r = iiter_next(it->child, dst, cap);
        if (r) it->pos++;
        return r;
    }
    case KILN_DN_SKIP:
        while (it->pos < d->n) {
            if (!iiter_next(it->child, dst, cap)) return 0;
            it->pos++;
        }
        return iiter_next(it->child, dst, cap);
    case KILN_DN_BATCH: {
        int64_t count = 0;
        while (count < d->n && count < cap) {
            int64_t r = iiter_next(it->child, dst + count, cap - count);
            if (!r) break;
            count += r;
        }
        if (count < d->n && d->drop_remainder) return 0;
        return count;
    }
    case KILN_DN_SHARD: {
        /* a full batch: this part's rows; a smaller last batch: an equal share, smaller than a
         * full part on every rank, so every rank keeps or skips it alike */
        int64_t count = iiter_next(it->child, it->buf, it->cap);
        if (count <= 0) return 0;
        int64_t per = count == it->cap ? d->batch : count / d->shard_count;
        if (per > cap) per = cap;
        memcpy(dst, it->buf + (int64_t)d->shard_index * per, sizeof(elem_id) * (size_t)per);
        return per > 0 ? per : iiter_next(it, dst, cap);
    }
    default:
        return 0;
    }
}

/* ---- the iterator ---- */

enum { SLOT_FREE, SLOT_BUSY, SLOT_READY, SLOT_ERROR };

typedef struct slot {
    float *x;
    bool pinned;                 /* x is page-locked (a GPU answered) */
    int32_t *y;
    elem_id *ids;
    int64_t count, seq;
    int state;
    kiln_status st;
    char msg[1024];
    kiln_tensor tx, ty;
} slot;

typedef struct worker_arg { kiln_data_iter *it; int idx; } worker_arg;

struct kiln_data_iter {
    kiln_data *d;
    const kiln_data **ops;     /* element nodes, source side first */
    int nops, cache_pos;       /* cache_pos: index in ops of the cache, -1 none */
    kiln_data_cache_store *cache;
    int64_t numel, bcap;
    int64_t lnumel;            /* labels per example */
    iiter *root;
    int nslots;
    slot *slots;
    int nworkers;
    pthread_t *threads;
    worker_arg *args;
    int threads_started;
    float **scratch;           /* nworkers + 1 buffers of numel floats */
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_ready;
    bool sync_ok;              /* mutex + condvars initialised */
    atomic_bool stop;
    int64_t next_task, released, end_seq, cur;
    int hold, held;            /* batches kept valid for the consumer (kiln_data_iter_hold), held now */
    bool finished;
    kiln_status failed;
    char failed_msg[1024];
};

static kiln_status apply_op(const kiln_data_iter *it, const kiln_data *op, float *x, int32_t *label, elem_id e,
                            uint64_t epoch, float *scratch) {
    const kiln_source *s = it->d->src;
    switch (op->kind) {
    case KILN_DN_MAP: {
        kiln_tensor t = { KILN_F32, s->shape, x, false };
        int32_t before = *label;
        kiln_set_error(KILN_OK, "%s", "");   /* so a callback that sets no message leaves none */
        kiln_status st = op->fn(op->user, &t, label, kiln_data_example_key(op->seed, epoch, e.src));
        if (st != KILN_OK) {
            char msg[900];
            snprintf(msg, sizeof msg, "%s", kiln_last_error());
            return kiln_set_error(st, "data map: callback returned %s on example %lld (epoch %llu)%s%s", kiln_status_name(st),
                                  (long long)e.src, (unsigned long long)epoch, msg[0] ? ": " : "", msg);
        }
        if (*label != before && s->num_classes > 0 && (*label < 0 || *label >= s->num_classes))
            return kiln_set_error(KILN_INVALID_ARGUMENT, "data map: callback set label %d on example %lld; the data has "
                                  "classes 0..%d", (int)*label, (long long)e.src, s->num_classes - 1);
        if (t.data != x || !kiln_shape_equal(t.shape, s->shape) || t.dtype != KILN_F32)
            return kiln_set_error(KILN_INVALID_ARGUMENT, "data map: the callback must modify x in place (same data, "
                                  "dtype and shape)");
        return KILN_OK;
    }
    case KILN_DN_NORMALIZE:
        kiln_aug_normalize(x, it->numel, op->mean, op->std, op->channels);
        return KILN_OK;
    case KILN_DN_AUGMENT:
        kiln_aug_apply(&op->aug, x, (int)s->shape.dim[0], (int)s->shape.dim[1], (int)s->shape.dim[2],
                       kiln_data_example_key(op->seed, epoch, e.src), scratch);
        return KILN_OK;
    default:
        return KILN_OK;
    }
}

static kiln_status compute_elem(const kiln_data_iter *it, elem_id e, float *x, int32_t *label, float *scratch) {
    const kiln_source *s = it->d->src;
    kiln_data_cache_store *c = it->cache;
    int start = 0;
    if (c && atomic_load_explicit(&c->state[e.src], memory_order_acquire) == 2) {
        memcpy(x, c->x + (size_t)e.src * (size_t)it->numel, sizeof(float) * (size_t)it->numel);
        memcpy(label, c->y + (size_t)e.src * (size_t)it->lnumel, sizeof(int32_t) * (size_t)it->lnumel);
        start = it->cache_pos + 1;
    } else {
        kiln_status st = s->get(s, e.src, x, label);
        if (st != KILN_OK) return st;
    }
    for (int k = start; k < it->nops; k++) {
        if (k == it->cache_pos) {
            unsigned char expect = 0;
            if (atomic_compare_exchange_strong(&c->state[e.src], &expect, 1)) {
                memcpy(c->x + (size_t)e.src * (size_t)it->numel, x, sizeof(float) * (size_t)it->numel);
                memcpy(c->y + (size_t)e.src * (size_t)it->lnumel, label, sizeof(int32_t) * (size_t)it->lnumel);
                atomic_store_explicit(&c->state[e.src], 2, memory_order_release);
            }
            continue;
        }
        /* nodes before the cache always see epoch 0 so the cached value does not depend on who filled it */
        kiln_status st = apply_op(it, it->ops[k], x, label, e, k < it->cache_pos ? 0 : e.epoch, scratch);
        if (st != KILN_OK) return st;
    }
    return KILN_OK;
}

static kiln_status compute_slot(kiln_data_iter *it, slot *sl, float *scratch) {
    for (int64_t k = 0; k < sl->count; k++) {
        if (atomic_load_explicit(&it->stop, memory_order_relaxed)) return KILN_OK;
        kiln_status st = compute_elem(it, sl->ids[k], sl->x + (size_t)k * (size_t)it->numel, sl->y + (size_t)k * (size_t)it->lnumel, scratch);
        if (st != KILN_OK) return st;
    }
    return KILN_OK;
}

static void slot_fail(slot *sl, kiln_status st) {
    sl->st = st;
    snprintf(sl->msg, sizeof sl->msg, "%s", kiln_last_error());
    sl->state = SLOT_ERROR;
}

static void *worker_main(void *p) {
    worker_arg *a = p;
    kiln_data_iter *it = a->it;
    float *scratch = it->scratch[a->idx];
    pthread_mutex_lock(&it->mu);
    while (!atomic_load(&it->stop)) {
        /* in flight: the batches the consumer holds plus prefetch_buffers ahead */
        if (it->end_seq >= 0 || it->next_task >= it->released + it->d->prefetch_buffers + it->hold) {
            pthread_cond_wait(&it->cv_work, &it->mu);
            continue;
        }
        int64_t seq = it->next_task;
        slot *sl = &it->slots[seq % it->nslots];
        int64_t cnt = iiter_next(it->root, sl->ids, it->bcap);
        if (cnt == 0) {
            it->end_seq = seq;
            pthread_cond_broadcast(&it->cv_ready);
            continue;
        }
        it->next_task++;
        sl->seq = seq;
        sl->count = cnt;
        sl->state = SLOT_BUSY;
        pthread_mutex_unlock(&it->mu);
        kiln_status st = compute_slot(it, sl, scratch);
        pthread_mutex_lock(&it->mu);
        if (st != KILN_OK) {
            slot_fail(sl, st);
            if (it->end_seq < 0 || it->end_seq > seq + 1) it->end_seq = seq + 1;   /* start nothing after an error */
        } else {
            sl->state = SLOT_READY;
        }
        pthread_cond_broadcast(&it->cv_ready);
    }
    pthread_mutex_unlock(&it->mu);
    return NULL;
}

void kiln_data_iter_free(kiln_data_iter *it) {
    if (!it) return;
    if (it->sync_ok) {
        pthread_mutex_lock(&it->mu);
        atomic_store(&it->stop, true);
        pthread_cond_broadcast(&it->cv_work);
        pthread_cond_broadcast(&it->cv_ready);
        pthread_mutex_unlock(&it->mu);
        for (int i = 0; i < it->threads_started; i++) pthread_join(it->threads[i], NULL);
        pthread_cond_destroy(&it->cv_work);
        pthread_cond_destroy(&it->cv_ready);
        pthread_mutex_destroy(&it->mu);
    }
    if (it->slots)
        for (int i = 0; i < it->nslots; i++) {
            kiln_host_free_staging(it->slots[i].x, it->slots[i].pinned);
            kiln_free(it->slots[i].y);
            kiln_free(it->slots[i].ids);
        }
    if (it->scratch)
        for (int i = 0; i <= it->nworkers; i++) kiln_free(it->scratch[i]);
    kiln_free(it->scratch);
    kiln_free(it->slots);
    kiln_free(it->threads);
    kiln_free(it->args);
    kiln_free(it->ops);
    iiter_free(it->root);
    kiln_free(it);
}

static kiln_status cache_storage(kiln_data_cache_store *c, int64_t n, int64_t numel, int64_t lnumel) {
    kiln_status st = KILN_OK;
    pthread_mutex_lock(&c->mu);
    if (!c->state) {
        if (n > 0 && (uint64_t)numel > (SIZE_MAX / sizeof(float)) / (uint64_t)n) {
            st = kiln_set_error(KILN_OUT_OF_MEMORY, "data cache: %lld examples of %lld floats overflow memory", (long long)n,
                                (long long)numel);
        } else {
            size_t nn = n > 0 ? (size_t)n : 1;
            c->x = kiln_malloc(nn * (size_t)numel * sizeof(float));
            c->y = kiln_malloc(nn * (size_t)lnumel * sizeof(int32_t));
            c->state = kiln_calloc(nn, sizeof *c->state);
            if (!c->x || !c->y || !c->state) {
                kiln_free(c->x); kiln_free(c->y); kiln_free((void *)c->state);
                c->x = NULL; c->y = NULL; c->state = NULL;
                st = kiln_set_error(KILN_OUT_OF_MEMORY, "data cache: out of host memory for %lld examples of %lld floats",
                                    (long long)n, (long long)numel);
            }
        }
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

static bool slot_alloc(kiln_data_iter *it, slot *sl) {
    sl->seq = -1;
    /* batches the model copies to a GPU come from page-locked memory when there is one */
    sl->x = kiln_host_alloc_staging(sizeof(float) * (size_t)it->numel * (size_t)it->bcap, &sl->pinned);
    sl->y = kiln_malloc(sizeof(int32_t) * (size_t)it->bcap * (size_t)it->lnumel);
    sl->ids = kiln_malloc(sizeof(elem_id) * (size_t)it->bcap);
    return sl->x && sl->y && sl->ids;
}

kiln_status kiln_data_iter_hold(kiln_data_iter *it, int batches) {
    if (!it || batches < 1 || batches > 2) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_iter_hold: batches must be 1 or 2");
    if (it->cur > 0 || it->finished) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_iter_hold: call it before the first kiln_data_iter_next");
    if (!it->sync_ok && it->nslots < batches) {   /* no prefetch: a second buffer to alternate with */
        slot *sl = kiln_realloc(it->slots, (size_t)batches * sizeof *sl);
        if (!sl) return kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory");
        it->slots = sl;
        memset(&sl[it->nslots], 0, sizeof *sl);
        it->nslots++;   /* counted first: kiln_data_iter_free frees what was allocated */
        if (!slot_alloc(it, &sl[it->nslots - 1])) return kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory for a second batch buffer");
    }
    if (it->sync_ok) pthread_mutex_lock(&it->mu);
    it->hold = batches;
    if (it->sync_ok) pthread_mutex_unlock(&it->mu);
    return KILN_OK;
}

kiln_status kiln_data_iter_new(kiln_data *d, uint64_t epoch, kiln_data_iter **out) {
    if (out) *out = NULL;
    if (!d || !out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_iter_new: d and out must not be NULL");
    kiln_data_iter *it = kiln_calloc(1, sizeof *it);
    if (!it) return kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory");
    it->d = d;
    it->cache_pos = -1;
    it->end_seq = -1;
    it->hold = 1;
    atomic_init(&it->stop, false);
    it->numel = kiln_shape_numel(d->src->shape);
    if (it->numel < 1) it->numel = 1;
    it->lnumel = kiln_source_label_numel(d->src);
    it->bcap = d->batch;
    it->nops = d->n_elem_ops;
    it->ops = kiln_calloc((size_t)(it->nops > 0 ? it->nops : 1), sizeof *it->ops);
    it->root = iiter_build(d);
    bool async = d->prefetch_buffers > 0;
    it->nworkers = async ? d->prefetch_workers : 0;
    it->nslots = async ? d->prefetch_buffers + 2 : 1;   /* room for a second held batch */
    it->slots = kiln_calloc((size_t)it->nslots, sizeof *it->slots);
    it->scratch = kiln_calloc((size_t)it->nworkers + 1, sizeof *it->scratch);
    if (!it->ops || !it->root || !it->slots || !it->scratch) goto oom;
    int k = it->nops;
    for (const kiln_data *n = d; n; n = n->input)
        if (n->kind == KILN_DN_MAP || n->kind == KILN_DN_CACHE || n->kind == KILN_DN_NORMALIZE || n->kind == KILN_DN_AUGMENT) {
            it->ops[--k] = n;
            if (n->kind == KILN_DN_CACHE) it->cache = n->cache;
        }
    for (int i = 0; i < it->nops; i++)
        if (it->ops[i]->kind == KILN_DN_CACHE) it->cache_pos = i;
    if (it->cache) {
        kiln_status st = cache_storage(it->cache, d->src->n, it->numel, it->lnumel);
        if (st != KILN_OK) { kiln_data_iter_free(it); return st; }
    }
    for (int i = 0; i <= it->nworkers; i++)
        if (!(it->scratch[i] = kiln_malloc(sizeof(float) * (size_t)it->numel))) goto oom;
    for (int i = 0; i < it->nslots; i++)
        if (!slot_alloc(it, &it->slots[i])) goto oom;
    iiter_reset(it->root, epoch);
    if (async) {
        it->threads = kiln_calloc((size_t)it->nworkers, sizeof *it->threads);
        it->args = kiln_calloc((size_t)it->nworkers, sizeof *it->args);
        if (!it->threads || !it->args) goto oom;
        if (pthread_mutex_init(&it->mu, NULL) != 0) goto oom;
        if (pthread_cond_init(&it->cv_work, NULL) != 0) { pthread_mutex_destroy(&it->mu); goto oom; }
        if (pthread_cond_init(&it->cv_ready, NULL) != 0) {
            pthread_cond_destroy(&it->cv_work);
            pthread_mutex_destroy(&it->mu);
            goto oom;
        }
        it->sync_ok = true;
        for (int i = 0; i < it->nworkers; i++) {
            it->args[i].it = it;
            it->args[i].idx = i;
            if (pthread_create(&it->threads[i], NULL, worker_main, &it->args[i]) != 0) {
                kiln_data_iter_free(it);
                return kiln_set_error(KILN_INTERNAL, "data prefetch: cannot start worker thread %d of %d", i + 1,
                                      d->prefetch_workers);
            }
            it->threads_started++;
        }
    }
    *out = it;
    return KILN_OK;
oom:
    kiln_data_iter_free(it);
    return kiln_set_error(KILN_OUT_OF_MEMORY, "data: out of host memory for the iterator (batch %lld of %lld floats)",
                          (long long)d->batch, (long long)it->numel);
}

static void slot_tensors(kiln_data_iter *it, slot *sl, kiln_tensor **x, kiln_tensor **y) {
    kiln_shape es = it->d->src->shape;
    sl->tx.dtype = KILN_F32;
    sl->tx.shape.rank = es.rank + 1;
    sl->tx.shape.dim[0] = sl->count;
    for (int i = 0; i < es.rank; i++) sl->tx.shape.dim[i + 1] = es.dim[i];
    sl->tx.data = sl->x;
    sl->tx.owns_data = false;
    sl->ty.dtype = it->d->src->float_labels ? KILN_F32 : KILN_I32;
    kiln_shape ls = it->d->src->label_shape;
    sl->ty.shape.rank = ls.rank + 1;
    sl->ty.shape.dim[0] = sl->count;
    for (int i = 0; i < ls.rank; i++) sl->ty.shape.dim[i + 1] = ls.dim[i];
    sl->ty.data = sl->y;
    sl->ty.owns_data = false;
    *x = &sl->tx;
    *y = &sl->ty;
}

int64_t kiln_data_iter_sources(const kiln_data_iter *it, const kiln_tensor *x, int64_t *src, int64_t cap) {
    for (int i = 0; it && i < it->nslots; i++) {
        const slot *sl = &it->slots[i];
        if (&sl->tx != x || sl->count > cap) continue;
        for (int64_t k = 0; k < sl->count; k++) src[k] = sl->ids[k].src;
        return sl->count;
    }
    return -1;
}

kiln_status kiln_data_iter_next(kiln_data_iter *it, kiln_tensor **x, kiln_tensor **y) {
    kiln_tensor *dx = NULL, *dy = NULL;
    if (!x) x = &dx;
    if (!y) y = &dy;
    *x = NULL;
    *y = NULL;
    if (!it) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_data_iter_next: iterator is NULL");
    if (it->failed != KILN_OK) return kiln_set_error(it->failed, "%s", it->failed_msg);
    if (it->finished) return KILN_OK;
    slot *sl;
    if (!it->sync_ok) {                  /* no prefetch: compute here, alternating buffers when holding 2 */
        sl = &it->slots[it->cur++ % it->nslots];
        sl->count = iiter_next(it->root, sl->ids, it->bcap);
        if (sl->count == 0) { it->finished = true; return KILN_OK; }
        kiln_status st = compute_slot(it, sl, it->scratch[0]);
        if (st != KILN_OK) {
            it->failed = st;
            snprintf(it->failed_msg, sizeof it->failed_msg, "%s", kiln_last_error());
            return st;
        }
        slot_tensors(it, sl, x, y);
        return KILN_OK;
    }
    pthread_mutex_lock(&it->mu);
    if (it->held >= it->hold) {          /* the oldest batch handed out is given back */
        it->slots[(it->cur - it->held) % it->nslots].state = SLOT_FREE;
        it->released++;
        it->held--;
        pthread_cond_broadcast(&it->cv_work);
    }
    sl = &it->slots[it->cur % it->nslots];
    while (!(sl->seq == it->cur && (sl->state == SLOT_READY || sl->state == SLOT_ERROR)) &&
           !(it->end_seq >= 0 && it->cur >= it->end_seq))
        pthread_cond_wait(&it->cv_ready, &it->mu);
    if (sl->seq == it->cur && sl->state == SLOT_ERROR) {
        it->failed = sl->st;
        snprintf(it->failed_msg, sizeof it->failed_msg, "%s", sl->msg);
        pthread_mutex_unlock(&it->mu);
        return kiln_set_error(it->failed, "%s", it->failed_msg);
    }
    if (!(sl->seq == it->cur && sl->state == SLOT_READY)) {
        it->finished = true;
        pthread_mutex_unlock(&it->mu);
        return KILN_OK;
    }
    it->cur++;
    it->held++;
    pthread_mutex_unlock(&it->mu);
    slot_tensors(it, sl, x, y);
    return KILN_OK;
}
