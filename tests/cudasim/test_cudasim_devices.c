/* Two simulated GPUs (ctest sets CUSIM_DEVICES=2): one backend object each, memory that lands on
 * the GPU whose object allocated it, kernels that run on the GPU activated last (the simulator
 * rejects a kernel given another GPU's memory), peer copies, a session on GPU 0 after GPU 1 was
 * used, and a clear error for a GPU that does not exist. */
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include "check.h"
#include "kiln/device.h"
#include "backend/registry.h"
#include "runtime/session_internal.h"

enum { N = 1000 };

static size_t in_use(int gpu) {
    kiln_memory_stats st = { 0 };
    CHECK_OK(kiln_device_memory_stats(gpu, &st));
    return st.in_use;
}

static size_t free_mem(int gpu) {
    kiln_device_info d[4];
    int n = 0;
    CHECK_OK(kiln_device_list(d, 4, &n));
    return n == 3 ? d[1 + gpu].free_memory : 0;
}

/* Runs b's kernel for n after making `away`'s GPU current (looking a kernel up switches to b's
 * GPU), then activating b or not. */
static kiln_status run_kernel(const kiln_backend *b, kiln_node *n, void *const *in, void *out, const kiln_backend *away,
                              bool activate) {
    kiln_kernel_fn k = b->kernel(b, n);
    if (!k) return kiln_set_error(KILN_UNSUPPORTED, "no cuda kernel for %s", n->name);
    kiln_view v[2];
    for (int i = 0; i < n->n_in; i++) v[i] = (kiln_view){ in[i], n->in[i]->dtype, n->in[i]->shape, kiln_shape_numel(n->in[i]->shape) };
    size_t ws = b->workspace ? b->workspace(b, n) : 0;
    void *w = ws ? b->alloc(b, ws) : NULL;
    kiln_kctx c = { .node = n, .n_in = n->n_in, .in = v, .out = { out, n->dtype, n->shape, kiln_shape_numel(n->shape) },
                    .workspace = w, .ws_bytes = ws, .num_threads = 1 };
    kiln_status st = away->sync(away);
    if (st == KILN_OK && activate) st = b->activate(b);
    if (st == KILN_OK) st = k(&c);
    if (w) b->free(b, w);
    return st;
}

