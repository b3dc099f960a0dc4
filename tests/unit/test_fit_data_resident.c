/* kiln_fit_data with data_on_device: the pipeline's examples (after its take) read into the
 * session's memory, its shuffle and batching replayed over example numbers, its augment node's crop
 * and flip done by the graph: the same losses as the host pipeline, bit for bit, and as kiln_fit's
 * resident path; pipelines that cannot be replayed (cutout, skip, map, float labels) refused. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include "check.h"
#include "resident_fixture.h"
#include "kiln/nn.h"
#include "kiln/pipeline.h"

enum { TAKE = 200, EPOCHS = 3, SHUF_SEED = 77, AUG_SEED = 1234 };

/* The CLI's training pipeline: source -> take -> [normalize] -> shuffle -> [augment] -> batch -> prefetch. */
static kiln_data *pipeline(const kiln_dataset *d, const kiln_augment_opts *aug, bool normalize) {
    kiln_data *p = kiln_data_take(kiln_data_from_dataset(d, false), TAKE);
    if (normalize) p = kiln_data_normalize(p, (const float[]){ 0.25f }, (const float[]){ 0.5f }, 1);
    p = kiln_data_shuffle(p, TAKE, SHUF_SEED);
    if (aug) p = kiln_data_augment(p, aug);
    return kiln_data_prefetch(kiln_data_batch(p, 32, true), 2, 1);
}

static void history(kiln_model *m, double *loss, double *acc) {
    int n = 0;
    const kiln_logs *h = kiln_model_history(m, &n);
    CHECK(n == EPOCHS);
    for (int i = 0; i < EPOCHS && i < n; i++) { loss[i] = h[i].loss; acc[i] = h[i].accuracy; }
}

/* kiln_fit_data over pipeline(aug, normalize), with or without data_on_device (+ accumulation). */
static void fit_pipeline(const kiln_dataset *d, const kiln_augment_opts *aug, bool normalize, bool resident, int accumulate,
                         double *loss, double *acc) {
    kiln_model *m = make_model();
    kiln_data *p = pipeline(d, aug, normalize);
    CHECK_OK(kiln_fit_data(m, p, &(kiln_fit_opts){ .epochs = EPOCHS, .data_on_device = resident, .accumulate_steps = accumulate }));
    history(m, loss, acc);
    kiln_data_free(p);
    kiln_model_free(m);
}

static void same(const char *what, const double *a, const double *b) {
    for (int i = 0; i < EPOCHS; i++) CHECK_MSG(a[i] == b[i], "%s: epoch %d %.9g vs %.9g", what, i + 1, a[i], b[i]);
}

