/* The data ops (GatherRows, RandomCropFlip) as the GPU-resident input mode uses them: what the
 * augmentation does to an image (each output is a flip and/or a shift of -pad..pad of its input
 * with zeros shifted in), that the draws vary over keys and not over session steps, that ref and
 * cpu give the same batch for one set of keys and match kiln_crop_flip_params exactly, that the
 * batch is bit for bit the host augment's (kiln_aug_apply) for the same keys, gather index
 * errors, build-time errors, and identity when not training. */
#include <string.h>
#include "check.h"
#include "ops/op.h"
#include "ops/data_ops.h"
#include "data/pipeline_internal.h"

static bool contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* Runs `out` with x (and, when kp, the keys) fed on a backend at a given session step; NULL
 * (status in *st) on failure. */
static kiln_tensor *run_at(kiln_graph *g, kiln_backend_kind be, kiln_node *xp, const kiln_tensor *xv, kiln_node *kp,
                           const kiln_tensor *kv, kiln_node *out, uint64_t step, kiln_status *st) {
    kiln_session *s = kiln_session_new(g, &(kiln_session_opts){ .backend = be, .seed = 1 });
    if (!s) { *st = KILN_INTERNAL; return NULL; }
    kiln_session_set_step(s, step);
    kiln_feed f[2] = { { xp, xv }, { kp, kv } };
    kiln_tensor *res = NULL;
    *st = kiln_session_run(s, f, kp ? 2 : 1, &out, &res, 1, NULL, 0);
    kiln_session_free(s);
    if (*st != KILN_OK) { kiln_tensor_free(res); return NULL; }
    return res;
}

/* N copies of an H x W x C image whose pixels are distinct and nonzero (1, 2, 3, ...). */
static kiln_tensor *distinct_images(int64_t N, int64_t H, int64_t W, int64_t C) {
    kiln_tensor *t = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, H, W, C));
    int64_t per = H * W * C;
    for (int64_t b = 0; b < N; b++)
        for (int64_t k = 0; k < per; k++) kiln_tensor_set(t, b * per + k, (double)(k + 1));
    return t;
}

/* Does example b of y equal example b of x shifted by (dy, dx) after an optional flip? */
static bool matches(const kiln_tensor *x, const kiln_tensor *y, int64_t b, int dy, int dx, bool flip) {
    int64_t H = x->shape.dim[1], W = x->shape.dim[2], C = x->shape.dim[3];
    for (int64_t i = 0; i < H; i++)
        for (int64_t j = 0; j < W; j++) {
            int64_t si = i + dy, sj = (flip ? W - 1 - j : j) + dx;
            bool in = si >= 0 && si < H && sj >= 0 && sj < W;
            for (int64_t c = 0; c < C; c++) {
                double want = in ? kiln_tensor_get(x, ((b * H + si) * W + sj) * C + c) : 0.0;
                if (kiln_tensor_get(y, ((b * H + i) * W + j) * C + c) != want) return false;
            }
        }
    return true;
}

/* Finds the (dy, dx, flip) with |dy|, |dx| <= pad that explains example b; false if none does. */
static bool explain(const kiln_tensor *x, const kiln_tensor *y, int64_t b, int pad, bool allow_flip,
                    int *dy, int *dx, bool *flip) {
    for (int f = 0; f <= (allow_flip ? 1 : 0); f++)
        for (int a = -pad; a <= pad; a++)
            for (int c = -pad; c <= pad; c++)
                if (matches(x, y, b, a, c, f != 0)) { *dy = a; *dx = c; *flip = f != 0; return true; }
    return false;
}

/* keys[b] = kiln_data_example_key(seed, epoch, first + b): examples first.. of one epoch */
static kiln_tensor *example_keys(int64_t N, uint64_t seed, uint64_t epoch, int64_t first) {
    kiln_tensor *t = kiln_tensor_new(KILN_I64, KILN_SHAPE(N));
    for (int64_t b = 0; t && b < N; b++) ((int64_t *)t->data)[b] = (int64_t)kiln_data_example_key(seed, epoch, first + b);
    return t;
}

static bool same_tensor(const kiln_tensor *a, const kiln_tensor *b) {
    return a && b && a->dtype == b->dtype && kiln_shape_equal(a->shape, b->shape) &&
           memcmp(a->data, b->data, kiln_tensor_nbytes(a)) == 0;
}

