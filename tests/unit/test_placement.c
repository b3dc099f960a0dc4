/* Placement, copies at device borders, the placement log, soft placement and whole-step graph
 * capture, exercised without a GPU through a fake device backend whose memory is scrambled (XOR):
 * a host kernel that read device memory without a copy would compute garbage and fail these tests. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "core/core.h"
#include "kiln/device.h"
#include "runtime/session_internal.h"

/* ---- the fake device ---- */
#define SCRAMBLE 0x5A
static void scramble(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < n; i++) d[i] = s[i] ^ SCRAMBLE;
}
static int ahead_copies, d2d_copies, peer_copies, wrong_device;
static size_t dev_allocs, dev_limit;   /* dev_limit > 0: allocations above it fail (out of memory) */
/* Every fake device allocation is recorded with its GPU, so a kernel or copy that touches the
 * memory of a GPU other than the one it runs on is counted (wrong_device), as CUDA would fault. */
static int fd_active;            /* the fake GPU kernels launch on (activate) */
static struct { char *p; size_t n; int gpu; } fd_mem[4096];
static void *fd_alloc(const kiln_backend *b, size_t n) {
    if (dev_limit && n > dev_limit) return NULL;
    dev_allocs++;
    char *p = malloc(n ? n : 1);
    for (int i = 0; p && i < 4096; i++)
        if (!fd_mem[i].p) { fd_mem[i].p = p; fd_mem[i].n = n ? n : 1; fd_mem[i].gpu = b->index; break; }
    return p;
}
/* The GPU owning device address p, -1 when p is not device memory. */
static int fd_owner(const void *p) {
    for (int i = 0; i < 4096; i++)
        if (fd_mem[i].p && (const char *)p >= fd_mem[i].p && (const char *)p < fd_mem[i].p + fd_mem[i].n) return fd_mem[i].gpu;
    return -1;
}
static size_t fd_max_alloc(const kiln_backend *b) { (void)b; return dev_limit; }
static void fd_free(const kiln_backend *b, void *p) {
    (void)b;
    for (int i = 0; p && i < 4096; i++) if (fd_mem[i].p == p) fd_mem[i].p = NULL;
    free(p);
}
static kiln_status fd_activate(const kiln_backend *b) { fd_active = b->index; return KILN_OK; }
static kiln_status fd_copy(const kiln_backend *b, void *d, const void *s, size_t n, kiln_copy_kind k) {
    if (k == KILN_COPY_PEER) { peer_copies++; wrong_device += fd_owner(d) != b->index; memcpy(d, s, n); return KILN_OK; }
    wrong_device += (k != KILN_COPY_D2H && fd_owner(d) != b->index) || (k != KILN_COPY_H2D && fd_owner(s) != b->index);
    if (k == KILN_COPY_D2D) { d2d_copies++; memcpy(d, s, n); } else scramble(d, s, n);   /* H2D scrambles, D2H unscrambles */
    return KILN_OK;
}
static kiln_status fd_sync(const kiln_backend *b) { (void)b; return KILN_OK; }
static kiln_status fd_copy_ahead(const kiln_backend *b, void *d, const void *s, size_t n) {
    ahead_copies++;
    wrong_device += fd_owner(d) != b->index;
    scramble(d, s, n);
    return KILN_OK;
}
static kiln_status fd_copy_ahead_wait(const kiln_backend *b) { (void)b; return KILN_OK; }

/* Capture: while capturing, launches are recorded instead of run; a launch replays them. */
typedef struct { kiln_kctx ctx; } rec;
static rec recorded[512];
static int n_recorded, launches;
static bool capturing;

static size_t bytes_of(const kiln_view *v) { return (size_t)v->numel * kiln_dtype_size(v->dtype); }

