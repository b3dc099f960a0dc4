/* MirroredStrategy on two simulated GPUs (ctest test_mirrored_cudasim: CUSIM_DEVICES=2, the NCCL
 * shim): the module's NCCL all-reduce averages device buffers and refuses a host pointer;
 * kiln_fit with .devices = "gpu:0,gpu:1" and batch 64 (32 per replica) gives the losses and
 * weights of one GPU with batch 64, with SGD and with Adam, both replicas ending bit-identical;
 * a checkpoint of the mirrored run resumes on one GPU and the reverse; bad device lists and a
 * batch that does not split are refused with what to do. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "../dist/equiv_model.h"
#include "backend/registry.h"
#include "backend/cuda/cuda_module.h"
#include "runtime/replicas.h"

static char dir[256];

static void test_nccl(void) {
    const kiln_cuda_module *mod = kiln_cuda();
    CHECK(mod && mod->comm_new && mod->allreduce_mean);
    if (!mod) return;
    int gpus[2] = { 0, 1 };
    void *comm = NULL;
    CHECK_OK(mod->comm_new(gpus, 2, &comm));
    const kiln_backend *b[2] = { kiln_cuda_backend(0), kiln_cuda_backend(1) };
    float host[2][5], back[5];
    float *dev[2];
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 5; i++) host[k][i] = (float)(i + 1) * (k ? 3.0f : 1.0f);
        dev[k] = b[k]->alloc(b[k], sizeof host[k]);
        CHECK_OK(b[k]->copy(b[k], dev[k], host[k], sizeof host[k], KILN_COPY_H2D));
    }
    size_t count = 5;
    CHECK_OK(mod->allreduce_mean(comm, dev, &count, 1));
    for (int k = 0; k < 2; k++) {
        CHECK_OK(b[k]->copy(b[k], back, dev[k], sizeof back, KILN_COPY_D2H));
        CHECK_OK(b[k]->sync(b[k]));
        for (int i = 0; i < 5; i++) CHECK_MSG(back[i] == 2.0f * (float)(i + 1), "GPU %d [%d] = %g", k, i, back[i]);
    }
    float *wrong[2] = { host[0], dev[1] };          /* a host pointer: NCCL refuses it */
    CHECK(mod->allreduce_mean(comm, wrong, &count, 1) != KILN_OK);
    CHECK(strstr(kiln_last_error(), "invalid argument") != NULL);
    float *swapped[2] = { dev[1], dev[0] };         /* GPU 1's memory for GPU 0's rank */
    CHECK(mod->allreduce_mean(comm, swapped, &count, 1) != KILN_OK);
    /* broadcast from GPU 1 (any bytes), and the checks NCCL makes */
    void *vb[2] = { dev[0], dev[1] };
    size_t bytes = 3 * sizeof(float);
    float seven[5] = { 7, 7, 7, 7, 7 };
    CHECK_OK(b[1]->copy(b[1], dev[1], seven, sizeof seven, KILN_COPY_H2D));
    CHECK_OK(mod->broadcast(comm, vb, &bytes, 1, 1));
    CHECK_OK(b[0]->copy(b[0], back, dev[0], sizeof back, KILN_COPY_D2H));
    CHECK_OK(b[0]->sync(b[0]));
    CHECK_MSG(back[0] == 7 && back[2] == 7 && back[3] == 2.0f * 4, "broadcast: %g %g %g", back[0], back[2], back[3]);
    void *vwrong[2] = { host[0], dev[1] };
    CHECK(mod->broadcast(comm, vwrong, &bytes, 1, 1) != KILN_OK);
    CHECK(mod->broadcast(comm, vb, &bytes, 1, 2) == KILN_INVALID_ARGUMENT);
    /* on the communication streams after the compute streams' work: a copy enqueued on GPU 0's
     * compute stream before the start is in the average; the join orders later work after it */
    float ones[5] = { 1, 1, 1, 1, 1 }, threes[5] = { 3, 3, 3, 3, 3 };
    CHECK_OK(b[0]->copy(b[0], dev[0], ones, sizeof ones, KILN_COPY_H2D));
    CHECK_OK(b[1]->copy(b[1], dev[1], threes, sizeof threes, KILN_COPY_H2D));
    CHECK_OK(mod->allreduce_start(comm, dev, &count, 1));
    CHECK_OK(mod->allreduce_join(comm));
    for (int k = 0; k < 2; k++) {
        CHECK_OK(b[k]->copy(b[k], back, dev[k], sizeof back, KILN_COPY_D2H));
        CHECK_OK(b[k]->sync(b[k]));
        CHECK_MSG(back[0] == 2 && back[4] == 2, "GPU %d after allreduce_start: %g %g", k, back[0], back[4]);
    }
    int dup[2] = { 1, 1 };
    void *c2 = NULL;
    CHECK(mod->comm_new(dup, 2, &c2) == KILN_INVALID_ARGUMENT);
    for (int k = 0; k < 2; k++) b[k]->free(b[k], dev[k]);
    mod->comm_free(comm);
}

