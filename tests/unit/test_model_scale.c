/* Loading a model file is linear in its layers (issue 24.10): 100,000 layers load in about a
 * second, where the name checks and input lookups (a scan of every layer's name per layer; the
 * names share a long prefix, as Keras' do, so each comparison reads it) took minutes, and a
 * Functional model listed in reverse order (one layer built per pass over the list) took hours.
 * Not timed here: ctest's TIMEOUT for this test (cmake/KilnJSON.cmake) fails a regression. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kiln/nn.h"

enum { N = 100000 };
#define NAME "a_layer_name_with_a_long_common_prefix_%d"      /* Keras: dense, dense_1, ... */

typedef struct buf { char *p; size_t n, cap; } buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < b->cap - b->n) { b->n += (size_t)k; return; }
        b->cap = b->cap * 2 + (size_t)k + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) { fprintf(stderr, "out of memory\n"); exit(1); }
    }
}

static void loads(const char *what, const char *json, const char *last) {
    kiln_model *m = NULL;
    CHECK_OK(kiln_model_from_json(json, &m));
    CHECK_MSG(m && kiln_model_layer_count(m) == N + 1, "%s: %d layers", what, kiln_model_layer_count(m));
    char name[64];
    snprintf(name, sizeof name, NAME, N);
    CHECK_MSG(m && kiln_model_find_layer(m, last) && kiln_model_find_layer(m, "in") && !kiln_model_find_layer(m, name), "%s: lookups", what);
    CHECK(m && kiln_shape_equal(kiln_model_output_shape(m), KILN_SHAPE(1)));
    kiln_model_free(m);
}

/* Sequential: N activations after a 1-feature input (layers without variables: less memory). */
static void test_sequential(void) {
    buf b = { 0 };
    put(&b, "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"long\", \"layers\": ["
            "{\"class_name\": \"InputLayer\", \"config\": {\"name\": \"in\", \"batch_shape\": [null, 1]}}");
    for (int i = 0; i < N; i++) put(&b, ", {\"class_name\": \"Activation\", \"config\": {\"name\": \"" NAME "\", \"activation\": \"relu\"}}", i);
    put(&b, "]}}");
    char last[64];
    snprintf(last, sizeof last, NAME, N - 1);
    loads("sequential", b.p, last);
    free(b.p);
}

/* Functional: the same chain, its layers listed last first (valid Keras: any order). */
static void test_functional_reversed(void) {
    buf b = { 0 };
    put(&b, "{\"class_name\": \"Functional\", \"config\": {\"name\": \"long\", \"layers\": [");
    for (int i = N - 1; i >= 0; i--) {
        char prev[64];
        snprintf(prev, sizeof prev, i ? NAME : "in", i - 1);
        put(&b, "{\"class_name\": \"Activation\", \"config\": {\"name\": \"" NAME "\", \"activation\": \"relu\"}, \"inbound_nodes\": [[[\"%s\", 0, 0, {}]]]}, ", i, prev);
    }
    put(&b, "{\"class_name\": \"InputLayer\", \"config\": {\"name\": \"in\", \"batch_shape\": [null, 1]}, \"inbound_nodes\": []}],"
            "\"input_layers\": [[\"in\", 0, 0]], \"output_layers\": [[\"" NAME "\", 0, 0]]}}", N - 1);
    char last[64];
    snprintf(last, sizeof last, NAME, N - 1);
    loads("functional", b.p, last);
    free(b.p);
}

int main(void) {
    test_sequential();
    test_functional_reversed();
    return check_summary("test_model_scale");
}