/* Runs the host kernel on unscrambled copies of the device buffers. */
static kiln_status fd_execute(const kiln_kctx *c) {
    kiln_view in[16];
    kiln_kctx h = *c;
    for (int i = 0; i < c->n_in; i++) wrong_device += fd_owner(c->in[i].data) != fd_active;
    wrong_device += fd_owner(c->out.data) != fd_active;
    for (int i = 0; i < c->n_in; i++) {
        in[i] = c->in[i];
        in[i].data = malloc(bytes_of(&c->in[i]) + 1);
        scramble(in[i].data, c->in[i].data, bytes_of(&c->in[i]));
    }
    h.in = in;
    h.out.data = malloc(bytes_of(&c->out) + 1);
    h.workspace = c->ws_bytes ? malloc(c->ws_bytes) : NULL;
    kiln_kernel_fn k = kiln_cpu_kernel(c->node);
    if (!k) k = kiln_op_get(c->node->op)->ref;
    kiln_status st = k(&h);
    scramble(c->out.data, h.out.data, bytes_of(&c->out));
    if (kiln_op_get(c->node->op)->flags & KILN_OPF_MUTATES)
        for (int i = 0; i < c->n_in; i++) scramble(c->in[i].data, in[i].data, bytes_of(&c->in[i]));
    for (int i = 0; i < c->n_in; i++) free(in[i].data);
    free(h.out.data);
    free(h.workspace);
    return st;
}

static kiln_status fd_kernel_fn(const kiln_kctx *c) {
    if (capturing) { if (n_recorded < 512) recorded[n_recorded++].ctx = *c; return KILN_OK; }
    return fd_execute(c);
}
/* Everything but Tanh and Accuracy runs on the fake device. */
static kiln_kernel_fn fd_kernel(const kiln_backend *b, const kiln_node *n) {
    (void)b;
    return (n->op == KILN_OP_TANH || n->op == KILN_OP_ACCURACY) ? NULL : fd_kernel_fn;
}
static size_t fd_workspace(const kiln_backend *b, const kiln_node *n) { (void)b; return kiln_cpu_workspace(n); }

static kiln_status h_begin(const kiln_backend *b) { (void)b; capturing = true; n_recorded = 0; return KILN_OK; }
static kiln_status h_end(const kiln_backend *b, void **ge) { (void)b; capturing = false; *ge = recorded; return KILN_OK; }
static kiln_status h_launch(const kiln_backend *b, void *ge) {
    (void)ge;
    fd_active = b->index;
    launches++;
    for (int i = 0; i < n_recorded; i++) { kiln_status st = fd_execute(&recorded[i].ctx); if (st) return st; }
    return KILN_OK;
}
static void h_free(const kiln_backend *b, void *ge) { (void)b; (void)ge; }

/* fake: with graph capture, copies ahead and max_alloc; fake_plain: the required methods only */
#define FAKE_REQUIRED .name = "fakegpu", .type = KILN_DEVICE_GPU, .alloc = fd_alloc, .free = fd_free, .copy = fd_copy, \
                      .sync = fd_sync, .kernel = fd_kernel, .workspace = fd_workspace
static const kiln_backend fake = { FAKE_REQUIRED, .capture_begin = h_begin, .capture_end = h_end, .graph_launch = h_launch,
                                   .graph_free = h_free, .max_alloc = fd_max_alloc, .copy_ahead = fd_copy_ahead,
                                   .copy_ahead_wait = fd_copy_ahead_wait };
static const kiln_backend fake_plain = { FAKE_REQUIRED };
/* two fake GPUs for multi-device placement: /gpu:0 and /gpu:1 */
static const kiln_backend fake_gpu[2] = { { FAKE_REQUIRED, .index = 0, .activate = fd_activate },
                                          { FAKE_REQUIRED, .index = 1, .activate = fd_activate } };

/* ---- a tiny MLP ---- */
typedef struct mlp { kiln_graph *g; kiln_node *x, *y, *loss, *acc, *step, *w1, *h; } mlp;
enum { N = 16, D = 5, H = 8, C = 3 };