/* Largest |a - b| over the variables of a's session and b's (sessions of one graph or two). */
static double var_diff(kiln_model *a, kiln_session *sa, kiln_model *b, kiln_session *sb) {
    kiln_graph *ga = kiln_model_graph(a), *gb = kiln_model_graph(b);
    double worst = 0;
    for (int i = 0; i < kiln_graph_node_count(ga); i++) {
        kiln_node *va = kiln_graph_node(ga, i), *vb = NULL;
        if (strcmp(kiln_node_op_name(va), "VariableV2") || kiln_node_dtype(va) != KILN_F32) continue;
        for (int j = 0; j < kiln_graph_node_count(gb) && !vb; j++)
            if (!strcmp(kiln_node_name(kiln_graph_node(gb, j)), kiln_node_name(va))) vb = kiln_graph_node(gb, j);
        if (!vb) { CHECK_MSG(0, "variable %s missing", kiln_node_name(va)); continue; }
        kiln_tensor *ta = kiln_tensor_new(KILN_F32, kiln_node_shape(va)), *tb = kiln_tensor_new(KILN_F32, kiln_node_shape(vb));
        CHECK_OK(kiln_session_read_variable(sa, va, ta));
        CHECK_OK(kiln_session_read_variable(sb, vb, tb));
        for (int64_t k = 0; k < kiln_shape_numel(ta->shape); k++) {
            double d = fabs((double)((float *)ta->data)[k] - (double)((float *)tb->data)[k]);
            if (d > worst) worst = d;
        }
        kiln_tensor_free(ta);
        kiln_tensor_free(tb);
    }
    return worst;
}

static void test_equivalence(kiln_dataset *train, kiln_optimizer opt, const char *name, double tol) {
    losses l1 = { 0 }, l2 = { 0 };
    kiln_callback c1 = kiln_callback_lambda(record, NULL, &l1), c2 = kiln_callback_lambda(record, NULL, &l2);
    kiln_model *one = tiny(opt), *two = tiny(opt);
    CHECK_OK(kiln_fit(one, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .callbacks = &c1, .n_callbacks = 1 }));
    CHECK_OK(kiln_fit(two, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .callbacks = &c2, .n_callbacks = 1,
                                                    .devices = "gpu:0,gpu:1" }));
    CHECK_MSG(l1.n == 16 && l2.n == 16, "%s: %d and %d steps", name, l1.n, l2.n);
    double worst_loss = 0;
    for (int i = 0; i < l1.n && i < l2.n; i++)
        if (fabs(l1.v[i] - l2.v[i]) > worst_loss) worst_loss = fabs(l1.v[i] - l2.v[i]);
    double worst = var_diff(one, kiln_model_session(one), two, kiln_model_session(two));
    printf("%s: 2 GPUs x 32 vs 1 GPU x 64 over 16 steps: max |loss diff| %.3g, max |variable diff| %.3g\n", name, worst_loss, worst);
    CHECK_MSG(worst_loss <= 1e-5, "%s: losses differ by %g", name, worst_loss);
    CHECK_MSG(worst <= tol, "%s: variables differ by %g", name, worst);
    CHECK(l1.v[15] < l1.v[0]);
    kiln_model_free(one);
    kiln_model_free(two);
}

/* Buckets of 64 bytes: the replicas run their plans in segments, each bucket's NCCL group starts
 * on the communication streams while the backward pass goes on, and the weights are bit-identical
 * to one group after the backward pass (KILN_OVERLAP=0) and as close to one GPU as before. */
