/* Training with the data set resident in the session (kiln_fit_opts.data_on_device): the same
 * batches as the host path, augmentation in the graph (the same crops and flips as the host
 * pipeline's kiln_data_augment), data never checkpointed. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include "check.h"
#include "resident_fixture.h"
#include "kiln/nn.h"
#include "kiln/io.h"
#include "kiln/pipeline.h"

enum { AUG_SEED = 1234 };

/* resident: kiln_fit with the data on the device (crop/flip there); host_aug: kiln_fit_data over
 * kiln_fit's pipeline with kiln_data_augment(pad, flip, AUG_SEED); else plain kiln_fit. */
static void fit_history(bool resident, bool host_aug, int pad, bool flip, double *loss, double *acc) {
    kiln_dataset *d = make_data();
    kiln_model *m = make_model();
    if (host_aug) {   /* kiln_fit shuffles with shuffle_seed ^ the model's seed (5) */
        kiln_data *p = kiln_data_shuffle(kiln_data_from_dataset(d, false), N, 11 ^ 5);
        p = kiln_data_batch(kiln_data_augment(p, &(kiln_augment_opts){ .crop_pad = pad, .flip = flip, .seed = AUG_SEED }), 32, true);
        CHECK_OK(kiln_fit_data(m, p, &(kiln_fit_opts){ .epochs = 3 }));
        kiln_data_free(p);
    } else
        CHECK_OK(kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 3, .batch_size = 32, .shuffle_seed = 11, .data_on_device = resident,
                                                  .device_crop_pad = pad, .device_flip = flip, .device_augment_seed = AUG_SEED }));
    int n = 0;
    const kiln_logs *h = kiln_model_history(m, &n);
    CHECK(n == 3);
    for (int i = 0; i < 3 && i < n; i++) { loss[i] = h[i].loss; acc[i] = h[i].accuracy; }
    kiln_model_free(m);
    kiln_dataset_free(d);
}

int main(void) {
    /* runs are compared bit for bit: on a real GPU that needs deterministic cuDNN algorithms */
    setenv("KILN_DETERMINISTIC", "1", 0);
    double host_l[3], host_a[3], res_l[3], res_a[3], aug_l[3], aug_a[3], haug_l[3], haug_a[3];
    fit_history(false, false, 0, false, host_l, host_a);
    fit_history(true, false, 0, false, res_l, res_a);
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(host_l[i] == res_l[i], "epoch %d loss: host %.9g, resident %.9g", i + 1, host_l[i], res_l[i]);
        CHECK_MSG(host_a[i] == res_a[i], "epoch %d accuracy: host %.9g, resident %.9g", i + 1, host_a[i], res_a[i]);
    }
    CHECK_MSG(res_l[2] < res_l[0], "resident training loss %g -> %g", res_l[0], res_l[2]);
    /* augmentation in the graph: different batches, still learning */
    fit_history(true, false, 2, true, aug_l, aug_a);
    CHECK_MSG(aug_l[0] != res_l[0], "augmented epoch 1 loss equals the plain one (%g)", aug_l[0]);
    CHECK_MSG(aug_l[2] < aug_l[0] && aug_a[2] > 0.5, "augmented training: loss %g -> %g, accuracy %g", aug_l[0], aug_l[2], aug_a[2]);
    /* ... and exactly the host pipeline's augmented batches (same seeds): the same losses */
    fit_history(false, true, 2, true, haug_l, haug_a);
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(haug_l[i] == aug_l[i], "augmented epoch %d loss: host %.9g, resident %.9g", i + 1, haug_l[i], aug_l[i]);
        CHECK_MSG(haug_a[i] == aug_a[i], "augmented epoch %d accuracy: host %.9g, resident %.9g", i + 1, haug_a[i], aug_a[i]);
    }

    /* the data variables are not checkpointed, and a later host-path fit rebuilds the step */
    kiln_dataset *d = make_data();
    kiln_model *m = make_model();
    CHECK_OK(kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 1, .batch_size = 32, .data_on_device = true, .device_flip = true }));
    char path[] = "/tmp/kiln_resident_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    CHECK_OK(kiln_model_save(m, path, true));
    kiln_safetensors *f = NULL;
    CHECK_OK(kiln_safetensors_load(path, &f));
    for (int i = 0; f && i < kiln_safetensors_count(f); i++)
        CHECK_MSG(strncmp(kiln_safetensors_name(f, i), "_data/", 6) != 0, "checkpoint holds %s", kiln_safetensors_name(f, i));
    kiln_safetensors_free(f);
    unlink(path);
    CHECK_OK(kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 2, .initial_epoch = 1, .batch_size = 32 }));
    kiln_eval_result r;
    CHECK_OK(kiln_evaluate(m, d, NULL, &r));
    CHECK(r.count == N);
    /* a bad option is refused before anything is built */
    CHECK(kiln_fit(m, d, &(kiln_fit_opts){ .epochs = 3, .initial_epoch = 2, .batch_size = 32, .data_on_device = true, .device_crop_pad = -1 }) == KILN_INVALID_ARGUMENT);
    kiln_model_free(m);
    kiln_dataset_free(d);
    return check_summary("test_resident");
}