static mlp build(bool tanh_layer) {
    mlp m;
    m.g = kiln_graph_new();
    m.x = kiln_placeholder(m.g, "x", KILN_F32, KILN_SHAPE(N, D));
    m.y = kiln_placeholder(m.g, "y", KILN_I32, KILN_SHAPE(N));
    kiln_graph_push_scope(m.g, "dense");
    m.w1 = kiln_variable(m.g, "kernel", KILN_F32, KILN_SHAPE(D, H), kiln_init_glorot_uniform(3));
    kiln_node *b1 = kiln_variable(m.g, "bias", KILN_F32, KILN_SHAPE(H), kiln_init_zeros());
    m.h = kiln_bias_add(m.g, kiln_matmul(m.g, m.x, m.w1, false, false), b1);
    m.h = tanh_layer ? kiln_tanh(m.g, m.h) : kiln_relu(m.g, m.h);
    kiln_graph_pop_scope(m.g);
    kiln_graph_push_scope(m.g, "dense_1");
    kiln_node *w2 = kiln_variable(m.g, "kernel", KILN_F32, KILN_SHAPE(H, C), kiln_init_glorot_uniform(4));
    kiln_node *logits = kiln_matmul(m.g, m.h, w2, false, false);
    kiln_graph_pop_scope(m.g);
    m.loss = kiln_sparse_softmax_cross_entropy(m.g, logits, m.y);
    m.acc = kiln_accuracy(m.g, logits, m.y);
    kiln_node *vars[3] = { m.w1, b1, w2 }, *grads[3];
    kiln_gradients(m.g, m.loss, vars, 3, grads);
    m.step = kiln_apply_sgd(m.g, vars, grads, 3, &(kiln_sgd_opts){ .lr = 0.3, .momentum = 0.9 });
    return m;
}

static void data(kiln_tensor **tx, kiln_tensor **ty) {
    *tx = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, D));
    *ty = kiln_tensor_new(KILN_I32, KILN_SHAPE(N));
    for (int i = 0; i < N; i++) {
        ((int32_t *)(*ty)->data)[i] = i % C;
        for (int j = 0; j < D; j++) kiln_tensor_set(*tx, i * D + j, (j == i % C) + 0.1 * ((i * 7 + j * 3) % 5));
    }
}

/* Trains 20 steps; returns the loss after each in out[]. */
static kiln_status train(kiln_session *s, mlp *m, double *out, bool fetch_acc) {
    kiln_tensor *tx, *ty, *lv = kiln_tensor_new(KILN_F32, KILN_SCALAR), *av = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    data(&tx, &ty);
    kiln_feed feeds[2] = { { m->x, tx }, { m->y, ty } };
    kiln_node *f[2] = { m->loss, m->acc };
    kiln_tensor *o[2] = { lv, av };
    kiln_status st = KILN_OK;
    for (int i = 0; i < 20 && st == KILN_OK; i++) {
        st = kiln_session_run(s, feeds, 2, f, o, fetch_acc ? 2 : 1, &m->step, 1);
        out[i] = kiln_tensor_get(lv, 0);
    }
    kiln_tensor_free(tx); kiln_tensor_free(ty); kiln_tensor_free(lv); kiln_tensor_free(av);
    return st;
}

/* 20 steps over 20 different batches; ahead: each run also copies the next batch ahead. */
enum { NB = 20 };
static kiln_status train_batches(kiln_session *s, mlp *m, kiln_tensor **bx, kiln_tensor **by, bool ahead, double *out) {
    kiln_tensor *lv = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    kiln_status st = KILN_OK;
    for (int i = 0; i < NB && st == KILN_OK; i++) {
        kiln_feed feeds[2] = { { m->x, bx[i] }, { m->y, by[i] } };
        kiln_feed next[2] = { { m->x, bx[(i + 1) % NB] }, { m->y, by[(i + 1) % NB] } };
        st = kiln_session_run_ahead(s, feeds, 2, &m->loss, &lv, 1, &m->step, 1, next, ahead && i + 1 < NB ? 2 : 0);
        out[i] = kiln_tensor_get(lv, 0);
    }
    kiln_tensor_free(lv);
    return st;
}

/* Copies ahead (kiln_session_run_ahead) give the same training as plain runs, with and without
 * whole-step capture, and are used by the next run only. */