/* pad 0 + flip on one image: every output row is the input row or its mirror (the same choice for
 * all rows of the image), and over keys both happen. */
static void test_flip_only(void) {
    const int64_t H = 3, W = 5, C = 2;
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(1, H, W, C));
    kiln_node *k = kiln_placeholder(g, "k", KILN_I64, KILN_SHAPE(1));
    kiln_node *y = kiln_random_crop_flip(g, x, k, 0, true, true);
    CHECK_OK(kiln_graph_status(g));
    CHECK(y && y->op == KILN_OP_RANDOM_CROP_FLIP);
    kiln_tensor *xv = distinct_images(1, H, W, C);
    int flips = 0, runs = 0;
    for (uint64_t epoch = 0; epoch < 16; epoch++) {
        kiln_status st;
        kiln_tensor *kv = example_keys(1, 42, epoch, 0);
        kiln_tensor *out = run_at(g, KILN_BACKEND_CPU, x, xv, k, kv, y, 0, &st);
        kiln_tensor_free(kv);
        CHECK_OK(st);
        if (!out) continue;
        runs++;
        int mirrored = 0, plain = 0;
        for (int64_t i = 0; i < H; i++) {
            bool is_plain = true, is_mirror = true;
            for (int64_t j = 0; j < W; j++)
                for (int64_t c = 0; c < C; c++) {
                    double v = kiln_tensor_get(out, (i * W + j) * C + c);
                    if (v != kiln_tensor_get(xv, (i * W + j) * C + c)) is_plain = false;
                    if (v != kiln_tensor_get(xv, (i * W + (W - 1 - j)) * C + c)) is_mirror = false;
                }
            CHECK_MSG(is_plain || is_mirror, "epoch %llu row %lld is neither the input row nor its mirror", (unsigned long long)epoch, (long long)i);
            plain += is_plain;
            mirrored += is_mirror;
        }
        CHECK(plain == H || mirrored == H);   /* one decision per image */
        flips += mirrored == H;
        kiln_tensor_free(out);
    }
    CHECK_MSG(flips > 0 && flips < runs, "%d flips in %d keys", flips, runs);
    kiln_tensor_free(xv);
    kiln_graph_free(g);
}

/* pad 2, no flip on one image: the output is the input shifted by some (dy, dx) in [-2, 2]^2 with
 * zeros shifted in. */
static void test_shift_only(void) {
    const int64_t H = 6, W = 7, C = 1;
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(1, H, W, C));
    kiln_node *k = kiln_placeholder(g, "k", KILN_I64, KILN_SHAPE(1));
    kiln_node *y = kiln_random_crop_flip(g, x, k, 2, false, true);
    CHECK_OK(kiln_graph_status(g));
    kiln_tensor *xv = distinct_images(1, H, W, C);
    int seen[5][5] = { { 0 } };
    for (uint64_t epoch = 0; epoch < 24; epoch++) {
        kiln_status st;
        kiln_tensor *kv = example_keys(1, 9, epoch, 0);
        kiln_tensor *out = run_at(g, KILN_BACKEND_REF, x, xv, k, kv, y, 0, &st);
        kiln_tensor_free(kv);
        CHECK_OK(st);
        if (!out) continue;
        int dy, dx;
        bool flip;
        bool ok = explain(xv, out, 0, 2, false, &dy, &dx, &flip);
        CHECK_MSG(ok, "epoch %llu: output is not a shift of the input by at most 2", (unsigned long long)epoch);
        if (ok) seen[dy + 2][dx + 2]++;
        kiln_tensor_free(out);
    }
    int distinct = 0;
    for (int a = 0; a < 5; a++) for (int b = 0; b < 5; b++) distinct += seen[a][b] > 0;
    CHECK_MSG(distinct > 1, "only %d distinct shift(s) over 24 keys", distinct);
    kiln_tensor_free(xv);
    kiln_graph_free(g);
}

/* 64 examples in one batch (pad 2 + flip): each is explained by a shift in [-2,2]^2 and a flip;
 * the shifts vary, flips happen about half the time; the result equals kiln_crop_flip_params's
 * draw exactly; ref and cpu agree bit for bit; other keys give another batch, another session
 * step the same one (the draw depends on the keys only). */
