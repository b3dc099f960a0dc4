/* Out of host memory anywhere in a session (placement, the plan builder, the memory plan,
 * variables, arenas, fetch tensors) is KILN_OUT_OF_MEMORY, never a crash, and loses nothing: the
 * same session then runs the step and gives the loss of a session that never failed. The sweep
 * fails the 1st, 2nd, ... allocation of creating a session and running one training step until
 * the step makes no more allocations (ASan in CI checks that nothing leaks). Also: the log
 * callback receives the library's messages. */
#include <string.h>
#include "check.h"
#include "core/core.h"

typedef struct step_graph {
    kiln_graph *g;
    kiln_node *x, *y, *loss, *step;
    kiln_tensor *tx, *ty;
} step_graph;

/* A two-layer MLP (BiasAdd + Relu: the fusion and in-place paths) with Adam on fixed data. */
static step_graph build(void) {
    step_graph s = { kiln_graph_new() };
    kiln_graph *g = s.g;
    s.x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(8, 4));
    s.y = kiln_placeholder(g, "y", KILN_I32, KILN_SHAPE(8));
    kiln_node *w1 = kiln_variable(g, "w1", KILN_F32, KILN_SHAPE(4, 16), kiln_init_glorot_uniform(1));
    kiln_node *b1 = kiln_variable(g, "b1", KILN_F32, KILN_SHAPE(16), kiln_init_zeros());
    kiln_node *w2 = kiln_variable(g, "w2", KILN_F32, KILN_SHAPE(16, 3), kiln_init_glorot_uniform(2));
    kiln_node *h = kiln_relu(g, kiln_bias_add(g, kiln_matmul(g, s.x, w1, false, false), b1));
    s.loss = kiln_sparse_softmax_cross_entropy(g, kiln_matmul(g, h, w2, false, false), s.y);
    kiln_node *vars[3] = { w1, b1, w2 }, *grads[3];
    CHECK_OK(kiln_gradients(g, s.loss, vars, 3, grads));
    s.step = kiln_apply_adam(g, vars, grads, 3, &(kiln_adam_opts){ .lr = 1e-2 });
    CHECK_OK(kiln_graph_status(g));
    s.tx = kiln_tensor_new(KILN_F32, KILN_SHAPE(8, 4));
    s.ty = kiln_tensor_new(KILN_I32, KILN_SHAPE(8));
    for (int i = 0; i < 32; i++) kiln_tensor_set(s.tx, i, (i % 5) - 2);
    for (int i = 0; i < 8; i++) kiln_tensor_set(s.ty, i, i % 3);
    return s;
}

static kiln_status run(step_graph *s, kiln_session *ses, double *loss) {
    kiln_tensor *out = NULL;
    kiln_status st = kiln_session_run(ses, (kiln_feed[]){ { s->x, s->tx }, { s->y, s->ty } }, 2, &s->loss, &out, 1, &s->step, 1);
    if (st == KILN_OK) *loss = kiln_tensor_get(out, 0);
    kiln_tensor_free(out);
    return st;
}

static void test_sweep(kiln_backend_kind backend) {
    step_graph s = build();
    double want = 0, got = 0;
    kiln_session *ses = kiln_session_new(s.g, &(kiln_session_opts){ .backend = backend });
    CHECK_OK(run(&s, ses, &want));
    kiln_session_free(ses);
    int fired = 0, n;
    for (n = 1; n < 100000; n++) {
        kiln_alloc_fail_at((uint64_t)n);
        ses = kiln_session_new(s.g, &(kiln_session_opts){ .backend = backend });
        kiln_status st = ses ? run(&s, ses, &got) : KILN_OUT_OF_MEMORY;
        bool not_reached = kiln_alloc_fail_at(0) != 0;
        if (not_reached) {          /* the step made fewer than n allocations: swept them all */
            CHECK_OK(st);
            kiln_session_free(ses);
            break;
        }
        fired++;
        CHECK_MSG(st == KILN_OUT_OF_MEMORY, "allocation %d failed: %s (%s)", n, kiln_status_name(st), kiln_last_error());
        if (!ses) continue;
        /* nothing lost: the same session runs the step as a fresh one did */
        CHECK_MSG(run(&s, ses, &got) == KILN_OK && got == want, "after allocation %d failed: loss %g, want %g (%s)", n, got, want, kiln_last_error());
        kiln_session_free(ses);
    }
    CHECK_MSG(fired > 20, "only %d allocations swept", fired);
    printf("%s backend: %d allocations failed one at a time, each KILN_OUT_OF_MEMORY\n", backend == KILN_BACKEND_REF ? "ref" : "cpu", fired);
    kiln_tensor_free(s.tx); kiln_tensor_free(s.ty);
    kiln_graph_free(s.g);
}

typedef struct log_seen { int n; kiln_log_level level; char msg[512]; } log_seen;
static void on_log(kiln_log_level level, const char *msg, void *user) {
    log_seen *l = user;
    l->n++;
    l->level = level;
    snprintf(l->msg, sizeof l->msg, "%s", msg);
}

/* Soft placement of an op asking for a GPU that is not there warns through the callback. */
static void test_log_callback(void) {
    log_seen seen = { 0 };
    kiln_set_log_callback(on_log, &seen);
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(4));
    kiln_graph_push_device(g, "/gpu:7");
    kiln_node *y = kiln_tanh(g, x);
    kiln_graph_pop_device(g);
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = KILN_BACKEND_CPU });
    kiln_tensor *tx = kiln_tensor_new(KILN_F32, KILN_SHAPE(4)), *out = NULL;
    CHECK_OK(kiln_session_run(s, (kiln_feed[]){ { x, tx } }, 1, &y, &out, 1, NULL, 0));
    CHECK_MSG(seen.n == 1 && seen.level == KILN_LOG_WARNING && strstr(seen.msg, "soft placement") && !strchr(seen.msg, '\n'),
              "%d messages, last: %s", seen.n, seen.msg);
    kiln_set_log_callback(NULL, NULL);
    kiln_tensor_free(tx); kiln_tensor_free(out);
    kiln_session_free(s);
    kiln_graph_free(g);
}

int main(void) {
    test_sweep(KILN_BACKEND_CPU);
    test_sweep(KILN_BACKEND_REF);
    test_log_callback();
    return check_summary("test_alloc_fail");
}