static void check_copy_ahead(void) {
    kiln_tensor *bx[NB], *by[NB];
    for (int i = 0; i < NB; i++) {
        bx[i] = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, D));
        by[i] = kiln_tensor_new(KILN_I32, KILN_SHAPE(N));
        for (int r = 0; r < N; r++) {
            int label = (r * 5 + i * 3) % C;
            ((int32_t *)by[i]->data)[r] = label;
            for (int j = 0; j < D; j++) kiln_tensor_set(bx[i], r * D + j, (j == label) + 0.05 * ((r * 7 + j * 3 + i * 11) % 9));
        }
    }
    double ref[NB], got[NB];
    mlp m = build(false);
    kiln_session *s = kiln_session_new(m.g, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU });
    CHECK_OK(train_batches(s, &m, bx, by, true, ref));   /* no device: next feeds are only checked */
    kiln_session_free(s);
    for (int capture = 0; capture < 2; capture++) {
        mlp k = build(false);
        s = kiln_session_new_with_device(k.g, &(kiln_session_opts){ .no_cuda_graphs = !capture }, &fake);
        ahead_copies = d2d_copies = 0;
        CHECK_OK(train_batches(s, &k, bx, by, true, got));
        for (int i = 0; i < NB; i++) CHECK_MSG(got[i] == ref[i], "copy ahead (capture %d), step %d: %.9g vs %.9g", capture, i, got[i], ref[i]);
        CHECK_MSG(ahead_copies == 2 * (NB - 1) && d2d_copies == 2 * (NB - 1), "capture %d: %d copies ahead, %d used", capture, ahead_copies, d2d_copies);
        kiln_session_free(s);
        kiln_graph_free(k.g);
    }
    /* a copy ahead serves only the run right after: change the batch, run another in between,
     * then feed it: the changed values must be used */
    mlp k = build(false);
    s = kiln_session_new_with_device(k.g, &(kiln_session_opts){ .no_cuda_graphs = true }, &fake);
    kiln_tensor *lv = kiln_tensor_new(KILN_F32, KILN_SCALAR), *l2 = kiln_tensor_new(KILN_F32, KILN_SCALAR);
    kiln_feed f0[2] = { { k.x, bx[0] }, { k.y, by[0] } }, f1[2] = { { k.x, bx[1] }, { k.y, by[1] } };
    CHECK_OK(kiln_session_run_ahead(s, f0, 2, &k.loss, &lv, 1, NULL, 0, f1, 2));
    kiln_tensor_set(bx[1], 0, 100.0);
    CHECK_OK(kiln_session_run(s, f0, 2, &k.loss, &lv, 1, NULL, 0));
    d2d_copies = 0;
    CHECK_OK(kiln_session_run(s, f1, 2, &k.loss, &lv, 1, NULL, 0));
    CHECK(d2d_copies == 0);
    kiln_session *c = kiln_session_new(k.g, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU });
    CHECK_OK(kiln_session_run(c, f1, 2, &k.loss, &l2, 1, NULL, 0));
    CHECK_MSG(kiln_tensor_get(lv, 0) == kiln_tensor_get(l2, 0), "stale copy ahead used: %.9g vs %.9g", kiln_tensor_get(lv, 0), kiln_tensor_get(l2, 0));
    /* next feeds are checked like feeds */
    kiln_feed bad[1] = { { k.x, by[0] } };
    CHECK(kiln_session_run_ahead(s, f0, 2, &k.loss, &lv, 1, NULL, 0, bad, 1) == KILN_INVALID_ARGUMENT);
    kiln_session_free(c);
    kiln_session_free(s);
    kiln_tensor_free(lv); kiln_tensor_free(l2);
    kiln_graph_free(k.g);
    kiln_graph_free(m.g);
    for (int i = 0; i < NB; i++) { kiln_tensor_free(bx[i]); kiln_tensor_free(by[i]); }
}

/* The log callback's messages, joined (the placement log of the two-device test). */
static char two_log[1 << 15];
static void on_log(kiln_log_level level, const char *msg, void *user) {
    (void)level; (void)user;
    size_t n = strlen(two_log);
    snprintf(two_log + n, sizeof two_log - n, "%s\n", msg);
}

/* Two GPUs in one session: the first dense layer asks for /gpu:1, the second for /gpu:0, the
 * loss and the updates go where placement puts them. Every kernel must run on the GPU that owns
 * its memory (values cross between GPUs by peer copies) and training must match the CPU's. */