static void test_overlap(kiln_dataset *train) {
    kiln_model *over = tiny(kiln_adam(0.01)), *block = tiny(kiln_adam(0.01)), *one = tiny(kiln_adam(0.01));
    int64_t g0, g1, g2, b0, b1, b2;
    kiln_replicas_counters(kiln_model_session(over), &g0, &b0);
    CHECK_OK(kiln_fit(over, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .devices = "all", .bucket_bytes = 64 }));
    kiln_replicas_counters(kiln_model_session(over), &g1, &b1);
    setenv("KILN_OVERLAP", "0", 1);
    CHECK_OK(kiln_fit(block, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .devices = "all", .bucket_bytes = 64 }));
    unsetenv("KILN_OVERLAP");
    kiln_replicas_counters(kiln_model_session(block), &g2, &b2);   /* the counters are per model session */
    g2 += g1;
    CHECK_OK(kiln_fit(one, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64 }));
    double exact = var_diff(over, kiln_model_session(over), block, kiln_model_session(block));
    double d1 = var_diff(one, kiln_model_session(one), over, kiln_model_session(over));
    printf("overlap, 64-byte buckets: %lld NCCL groups started during the backward pass in 16 steps (%lld with KILN_OVERLAP=0); "
           "max |variable diff| vs one group after it %.3g, vs 1 GPU %.3g\n", (long long)(g1 - g0), (long long)(g2 - g1), exact, d1);
    CHECK_MSG(g1 - g0 >= 16, "%lld NCCL groups started early", (long long)(g1 - g0));
    CHECK(g2 == g1);
    CHECK_MSG(exact == 0, "overlapped and blocking all-reduce give different weights (%g)", exact);
    CHECK_MSG(d1 <= 1e-4, "overlapped 2 GPUs vs 1: %g", d1);
    kiln_model_free(over); kiln_model_free(block); kiln_model_free(one);
}

/* Synchronised batch norm on 2 GPUs: each replica's forward and backward pass stop after every
 * cross-replica sum (the batch statistics and their gradients), summed with NCCL before they go
 * on: 2 GPUs x 32 == 1 GPU x 64 (losses, weights, moving statistics); per-replica statistics differ. */
static void test_sync_batchnorm(void) {
    kiln_dataset *train = bn_images(256);
    losses l1 = { 0 }, ls = { 0 }, lp = { 0 };
    kiln_callback c1 = kiln_callback_lambda(record, NULL, &l1), cs = kiln_callback_lambda(record, NULL, &ls),
                  cp = kiln_callback_lambda(record, NULL, &lp);
    kiln_model *one = bn_net(false), *sync = bn_net(true), *plain = bn_net(false);
    CHECK_OK(kiln_fit(one, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .callbacks = &c1, .n_callbacks = 1 }));
    CHECK_OK(kiln_fit(sync, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .callbacks = &cs, .n_callbacks = 1, .devices = "all",
                                                     .bucket_bytes = 64 }));
    CHECK_OK(kiln_fit(plain, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .callbacks = &cp, .n_callbacks = 1, .devices = "all" }));
    double dl = 0;
    for (int i = 0; i < l1.n && i < ls.n; i++)
        if (fabs(l1.v[i] - ls.v[i]) > dl) dl = fabs(l1.v[i] - ls.v[i]);
    double dv = var_diff(one, kiln_model_session(one), sync, kiln_model_session(sync));
    double dp = var_diff(one, kiln_model_session(one), plain, kiln_model_session(plain));
    printf("sync batch norm, conv net, 2 GPUs x 32 vs 1 GPU x 64 over 8 steps: max |loss diff| %.3g, max |variable diff| %.3g "
           "(moving statistics included); per-replica statistics: %.3g\n", dl, dv, dp);
    CHECK(l1.n == 8 && ls.n == 8 && lp.n == 8);
    CHECK_MSG(dl <= 1e-5, "sync batch norm on 2 GPUs: losses differ by %g", dl);
    CHECK_MSG(dv <= 1e-4, "sync batch norm on 2 GPUs: variables differ by %g", dv);
    CHECK_MSG(dp > 1e-3, "per-replica statistics match the global batch's (%g)", dp);
    kiln_model_free(one); kiln_model_free(sync); kiln_model_free(plain);
    kiln_dataset_free(train);
}