static void test_batch_statistics_and_backends(void) {
    const int64_t N = 64, H = 8, W = 8, C = 3;
    const int pad = 2;
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(N, H, W, C));
    kiln_node *k = kiln_placeholder(g, "k", KILN_I64, KILN_SHAPE(N));
    kiln_node *y = kiln_random_crop_flip(g, x, k, pad, true, true);
    CHECK_OK(kiln_graph_status(g));
    if (!y) { kiln_graph_free(g); return; }
    CHECK(y->attrs.kh == pad && y->attrs.rate == 0.5 && y->attrs.training);
    kiln_tensor *xv = distinct_images(N, H, W, C);
    kiln_tensor *kv = example_keys(N, 1234, 3, 100), *kv2 = example_keys(N, 1234, 4, 100);
    kiln_status st;
    kiln_tensor *r = run_at(g, KILN_BACKEND_REF, x, xv, k, kv, y, 11, &st);
    CHECK_OK(st);
    kiln_tensor *c = run_at(g, KILN_BACKEND_CPU, x, xv, k, kv, y, 11, &st);
    CHECK_OK(st);
    CHECK_MSG(same_tensor(r, c), "ref and cpu batches differ for one set of keys");
    kiln_tensor *c2 = run_at(g, KILN_BACKEND_CPU, x, xv, k, kv2, y, 11, &st);
    CHECK_OK(st);
    CHECK_MSG(c2 && c && !same_tensor(c, c2), "epochs 3 and 4 (other keys) gave the same batch");
    kiln_tensor *c3 = run_at(g, KILN_BACKEND_CPU, x, xv, k, kv, y, 12, &st);
    CHECK_MSG(same_tensor(c, c3), "the same keys at another session step gave another batch");
    if (r) {
        int flips = 0, dys[5] = { 0 }, dxs[5] = { 0 }, unexplained = 0, off_draw = 0;
        for (int64_t b = 0; b < N; b++) {
            int dy, dx;
            bool flip;
            if (!explain(xv, r, b, pad, true, &dy, &dx, &flip)) { unexplained++; continue; }
            flips += flip;
            dys[dy + pad]++;
            dxs[dx + pad]++;
            int ey, ex;
            bool ef;
            kiln_crop_flip_params((uint64_t)((int64_t *)kv->data)[b], pad, y->attrs.rate, &ey, &ex, &ef);
            /* the draw must explain the output (several draws can explain an image only by accident) */
            if (!matches(xv, r, b, ey, ex, ef)) off_draw++;
        }
        CHECK_MSG(unexplained == 0, "%d of %lld examples are not a crop/flip of their input", unexplained, (long long)N);
        CHECK_MSG(off_draw == 0, "%d examples differ from kiln_crop_flip_params's draw", off_draw);
        CHECK_MSG(flips >= 16 && flips <= 48, "%d flips in %lld examples (expected about half)", flips, (long long)N);
        int ny = 0, nx = 0;
        for (int q = 0; q < 5; q++) { ny += dys[q] > 0; nx += dxs[q] > 0; }
        CHECK_MSG(ny > 1 && nx > 1, "row shifts take %d value(s), column shifts %d", ny, nx);
    }
    kiln_tensor_free(r);
    kiln_tensor_free(c);
    kiln_tensor_free(c2);
    kiln_tensor_free(c3);
    kiln_tensor_free(kv);
    kiln_tensor_free(kv2);
    kiln_tensor_free(xv);
    kiln_graph_free(g);
}

/* The op with keys kiln_data_example_key(seed, epoch, i) gives, bit for bit, the host augment's
 * images (kiln_aug_apply with crop_pad, flip, seed; fill 0) on ref and cpu: the data-on-device
 * path trains on the host pipeline's batches. Random images (negative values too), several
 * configurations. */