static void check_two_devices(const double *ref) {
    mlp m;
    m.g = kiln_graph_new();
    m.x = kiln_placeholder(m.g, "x", KILN_F32, KILN_SHAPE(N, D));
    m.y = kiln_placeholder(m.g, "y", KILN_I32, KILN_SHAPE(N));
    kiln_graph_push_device(m.g, "/gpu:1");
    kiln_graph_push_scope(m.g, "dense");
    m.w1 = kiln_variable(m.g, "kernel", KILN_F32, KILN_SHAPE(D, H), kiln_init_glorot_uniform(3));
    kiln_node *b1 = kiln_variable(m.g, "bias", KILN_F32, KILN_SHAPE(H), kiln_init_zeros());
    kiln_node *mm1 = kiln_matmul(m.g, m.x, m.w1, false, false);
    m.h = kiln_relu(m.g, kiln_bias_add(m.g, mm1, b1));
    kiln_graph_pop_scope(m.g);
    kiln_graph_pop_device(m.g);
    kiln_graph_push_device(m.g, "/gpu:0");
    kiln_graph_push_scope(m.g, "dense_1");
    kiln_node *w2 = kiln_variable(m.g, "kernel", KILN_F32, KILN_SHAPE(H, C), kiln_init_glorot_uniform(4));
    kiln_node *logits = kiln_matmul(m.g, m.h, w2, false, false);
    kiln_graph_pop_scope(m.g);
    kiln_graph_pop_device(m.g);
    m.loss = kiln_sparse_softmax_cross_entropy(m.g, logits, m.y);
    m.acc = kiln_accuracy(m.g, logits, m.y);
    kiln_node *vars[3] = { m.w1, b1, w2 }, *grads[3];
    CHECK_OK(kiln_gradients(m.g, m.loss, vars, 3, grads));
    m.step = kiln_apply_sgd(m.g, vars, grads, 3, &(kiln_sgd_opts){ .lr = 0.3, .momentum = 0.9 });
    for (int capture = 0; capture < 2; capture++) {
        const kiln_backend *devs[2] = { &fake_gpu[0], &fake_gpu[1] };
        two_log[0] = 0;
        kiln_set_log_callback(on_log, NULL);
        kiln_session *s = kiln_session_new_with_devices(m.g, &(kiln_session_opts){ .log_device_placement = true, .no_cuda_graphs = !capture }, devs, 2);
        peer_copies = wrong_device = 0;
        double got[20];
        CHECK_OK(train(s, &m, got, true));
        kiln_set_log_callback(NULL, NULL);
        for (int i = 0; i < 20; i++) CHECK_MSG(got[i] == ref[i], "two GPUs, step %d: %.9g vs %.9g", i, got[i], ref[i]);
        /* dense/kernel lives where its update runs: GPU 0, which takes what is not placed */
        CHECK_MSG(kiln_session_node_space(s, mm1) == 2 && kiln_session_node_space(s, logits) == 1 && kiln_session_node_space(s, m.w1) == 1,
                  "spaces: dense %d, dense_1 %d, dense/kernel %d", kiln_session_node_space(s, mm1), kiln_session_node_space(s, logits),
                  kiln_session_node_space(s, m.w1));
        CHECK_MSG(peer_copies >= 20 && wrong_device == 0, "%d peer copies, %d touches of another GPU's memory", peer_copies, wrong_device);
        CHECK_MSG(strstr(two_log, "dense/MatMul: (MatMul): /device:GPU:1") && strstr(two_log, "dense_1/MatMul: (MatMul): /device:GPU:0") &&
                  strstr(two_log, "_copy_to_GPU_0: (Copy): /device:GPU:0"), "placement log:\n%s", two_log);
        kiln_session_free(s);
    }
    /* /gpu:2 does not exist: soft placement says so */
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(4));
    kiln_graph_push_device(g, "/gpu:2");
    kiln_node *y = kiln_relu(g, x);
    kiln_graph_pop_device(g);
    const kiln_backend *devs[2] = { &fake_gpu[0], &fake_gpu[1] };
    kiln_session *s = kiln_session_new_with_devices(g, &(kiln_session_opts){ .strict_placement = true }, devs, 2);
    CHECK(kiln_session_node_space(s, y) == -1 && strstr(kiln_last_error(), "that GPU does not exist (2 visible)"));
    kiln_session_free(s);
    kiln_graph_free(g);
    kiln_graph_free(m.g);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int count(const char *s, const char *sub) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, sub)); p++) n++;
    return n;
}

