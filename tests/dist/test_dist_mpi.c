/* Data parallelism across processes, run as `mpirun -np 2 test_dist_mpi` (ctest test_dist_mpi):
 * 2 ranks with global batch 64 (32 rows each) give the losses and weights of 1 process with batch
 * 64, with SGD and with Adam over two epochs (16 steps); both ranks hold bit-identical weights; a
 * checkpoint from the 2-rank run resumes in 1 process and the reverse, each equal to the run it
 * continues; only rank 0 writes the CSV history; kiln_data_shard splits batches; a global batch
 * that is no multiple of the ranks is refused by both ranks alike. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "equiv_model.h"
#include "kiln/dist.h"

static kiln_dist *dist;
static int rank;
static char dir[256];

/* Largest |a - b| over every variable (weights and optimizer slots) of two models; also the sum
 * of a's values (a checksum compared across ranks). */
static double var_diff(kiln_model *a, kiln_model *b, double *sum_a) {
    kiln_graph *ga = kiln_model_graph(a), *gb = kiln_model_graph(b);
    double worst = 0;
    int n_vars = 0;
    *sum_a = 0;
    for (int i = 0; i < kiln_graph_node_count(ga); i++) {
        kiln_node *va = kiln_graph_node(ga, i);
        if (strcmp(kiln_node_op_name(va), "VariableV2") || kiln_node_dtype(va) != KILN_F32) continue;
        kiln_node *vb = NULL;
        for (int j = 0; j < kiln_graph_node_count(gb) && !vb; j++)
            if (!strcmp(kiln_node_name(kiln_graph_node(gb, j)), kiln_node_name(va))) vb = kiln_graph_node(gb, j);
        CHECK_MSG(vb != NULL, "variable %s missing", kiln_node_name(va));
        if (!vb) continue;
        kiln_tensor *ta = kiln_tensor_new(KILN_F32, kiln_node_shape(va)), *tb = kiln_tensor_new(KILN_F32, kiln_node_shape(vb));
        CHECK_OK(kiln_session_read_variable(kiln_model_session(a), va, ta));
        CHECK_OK(kiln_session_read_variable(kiln_model_session(b), vb, tb));
        for (int64_t k = 0; k < kiln_shape_numel(ta->shape); k++) {
            double x = ((float *)ta->data)[k], y = ((float *)tb->data)[k];
            *sum_a += x * (double)(k % 7 + 1);
            if (fabs(x - y) > worst) worst = fabs(x - y);
        }
        n_vars++;
        kiln_tensor_free(ta);
        kiln_tensor_free(tb);
    }
    CHECK(n_vars >= 4);
    return worst;
}

/* Rank 0's checksum equals this rank's (bit-identical weights on every rank). */
static void same_on_ranks(double sum, const char *what) {
    double r0 = sum;
    CHECK_OK(kiln_dist_broadcast(dist, &r0, sizeof r0, 0));
    CHECK_MSG(r0 == sum, "%s: rank %d's weights differ from rank 0's (%.17g vs %.17g)", what, rank, sum, r0);
}

static void test_equivalence(kiln_dataset *train, kiln_optimizer opt, const char *name, double tol) {
    losses l1 = { 0 }, l2 = { 0 };
    kiln_callback c1 = kiln_callback_lambda(record, NULL, &l1), c2 = kiln_callback_lambda(record, NULL, &l2);
    kiln_model *one = tiny(opt), *two = tiny(opt);
    CHECK_OK(kiln_fit(one, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .callbacks = &c1, .n_callbacks = 1 }));
    CHECK_OK(kiln_fit(two, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .callbacks = &c2, .n_callbacks = 1, .dist = dist }));
    CHECK_MSG(l1.n == 16 && l2.n == 16, "%s: %d and %d steps", name, l1.n, l2.n);
    double worst_loss = 0;
    for (int i = 0; i < l1.n && i < l2.n; i++)
        if (fabs(l1.v[i] - l2.v[i]) > worst_loss) worst_loss = fabs(l1.v[i] - l2.v[i]);
    double sum;
    double worst = var_diff(one, two, &sum);
    (void)sum;
    double sum2;
    var_diff(two, two, &sum2);
    same_on_ranks(sum2, name);
    if (rank == 0) printf("%s: 2 ranks x 32 vs 1 x 64 over 16 steps: max |loss diff| %.3g, max |variable diff| %.3g\n", name, worst_loss, worst);
    CHECK_MSG(worst_loss <= 1e-5, "%s: losses differ by %g", name, worst_loss);
    CHECK_MSG(worst <= tol, "%s: variables differ by %g", name, worst);
    CHECK(l1.v[15] < l1.v[0]);        /* it trained */
    kiln_model_free(one);
    kiln_model_free(two);
}

