/* The training step's memory from its plan (kiln_model_memory): the peak is the arena + variables
 * the session really plans when it runs the step, with and without accumulation; accumulation
 * shrinks the arena; the table prints the peak; kiln_model_max_batch finds the largest batch that
 * fits a limit (the next multiple of 8 does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/nn.h"

static kiln_model *small_cnn(void) {
    kiln_model *m = kiln_sequential("mem_cnn", KILN_SHAPE(8));
    kiln_model_set_seed(m, 2);
    kiln_layer_reshape(m, &(kiln_reshape_opts){ .shape = KILN_SHAPE(2, 4, 1) });
    kiln_layer_conv2d(m, &(kiln_conv2d_opts){ .filters = 16, .kernel = 2, .padding = KILN_SAME, .activation = KILN_RELU });
    kiln_layer_flatten(m, NULL);
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 32, .activation = KILN_RELU });
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 3 });
    CHECK_OK(kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_adam(0.01), .from_logits = true, .device = "cpu" }));
    return m;
}

static void test_peak_is_the_plan(int accumulate) {
    kiln_dataset *train = separable(128, 3);
    kiln_model *m = small_cnn();
    CHECK_OK(kiln_fit(m, train, &(kiln_fit_opts){ .batch_size = 64, .steps_per_epoch = 1, .accumulate_steps = accumulate }));
    size_t planned = kiln_session_planned_bytes(kiln_model_session(m)), vars = kiln_session_variable_bytes(kiln_model_session(m));
    kiln_memory_report r;
    CHECK_OK(kiln_model_memory(m, 64, accumulate, &r));
    CHECK(r.peak_bytes == r.arena_bytes + r.variable_bytes);
    CHECK_MSG(r.variable_bytes == vars, "accumulate %d: report's variables %zu, session's %zu", accumulate, r.variable_bytes, vars);
    if (accumulate <= 1)
        CHECK_MSG(r.arena_bytes == planned, "report's arena %zu, the step's planned arena %zu", r.arena_bytes, planned);
    else      /* the session's last run was the update; the accumulating runs' plan may be larger */
        CHECK_MSG(r.arena_bytes >= planned && r.arena_bytes > 0, "report's arena %zu, the update run's %zu", r.arena_bytes, planned);
    CHECK(r.batch == 64 && r.micro_batch == 64 / (accumulate > 1 ? accumulate : 1) && !strcmp(r.backend, "cpu") && !strcmp(r.optimizer, "adam"));
    CHECK(r.params == kiln_model_param_count(m, false) && r.weight_bytes == (size_t)r.params * 4);
    CHECK(r.accumulator_bytes == (accumulate > 1 ? r.weight_bytes : 0));
    /* Adam: m and v per weight, t per variable, plus the learning rate */
    CHECK_MSG(r.optimizer_bytes == 2 * r.weight_bytes + 6 * 4 + 4, "optimizer bytes %zu", r.optimizer_bytes);
    size_t lw = 0, lg = 0, la = 0;
    for (int i = 0; i < r.n_layers; i++) { lw += r.layers[i].weight_bytes; lg += r.layers[i].grad_bytes; la += r.layers[i].activation_bytes; }
    CHECK(lw == r.weight_bytes && lg == r.weight_bytes && la > 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kiln_memory_report_print(&r, f);
    fclose(f);
    char want[64];
    snprintf(want, sizeof want, "(%zu bytes) = arena + variables", r.peak_bytes);
    CHECK_MSG(buf && strstr(buf, want) && strstr(buf, "conv2d (Conv2D)"), "table:\n%s", buf ? buf : "");
    free(buf);
    kiln_memory_report_free(&r);
    kiln_model_free(m);
    kiln_dataset_free(train);
}

static void test_accumulation_shrinks(void) {
    kiln_model *m = small_cnn();
    kiln_memory_report r1, r4;
    CHECK_OK(kiln_model_memory(m, 256, 1, &r1));
    CHECK_OK(kiln_model_memory(m, 256, 4, &r4));
    CHECK_MSG(r4.arena_bytes < r1.arena_bytes / 2, "arena %zu with 4 micro-batches, %zu without", r4.arena_bytes, r1.arena_bytes);
    printf("batch 256: arena %zu bytes, with --accumulate 4 %zu bytes\n", r1.arena_bytes, r4.arena_bytes);
    kiln_memory_report_free(&r1);
    kiln_memory_report_free(&r4);
    CHECK(kiln_model_memory(m, 250, 4, &r4) == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "not divisible"));
    kiln_model *raw = kiln_sequential("raw", KILN_SHAPE(8));
    kiln_layer_dense(raw, &(kiln_dense_opts){ .units = 3 });
    CHECK(kiln_model_memory(raw, 8, 1, &r1) == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "not compiled"));
    kiln_model_free(raw);
    kiln_model_free(m);
}

static void test_max_batch(void) {
    kiln_model *m = small_cnn();
    kiln_memory_report r;
    CHECK_OK(kiln_model_memory(m, 200, 1, &r));
    size_t limit = r.peak_bytes + 1000;
    kiln_memory_report_free(&r);
    int b = 0;
    size_t peak = 0;
    CHECK_OK(kiln_model_max_batch(m, limit, 1, 8, 0, &b, &peak));
    CHECK_MSG(b >= 200 && b % 8 == 0 && peak <= limit, "batch %d, peak %zu, limit %zu", b, peak, limit);
    CHECK_OK(kiln_model_memory(m, b + 8, 1, &r));
    CHECK_MSG(r.peak_bytes > limit, "batch %d + 8 needs %zu, fits in %zu: not the largest", b, r.peak_bytes, limit);
    kiln_memory_report_free(&r);
    CHECK_OK(kiln_model_max_batch(m, limit, 4, 8, 0, &b, &peak));     /* accumulation: a bigger batch fits */
    CHECK_MSG(b > 200 && b % 8 == 0 && peak <= limit, "accumulate 4: batch %d", b);
    CHECK_OK(kiln_model_max_batch(m, limit, 1, 8, 64, &b, &peak));    /* capped (a data set of 64 examples) */
    CHECK(b == 64);
    CHECK(kiln_model_max_batch(m, 1000, 1, 8, 0, &b, &peak) == KILN_OUT_OF_MEMORY && strstr(kiln_last_error(), "even a batch of 8"));
    CHECK(kiln_model_max_batch(m, 0, 1, 8, 0, &b, &peak) == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "memory limit"));
    kiln_model_free(m);
}

int main(void) {
    test_peak_is_the_plan(1);
    test_peak_is_the_plan(4);
    test_accumulation_shrinks();
    test_max_batch();
    return check_summary("test_memory_report");
}
