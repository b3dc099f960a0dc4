// Kiln from C++: the C API as is, with the C++ form of the `&(kiln_dense_opts){ ... }` idiom.
// C's compound literal `&(T){ .a = 1 }` is not C++ (g++: "taking address of rvalue"); in C++20 a
// designated-initializer temporary passed through opt() is the same thing: it lives until the
// end of the call. (Before C++20: a named `kiln_dense_opts d{}; d.units = 10;` and &d.)
// Trains a small classifier on a made-up separable problem and checks that it learned it.
//
//   build/example_cpp_model        (tests: test_example_cpp)
// or, against an installed Kiln:
//   g++ -std=c++20 examples/cpp_model.cpp $(pkg-config --cflags --libs kiln) -o cpp_model
#include <cstdio>
#include <cstdint>
#include <vector>
#include <kiln/kiln.h>

template <class T> static const T *opt(const T &v) { return &v; }   // &(T){...} in C++

int main() {
    // 3 classes: the label is the largest of 3 fixed projections of x (8 features)
    const int n = 1024, f = 8, k = 3;
    std::vector<float> x(n * f);
    std::vector<int32_t> y(n);
    unsigned s = 12345;
    for (int i = 0; i < n; i++) {
        double best = -1e9;
        for (int j = 0; j < f; j++) { s = s * 1103515245u + 12345u; x[i * f + j] = (float)((s >> 16) % 2000) / 1000.0f - 1.0f; }
        for (int c = 0; c < k; c++) {
            double v = x[i * f + c] + 0.5 * x[i * f + c + 3];
            if (v > best) { best = v; y[i] = c; }
        }
    }
    kiln_tensor *tx = kiln_tensor_wrap(KILN_F32, KILN_SHAPE(n, f), x.data());
    kiln_tensor *ty = kiln_tensor_wrap(KILN_I32, KILN_SHAPE(n), y.data());
    kiln_dataset *all = kiln_dataset_from_tensors(tx, ty, k);
    kiln_dataset *test = all ? kiln_dataset_split_tail(all, 0.25) : nullptr;
    if (!test) { std::fprintf(stderr, "data: %s\n", kiln_last_error()); return 1; }

    kiln_model *m = kiln_sequential("cpp_mlp", KILN_SHAPE(f));
    kiln_model_set_seed(m, 1);
    kiln_layer_dense(m, opt(kiln_dense_opts{ .units = 32, .activation = KILN_RELU }));
    kiln_layer_dense(m, opt(kiln_dense_opts{ .units = k }));                  // logits
    kiln_compile(m, opt(kiln_compile_opts{ .optimizer = kiln_adam(1e-2),
                                           .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                           .from_logits = true, .metrics = KILN_METRIC_ACCURACY }));
    if (kiln_model_status(m) != KILN_OK) { std::fprintf(stderr, "model: %s\n", kiln_model_error(m)); return 1; }
    kiln_eval_result r{};
    int rc = 1;
    if (kiln_fit(m, all, opt(kiln_fit_opts{ .epochs = 10, .batch_size = 32, .verbose = 2 })) == KILN_OK &&
        kiln_evaluate(m, test, nullptr, &r) == KILN_OK) {
        std::printf("C++: test accuracy %.2f%% (%lld examples)\n", r.accuracy * 100, (long long)r.count);
        rc = r.accuracy > 0.85 ? 0 : 1;   // the problem is separable: a working fit learns it
        if (rc) std::fprintf(stderr, "C++: accuracy %.3f, expected > 0.85\n", r.accuracy);
    } else std::fprintf(stderr, "kiln: %s\n", kiln_last_error());
    kiln_model_free(m);
    kiln_dataset_free(test);
    kiln_dataset_free(all);
    kiln_tensor_free(tx);
    kiln_tensor_free(ty);
    return rc;
}