/* Gradient accumulation on 2 ranks (global batch 64, 2 micro-batches of 16 per rank) == 1 process
 * with batch 64; the all-reduce runs once per optimizer step, not per micro-batch. */
static void test_accumulation(kiln_dataset *train) {
    kiln_model *one = tiny(kiln_adam(0.01)), *two = tiny(kiln_adam(0.01));
    CHECK_OK(kiln_fit(one, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64 }));
    kiln_dist_stats before = kiln_dist_get_stats(dist);
    CHECK_OK(kiln_fit(two, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .accumulate_steps = 2, .dist = dist }));
    kiln_dist_stats after = kiln_dist_get_stats(dist);
    double sum, d = var_diff(one, two, &sum);
    if (rank == 0) printf("accumulation 2 x 16 on 2 ranks vs 1 x 64: max |variable diff| %.3g, %lld all-reduces for %lld steps\n", d,
                          (long long)(after.calls - before.calls), (long long)(after.steps - before.steps));
    CHECK_MSG(d <= 1e-5, "accumulation: variables differ by %g", d);
    CHECK_MSG(after.calls - before.calls == after.steps - before.steps, "%lld all-reduces for %lld steps",
              (long long)(after.calls - before.calls), (long long)(after.steps - before.steps));
    kiln_model_free(one);
    kiln_model_free(two);
}

/* A checkpoint from epoch 1 resumes for epoch 2 on `ranks_b` processes, against the same
 * continuation on the other count. */
static void test_checkpoints(kiln_dataset *train) {
    char ck2[400], ck1[400];
    snprintf(ck2, sizeof ck2, "%s/two.safetensors", dir);
    snprintf(ck1, sizeof ck1, "%s/one.safetensors", dir);
    /* 2 ranks -> checkpoint (rank 0 writes it) */
    kiln_model *a = tiny(kiln_adam(0.01));
    kiln_callback save2 = kiln_callback_model_checkpoint(ck2, "loss", false);
    CHECK_OK(kiln_fit(a, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .callbacks = &save2, .n_callbacks = 1, .dist = dist }));
    /* 1 process -> checkpoint, rank 0 only (the others wait at the barrier) */
    if (rank == 0) {
        kiln_model *b = tiny(kiln_adam(0.01));
        CHECK_OK(kiln_fit(b, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64 }));
        CHECK_OK(kiln_model_save(b, ck1, true));
        kiln_model_free(b);
    }
    CHECK_OK(kiln_dist_barrier(dist));
    /* the 2-rank checkpoint: epoch 2 in one process == epoch 2 on two ranks */
    kiln_model *p1 = tiny(kiln_adam(0.01)), *p2 = tiny(kiln_adam(0.01));
    CHECK_OK(kiln_model_load_opts(p1, ck2, &(kiln_load_opts){ .resume = true, .strict = true }));
    CHECK_OK(kiln_model_load_opts(p2, ck2, &(kiln_load_opts){ .resume = true, .strict = true }));
    CHECK(kiln_model_epoch(p1) == 1 && kiln_model_epoch(p2) == 1);
    CHECK_OK(kiln_fit(p1, train, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 64 }));
    CHECK_OK(kiln_fit(p2, train, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 64, .dist = dist }));
    double sum, d = var_diff(p1, p2, &sum);
    if (rank == 0) printf("checkpoint of 2 ranks, resumed: 1 process vs 2 ranks: max |variable diff| %.3g\n", d);
    CHECK_MSG(d <= 1e-4, "2-rank checkpoint: resumed runs differ by %g", d);
    /* the 1-process checkpoint: epoch 2 on two ranks == epoch 2 in one process */
    kiln_model *q1 = tiny(kiln_adam(0.01)), *q2 = tiny(kiln_adam(0.01));
    CHECK_OK(kiln_model_load_opts(q1, ck1, &(kiln_load_opts){ .resume = true, .strict = true }));
    CHECK_OK(kiln_model_load_opts(q2, ck1, &(kiln_load_opts){ .resume = true, .strict = true }));
    CHECK_OK(kiln_fit(q1, train, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 64 }));
    CHECK_OK(kiln_fit(q2, train, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 64, .dist = dist }));
    d = var_diff(q1, q2, &sum);
    if (rank == 0) printf("checkpoint of 1 process, resumed: 2 ranks vs 1 process: max |variable diff| %.3g\n", d);
    CHECK_MSG(d <= 1e-4, "1-process checkpoint: resumed runs differ by %g", d);
    kiln_model_free(a); kiln_model_free(p1); kiln_model_free(p2); kiln_model_free(q1); kiln_model_free(q2);
}