static void test_checkpoints(kiln_dataset *train) {
    char ck2[400], ck1[400];
    snprintf(ck2, sizeof ck2, "%s/two.safetensors", dir);
    snprintf(ck1, sizeof ck1, "%s/one.safetensors", dir);
    kiln_model *a = tiny(kiln_adam(0.01)), *b = tiny(kiln_adam(0.01));
    CHECK_OK(kiln_fit(a, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .devices = "all" }));
    CHECK_OK(kiln_model_save(a, ck2, true));
    CHECK_OK(kiln_fit(b, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64 }));
    CHECK_OK(kiln_model_save(b, ck1, true));
    const char *paths[2] = { ck2, ck1 };
    for (int i = 0; i < 2; i++) {      /* each checkpoint: epoch 2 on one GPU == epoch 2 on two */
        kiln_model *p1 = tiny(kiln_adam(0.01)), *p2 = tiny(kiln_adam(0.01));
        CHECK_OK(kiln_model_load_opts(p1, paths[i], &(kiln_load_opts){ .resume = true, .strict = true }));
        CHECK_OK(kiln_model_load_opts(p2, paths[i], &(kiln_load_opts){ .resume = true, .strict = true }));
        CHECK_OK(kiln_fit(p1, train, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 64 }));
        int64_t g, b0, b1;
        kiln_replicas_counters(kiln_model_session(p2), &g, &b0);
        CHECK_OK(kiln_fit(p2, train, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 64, .devices = "0,1" }));
        kiln_replicas_counters(kiln_model_session(p2), &g, &b1);
        double d = var_diff(p1, kiln_model_session(p1), p2, kiln_model_session(p2));
        printf("checkpoint of %s, resumed: 1 GPU vs 2: max |variable diff| %.3g (%lld variables sent with ncclBroadcast)\n",
               i ? "1 GPU" : "2 GPUs", d, (long long)(b1 - b0));
        CHECK_MSG(b1 - b0 >= 4, "%lld variables broadcast with NCCL", (long long)(b1 - b0));
        CHECK_MSG(d <= 1e-4, "checkpoint %s: resumed runs differ by %g", paths[i], d);
        kiln_model_free(p1);
        kiln_model_free(p2);
    }
    kiln_model_free(a);
    kiln_model_free(b);
}

static void test_errors(kiln_dataset *train) {
    kiln_model *m = tiny(kiln_sgd(0.1));
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 63, .devices = "all" }) == KILN_INVALID_ARGUMENT);
    CHECK(strstr(kiln_last_error(), "multiple of 2") != NULL);
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .devices = "gpu:0,gpu:5" }) == KILN_INVALID_ARGUMENT);
    CHECK(strstr(kiln_last_error(), "no GPU 5 (2 visible") != NULL);
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .devices = "cpu:0,gpu:1" }) == KILN_INVALID_ARGUMENT);
    CHECK(strstr(kiln_last_error(), "not a GPU") != NULL);
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .devices = "gpu:1,gpu:0" }) == KILN_INVALID_ARGUMENT);
    CHECK(strstr(kiln_last_error(), "first device must be gpu:0") != NULL);
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .devices = "gpu:0,gpu:0" }) == KILN_INVALID_ARGUMENT);
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .devices = "all", .accumulate_steps = 2 }) == KILN_UNSUPPORTED);
    CHECK(strstr(kiln_last_error(), "accumulation with several devices") != NULL);
    kiln_model_free(m);
}

static kiln_tensor *read_var(kiln_model *m, const char *name) {
    kiln_node *v = kiln_graph_find(kiln_model_graph(m), name);
    kiln_tensor *t = v ? kiln_tensor_new(kiln_node_dtype(v), kiln_node_shape(v)) : NULL;
    if (t) CHECK_OK(kiln_session_read_variable(kiln_model_session(m), v, t));
    return t;
}

/* The finiteness guard with replicas: a gradient (not the loss) that goes non-finite, an L2 factor
 * of 3e38 on a kernel of zeros but one 1 (penalty 3e38, gradient Inf), stops the mirrored fit
 * with a numeric error instead of a silent skip, and no replica's update touched the weights. */