int main(void) {
    setenv("KILN_DETERMINISTIC", "1", 0);
    kiln_dataset *d = make_data();
    const kiln_augment_opts aug = { .crop_pad = 2, .flip = true, .seed = AUG_SEED };
    double hl[EPOCHS], ha[EPOCHS], rl[EPOCHS], ra[EPOCHS];
    /* plain, augmented, normalized, accumulated: resident equals the host pipeline */
    fit_pipeline(d, NULL, false, false, 0, hl, ha);
    fit_pipeline(d, NULL, false, true, 0, rl, ra);
    same("loss, no augmentation", hl, rl);
    same("accuracy, no augmentation", ha, ra);
    CHECK_MSG(rl[2] < rl[0], "resident training loss %g -> %g", rl[0], rl[2]);
    fit_pipeline(d, &aug, false, false, 0, hl, ha);
    fit_pipeline(d, &aug, false, true, 0, rl, ra);
    same("loss, crop and flip", hl, rl);
    same("accuracy, crop and flip", ha, ra);
    fit_pipeline(d, &aug, true, false, 0, hl, ha);
    fit_pipeline(d, &aug, true, true, 0, rl, ra);
    same("loss, normalized", hl, rl);
    fit_pipeline(d, &aug, false, false, 2, hl, ha);
    fit_pipeline(d, &aug, false, true, 2, rl, ra);
    same("loss, accumulated", hl, rl);

    /* ... and kiln_fit's resident path (what kiln train --data-on-device ran): the first TAKE
     * examples, shuffled with shuffle_seed ^ the model's seed */
    fit_pipeline(d, &aug, false, true, 0, rl, ra);
    kiln_tensor xv = *kiln_dataset_x(d), yv = *kiln_dataset_y(d);
    xv.shape.dim[0] = yv.shape.dim[0] = TAKE;
    xv.owns_data = yv.owns_data = false;
    kiln_dataset *first = kiln_dataset_from_tensors(&xv, &yv, C);
    kiln_model *m = make_model();
    CHECK_OK(kiln_fit(m, first, &(kiln_fit_opts){ .epochs = EPOCHS, .batch_size = 32, .shuffle_seed = SHUF_SEED ^ MODEL_SEED,
                                                   .data_on_device = true, .device_crop_pad = 2, .device_flip = true,
                                                   .device_augment_seed = AUG_SEED }));
    history(m, hl, ha);
    same("loss, kiln_fit resident vs kiln_fit_data resident", hl, rl);
    /* a later host-path fit rebuilds the step without the data variables */
    kiln_data *p = pipeline(d, NULL, false);
    CHECK_OK(kiln_fit_data(m, p, &(kiln_fit_opts){ .epochs = EPOCHS + 1, .initial_epoch = EPOCHS }));
    kiln_data_free(p);

    /* refused: cutout, augmentation given twice, nodes that cannot be replayed from memory */
    p = pipeline(d, &(kiln_augment_opts){ .cutout_size = 2, .seed = 1 }, false);
    CHECK(kiln_fit_data(m, p, &(kiln_fit_opts){ .epochs = 1, .data_on_device = true }) == KILN_UNSUPPORTED);
    CHECK_MSG(strstr(kiln_last_error(), "not cutout"), "%s", kiln_last_error());
    kiln_data_free(p);
    p = pipeline(d, &aug, false);
    CHECK(kiln_fit_data(m, p, &(kiln_fit_opts){ .epochs = 1, .data_on_device = true, .device_flip = true }) == KILN_INVALID_ARGUMENT);
    kiln_data_free(p);
    p = kiln_data_batch(kiln_data_shuffle(kiln_data_skip(kiln_data_from_dataset(d, false), 8), 64, 1), 32, true);
    CHECK(kiln_fit_data(m, p, &(kiln_fit_opts){ .epochs = 1, .data_on_device = true }) == KILN_UNSUPPORTED);
    CHECK_MSG(strstr(kiln_last_error(), "skip node"), "%s", kiln_last_error());
    kiln_data_free(p);
    /* float labels (regression): a CSV whose labels are not class ids */
    char path[] = "/tmp/kiln_fit_res_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < 64; i++) fprintf(f, "%d,%d,%.2f\n", i % 5, i % 7, 0.5 + i * 0.25);
    fclose(f);
    kiln_data *csv = NULL;
    CHECK_OK(kiln_data_from_csv(path, NULL, &csv));
    kiln_model *r = kiln_sequential("reg", KILN_SHAPE(2));
    kiln_layer_dense(r, &(kiln_dense_opts){ .units = 1 });
    kiln_compile(r, &(kiln_compile_opts){ .optimizer = kiln_sgd(0.01), .loss = KILN_LOSS_MSE, .device = "cpu" });
    csv = kiln_data_batch(csv, 16, true);
    CHECK(kiln_fit_data(r, csv, &(kiln_fit_opts){ .epochs = 1, .data_on_device = true }) == KILN_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_last_error(), "class-id labels"), "%s", kiln_last_error());
    CHECK_OK(kiln_fit_data(r, csv, &(kiln_fit_opts){ .epochs = 1 }));
    kiln_data_free(csv);
    kiln_model_free(r);
    unlink(path);

    kiln_model_free(m);
    kiln_dataset_free(first);
    kiln_dataset_free(d);
    return check_summary("test_fit_data_resident");
}