/* Buckets of 64 bytes (a dozen for the tiny model's 195 gradients): each bucket's MPI_Iallreduce starts
 * as soon as the backward pass has written it, steps run while some are in flight, and the
 * weights are bit-identical to the blocking all-reduce after the backward pass (KILN_OVERLAP=0),
 * and as close to 1 process as the default buckets are. (Gradients on a GPU, test_dist_mpi_cudasim,
 * keep the blocking path: staged through the host after the backward pass.) */
static void test_overlap(kiln_dataset *train) {
    kiln_model *over = tiny(kiln_adam(0.01)), *block = tiny(kiln_adam(0.01)), *one = tiny(kiln_adam(0.01));
    kiln_dist_stats s0 = kiln_dist_get_stats(dist);
    CHECK_OK(kiln_fit(over, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .dist = dist, .bucket_bytes = 64 }));
    kiln_dist_stats s1 = kiln_dist_get_stats(dist);
    setenv("KILN_OVERLAP", "0", 1);
    CHECK_OK(kiln_fit(block, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64, .dist = dist, .bucket_bytes = 64 }));
    unsetenv("KILN_OVERLAP");
    kiln_dist_stats s2 = kiln_dist_get_stats(dist);
    CHECK_OK(kiln_fit(one, train, &(kiln_fit_opts){ .epochs = 2, .batch_size = 64 }));
    double sum, exact = var_diff(over, block, &sum), d1 = var_diff(one, over, &sum);
    long long steps = (long long)(s1.steps - s0.steps), calls = (long long)(s1.calls - s0.calls);
    long long ov = (long long)(s1.overlapped_steps - s0.overlapped_steps), ov_off = (long long)(s2.overlapped_steps - s1.overlapped_steps);
    if (rank == 0)
        printf("overlap, 64-byte buckets: %lld all-reduces over %lld steps, %lld plan steps ran during them (%lld with KILN_OVERLAP=0); "
               "max |variable diff| vs blocking %.3g, vs 1 process %.3g\n", calls, steps, ov, ov_off, exact, d1);
    CHECK_MSG(steps == 16 && calls >= 10 * steps, "%lld all-reduces for %lld steps", calls, steps);
    if (kiln_gpu_available())   /* test_dist_mpi_cudasim: GPU gradients go through the host after the backward pass */
        CHECK_MSG(ov == 0, "GPU gradients: %lld steps overlapped", ov);
    else
        CHECK_MSG(ov >= steps, "no step ran while an all-reduce was in flight (%lld)", ov);
    CHECK_MSG(ov_off == 0 && (long long)(s2.calls - s1.calls) >= 10 * steps, "KILN_OVERLAP=0: %lld overlapped steps, %lld all-reduces",
              ov_off, (long long)(s2.calls - s1.calls));
    CHECK_MSG(exact == 0, "overlapped and blocking all-reduce give different weights (%g)", exact);
    CHECK_MSG(d1 <= 1e-4, "overlapped 2 ranks vs 1 process: %g", d1);
    kiln_model_free(over); kiln_model_free(block); kiln_model_free(one);
}