static void test_matches_host_augment(void) {
    const int64_t N = 48, H = 7, W = 6, C = 3, per = H * W * C;
    const struct { int pad; bool flip; } cfg[] = { { 2, true }, { 0, true }, { 3, false }, { 1, true } };
    for (size_t t = 0; t < sizeof cfg / sizeof cfg[0]; t++) {
        const uint64_t seed = 77 + t, epoch = 2 + t;
        kiln_graph *g = kiln_graph_new();
        kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(N, H, W, C));
        kiln_node *k = kiln_placeholder(g, "k", KILN_I64, KILN_SHAPE(N));
        kiln_node *y = kiln_random_crop_flip(g, x, k, cfg[t].pad, cfg[t].flip, true);
        CHECK_OK(kiln_graph_status(g));
        kiln_tensor *xv = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, H, W, C));
        kiln_rng rng = kiln_rng_new(seed);
        for (int64_t i = 0; i < N * per; i++) ((float *)xv->data)[i] = (float)(kiln_rng_uniform(&rng) * 4.0 - 2.0);
        kiln_tensor *kv = example_keys(N, seed, epoch, 10);
        /* the host augment, example by example, keyed as the pipeline keys example 10 + b */
        kiln_tensor *want = kiln_tensor_new(KILN_F32, KILN_SHAPE(N, H, W, C));
        float scratch[7 * 6 * 3];
        kiln_augment_opts ao = { .crop_pad = cfg[t].pad, .flip = cfg[t].flip, .seed = seed };
        memcpy(want->data, xv->data, kiln_tensor_nbytes(xv));
        for (int64_t b = 0; b < N; b++)
            kiln_aug_apply(&ao, (float *)want->data + b * per, (int)H, (int)W, (int)C, kiln_data_example_key(seed, epoch, 10 + b), scratch);
        for (int be = 0; be < 2; be++) {
            kiln_status st;
            kiln_tensor *out = run_at(g, be ? KILN_BACKEND_CPU : KILN_BACKEND_REF, x, xv, k, kv, y, 0, &st);
            CHECK_OK(st);
            CHECK_MSG(same_tensor(out, want), "pad %d flip %d on %s: the op's batch is not kiln_aug_apply's", cfg[t].pad,
                      (int)cfg[t].flip, be ? "cpu" : "ref");
            kiln_tensor_free(out);
        }
        CHECK_MSG(!same_tensor(xv, want), "pad %d flip %d: the augment changed nothing", cfg[t].pad, (int)cfg[t].flip);
        kiln_tensor_free(want);
        kiln_tensor_free(kv);
        kiln_tensor_free(xv);
        kiln_graph_free(g);
    }
}

/* Not training (and pad 0 without flip): the input unchanged, as an Identity. */
static void test_not_training(void) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(2, 4, 4, 3));
    kiln_node *k = kiln_placeholder(g, "k", KILN_I64, KILN_SHAPE(2));
    kiln_node *y = kiln_random_crop_flip(g, x, k, 2, true, false);
    kiln_node *z = kiln_random_crop_flip(g, x, k, 0, false, true);
    CHECK_OK(kiln_graph_status(g));
    CHECK(y && y->op == KILN_OP_IDENTITY);
    CHECK(z && z->op == KILN_OP_IDENTITY);
    kiln_tensor *xv = distinct_images(2, 4, 4, 3), *kv = example_keys(2, 3, 1, 0);
    for (int be = 0; be < 2; be++) {
        kiln_status st;
        kiln_tensor *out = run_at(g, be ? KILN_BACKEND_CPU : KILN_BACKEND_REF, x, xv, NULL, NULL, y, 7, &st);
        CHECK_OK(st);
        CHECK(same_tensor(out, xv));
        kiln_tensor_free(out);
    }
    /* the op itself with training = false copies too (a graph built by hand) */
    kiln_attrs a = { 0 };
    a.kh = 1;
    a.rate = 0.5;
    kiln_node *in[2] = { x, k };
    kiln_node *w = kiln_node_new(g, KILN_OP_RANDOM_CROP_FLIP, in, 2, &a);
    CHECK(w != NULL);
    for (int be = 0; be < 2 && w; be++) {
        kiln_status st;
        kiln_tensor *out = run_at(g, be ? KILN_BACKEND_CPU : KILN_BACKEND_REF, x, xv, k, kv, w, 7, &st);
        CHECK_OK(st);
        CHECK(same_tensor(out, xv));
        kiln_tensor_free(out);
    }
    kiln_tensor_free(kv);
    kiln_tensor_free(xv);
    kiln_graph_free(g);
}