/* One matmul-relu-matmul-relu step at batch `batch` on the fake device (OOM checks). w*w is a
 * batch-independent 1 MiB buffer of the plan, so memory is not proportional to the batch. */
static kiln_status oom_run(int64_t batch) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(batch, 512));
    kiln_node *w = kiln_variable(g, "w", KILN_F32, KILN_SHAPE(512, 512), kiln_init_glorot_uniform(1));
    kiln_node *h = kiln_relu(g, kiln_matmul(g, kiln_relu(g, kiln_matmul(g, x, kiln_mul(g, w, w), false, false)), w, false, false));
    kiln_node *loss = kiln_reduce_sum(g, h, NULL, 0, false);
    kiln_tensor *tx = kiln_tensor_new(KILN_F32, KILN_SHAPE(batch, 512)), *out = NULL;
    memset(tx->data, 0, kiln_tensor_nbytes(tx));
    kiln_session *s = kiln_session_new_with_device(g, NULL, &fake);
    kiln_status st = kiln_session_run(s, (kiln_feed[]){ { x, tx } }, 1, &loss, &out, 1, NULL, 0);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    kiln_session_free(s);
    kiln_tensor_free(tx);
    kiln_tensor_free(out);
    kiln_graph_free(g);
    kiln_set_error(st, "%s", msg);   /* keep the run's message for the caller */
    return st;
}