static void test_guard(kiln_dataset *train) {
    kiln_model *m = kiln_sequential("mir_guard", KILN_SHAPE(8));
    kiln_model_set_seed(m, 1);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 16, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3, .l2 = 3e38 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(0.01), .from_logits = true, .device = "gpu" }));
    kiln_memory_report r;
    CHECK_OK(kiln_model_memory(m, 32, 1, &r));            /* builds the training step without running it */
    kiln_memory_report_free(&r);
    kiln_tensor *k = read_var(m, "dense_1/kernel");
    if (!k) { kiln_model_free(m); return; }
    memset(k->data, 0, kiln_tensor_nbytes(k));
    ((float *)k->data)[0] = 1;
    CHECK_OK(kiln_session_assign_variable(kiln_model_session(m), kiln_graph_find(kiln_model_graph(m), "dense_1/kernel"), k));
    kiln_tensor *before = read_var(m, "dense/kernel");
    kiln_status st = kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .devices = "all" });
    CHECK_MSG(st == KILN_NUMERIC_ERROR && strstr(kiln_last_error(), "non-finite at epoch 1, step 1"), "mirrored guard: %s: %s",
              kiln_status_name(st), kiln_last_error());
    kiln_tensor *after = read_var(m, "dense/kernel"), *k2 = read_var(m, "dense_1/kernel");
    CHECK(before && after && k2 && memcmp(before->data, after->data, kiln_tensor_nbytes(before)) == 0 &&
          memcmp(k->data, k2->data, kiln_tensor_nbytes(k)) == 0);
    kiln_tensor_free(k); kiln_tensor_free(k2); kiln_tensor_free(before); kiln_tensor_free(after);
    kiln_model_free(m);
}

/* --one (tests/gpu/run.sh on a machine with one GPU): NCCL loads, a 1-rank communicator's
 * all-reduce leaves the data as it is, and devices = "gpu:0" trains as the plain run does. */
static int one_gpu(void) {
    const kiln_cuda_module *mod = kiln_cuda();
    int gpu = 0;
    void *comm = NULL;
    CHECK(mod != NULL);
    if (!mod) return check_summary("test_mirrored --one");
    CHECK_OK(mod->comm_new(&gpu, 1, &comm));
    const kiln_backend *b = kiln_cuda_backend(0);
    float host[7] = { 1, -2, 3.5f, 0, 1e-3f, 7, -9 }, back[7];
    float *dev = b->alloc(b, sizeof host);
    size_t count = 7;
    CHECK_OK(b->copy(b, dev, host, sizeof host, KILN_COPY_H2D));
    if (comm) CHECK_OK(mod->allreduce_mean(comm, &dev, &count, 1));
    CHECK_OK(b->copy(b, back, dev, sizeof back, KILN_COPY_D2H));
    CHECK_OK(b->sync(b));
    CHECK(memcmp(host, back, sizeof host) == 0);
    b->free(b, dev);
    mod->comm_free(comm);
    kiln_dataset *train = separable(256, 11);
    kiln_model *m = tiny(kiln_adam(0.01));
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .devices = "gpu:0" }));
    kiln_model_free(m);
    kiln_dataset_free(train);
    return check_summary("test_mirrored --one");
}

int main(int argc, char **argv) {
    if (!kiln_gpu_available()) { fprintf(stderr, "test_mirrored: no (simulated) GPU: %s\n", kiln_gpu_unavailable_reason()); return 1; }
    if (argc > 1 && !strcmp(argv[1], "--one")) return one_gpu();
    snprintf(dir, sizeof dir, "/tmp/kiln_mirrored_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    kiln_dataset *train = separable(512, 11);
    test_nccl();
    test_equivalence(train, kiln_sgd(0.1), "sgd", 1e-5);
    test_equivalence(train, kiln_adam(0.01), "adam", 1e-4);
    test_overlap(train);
    test_sync_batchnorm();
    test_checkpoints(train);
    test_errors(train);
    test_guard(train);
    kiln_dataset_free(train);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "test_mirrored: could not remove %s\n", dir);
    return check_summary("test_mirrored");
}
