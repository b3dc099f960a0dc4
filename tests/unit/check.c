#include "check.h"
int check_passed, check_failed;
int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed ? 1 : 0;
}

/* Three classes, linearly separable: y = argmax(W x). */
kiln_dataset *separable(int64_t n, uint64_t seed) {
    kiln_tensor *x = kiln_tensor_new(KILN_F32, KILN_SHAPE(n, 8));
    kiln_tensor *y = kiln_tensor_new(KILN_I32, KILN_SHAPE(n));
    static const double w[3][8] = { { 1, -1, 0.5, 0, 0, 1, 0, -0.5 }, { -1, 1, 0, 1, -0.5, 0, 0.5, 0 }, { 0, 0, -1, -1, 1, -0.5, -0.5, 1 } };
    uint64_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        double sc[3] = { 0, 0, 0 };
        for (int j = 0; j < 8; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            double v = (double)(s >> 11) / 9007199254740992.0 * 2 - 1;
            kiln_tensor_set(x, i * 8 + j, v);
            for (int c = 0; c < 3; c++) sc[c] += w[c][j] * v;
        }
        int best = 0;
        for (int c = 1; c < 3; c++) if (sc[c] > sc[best]) best = c;
        kiln_tensor_set(y, i, best);
    }
    kiln_dataset *d = kiln_dataset_from_tensors(x, y, 3);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    return d;
}