int main(void) {
    /* no GPU here: the reason names the cause; CUDA_VISIBLE_DEVICES="" hides every GPU */
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    CHECK(!kiln_gpu_available());
    CHECK_MSG(strstr(kiln_gpu_unavailable_reason(), "CUDA_VISIBLE_DEVICES") != NULL, "%s", kiln_gpu_unavailable_reason());
    kiln_device_info devs[4];
    int nd = 0;
    CHECK_OK(kiln_device_list(devs, 4, &nd));
    CHECK(nd == 1 && devs[0].kind == KILN_DEVICE_KIND_CPU && devs[0].cores > 0 && devs[0].total_memory > 0);
    kiln_memory_stats ms;
    CHECK(kiln_device_memory_stats(0, &ms) == KILN_NOT_FOUND);

    /* reference: host only */
    double ref[20], got[20];
    mlp a = build(false);
    kiln_session *s = kiln_session_new(a.g, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU });
    CHECK_OK(train(s, &a, ref, true));
    kiln_session_free(s);
    CHECK(ref[19] < ref[0] * 0.5);
    check_two_devices(ref);

    /* the same on the fake device (with the host Accuracy op fed by a copy) and the placement log */
    mlp b = build(false);
    fflush(stderr);
    int saved = dup(2);
    char logpath[] = "/tmp/kiln_placement_XXXXXX";
    int fd = mkstemp(logpath);
    dup2(fd, 2);
    s = kiln_session_new_with_device(b.g, &(kiln_session_opts){ .log_device_placement = true, .no_cuda_graphs = true }, &fake);
    CHECK_OK(train(s, &b, got, true));
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    for (int i = 0; i < 20; i++) CHECK_MSG(got[i] == ref[i], "step %d: fake device %.9g vs cpu %.9g", i, got[i], ref[i]);
    CHECK(kiln_session_node_space(s, b.w1) == 1);                           /* variables live where used */
    CHECK(kiln_session_node_space(s, b.x) == 0);                            /* feeds arrive on the host */
    CHECK(kiln_session_node_space(s, b.acc) == 0);                          /* no device kernel */
    CHECK(kiln_session_node_space(s, kiln_graph_find(b.g, "dense/MatMul")) == 1);
    kiln_session_free(s);
    char *log = read_file(logpath);
    unlink(logpath);
    CHECK(log != NULL);
    if (log) {
        CHECK_MSG(count(log, "dense/MatMul: (MatMul): /device:GPU:0\n") == 1, "log:\n%s", log);   /* once, not every step */
        CHECK_MSG(count(log, "Accuracy: (Accuracy): /device:CPU:0\n") == 1, "log:\n%s", log);
        CHECK_MSG(count(log, "dense/kernel: (VariableV2): /device:GPU:0\n") == 1, "log:\n%s", log);
        CHECK_MSG(count(log, "(Copy): /device:CPU:0") >= 1 && count(log, "(Copy): /device:GPU:0") >= 1, "log:\n%s", log);
    }

    /* an explicit /cpu:0 scope wins; a /gpu:0 request for an op without a device kernel falls back
     * (soft placement), or is an error when strict */
    mlp c = build(true);
    kiln_graph_push_device(c.g, "/cpu:0");
    kiln_node *on_cpu = kiln_square(c.g, c.h);
    kiln_graph_pop_device(c.g);
    kiln_graph_push_device(c.g, "/GPU:0");
    kiln_node *want_gpu = kiln_tanh(c.g, c.h);
    kiln_graph_pop_device(c.g);
    s = kiln_session_new_with_device(c.g, &(kiln_session_opts){ .no_cuda_graphs = true }, &fake_plain);
    CHECK(kiln_session_node_space(s, on_cpu) == 0);
    CHECK(kiln_session_node_space(s, want_gpu) == 0);
    CHECK_OK(train(s, &c, got, false));
    CHECK(got[19] < got[0]);
    kiln_session_free(s);
    s = kiln_session_new_with_device(c.g, &(kiln_session_opts){ .strict_placement = true }, &fake_plain);
    CHECK(kiln_session_node_space(s, want_gpu) == -1);
    CHECK_MSG(strstr(kiln_last_error(), "Tanh") && strstr(kiln_last_error(), "soft placement is off"), "%s", kiln_last_error());
    kiln_session_free(s);
    /* with no device at all, /gpu:0 requests run on the CPU (soft) or fail (strict) */
    s = kiln_session_new(c.g, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU, .strict_placement = true });
    double tmp[20];
    CHECK(train(s, &c, tmp, false) == KILN_INVALID_ARGUMENT);
    kiln_session_free(s);

    /* whole-step capture: device-only plan, two warm-up runs, then one capture and replays */
    mlp d = build(false);
    s = kiln_session_new_with_device(d.g, NULL, &fake);
    launches = 0;
    CHECK_OK(train(s, &d, got, false));
    for (int i = 0; i < 20; i++) CHECK_MSG(got[i] == ref[i], "captured step %d: %.9g vs %.9g", i, got[i], ref[i]);
    CHECK_MSG(launches == 18, "graph launches: %d (20 runs - 2 warm-up runs)", launches);
    kiln_session_free(s);

    /* out of device memory: the message sizes the step, names the biggest tensors and the largest
     * batch that fits by the memory plan; that batch then runs, one more does not */
    dev_limit = 3u << 19;   /* 1.5 MiB: w (1 MiB) fits, the step's arena at batch 1024 does not */
    kiln_status oom = oom_run(1024);
    CHECK_MSG(oom == KILN_OUT_OF_MEMORY, "%s: %s", kiln_status_name(oom), kiln_last_error());
    const char *fit = strstr(kiln_last_error(), "use a batch size of ");
    long long nb = fit ? atoll(fit + strlen("use a batch size of ")) : 0;
    CHECK_MSG(strstr(kiln_last_error(), "out of memory on /device:GPU:0") && strstr(kiln_last_error(), "MatMul") && nb > 0 &&
              strstr(kiln_last_error(), "or less instead of 1024"), "%s", kiln_last_error());
    /* the advice names the options that fit, each with its planned figure (oom_advice.c) */
    CHECK_MSG(strstr(kiln_last_error(), "(--batch-size ") && strstr(kiln_last_error(), "MiB can be allocated") &&
              strstr(kiln_last_error(), "micro-batches of") && strstr(kiln_last_error(), "(--accumulate ") &&
              strstr(kiln_last_error(), "accumulate_steps"), "%s", kiln_last_error());
    printf("the out-of-memory error: %s\n", kiln_last_error());
    if (nb > 0) {
        CHECK_MSG(oom_run(nb) == KILN_OK, "batch %lld, advised: %s", nb, kiln_last_error());
        CHECK_MSG(oom_run(nb + 1) == KILN_OUT_OF_MEMORY, "batch %lld ran too: the advice is not the largest", nb + 1);
    }
    dev_limit = 0;

    check_copy_ahead();
    kiln_graph_free(a.g); kiln_graph_free(b.g); kiln_graph_free(c.g); kiln_graph_free(d.g);
    return check_summary("test_placement");
}