/* Synchronised batch norm: 2 ranks x 32 == 1 process x 64 (losses, weights, moving statistics);
 * per-replica statistics (the default) do not match. */
static void test_sync_batchnorm(void) {
    kiln_dataset *train = bn_images(256);
    losses l1 = { 0 }, ls = { 0 }, lp = { 0 };
    kiln_callback c1 = kiln_callback_lambda(record, NULL, &l1), cs = kiln_callback_lambda(record, NULL, &ls),
                  cp = kiln_callback_lambda(record, NULL, &lp);
    kiln_model *one = bn_net(false), *sync = bn_net(true), *plain = bn_net(false);
    CHECK_OK(kiln_fit(one, train, &(kiln_fit_opts){ .epochs = 3, .batch_size = 64, .callbacks = &c1, .n_callbacks = 1 }));
    CHECK_OK(kiln_fit(sync, train, &(kiln_fit_opts){ .epochs = 3, .batch_size = 64, .callbacks = &cs, .n_callbacks = 1, .dist = dist }));
    CHECK_OK(kiln_fit(plain, train, &(kiln_fit_opts){ .epochs = 3, .batch_size = 64, .callbacks = &cp, .n_callbacks = 1, .dist = dist }));
    double dl_sync = 0, dl_plain = 0, sum;
    for (int i = 0; i < l1.n && i < ls.n && i < lp.n; i++) {
        if (fabs(l1.v[i] - ls.v[i]) > dl_sync) dl_sync = fabs(l1.v[i] - ls.v[i]);
        if (fabs(l1.v[i] - lp.v[i]) > dl_plain) dl_plain = fabs(l1.v[i] - lp.v[i]);
    }
    double dv_sync = var_diff(one, sync, &sum), dv_plain = var_diff(one, plain, &sum);
    var_diff(sync, sync, &sum);
    same_on_ranks(sum, "sync batch norm");
    if (rank == 0)
        printf("sync batch norm, conv net, 2 ranks x 32 vs 1 x 64 over 12 steps: max |loss diff| %.3g, max |variable diff| %.3g "
               "(moving statistics included); per-replica statistics: %.3g and %.3g\n", dl_sync, dv_sync, dl_plain, dv_plain);
    CHECK(l1.n == 12 && ls.n == 12 && lp.n == 12);
    CHECK_MSG(dl_sync <= 1e-5, "sync batch norm: losses differ by %g", dl_sync);
    CHECK_MSG(dv_sync <= 1e-4, "sync batch norm: variables differ by %g", dv_sync);
    CHECK_MSG(dv_plain > 1e-3, "per-replica statistics match the global batch's (%g): the test cannot tell them apart", dv_plain);
    kiln_model_free(one); kiln_model_free(sync); kiln_model_free(plain);
    kiln_dataset_free(train);
}

/* Only rank 0 writes files: each rank names its own CSV; rank 1's never appears. */
static void test_rank0_files(kiln_dataset *train) {
    char csv[400];
    snprintf(csv, sizeof csv, "%s/hist_rank%d.csv", dir, rank);
    kiln_model *m = tiny(kiln_sgd(0.1));
    kiln_callback cb = kiln_callback_csv_logger(csv);
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 64, .callbacks = &cb, .n_callbacks = 1, .dist = dist }));
    CHECK_MSG((access(csv, F_OK) == 0) == (rank == 0), "rank %d: %s %s", rank, csv, rank ? "written" : "missing");
    /* a global batch the ranks cannot share: refused on every rank, before any communication */
    CHECK(kiln_fit(m, train, &(kiln_fit_opts){ .epochs = 1, .batch_size = 63, .dist = dist }) == KILN_INVALID_ARGUMENT);
    CHECK(strstr(kiln_last_error(), "multiple of 2") != NULL);
    kiln_model_free(m);
}