/* GatherRows: values, i32 and i64 indices, an integer data set, and out-of-range indices. */
static void test_gather(void) {
    kiln_graph *g = kiln_graph_new();
    kiln_node *x = kiln_placeholder(g, "x", KILN_F32, KILN_SHAPE(5, 2, 3));
    kiln_tensor *xv = kiln_tensor_new(KILN_F32, KILN_SHAPE(5, 2, 3));
    for (int i = 0; i < 30; i++) kiln_tensor_set(xv, i, i * 0.5 - 3);
    kiln_tensor *ok32 = kiln_tensor_new(KILN_I32, KILN_SHAPE(4));
    kiln_tensor *ok64 = kiln_tensor_new(KILN_I64, KILN_SHAPE(4));
    const int rows[4] = { 4, 0, 4, 2 };
    for (int i = 0; i < 4; i++) { kiln_tensor_set(ok32, i, rows[i]); kiln_tensor_set(ok64, i, rows[i]); }
    kiln_node *y32 = kiln_gather_rows(g, x, kiln_constant(g, ok32));
    kiln_node *y64 = kiln_gather_rows(g, x, kiln_constant(g, ok64));
    /* labels: an i32 data set gathered by the same indices */
    kiln_tensor *lab = kiln_tensor_new(KILN_I32, KILN_SHAPE(5));
    for (int i = 0; i < 5; i++) kiln_tensor_set(lab, i, 10 + i);
    kiln_node *ylab = kiln_gather_rows(g, kiln_constant(g, lab), kiln_constant(g, ok64));
    CHECK_OK(kiln_graph_status(g));
    CHECK(y32 && kiln_shape_equal(kiln_node_shape(y32), KILN_SHAPE(4, 2, 3)) && kiln_node_dtype(y32) == KILN_F32);
    for (int be = 0; be < 2; be++) {
        kiln_backend_kind k = be ? KILN_BACKEND_CPU : KILN_BACKEND_REF;
        kiln_status st;
        kiln_tensor *a = run_at(g, k, x, xv, NULL, NULL, y32, 0, &st);
        CHECK_OK(st);
        kiln_tensor *b = run_at(g, k, x, xv, NULL, NULL, y64, 0, &st);
        CHECK_OK(st);
        kiln_tensor *l = run_at(g, k, x, xv, NULL, NULL, ylab, 0, &st);
        CHECK_OK(st);
        if (a && b && l) {
            bool good = true;
            for (int r = 0; r < 4; r++) {
                for (int k2 = 0; k2 < 6; k2++)
                    if (kiln_tensor_get(a, r * 6 + k2) != kiln_tensor_get(xv, rows[r] * 6 + k2)) good = false;
                if (kiln_tensor_get(l, r) != 10 + rows[r]) good = false;
            }
            CHECK(good);
            CHECK(same_tensor(a, b));
        }
        kiln_tensor_free(a);
        kiln_tensor_free(b);
        kiln_tensor_free(l);
    }
    /* out of range: 7 >= 5 (i32), -1 (i64): a run-time KILN_INVALID_ARGUMENT naming the index */
    kiln_tensor *bad32 = kiln_tensor_new(KILN_I32, KILN_SHAPE(3));
    kiln_tensor_set(bad32, 0, 1); kiln_tensor_set(bad32, 1, 7); kiln_tensor_set(bad32, 2, 0);
    kiln_tensor *bad64 = kiln_tensor_new(KILN_I64, KILN_SHAPE(2));
    kiln_tensor_set(bad64, 0, -1); kiln_tensor_set(bad64, 1, 2);
    kiln_node *z32 = kiln_gather_rows(g, x, kiln_constant(g, bad32));
    kiln_node *z64 = kiln_gather_rows(g, x, kiln_constant(g, bad64));
    CHECK_OK(kiln_graph_status(g));
    for (int be = 0; be < 2; be++) {
        kiln_backend_kind k = be ? KILN_BACKEND_CPU : KILN_BACKEND_REF;
        kiln_status st;
        kiln_tensor *o = run_at(g, k, x, xv, NULL, NULL, z32, 0, &st);
        CHECK(!o && st == KILN_INVALID_ARGUMENT);
        CHECK_MSG(contains(kiln_last_error(), "index 7") && contains(kiln_last_error(), "row 1") &&
                  contains(kiln_last_error(), "[0, 5)") && contains(kiln_last_error(), "GatherRows"), "%s", kiln_last_error());
        o = run_at(g, k, x, xv, NULL, NULL, z64, 0, &st);
        CHECK(!o && st == KILN_INVALID_ARGUMENT);
        CHECK_MSG(contains(kiln_last_error(), "index -1") && contains(kiln_last_error(), "row 0"), "%s", kiln_last_error());
    }
    kiln_tensor_free(ok32);
    kiln_tensor_free(ok64);
    kiln_tensor_free(lab);
    kiln_tensor_free(bad32);
    kiln_tensor_free(bad64);
    kiln_tensor_free(xv);
    kiln_graph_free(g);
}