int main(void) {
    kiln_device_info d[4];
    int n = 0;
    CHECK_OK(kiln_device_list(d, 4, &n));
    CHECK_MSG(n == 3, "%d devices listed, expected the CPU and 2 GPUs (is CUSIM_DEVICES=2 set?)", n);
    if (n != 3) return check_summary("test_cudasim_devices");
    CHECK(d[1].kind == KILN_DEVICE_KIND_GPU && d[1].index == 0);
    CHECK(d[2].kind == KILN_DEVICE_KIND_GPU && d[2].index == 1);
    CHECK(kiln_cuda_device_count() == 2);

    const kiln_backend *b0 = kiln_cuda_backend(0), *b1 = kiln_cuda_backend(1);
    CHECK(b0 && b1 && b0 != b1);
    if (!b0 || !b1) return check_summary("test_cudasim_devices");
    CHECK(b0->index == 0 && b1->index == 1 && b0->type == KILN_DEVICE_GPU && !strcmp(b1->name, "cuda"));
    CHECK(b0->ctx && b1->ctx && b0->ctx != b1->ctx);
    CHECK(b1->activate && b1->capture_begin && b1->copy_ahead && b1->max_alloc);
    CHECK(kiln_cuda_backend(2) == NULL);
    CHECK_MSG(strstr(kiln_last_error(), "GPU 2 does not exist (2 visible)") != NULL, "error: %s", kiln_last_error());
    CHECK(kiln_cuda_backend(-1) == NULL);

    /* both GPUs set up (streams, handles, workspaces), then only GPU 1 may change */
    CHECK_OK(b0->sync(b0));
    CHECK_OK(b1->sync(b1));
    size_t use0 = in_use(0), use1 = in_use(1), free0 = free_mem(0), free1 = free_mem(1);

    /* out = relu(x + y) on GPU 1 */
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(N)), *y = kiln_placeholder(g, "y", KILN_F32, KILN_SHAPE(N));
    kiln_node *sum = kiln_add(g, x, y), *out = kiln_relu(g, sum);
    float hx[N], hy[N], hout[N], hpeer[N];
    for (int i = 0; i < N; i++) { hx[i] = (float)(i % 37) - 18.0f; hy[i] = 0.5f * (float)(i % 11) - 2.0f; }
    size_t bytes = sizeof hx;
    void *dx = b1->alloc(b1, bytes), *dy = b1->alloc(b1, bytes), *ds = b1->alloc(b1, bytes), *dout = b1->alloc(b1, bytes);
    CHECK(dx && dy && ds && dout);
    if (!dx || !dy || !ds || !dout) return check_summary("test_cudasim_devices");
    CHECK_OK(b1->copy(b1, dx, hx, bytes, KILN_COPY_H2D));
    CHECK_OK(b1->copy(b1, dy, hy, bytes, KILN_COPY_H2D));
    CHECK_OK(b1->sync(b1));
    CHECK_MSG(in_use(1) >= use1 + 4 * bytes, "GPU 1 in use %zu, was %zu", in_use(1), use1);
    CHECK_MSG(in_use(0) == use0, "GPU 0 in use %zu, was %zu: GPU 1's buffers went to GPU 0", in_use(0), use0);
    CHECK_MSG(free_mem(1) < free1 && free_mem(0) == free0, "driver free memory GPU 0 %zu (was %zu), GPU 1 %zu (was %zu)",
              free_mem(0), free0, free_mem(1), free1);

    /* with GPU 0 used last, a GPU 1 kernel fails unless b1 is activated first */
    void *xy[2] = { dx, dy };
    fprintf(stderr, "(a cudasim complaint about GPU 1 memory on GPU 0 is expected next)\n");
    CHECK_MSG(run_kernel(b1, sum, xy, ds, b0, false) != KILN_OK, "a GPU 1 kernel ran while GPU 0 was current");
    CHECK_OK(run_kernel(b1, sum, xy, ds, b0, true));
    CHECK_OK(run_kernel(b1, out, &ds, dout, b0, true));
    CHECK_OK(b1->copy(b1, hout, dout, bytes, KILN_COPY_D2H));
    CHECK_OK(b1->sync(b1));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float want = hx[i] + hy[i] > 0 ? hx[i] + hy[i] : 0;
        if (hout[i] != want && bad++ < 3) fprintf(stderr, "out[%d] = %g, expected %g\n", i, hout[i], want);
    }
    CHECK_MSG(bad == 0, "%d wrong values from GPU 1", bad);

    /* GPU 1 -> GPU 0 (peer), back to the host through GPU 0 */
    void *d0 = b0->alloc(b0, bytes);
    CHECK(d0 != NULL);
    CHECK(in_use(0) >= use0 + bytes);
    CHECK_OK(b1->sync(b1));
    CHECK_OK(b0->copy(b0, d0, dout, bytes, KILN_COPY_PEER));
    CHECK_OK(b0->copy(b0, hpeer, d0, bytes, KILN_COPY_D2H));
    CHECK_OK(b0->sync(b0));
    CHECK(!memcmp(hpeer, hout, bytes));
    b0->free(b0, d0);

    /* a session (GPU 0) right after GPU 1 ran: it must put its kernels back on GPU 0 */
    CHECK_OK(b1->activate(b1));
    size_t s_use1 = in_use(1);
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = KILN_BACKEND_CUDA, .no_cuda_graphs = true });
    CHECK(s != NULL);
    kiln_tensor *tx = kiln_tensor_new(KILN_F32, KILN_SHAPE(N)), *ty = kiln_tensor_new(KILN_F32, KILN_SHAPE(N)), *res = NULL;
    memcpy(tx->data, hx, bytes);
    memcpy(ty->data, hy, bytes);
    CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { x, tx }, { y, ty } }, 2, &out, &res, 1, NULL, 0));
    CHECK(res && !memcmp(res->data, hout, bytes));
    CHECK_MSG(in_use(0) > use0 && in_use(1) == s_use1, "session memory: GPU 0 %zu (was %zu), GPU 1 %zu (was %zu)",
              in_use(0), use0, in_use(1), s_use1);
    kiln_session_free(s);
    kiln_tensor_free(tx); kiln_tensor_free(ty); kiln_tensor_free(res);

    /* a graph placed on /gpu:1 runs there: a training step (its variables, arena and kernels on
     * GPU 1, captured as a CUDA graph after two warm-up runs), GPU 0 untouched, and the same
     * losses as on the CPU */
    kiln_graph *t = kiln_graph_new();
    kiln_node *tx2 = kiln_placeholder(t, "x", KILN_F32, KILN_SHAPE(8, 4)), *ty2 = kiln_placeholder(t, "y", KILN_I32, KILN_SHAPE(8));
    kiln_graph_push_device(t, "/gpu:1");
    kiln_node *w = kiln_variable(t, "w", KILN_F32, KILN_SHAPE(4, 3), kiln_init_glorot_uniform(7));
    kiln_node *loss = kiln_sparse_softmax_cross_entropy(t, kiln_matmul(t, tx2, w, false, false), ty2), *gw;
    CHECK_OK(kiln_gradients(t, loss, &w, 1, &gw));
    kiln_node *upd = kiln_apply_sgd(t, &w, &gw, 1, &(kiln_sgd_opts){ .lr = 0.5 });
    kiln_graph_pop_device(t);
    kiln_tensor *fx = kiln_tensor_new(KILN_F32, KILN_SHAPE(8, 4)), *fy = kiln_tensor_new(KILN_I32, KILN_SHAPE(8)), *lv = NULL;
    for (int i = 0; i < 32; i++) kiln_tensor_set(fx, i, (i % 4 == (i / 4) % 3) + 0.1 * (i % 5));
    for (int i = 0; i < 8; i++) kiln_tensor_set(fy, i, i % 3);
    kiln_feed tf[2] = { { tx2, fx }, { ty2, fy } };
    double want[6], got[6];
    kiln_session *c = kiln_session_new(t, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU });
    for (int i = 0; i < 6; i++) { CHECK_OK(kiln_session_run(c, tf, 2, &loss, &lv, 1, &upd, 1)); want[i] = kiln_tensor_get(lv, 0); }
    kiln_session_free(c);
    size_t t_use0 = in_use(0), t_use1 = in_use(1);
    s = kiln_session_new(t, &(kiln_session_opts){ .backend = KILN_BACKEND_CUDA });
    CHECK(s && kiln_session_node_space(s, w) == 2 && kiln_session_node_space(s, loss) == 2);
    for (int i = 0; i < 6; i++) { CHECK_OK(kiln_session_run(s, tf, 2, &loss, &lv, 1, &upd, 1)); got[i] = kiln_tensor_get(lv, 0); }
    for (int i = 0; i < 6; i++) CHECK_MSG(fabs(got[i] - want[i]) < 1e-5, "step %d on GPU 1: loss %g, CPU %g", i, got[i], want[i]);
    CHECK(want[5] < want[0]);
    CHECK_MSG(in_use(1) > t_use1 && in_use(0) == t_use0, "session on /gpu:1: GPU 0 %zu (was %zu), GPU 1 %zu (was %zu)",
              in_use(0), t_use0, in_use(1), t_use1);
    kiln_session_free(s);
    kiln_tensor_free(fx); kiln_tensor_free(fy); kiln_tensor_free(lv);
    kiln_graph_free(t);

    void *bufs[4] = { dx, dy, ds, dout };
    for (int i = 0; i < 4; i++) b1->free(b1, bufs[i]);
    CHECK_MSG(in_use(1) == use1 && in_use(0) == use0, "after freeing: GPU 0 %zu (was %zu), GPU 1 %zu (was %zu)",
              in_use(0), use0, in_use(1), use1);
    kiln_graph_free(g);
    return check_summary("test_cudasim_devices");
}