/* kiln_data_shard: rows [k*B/N, (k+1)*B/N) of each batch; a short last batch an equal share. */
static void test_shard(void) {
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(10, 1)), *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(10));
    for (int i = 0; i < 10; i++) { ((float *)x->data)[i] = (float)i; ((int32_t *)y->data)[i] = i % 2; }
    kiln_dataset *ds = kiln_dataset_from_tensors(x, y, 2);
    for (int part = 0; part < 2; part++) {
        kiln_data *d = kiln_data_shard(kiln_data_batch(kiln_data_from_dataset(ds, false), 4, false), part, 2);
        CHECK(d && kiln_data_batch_size(d) == 2);
        kiln_data_iter *it = NULL;
        CHECK_OK(kiln_data_iter_new(d, 1, &it));
        kiln_tensor *bx, *by;
        int got[8], n = 0, sizes[4], nb = 0;
        while (it && kiln_data_iter_next(it, &bx, &by) == KILN_OK && bx) {
            sizes[nb < 4 ? nb++ : 3] = (int)bx->shape.dim[0];
            for (int64_t r = 0; r < bx->shape.dim[0] && n < 8; r++) got[n++] = (int)((float *)bx->data)[r];
        }
        /* batches {0..3} {4..7} {8,9}: part 0 gets 0,1 | 4,5 | 8; part 1 gets 2,3 | 6,7 | 9 */
        int want[2][5] = { { 0, 1, 4, 5, 8 }, { 2, 3, 6, 7, 9 } };
        CHECK_MSG(n == 5 && nb == 3 && sizes[2] == 1, "part %d: %d rows in %d batches", part, n, nb);
        for (int i = 0; i < 5 && i < n; i++) CHECK_MSG(got[i] == want[part][i], "part %d row %d: %d", part, i, got[i]);
        kiln_data_iter_free(it);
        kiln_data_free(d);
    }
    CHECK(kiln_data_shard(kiln_data_batch(kiln_data_from_dataset(ds, false), 5, false), 0, 2) == NULL);
    CHECK(strstr(kiln_last_error(), "multiple") != NULL);
    CHECK(kiln_data_shard(kiln_data_from_dataset(ds, false), 0, 2) == NULL);
    CHECK(strstr(kiln_last_error(), "batched") != NULL);
    kiln_dataset_free(ds);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
}

int main(int argc, char **argv) {
    if (kiln_dist_init(&argc, &argv, &dist) != KILN_OK) {
        fprintf(stderr, "test_dist_mpi: %s\n", kiln_last_error());
        return 1;
    }
    rank = kiln_dist_rank(dist);
    if (kiln_dist_size(dist) != 2) {
        fprintf(stderr, "test_dist_mpi: run it as mpirun -np 2 (got %d processes)\n", kiln_dist_size(dist));
        kiln_dist_free(dist);
        return 1;
    }
    if (rank == 0) {
        snprintf(dir, sizeof dir, "/tmp/kiln_dist_XXXXXX");
        if (!mkdtemp(dir)) dir[0] = 0;
    }
    CHECK_OK(kiln_dist_broadcast(dist, dir, sizeof dir, 0));
    kiln_dataset *train = separable(512, 11);
    test_shard();
    test_equivalence(train, kiln_sgd(0.1), "sgd", 1e-5);
    test_equivalence(train, kiln_adam(0.01), "adam", 1e-4);
    test_checkpoints(train);
    test_accumulation(train);
    test_overlap(train);
    test_sync_batchnorm();
    test_rank0_files(train);
    kiln_dataset_free(train);
    CHECK_OK(kiln_dist_barrier(dist));
    if (rank == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (dir[0] && system(cmd) != 0) fprintf(stderr, "test_dist_mpi: could not remove %s\n", dir);
    }
    /* every rank's result: rank 0 reports the total */
    double failed = check_failed;
    kiln_dist_allreduce_sum_f64(dist, &failed, 1);
    check_failed = (int)failed;
    int rc = rank == 0 ? check_summary("test_dist_mpi") : (check_failed ? 1 : 0);
    kiln_dist_free(dist);
    return rc;
}