/* Build-time errors name the node and the shapes. */
static void test_build_errors(void) {
    struct { int which; const char *want1, *want2; } cases[] = {
        { 0, "pad must be >= 0", "-1" },
        { 1, "pad 4", "[2, 4, 6, 3]" },
        { 2, "NHWC", "[4, 6, 3]" },
        { 3, "a float dtype", "i32" },
        { 4, "i32 or i64", "f32" },
        { 5, "vector [B]", "[2, 2]" },
        { 6, "rank >= 1", "scalar" },
        { 7, "i64 (one random key per example)", "i32" },
        { 8, "one key per example", "[3]" },
        { 9, "one key per example", "[2, 1]" },
        { 10, "keys must not be NULL", "img" },
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        kiln_graph *g = kiln_graph_new();
        kiln_node *img = kiln_placeholder(g, "img", KILN_F32, KILN_SHAPE(2, 4, 6, 3));
        kiln_node *r = NULL;
        kiln_node *k = kiln_placeholder(g, "k", KILN_I64, KILN_SHAPE(2));
        switch (cases[t].which) {
        case 0: r = kiln_random_crop_flip(g, img, k, -1, true, true); break;
        case 1: r = kiln_random_crop_flip(g, img, k, 4, true, true); break;    /* pad must be < H = 4 */
        case 2: r = kiln_random_crop_flip(g, kiln_placeholder(g, "x3", KILN_F32, KILN_SHAPE(4, 6, 3)), k, 1, true, true); break;
        case 3: r = kiln_random_crop_flip(g, kiln_placeholder(g, "xi", KILN_I32, KILN_SHAPE(2, 4, 6, 3)), k, 1, true, true); break;
        case 4: r = kiln_gather_rows(g, img, kiln_placeholder(g, "fi", KILN_F32, KILN_SHAPE(2))); break;
        case 5: r = kiln_gather_rows(g, img, kiln_placeholder(g, "i2", KILN_I32, KILN_SHAPE(2, 2))); break;
        case 6: r = kiln_gather_rows(g, kiln_scalar(g, KILN_F32, 1), kiln_placeholder(g, "i1", KILN_I32, KILN_SHAPE(2))); break;
        case 7: r = kiln_random_crop_flip(g, img, kiln_placeholder(g, "k32", KILN_I32, KILN_SHAPE(2)), 1, true, true); break;
        case 8: r = kiln_random_crop_flip(g, img, kiln_placeholder(g, "k3", KILN_I64, KILN_SHAPE(3)), 1, true, true); break;
        /* checked on the identity shortcut too (not training) */
        case 9: r = kiln_random_crop_flip(g, img, kiln_placeholder(g, "k21", KILN_I64, KILN_SHAPE(2, 1)), 1, true, false); break;
        case 10: r = kiln_random_crop_flip(g, img, NULL, 1, true, true); break;
        }
        CHECK(r == NULL && kiln_graph_status(g) != KILN_OK);
        const char *e = kiln_graph_error(g);
        CHECK_MSG(contains(e, cases[t].want1) && contains(e, cases[t].want2), "case %d: '%s'", cases[t].which, e);
        kiln_graph_free(g);
    }
}

int main(void) {
    test_flip_only();
    test_shift_only();
    test_batch_statistics_and_backends();
    test_matches_host_augment();
    test_not_training();
    test_gather();
    test_build_errors();
    return check_summary("test_data_ops");
}
